//! `emq add --partitions N`: the first add stores the queue's partition count, later adds (with
//! the same count or none) land in its partitions, another count is refused with the core's code
//! (exit 2), and a Rust handle opened without a count finds them; `emq queues` and `emq workers`
//! show a partitioned queue once, as its users name it, with its partitions added up; `emq grow`
//! grows it (and refuses to shrink it).

use emq::{ConnectOptions, JobContext, Queue, Worker};
use emq_harness::RedisServer;
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
fn add_with_partitions_stores_the_count_and_spreads_the_jobs() {
    let server = RedisServer::start().expect("redis-server");
    let url = server.url();
    ok(&url, &["add", "orders", "a", "--partitions", "4"]);
    for _ in 0..19 {
        ok(&url, &["add", "orders", "a"]);
    }
    ok(&url, &["add", "orders", "a", "--partitions", "4"]);
    for bad in [&["--partitions", "3"][..], &["--partitions", "0"][..]] {
        let mut args = vec!["add", "orders", "a"];
        args.extend_from_slice(bad);
        let out = emq(&url, &args);
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("invalid_option"),
            "{out:?}"
        );
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let q = Queue::connect(ConnectOptions::new(url.clone()), "orders")
            .await
            .unwrap();
        assert_eq!(q.partition_count(), 4);
        assert_eq!(q.counts().await.unwrap().waiting, 21);
        let mut used = 0;
        for p in q.partitions().unwrap() {
            if p.counts().await.unwrap().waiting > 0 {
                used += 1;
            }
        }
        assert!(used >= 3, "21 jobs in {used} of 4 partitions");
    });
    // Metrics and the audit read the logical queue: its partitions added up.
    let text = ok(&url, &["metrics", "orders"]);
    assert!(
        text.contains("emq_jobs{queue=\"orders\",state=\"waiting\"} 21"),
        "{text}"
    );
    assert!(
        text.contains("emq_jobs_added_total{queue=\"orders\"} 21"),
        "{text}"
    );
    let audit = emq(&url, &["audit", "orders"]);
    assert!(audit.status.success(), "{audit:?}");
    // `emq grow` grows it online; shrinking (or staying) is refused with the core's code.
    let grew = ok(&url, &["grow", "orders", "--partitions", "6"]);
    assert!(
        grew.contains("grew queue orders from 4 to 6 partitions"),
        "{grew}"
    );
    for bad in ["6", "5", "300"] {
        let out = emq(&url, &["grow", "orders", "--partitions", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}: {out:?}");
    }
    let out = emq(&url, &["grow", "plain-one", "--partitions", "2"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not partitioned"),
        "{out:?}"
    );
    rt.block_on(async {
        let q = Queue::connect(ConnectOptions::new(url.clone()), "orders")
            .await
            .unwrap();
        assert_eq!(q.partition_count(), 6);
        assert_eq!(q.counts().await.unwrap().waiting, 21);
    });
    let mut args = vec!["add", "orders", "a", "--partitions", "6"];
    ok(&url, &args);
    args[4] = "4";
    assert_eq!(emq(&url, &args).status.code(), Some(2));
}

#[test]
fn queues_and_workers_show_a_partitioned_queue_once() {
    let server = RedisServer::start().expect("redis-server");
    let url = server.url();
    ok(&url, &["add", "orders", "a", "--partitions", "3"]);
    for _ in 0..8 {
        ok(&url, &["add", "orders", "a"]);
    }
    ok(&url, &["add", "plain", "a"]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    // One worker on the partitioned queue: it registers in each partition, under one id.
    let worker = rt.block_on(async {
        let q = Queue::connect(ConnectOptions::new(url.clone()), "orders")
            .await
            .unwrap();
        Worker::builder(q)
            .handler(|_job: JobContext| async { Ok(serde_json::Value::Null) })
            .run()
            .unwrap()
    });
    let json = |args: &[&str]| -> serde_json::Value {
        serde_json::from_str(&ok(&url, args)).expect("json")
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let rows = loop {
        let rows = json(&["queues", "--json"]);
        let done = rows[0]["counts"]["completed"] == 9 && rows[0]["workers"] == 1;
        if done || std::time::Instant::now() > deadline {
            break rows;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let names: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["queue"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["orders", "plain"], "{rows}");
    assert_eq!(rows[0]["partitions"], 3, "{rows}");
    assert_eq!(rows[0]["counts"]["completed"], 9, "{rows}");
    assert_eq!(rows[0]["workers"], 1, "one worker, once: {rows}");
    assert_eq!(rows[1]["partitions"], 1, "{rows}");
    let workers = json(&["workers", "orders", "--json"]);
    let listed = workers.as_array().unwrap();
    assert_eq!(listed.len(), 1, "{workers}");
    assert_eq!(listed[0]["queue"], "orders", "{workers}");
    let table = ok(&url, &["queues"]);
    assert!(table.contains("orders (3 partitions)"), "{table}");
    rt.block_on(worker.close()).unwrap();
}
