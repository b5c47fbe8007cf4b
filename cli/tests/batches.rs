//! `emq batches`: a queue's batches listed newest first (table and `--json`, with their counts
//! and state), one batch shown with its failed jobs, cancelled with `--cancel`; bad input refused
//! with the core's code (exit 2).

use emq::{BatchOptions, ConnectOptions, JobOptions, Queue};
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

fn json_of(url: &str, args: &[&str]) -> Value {
    let text = ok(url, args);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("emq {args:?}: {e}:\n{text}"))
}

#[test]
fn batches_listed_shown_and_cancelled() {
    let server = RedisServer::start().expect("redis-server");
    let url = server.url();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (q, older, newer) = rt.block_on(async {
        let q = Queue::connect(ConnectOptions::new(url.as_str()), "imports")
            .await
            .unwrap();
        let older = q
            .batch(BatchOptions {
                description: Some("nightly import".into()),
                ..BatchOptions::default()
            })
            .await
            .unwrap();
        for n in 0..3 {
            older
                .add("imports", "row", json!({ "n": n }), JobOptions::default())
                .await
                .unwrap();
        }
        older.seal().await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
        let newer = q.batch(BatchOptions::default()).await.unwrap();
        newer
            .add("imports", "row", json!({ "n": 9 }), JobOptions::default())
            .await
            .unwrap();
        (q, older.id().to_string(), newer.id().to_string())
    });

    let page = json_of(&url, &["batches", "imports", "--json"]);
    assert_eq!(page["total"], 2, "{page}");
    assert_eq!(page["batches"][0]["id"], newer.as_str(), "newest first");
    assert_eq!(page["batches"][1]["id"], older.as_str());
    assert_eq!(page["batches"][1]["description"], "nightly import");
    assert_eq!(page["batches"][1]["total"], 3);
    assert_eq!(page["batches"][1]["pending"], 3);
    assert_eq!(page["batches"][1]["sealed"], true);
    assert!(page["batches"][1]["created_ms"].as_u64().unwrap() > 0);

    let table = ok(&url, &["batches", "imports"]);
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("ID"), "{table}");
    assert!(lines[0].contains("PROGRESS"), "{table}");
    assert!(
        lines[2].contains(&older) && lines[2].contains("running"),
        "{table}"
    );
    assert!(lines[2].contains("0/3 done, 0 failed (0%)"), "{table}");
    assert!(
        lines[1].contains(&newer) && lines[1].contains("open"),
        "{table}"
    );
    assert!(table.contains("2 of 2 batches"), "{table}");

    let one = ok(&url, &["batches", "imports", &older]);
    assert!(one.contains("nightly import"), "{one}");
    assert!(one.contains("3 in all: 3 pending"), "{one}");

    let cancelled = json_of(&url, &["batches", "imports", &older, "--cancel", "--json"]);
    assert_eq!(cancelled["cancelled"], true, "{cancelled}");
    assert_eq!(cancelled["cancelled_jobs"], 3, "{cancelled}");
    let page = json_of(
        &url,
        &[
            "batches", "imports", "--json", "--offset", "1", "--limit", "1",
        ],
    );
    assert_eq!(page["batches"].as_array().unwrap().len(), 1);
    assert_eq!(page["batches"][0]["cancelled"], true);

    for bad in [
        vec!["batches", "imports", "nope"],
        vec!["batches", "a:b"],
        vec!["batches", "imports", "--limit", "0"],
    ] {
        let out = emq(&url, &bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {out:?}");
    }
    rt.block_on(q.close()).unwrap();
}
