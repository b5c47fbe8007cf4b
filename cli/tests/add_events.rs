//! `emq add` and `emq events [--follow]` against a real server.

use emq_harness::RedisServer;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

const EMQ: &str = env!("CARGO_BIN_EXE_emq");

fn emq(url: &str, args: &[&str]) -> std::process::Output {
    Command::new(EMQ)
        .arg("--url")
        .arg(url)
        .args(args)
        .env_remove("EMQ_URL")
        .output()
        .expect("run emq")
}

#[test]
fn add_then_events_show_it_and_follow_sees_new_ones() {
    let server = RedisServer::start().unwrap();
    let url = server.url();
    let out = emq(&url, &["add", "ev", "greet", "--data", r#"{"who":"ü"}"#]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id = String::from_utf8(out.stdout).unwrap().trim().to_string();
    emq::JobId::parse(&id).expect("a minted id");

    let job = emq(&url, &["job", "ev", &id, "--json"]);
    let job: serde_json::Value = serde_json::from_slice(&job.stdout).unwrap();
    assert_eq!(job["data"], serde_json::json!({"who": "ü"}));
    assert_eq!(job["name"], "greet");

    let bad = emq(&url, &["add", "ev", "greet", "--data", "{nope"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("error[invalid_payload]"));
    // Payloads no reader could read back as written are refused too (issue 16, defect 1).
    let deep = format!("{}1{}", "[".repeat(128), "]".repeat(128));
    for data in [r#"{"s":"\ud800"}"#, "1180591620717411303424", deep.as_str()] {
        let bad = emq(&url, &["add", "ev", "greet", "--data", data]);
        assert_eq!(bad.status.code(), Some(2), "{data}");
        let err = String::from_utf8_lossy(&bad.stderr);
        assert!(err.contains("error[invalid_payload]"), "{data}: {err}");
    }

    let past = emq(&url, &["events", "ev"]);
    let text = String::from_utf8(past.stdout).unwrap();
    assert!(
        text.lines().any(|l| l.ends_with(&format!("added {id}"))),
        "{text}"
    );

    let mut follow = Command::new(EMQ)
        .args([
            "--url", &url, "events", "ev", "--follow", "--json", "--limit", "0",
        ])
        .env_remove("EMQ_URL")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = follow.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    // Give the follower time to subscribe, then add until it reports one (bounded).
    let mut seen = None;
    for _ in 0..50 {
        let out = emq(&url, &["add", "ev", "later"]);
        let id2 = String::from_utf8(out.stdout).unwrap().trim().to_string();
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(200)) {
            let e: serde_json::Value = serde_json::from_str(&line).unwrap();
            assert_eq!(e["kind"], "added");
            seen = Some((e["job_id"].as_str().unwrap().to_string(), id2));
            break;
        }
    }
    let _ = Command::new("kill").arg(follow.id().to_string()).status();
    assert!(follow.wait().unwrap().success(), "stops cleanly on SIGTERM");
    let (got, _) = seen.expect("the follower printed a new event");
    emq::JobId::parse(&got).unwrap();
}
