//! `emq add` fills the core's job spec (issue 14 item 7, the CLI): retention as
//! `--remove-on-complete` / `--remove-on-fail` (`true`, a count, an age as a human duration, or
//! `count,age`), converted and checked by the core. Bad input is `invalid_option` (the core's, or
//! the CLI's for text that is no retention at all), exit 2, nothing added; good input reads back
//! through `emq job --json` as the core stored it.

use emq_harness::RedisServer;
use serde_json::{json, Value};
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

fn total(url: &str, queue: &str) -> u64 {
    let out = emq(url, &["stats", queue, "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("stats JSON");
    v["total"].as_u64().expect("total")
}

#[test]
fn bad_retention_is_the_typed_error_exit_2_and_nothing_is_added() {
    let server = RedisServer::start().unwrap();
    let url = server.url();
    for (flag, value, says) in [
        // Text that is no retention: the CLI's own reading.
        (
            "--remove-on-complete",
            "yes",
            "--remove-on-complete takes true, false",
        ),
        (
            "--remove-on-fail",
            "1x",
            "--remove-on-fail takes true, false",
        ),
        ("--remove-on-complete", "100,", "--remove-on-complete takes"),
        // Values out of bounds: the core's checks, naming its option.
        (
            "--remove-on-complete",
            "-1",
            "remove_on_complete must be a whole number",
        ),
        (
            "--remove-on-complete",
            "1.5",
            "remove_on_complete must be a whole number",
        ),
        (
            "--remove-on-fail",
            "-5s",
            "remove_on_fail.age must be a finite, non-negative duration",
        ),
        (
            "--remove-on-fail",
            "100,99999999999d",
            "remove_on_fail.age is too large",
        ),
        (
            "--remove-on-complete",
            "9007199254740992",
            "remove_on_complete must be a whole number between 0 and 9007199254740991",
        ),
    ] {
        let out = emq(&url, &["add", "ropts", "j", flag, value]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {err}");
        assert!(
            err.starts_with("error[invalid_option]: "),
            "{flag} {value}: {err}"
        );
        assert!(err.contains(says), "{flag} {value}: {err}");
        assert!(out.stdout.is_empty(), "{flag} {value}: no id printed");
    }
    assert_eq!(total(&url, "ropts"), 0, "nothing was added");
}

#[test]
fn retention_reads_back_as_the_core_stored_it() {
    let server = RedisServer::start().unwrap();
    let url = server.url();
    for (args, complete, fail) in [
        (
            &["--remove-on-complete", "true"][..],
            json!(true),
            Value::Null,
        ),
        (
            &["--remove-on-complete", "100"][..],
            json!({"count": 100}),
            Value::Null,
        ),
        (
            &["--remove-on-complete", "1d", "--remove-on-fail", "250,12h"][..],
            json!({"age_ms": 86_400_000u64}),
            json!({"count": 250, "age_ms": 43_200_000u64}),
        ),
        (
            &["--remove-on-fail", "1h30m", "--attempts", "3"][..],
            Value::Null,
            json!({"age_ms": 5_400_000u64}),
        ),
        // `false` is the default (the queue's retention): nothing stored.
        (
            &["--remove-on-complete", "false"][..],
            Value::Null,
            Value::Null,
        ),
    ] {
        let mut all = vec!["add", "ropts-ok", "j"];
        all.extend_from_slice(args);
        let out = emq(&url, &all);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let out = emq(&url, &["job", "ropts-ok", &id, "--json"]);
        assert!(out.status.success(), "{out:?}");
        let job: Value = serde_json::from_slice(&out.stdout).expect("job JSON");
        let opts = &job["options"];
        assert_eq!(opts["remove_on_complete"], complete, "{args:?}: {job}");
        assert_eq!(opts["remove_on_fail"], fail, "{args:?}: {job}");
        if args.contains(&"--attempts") {
            assert_eq!(job["attempts"], json!(3), "{job}");
        }
    }
}
