//! `emq cancel` against a real server.

use emq::{ConnectOptions, JobOptions, Queue};
use emq_harness::RedisServer;
use std::process::Output;
use std::time::Duration;

mod common;

fn emq(url: &str, args: &[&str]) -> Output {
    let mut all = vec!["--url", url];
    all.extend_from_slice(args);
    common::run_emq(&all, &[], Duration::from_secs(30))
}

#[test]
fn cancel_a_waiting_job_then_again() {
    let server = RedisServer::start().expect("redis-server");
    let url = server.url();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (q, id) = rt.block_on(async {
        let q = Queue::connect(ConnectOptions::new(&url), "cx")
            .await
            .unwrap();
        let id = q
            .add("w", serde_json::json!(1), JobOptions::default())
            .await
            .unwrap();
        (q, id)
    });
    let out = emq(
        &url,
        &[
            "cancel",
            "cx",
            &id.to_string(),
            "--reason",
            "no longer needed",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("cancelled job"));
    let job = rt.block_on(q.get(id)).unwrap().unwrap();
    assert_eq!(job.state, Some(emq::JobState::Failed));
    let f = job.failure.unwrap();
    assert_eq!(f.code, "cancelled");
    assert_eq!(f.message, "the job was cancelled: no longer needed");
    // Twice: it has finished, nothing to cancel.
    let out = emq(&url, &["cancel", "cx", &id.to_string()]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("error[invalid_state]"));
    let out = emq(&url, &["cancel", "cx", "not-an-id"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}
