//! `emq add` refuses durations beyond the core's bound (issue 16, defect 6): `--delay-ms
//! 18446744073709551615` was accepted and parked the job forever. The refusal is
//! `invalid_option` naming the bound, exit 2, and nothing is added. The bound is the core's (the
//! CLI fills its job spec), so the message names the core's option: `delay`, `dedup_ttl`.

use emq_harness::RedisServer;
use std::process::Command;

const EMQ: &str = env!("CARGO_BIN_EXE_emq");

fn emq(url: &str, args: &[&str]) -> std::process::Output {
    Command::new(EMQ)
        .arg("--url")
        .arg(url)
        .args(args)
        .env_remove("EMQ_URL")
        .output()
        .expect("run emq")
}

#[test]
fn delays_beyond_the_bound_are_refused_naming_it() {
    let server = RedisServer::start().unwrap();
    let url = server.url();
    for (args, option) in [
        (&["--delay-ms", "18446744073709551615"][..], "delay"),
        (&["--delay-ms", "1000000000000001"][..], "delay"),
        (
            &["--dedup", "k", "--dedup-ttl-ms", "18446744073709551615"][..],
            "dedup_ttl",
        ),
    ] {
        let mut all = vec!["add", "bounds", "j"];
        all.extend_from_slice(args);
        let out = emq(&url, &all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with("error[invalid_option]: "),
            "{args:?}: {err}"
        );
        assert!(
            err.contains("at most 1000000000000000 ms"),
            "{args:?}: {err}"
        );
        assert!(
            err.contains(&format!("{option} is too large")),
            "{args:?}: {err}"
        );
    }
    let total = |url: &str| {
        let out = emq(url, &["stats", "bounds", "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stats JSON");
        v["total"].as_u64().expect("total")
    };
    assert_eq!(total(&url), 0, "nothing was added");
    // At the bound it is accepted.
    let out = emq(
        &url,
        &["add", "bounds", "j", "--delay-ms", "1000000000000000"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(total(&url), 1);
}
