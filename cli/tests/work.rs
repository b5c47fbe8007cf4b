//! `emq work <queue> --echo`: the hidden Rust echo worker for cross-language test suites.

use emq::{JobOptions, Queue};
use emq_harness::RedisServer;
use serde_json::json;
use std::process::Output;
use std::time::Duration;

mod common;

fn emq(args: &[&str]) -> Output {
    common::run_emq(args, &[], Duration::from_secs(60))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_echoes_jobs_fails_by_name_and_stops_after_max_jobs() {
    let server = RedisServer::start().expect("redis-server");
    let url = server.url();
    let q = Queue::connect(emq::ConnectOptions::new(url.clone()), "work-echo")
        .await
        .expect("connect");
    let data = json!({ "text": "héllo ✓", "n": 9007199254740991i64, "f": 1.5, "none": null });
    let ok = q
        .add("echo", data.clone(), JobOptions::default())
        .await
        .expect("add");
    let bad = q
        .add(
            "boom",
            json!({ "message": "it broke — ✗" }),
            // Two attempts: the first failed run is retried, the second fails it for good.
            JobOptions {
                attempts: 2,
                ..JobOptions::default()
            },
        )
        .await
        .expect("add");

    let out = tokio::task::spawn_blocking(move || {
        emq(&[
            "work",
            "work-echo",
            "--url",
            &url,
            "--echo",
            "--fail-name",
            "boom",
            "--max-jobs",
            "2",
        ])
    })
    .await
    .expect("join");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    let summary: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON line");
    assert_eq!(
        summary,
        json!({ "completed": 1, "failed": 1, "retried": 1 })
    );

    let job = q.get(ok).await.expect("get").expect("the job");
    assert_eq!(job.state, Some(emq::JobState::Completed));
    assert_eq!(
        job.result,
        Some(json!({ "lang": "rust", "id": ok.to_string(), "name": "echo", "data": data }))
    );
    let failed = q.get(bad).await.expect("get").expect("the job");
    assert_eq!(failed.state, Some(emq::JobState::Failed));
    assert_eq!(failed.failure.expect("a failure").message, "it broke — ✗");
}

#[test]
fn work_needs_echo_and_is_hidden_from_help() {
    let out = emq(&["work", "q", "--url", "redis://127.0.0.1:1"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs --echo"));
    let help = emq(&["--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        !help.lines().any(|l| l.trim_start().starts_with("work ")),
        "{help}"
    );
}
