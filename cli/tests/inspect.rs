//! `emq stats|jobs|job|retry|promote|remove|retry-failed|pause|resume|drain|clean|audit` against a
//! real server: the JSON output, and the exit codes of bad input.

use emq::{ConnectOptions, JobOptions, NewJob, Queue};
use emq_harness::RedisServer;
use serde_json::{json, Value};
use std::process::Output;
use std::time::Duration;

mod common;
const RUN_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs `emq --url <url> args…` with no `EMQ_URL`, bounded.
fn emq(url: &str, args: &[&str]) -> Output {
    let mut all = vec!["--url", url];
    all.extend_from_slice(args);
    common::run_emq(&all, &[], RUN_TIMEOUT)
}

/// Runs a command that must succeed; its stdout.
fn ok(url: &str, args: &[&str]) -> String {
    let out = emq(url, args);
    assert!(out.status.success(), "emq {args:?}: {out:?}");
    String::from_utf8(out.stdout).expect("utf-8")
}

fn ok_json(url: &str, args: &[&str]) -> Value {
    let text = ok(url, args);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("emq {args:?}: {e}:\n{text}"))
}

/// Runs a command that must fail with `code` and `error[<err>]`.
fn fails(url: &str, args: &[&str], code: i32, err: &str) {
    let out = emq(url, args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "emq {args:?}: {stderr}");
    assert!(
        stderr.contains(&format!("error[{err}]")),
        "emq {args:?}: {stderr}"
    );
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Adds three ready jobs and one delayed job to `name`; their ids as text.
fn seed(url: &str, name: &str) -> (Vec<String>, String, String) {
    rt().block_on(async {
        let q = Queue::connect(ConnectOptions::new(url), name)
            .await
            .unwrap();
        let ids = q
            .add_bulk(
                (0..3)
                    .map(|i| NewJob {
                        name: "mail".into(),
                        data: json!({ "n": i }),
                        options: JobOptions::default(),
                    })
                    .collect(),
            )
            .await
            .unwrap();
        let delayed = q
            .add(
                "later",
                json!({}),
                JobOptions {
                    delay_ms: 3_600_000,
                    ..JobOptions::default()
                },
            )
            .await
            .unwrap();
        // An id of the right form that names no job.
        let unknown = q.mint_id().unwrap();
        q.close().await.unwrap();
        (
            ids.iter().map(|i| i.to_string()).collect(),
            delayed.to_string(),
            unknown.to_string(),
        )
    })
}

#[test]
fn stats_jobs_and_job_print_json() {
    let server = RedisServer::start().expect("redis-server");
    let url = server.url();
    let (ids, delayed, unknown) = seed(&url, "inspect");

    let stats = ok_json(&url, &["stats", "inspect", "--json"]);
    assert_eq!(stats["queue"], "inspect", "{stats}");
    assert_eq!(stats["counts"]["waiting"], 3, "{stats}");
    assert_eq!(stats["counts"]["delayed"], 1, "{stats}");
    assert_eq!(stats["counts"]["completed"], 0, "{stats}");
    assert_eq!(stats["total"], 4, "{stats}");
    let age = stats["oldest_waiting_age_ms"].as_u64().expect("an age");
    assert!(age < 60_000, "{stats}");

    let jobs = ok_json(&url, &["jobs", "inspect", "--state", "waiting", "--json"]);
    let jobs = jobs.as_array().expect("an array");
    assert_eq!(jobs.len(), 3);
    let mut listed: Vec<String> = jobs
        .iter()
        .map(|j| j["id"].as_str().expect("id").to_string())
        .collect();
    listed.sort();
    let mut want = ids.clone();
    want.sort();
    assert_eq!(listed, want);
    assert!(jobs.iter().all(|j| j["name"] == "mail"));
    let limited = ok_json(
        &url,
        &[
            "jobs", "inspect", "--state", "waiting", "--limit", "2", "--json",
        ],
    );
    assert_eq!(limited.as_array().unwrap().len(), 2);
    let delayed_list = ok_json(&url, &["jobs", "inspect", "--state", "delayed", "--json"]);
    assert_eq!(delayed_list[0]["id"], delayed.as_str());

    let job = ok_json(&url, &["job", "inspect", &ids[0], "--json"]);
    assert_eq!(job["id"], ids[0].as_str(), "{job}");
    assert_eq!(job["name"], "mail", "{job}");
    assert_eq!(job["state"], "waiting", "{job}");
    assert!(job["data"]["n"].is_u64(), "{job}");
    let text = ok(&url, &["job", "inspect", &ids[0]]);
    assert!(text.contains("state     waiting"), "{text}");

    // Bad input exits 2 without touching the server; an unknown job exits 1.
    fails(
        &url,
        &["job", "inspect", "not-a-job-id"],
        2,
        "invalid_job_id",
    );
    fails(&url, &["job", "inspect", &unknown], 1, "job_not_found");
    fails(
        &url,
        &["jobs", "inspect", "--state", "bogus"],
        2,
        "invalid_option",
    );
    fails(
        &url,
        &["stats", "bad name{", "--json"],
        2,
        "invalid_queue_name",
    );
    fails(&url, &["retry", "inspect", "zzz"], 2, "invalid_job_id");
    fails(&url, &["remove", "inspect", &unknown], 1, "job_not_found");
    fails(
        &url,
        &["clean", "inspect", "--state", "waiting"],
        2,
        "invalid_option",
    );
    // clap's own usage errors exit 2 as well.
    assert_eq!(emq(&url, &["jobs", "inspect"]).status.code(), Some(2));

    // An unreachable server exits 1.
    fails(
        "redis://127.0.0.1:1",
        &["stats", "inspect"],
        1,
        "server_unavailable",
    );

    let audit = ok_json(&url, &["audit", "inspect", "--json"]);
    assert_eq!(audit["ok"], true, "{audit}");
    assert_eq!(audit["jobs"], 4, "{audit}");
}

#[test]
fn the_queue_commands_change_the_queue() {
    let server = RedisServer::start().expect("redis-server");
    let url = server.url();
    let (ids, delayed, _) = seed(&url, "admin");
    let count = |state: &str| -> u64 {
        let s = ok_json(&url, &["stats", "admin", "--json"]);
        s["counts"][state].as_u64().unwrap()
    };

    // Retrying a waiting job is refused (it is not failed).
    fails(&url, &["retry", "admin", &ids[0]], 1, "invalid_state");

    assert!(ok(&url, &["promote", "admin", &delayed]).contains("promoted"));
    assert_eq!(count("delayed"), 0);
    assert_eq!(count("waiting"), 4);

    assert!(ok(&url, &["remove", "admin", &ids[0]]).contains("removed"));
    assert_eq!(count("waiting"), 3);

    assert!(ok(&url, &["priority", "admin", &ids[1], "2"]).contains("reprioritized"));
    assert_eq!((count("waiting"), count("prioritized")), (2, 1));
    ok(&url, &["priority", "admin", &ids[1], "0"]);
    assert_eq!((count("waiting"), count("prioritized")), (3, 0));
    fails(
        &url,
        &["priority", "admin", &ids[1], "9999999"],
        2,
        "invalid_option",
    );

    ok(&url, &["pause", "admin"]);
    assert_eq!(count("paused"), 3);
    assert_eq!(count("waiting"), 0);
    ok(&url, &["resume", "admin"]);
    assert_eq!(count("waiting"), 3);

    assert!(ok(&url, &["retry-failed", "admin"]).contains("retried 0 failed jobs"));
    assert!(ok(&url, &["clean", "admin", "--state", "completed"]).contains("removed 0"));

    let drained = ok(&url, &["drain", "admin", "--delayed"]);
    assert!(drained.contains("drained 3 "), "{drained}");
    let stats = ok_json(&url, &["stats", "admin", "--json"]);
    assert_eq!(stats["total"], 0, "{stats}");
    assert!(stats["oldest_waiting_age_ms"].is_null(), "{stats}");

    assert!(ok(&url, &["audit", "admin"]).contains("audit: ok"));
}
