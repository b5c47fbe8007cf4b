//! `emq queues` and `emq workers` (`--json` and the table) on the standalone server and the
//! cluster: the core's queue registry with counts, its repair, and the worker registry.

use emq::{ConnectOptions, JobContext, JobOptions, Queue, Worker};
use serde_json::{json, Value};
use std::time::Duration;

mod common;
const RUN_TIMEOUT: Duration = Duration::from_secs(60);

fn emq(urls: &[String], args: &[&str]) -> String {
    let mut all: Vec<&str> = Vec::new();
    for u in urls {
        all.extend(["--url", u.as_str()]);
    }
    all.extend_from_slice(args);
    let out = common::run_emq(&all, &[], RUN_TIMEOUT);
    assert!(out.status.success(), "emq {args:?}: {out:?}");
    String::from_utf8(out.stdout).expect("utf-8")
}

fn emq_json(urls: &[String], args: &[&str]) -> Value {
    let text = emq(urls, args);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("emq {args:?}: {e}:\n{text}"))
}

fn topologies() -> Vec<(&'static str, Vec<String>)> {
    vec![
        ("standalone", vec![emq_harness::shared_standalone().url()]),
        ("cluster", emq_harness::shared_cluster().urls()),
    ]
}

fn unique(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

fn row<'a>(rows: &'a Value, queue: &str) -> Option<&'a Value> {
    rows.as_array()?.iter().find(|r| r["queue"] == queue)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queues_lists_the_registered_queues_with_their_counts() {
    for (topo, urls) in topologies() {
        let (a, b) = (unique("cli-qa"), unique("cli-qb"));
        let qa = Queue::connect(ConnectOptions::seeds(urls.clone()), &a)
            .await
            .unwrap();
        let qb = qa.queue(&b).unwrap();
        for _ in 0..3 {
            qa.add("x", json!({}), JobOptions::default()).await.unwrap();
        }
        qb.add(
            "later",
            json!({}),
            JobOptions {
                delay_ms: 3_600_000,
                ..JobOptions::default()
            },
        )
        .await
        .unwrap();
        qb.pause().await.unwrap();
        let urls2 = urls.clone();
        let rows = tokio::task::spawn_blocking(move || emq_json(&urls2, &["queues", "--json"]))
            .await
            .unwrap();
        let ra = row(&rows, &a).unwrap_or_else(|| panic!("{topo}: {a} missing: {rows}"));
        assert_eq!(ra["counts"]["waiting"], 3, "{topo}: {ra}");
        assert_eq!(ra["total"], 3, "{topo}");
        assert_eq!(ra["paused"], false, "{topo}");
        assert!(
            ra["oldest_waiting_age_ms"].as_u64().is_some(),
            "{topo}: {ra}"
        );
        let rb = row(&rows, &b).unwrap_or_else(|| panic!("{topo}: {b} missing"));
        assert_eq!(rb["counts"]["delayed"], 1, "{topo}: {rb}");
        assert_eq!(rb["paused"], true, "{topo}");
        assert_eq!(rb["oldest_waiting_age_ms"], Value::Null, "{topo}");

        // The table names both, one line each.
        let urls2 = urls.clone();
        let table = tokio::task::spawn_blocking(move || emq(&urls2, &["queues"]))
            .await
            .unwrap();
        assert!(table.starts_with("QUEUE"), "{topo}: {table}");
        let line = table
            .lines()
            .find(|l| l.starts_with(&format!("{b} ")))
            .unwrap_or_else(|| panic!("{topo}: {table}"));
        assert!(line.contains(" yes "), "{topo}: {line}");

        // A queue the registry lost (as one made before it) comes back with --repair.
        qa.unregister().await.unwrap();
        let urls2 = urls.clone();
        let rows = tokio::task::spawn_blocking(move || emq_json(&urls2, &["queues", "--json"]))
            .await
            .unwrap();
        assert!(row(&rows, &a).is_none(), "{topo}: {a} still listed");
        let urls2 = urls.clone();
        let rows = tokio::task::spawn_blocking(move || {
            emq_json(&urls2, &["queues", "--json", "--repair"])
        })
        .await
        .unwrap();
        assert!(row(&rows, &a).is_some(), "{topo}: {a} not repaired");
        qa.obliterate(true).await.unwrap();
        qb.obliterate(true).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_lists_the_live_workers_until_they_close() {
    for (topo, urls) in topologies() {
        let name = unique("cli-w");
        let q = Queue::connect(ConnectOptions::seeds(urls.clone()), &name)
            .await
            .unwrap();
        let worker = Worker::builder(q.clone())
            .concurrency(4)
            .handler(|_job: JobContext| async move { Ok(json!(null)) })
            .run()
            .unwrap();
        let until = std::time::Instant::now() + Duration::from_secs(5);
        while q.workers().await.unwrap().is_empty() {
            assert!(
                std::time::Instant::now() < until,
                "{topo}: never registered"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let (urls2, name2) = (urls.clone(), name.clone());
        let listed =
            tokio::task::spawn_blocking(move || emq_json(&urls2, &["workers", &name2, "--json"]))
                .await
                .unwrap();
        let ws = listed.as_array().expect("an array");
        assert_eq!(ws.len(), 1, "{topo}: {listed}");
        assert_eq!(ws[0]["queue"], name.as_str(), "{topo}");
        assert_eq!(ws[0]["pid"], std::process::id(), "{topo}");
        assert_eq!(ws[0]["concurrency"], 4, "{topo}");
        assert_eq!(ws[0]["language"], "rust", "{topo}");
        assert!(ws[0]["beat_ms"].as_u64().unwrap() >= ws[0]["started_ms"].as_u64().unwrap());

        // Without a queue: every registered queue's workers, this one among them.
        let urls2 = urls.clone();
        let all = tokio::task::spawn_blocking(move || emq_json(&urls2, &["workers", "--json"]))
            .await
            .unwrap();
        assert!(
            all.as_array()
                .unwrap()
                .iter()
                .any(|w| w["queue"] == name.as_str()),
            "{topo}: {all}"
        );
        let (urls2, name2) = (urls.clone(), name.clone());
        let table = tokio::task::spawn_blocking(move || emq(&urls2, &["workers", &name2]))
            .await
            .unwrap();
        assert!(table.contains("0/4"), "{topo}: {table}");
        assert!(table.contains("rust"), "{topo}: {table}");

        worker.close().await.unwrap();
        let (urls2, name2) = (urls.clone(), name.clone());
        let after =
            tokio::task::spawn_blocking(move || emq_json(&urls2, &["workers", &name2, "--json"]))
                .await
                .unwrap();
        assert_eq!(after, json!([]), "{topo}: listed after close");
        q.obliterate(true).await.unwrap();
    }
}

#[test]
fn a_bad_queue_name_is_refused_before_connecting() {
    let out = common::run_emq(
        &["--url", "redis://127.0.0.1:1", "workers", "a:b"],
        &[],
        RUN_TIMEOUT,
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("error[invalid_queue_name]"));
}
