//! `emq dlq`: a queue's default dead-letter queue set and read back, `emq add --dead-letter`, the
//! dead-lettered jobs listed (table and `--json`, with their origin and failure), replayed by id and
//! with `--all` (`--json`), back in their queue with their attempts reset; bad names refused with
//! the core's code.

use emq::{ConnectOptions, JobState, Queue};
use emq_harness::RedisServer;
use serde_json::Value;
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

fn json_of(url: &str, args: &[&str]) -> Value {
    let text = ok(url, args);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("emq {args:?}: {e}:\n{text}"))
}

#[test]
fn dead_letters_listed_and_replayed() {
    let server = RedisServer::start().expect("redis-server");
    let url = server.url();
    assert_eq!(ok(&url, &["dlq", "set", "orders"]).trim(), "none");
    assert_eq!(
        json_of(&url, &["dlq", "set", "orders", "orders-dlq", "--json"])["dead_letter"],
        "orders-dlq"
    );
    ok(&url, &["add", "orders", "boom", "--data", r#"{"n":1}"#]);
    ok(
        &url,
        &[
            "add",
            "orders",
            "boom",
            "--data",
            r#"{"n":2}"#,
            "--dead-letter",
            "other-dlq",
        ],
    );
    let bad = emq(&url, &["add", "orders", "boom", "--dead-letter", "a:b"]);
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("invalid_queue_name"),
        "{bad:?}"
    );
    let bad = emq(&url, &["dlq", "set", "orders", "orders"]);
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
    // A real worker fails both.
    let done = ok(
        &url,
        &[
            "work",
            "orders",
            "--echo",
            "--fail-name",
            "boom",
            "--max-jobs",
            "2",
        ],
    );
    assert!(done.contains("\"failed\":2"), "{done}");

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let q = rt.block_on(async {
        Queue::connect(ConnectOptions::new(url.as_str()), "orders")
            .await
            .unwrap()
    });
    let counts = rt.block_on(q.counts()).unwrap();
    assert_eq!(counts.get(JobState::Failed), 0, "both moved on");

    let listed = json_of(&url, &["dlq", "list", "orders-dlq", "--json"]);
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["state"], "waiting");
    assert_eq!(listed[0]["origin"]["queue"], "orders");
    assert_eq!(listed[0]["origin"]["attempts_made"], 1);
    assert!(listed[0]["origin"]["failure"]["code"].is_string());
    let table = ok(&url, &["dlq", "list", "other-dlq"]);
    assert!(
        table.lines().next().unwrap().contains("ORIGIN ID"),
        "{table}"
    );
    assert_eq!(table.lines().count(), 2, "{table}");
    assert!(table.contains("orders"), "{table}");

    let copy = listed[0]["id"].as_str().unwrap().to_string();
    let origin = listed[0]["origin"]["id"].as_str().unwrap().to_string();
    let replayed = json_of(
        &url,
        &["dlq", "replay", "orders-dlq", "--ids", &copy, "--json"],
    );
    assert_eq!(replayed[0]["id"], copy.as_str());
    assert_eq!(replayed[0]["origin_id"], origin.as_str());
    assert_eq!(replayed[0]["queue"], "orders");
    let back = rt.block_on(q.get_str(&origin)).unwrap().unwrap();
    assert_eq!(back.state, Some(JobState::Waiting));
    assert_eq!(back.attempts_made, 0);
    let all = ok(&url, &["dlq", "replay", "other-dlq", "--all"]);
    assert!(all.contains("replayed 1"), "{all}");
    assert_eq!(
        json_of(&url, &["dlq", "list", "other-dlq", "--json"]),
        Value::Array(vec![])
    );
    assert_eq!(rt.block_on(q.counts()).unwrap().get(JobState::Waiting), 2);
    let bad = emq(&url, &["dlq", "replay", "orders-dlq", "--ids", "nope"]);
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
    rt.block_on(q.close()).unwrap();
}
