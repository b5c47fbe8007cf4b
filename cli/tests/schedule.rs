//! `emq schedule`, `emq schedulers`, `emq unschedule`, and `emq add`'s dedup and group options,
//! against a real server.

use emq_harness::RedisServer;
use std::process::{Command, Output};

const EMQ: &str = env!("CARGO_BIN_EXE_emq");

fn emq(url: &str, args: &[&str]) -> Output {
    Command::new(EMQ)
        .arg("--url")
        .arg(url)
        .args(args)
        .env_remove("EMQ_URL")
        .output()
        .expect("run emq")
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

#[test]
fn schedulers_are_created_listed_and_removed() {
    let server = RedisServer::start().unwrap();
    let url = server.url();
    let out = emq(
        &url,
        &[
            "schedule",
            "sq",
            "nightly",
            "--name",
            "report",
            "--cron",
            "0 3 * * *",
            "--tz",
            "Europe/Berlin",
            "--data",
            r#"{"kind":"daily"}"#,
        ],
    );
    assert_eq!(ok(&out).trim(), "created scheduler nightly on sq");
    let out = emq(
        &url,
        &[
            "schedule",
            "sq",
            "tick",
            "--name",
            "t",
            "--every-ms",
            "60000",
            "--limit",
            "5",
        ],
    );
    assert_eq!(ok(&out).trim(), "created scheduler tick on sq");
    let out = emq(
        &url,
        &[
            "schedule",
            "sq",
            "tick",
            "--name",
            "t",
            "--every-ms",
            "30000",
        ],
    );
    assert_eq!(ok(&out).trim(), "updated scheduler tick on sq");

    let listed = ok(&emq(&url, &["schedulers", "sq", "--json"]));
    let rows: Vec<serde_json::Value> = listed
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2, "{listed}");
    let nightly = rows.iter().find(|r| r["id"] == "nightly").unwrap();
    assert_eq!(nightly["cron"], "0 3 * * *");
    assert_eq!(nightly["tz"], "Europe/Berlin");
    let next = nightly["next_in_ms"].as_u64().unwrap();
    assert!(
        next > 0 && next <= 25 * 3_600_000,
        "next run within a day: {next}"
    );
    let tick = rows.iter().find(|r| r["id"] == "tick").unwrap();
    assert_eq!(tick["every_ms"], 30_000);
    let table = ok(&emq(&url, &["schedulers", "sq"]));
    assert!(table.contains("0 3 * * * (Europe/Berlin)"), "{table}");

    assert_eq!(
        ok(&emq(&url, &["unschedule", "sq", "tick"])).trim(),
        "removed scheduler tick from sq"
    );
    assert_eq!(
        ok(&emq(&url, &["unschedule", "sq", "tick"])).trim(),
        "no scheduler tick on sq"
    );

    let bad = emq(
        &url,
        &[
            "schedule",
            "sq",
            "x",
            "--name",
            "n",
            "--cron",
            "* * * * *",
            "--tz",
            "Mars/Base",
        ],
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("error[invalid_option]"));
    let neither = emq(&url, &["schedule", "sq", "x", "--name", "n"]);
    assert_eq!(neither.status.code(), Some(2));
    let rows = ok(&emq(&url, &["schedulers", "sq", "--json"]));
    assert_eq!(
        rows.lines().count(),
        1,
        "nothing stored by a refused upsert: {rows}"
    );
}

#[test]
fn add_takes_dedup_and_group_options() {
    let server = RedisServer::start().unwrap();
    let url = server.url();
    let a = ok(&emq(
        &url,
        &[
            "add", "dq", "charge", "--dedup", "order-9", "--group", "tenant-1",
        ],
    ));
    let b = ok(&emq(&url, &["add", "dq", "charge", "--dedup", "order-9"]));
    assert_eq!(a, b, "a live dedup key returns the first job");
    let job: serde_json::Value =
        serde_json::from_str(&ok(&emq(&url, &["job", "dq", a.trim(), "--json"]))).unwrap();
    assert_eq!(job["options"]["group"], "tenant-1", "{job}");
    let bad = emq(&url, &["add", "dq", "x", "--dedup-ttl-ms", "100"]);
    assert_eq!(bad.status.code(), Some(2), "a TTL needs a key");
    assert!(String::from_utf8_lossy(&bad.stderr).contains("error[invalid_option]"));
}
