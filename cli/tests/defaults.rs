//! `emq defaults`: a queue's job defaults set with `--set` (job options JSON, ms), read back as a
//! table and as `--json` in the form given, cleared with `--clear`; a bad or foreign option is
//! refused with the core's code (exit 2) and changes nothing; a job added without options then
//! stores none.

use emq_harness::RedisServer;
use serde_json::{json, Value};
use std::process::Output;
use std::time::Duration;

mod common;

fn emq(url: &str, args: &[&str]) -> Output {
    let mut all = vec!["--url", url];
    all.extend_from_slice(args);
    common::run_emq(&all, &[], Duration::from_secs(60))
}

fn ok(url: &str, args: &[&str]) -> String {
    let out = emq(url, args);
    assert!(out.status.success(), "emq {args:?}: {out:?}");
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn job_defaults_set_read_back_and_cleared() {
    let server = RedisServer::start().expect("redis-server");
    let url = server.url();
    assert!(ok(&url, &["defaults", "mail"]).contains("no job defaults"));
    let given = json!({
        "attempts": 3,
        "backoff": {"type": "exponential", "delay": 1000, "max": 60000},
        "remove_on_complete": true,
        "remove_on_fail": {"count": 100, "age": 86400000}
    });
    ok(&url, &["defaults", "mail", "--set", &given.to_string()]);
    let back: Value = serde_json::from_str(&ok(&url, &["defaults", "mail", "--json"])).unwrap();
    assert_eq!(back, given);
    let table = ok(&url, &["defaults", "mail"]);
    assert!(table.contains("attempts") && table.contains("3"), "{table}");
    for bad in [
        r#"{"attempts": 0}"#,
        r#"{"priority": 2}"#,
        r#"{"jitter": 3}"#,
        "not json",
    ] {
        let out = emq(&url, &["defaults", "mail", "--set", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("invalid_option") || err.contains("invalid_payload"),
            "{bad}: {err}"
        );
    }
    let still: Value = serde_json::from_str(&ok(&url, &["defaults", "mail", "--json"])).unwrap();
    assert_eq!(still, given, "unchanged by the refusals");
    ok(&url, &["add", "mail", "send"]);
    ok(&url, &["defaults", "mail", "--clear"]);
    assert_eq!(
        serde_json::from_str::<Value>(&ok(&url, &["defaults", "mail", "--json"])).unwrap(),
        json!({})
    );
}
