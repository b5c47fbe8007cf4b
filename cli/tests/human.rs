//! Times for people in the text output of `emq job`, `jobs`, `stats`, `events` and `schedulers`
//! (ISO 8601 UTC plus a relative form, durations in units), while `--json` keeps raw ms.

use emq::{ConnectOptions, JobOptions, Queue};
use emq_harness::RedisServer;
use serde_json::{json, Value};
use std::process::Output;
use std::time::Duration;

mod common;

fn emq(url: &str, args: &[&str]) -> Output {
    let mut all = vec!["--url", url];
    all.extend_from_slice(args);
    common::run_emq(&all, &[], Duration::from_secs(30))
}

fn ok(url: &str, args: &[&str]) -> String {
    let out = emq(url, args);
    assert!(out.status.success(), "emq {args:?}: {out:?}");
    String::from_utf8(out.stdout).expect("utf-8")
}

/// Whether `s` starts with an ISO 8601 UTC stamp `YYYY-MM-DDTHH:MM:SS[.mmm]Z`.
fn starts_with_iso(s: &str) -> bool {
    let b = s.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| r.clone().all(|i| b.get(i).is_some_and(u8::is_ascii_digit));
    b.len() >= 20
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19)
        && (b[19] == b'Z' || (b[19] == b'.' && digits(20..23) && b.get(23) == Some(&b'Z')))
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn text_shows_iso_and_relative_times_json_keeps_ms() {
    let server = RedisServer::start().expect("redis-server");
    let url = server.url();
    let (id, created_ms) = rt().block_on(async {
        let q = Queue::connect(ConnectOptions::new(url.as_str()), "times")
            .await
            .unwrap();
        let id = q
            .add("mail", json!({}), JobOptions::default())
            .await
            .unwrap();
        let created = q.get(id).await.unwrap().unwrap().created_ms;
        q.close().await.unwrap();
        (id.to_string(), created)
    });
    let text = ok(&url, &["job", "times", &id]);
    let created = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("created"))
        .unwrap_or_else(|| panic!("no created line:\n{text}"))
        .trim();
    assert!(starts_with_iso(created), "{created:?}");
    assert!(
        created.ends_with("ago)") || created.ends_with("(just now)"),
        "{created}"
    );
    assert!(
        !text.contains(&created_ms.to_string()),
        "raw ms in text:\n{text}"
    );
    let json: Value = serde_json::from_str(&ok(&url, &["job", "times", &id, "--json"])).unwrap();
    assert_eq!(json["created_ms"], created_ms, "--json keeps the raw ms");

    let table = ok(&url, &["jobs", "times", "--state", "waiting"]);
    let row = table
        .lines()
        .find(|l| l.starts_with(&id))
        .expect("the job's row");
    let created_cell = row.split_whitespace().nth(3).expect("a created cell");
    assert!(starts_with_iso(created_cell), "{row}");
    assert!(table.lines().next().unwrap().contains("CREATED"), "{table}");

    let stats = ok(&url, &["stats", "times"]);
    let oldest = stats
        .lines()
        .find(|l| l.starts_with("oldest waiting job: "))
        .expect("the oldest line");
    assert!(oldest.contains(" old (added "), "{oldest}");
    let added = oldest.split("(added ").nth(1).unwrap();
    assert!(starts_with_iso(added), "{oldest}");

    let events = ok(&url, &["events", "times"]);
    let line = events
        .lines()
        .find(|l| l.ends_with(&format!("added {id}")))
        .expect("added");
    assert!(starts_with_iso(line), "{line}");
    let ev: Value = serde_json::from_str(
        ok(&url, &["events", "times", "--json"])
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert!(ev["stream_id"].as_str().unwrap().contains('-'), "{ev}");

    ok(
        &url,
        &[
            "schedule",
            "times",
            "tick",
            "--every-ms",
            "120000",
            "--name",
            "t",
        ],
    );
    let list = ok(&url, &["schedulers", "times"]);
    let row = list.lines().find(|l| l.starts_with("tick")).expect("tick");
    assert!(row.contains("every 2m"), "{list}");
    assert!(!row.contains("120000"), "{list}");
}
