//! `emq jobs <q> --state failed` shows why each job failed (one line, truncated); `emq job` shows
//! the job's log lines.

use emq::{ConnectOptions, JobId, JobOptions, Queue};
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
fn failed_jobs_show_their_reason_and_a_job_its_logs() {
    let server = RedisServer::start().expect("redis-server");
    let url = server.url();
    let long = format!("line one\nline two {}", "x".repeat(300));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (short_id, long_id) = rt.block_on(async {
        let q = Queue::connect(ConnectOptions::new(url.as_str()), "fails")
            .await
            .unwrap();
        let a = q
            .add(
                "boom",
                json!({ "message": "disk full" }),
                JobOptions::default(),
            )
            .await
            .unwrap();
        let b = q
            .add("boom", json!({ "message": long }), JobOptions::default())
            .await
            .unwrap();
        q.log(a, "starting").await.unwrap();
        q.log(a, "second line").await.unwrap();
        q.close().await.unwrap();
        (a.to_string(), b.to_string())
    });
    // A real worker fails both (the CLI's echo worker fails jobs named by --fail-name).
    let done = ok(
        &url,
        &[
            "work",
            "fails",
            "--echo",
            "--fail-name",
            "boom",
            "--max-jobs",
            "2",
        ],
    );
    assert!(done.contains("\"failed\":2"), "{done}");

    let table = ok(&url, &["jobs", "fails", "--state", "failed"]);
    let header = table.lines().next().unwrap();
    assert!(header.contains("REASON"), "{table}");
    let row = |id: &str| {
        table
            .lines()
            .find(|l| l.starts_with(id))
            .unwrap_or_else(|| panic!("no row for {id}:\n{table}"))
            .to_string()
    };
    assert!(row(&short_id).contains("disk full"), "{table}");
    let long_row = row(&long_id);
    assert!(long_row.contains("line one line two xxx"), "{long_row}");
    assert!(long_row.ends_with('…'), "{long_row}");
    assert!(long_row.chars().count() < 200, "not truncated: {long_row}");
    assert_eq!(table.lines().count(), 3, "one line per job:\n{table}");
    // --json keeps the whole failure.
    let json: Value =
        serde_json::from_str(&ok(&url, &["jobs", "fails", "--state", "failed", "--json"])).unwrap();
    let whole = json
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["id"] == long_id.as_str())
        .unwrap()["failure"]
        .to_string();
    assert!(whole.contains(&"x".repeat(300)), "{whole}");

    let text = ok(&url, &["job", "fails", &short_id]);
    assert!(text.contains("disk full"), "{text}");
    let logs: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.trim().starts_with("logs"))
        .collect();
    assert!(logs.len() >= 3, "no logs section:\n{text}");
    assert!(logs[0].contains("2 lines"), "{text}");
    assert_eq!(logs[1].trim(), "starting", "{text}");
    assert_eq!(logs[2].trim(), "second line", "{text}");
    let json: Value =
        serde_json::from_str(&ok(&url, &["job", "fails", &short_id, "--json"])).unwrap();
    assert_eq!(json["logs"], json!(["starting", "second line"]), "{json}");

    // A job with no log lines says so.
    let text = ok(&url, &["job", "fails", &long_id]);
    assert!(text.contains("logs      none"), "{text}");
    JobId::parse(&long_id).unwrap();
}
