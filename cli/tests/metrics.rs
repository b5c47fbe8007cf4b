//! `emq metrics` against a real server: the printed Prometheus text, and the `--listen` endpoint
//! scraped over HTTP and parsed.

use emq::{ConnectOptions, JobOptions, Queue};
use emq_harness::RedisServer;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

const EMQ: &str = env!("CARGO_BIN_EXE_emq");

/// Every sample line of a Prometheus text body, as (series, value).
fn samples(body: &str) -> Vec<(String, f64)> {
    body.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (series, value) = l.rsplit_once(' ').expect("series value");
            (series.to_string(), value.parse().expect("a number"))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_print_and_serve() {
    let server = RedisServer::start().unwrap();
    let q = Queue::connect(ConnectOptions::new(server.url()), "mx")
        .await
        .unwrap();
    for i in 0..3 {
        q.add("n", serde_json::json!(i), JobOptions::default())
            .await
            .unwrap();
    }
    let once = Command::new(EMQ)
        .args(["--url", &server.url(), "metrics", "mx"])
        .env_remove("EMQ_URL")
        .output()
        .unwrap();
    assert!(once.status.success());
    let text = String::from_utf8(once.stdout).unwrap();
    let s = samples(&text);
    assert!(
        s.contains(&("emq_jobs{queue=\"mx\",state=\"waiting\"}".to_string(), 3.0)),
        "{text}"
    );
    assert!(
        s.contains(&("emq_jobs_added_total{queue=\"mx\"}".to_string(), 3.0)),
        "{text}"
    );

    let mut child = Command::new(EMQ)
        .args([
            "--url",
            &server.url(),
            "metrics",
            "mx",
            "--listen",
            "127.0.0.1:0",
        ])
        .env_remove("EMQ_URL")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let addr = first
        .trim()
        .strip_prefix("listening on http://")
        .and_then(|a| a.strip_suffix("/metrics"))
        .expect("the address line")
        .to_string();
    q.add("n", serde_json::json!(9), JobOptions::default())
        .await
        .unwrap();
    let mut sock = std::net::TcpStream::connect(&addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    sock.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut reply = String::new();
    sock.read_to_string(&mut reply).unwrap();
    let _ = Command::new("kill").arg(child.id().to_string()).status();
    let status = child.wait().unwrap();
    assert!(status.success(), "stops cleanly on SIGTERM");
    let (head, body) = reply.split_once("\r\n\r\n").expect("an HTTP reply");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("text/plain"));
    let s = samples(body);
    assert!(
        s.contains(&("emq_jobs{queue=\"mx\",state=\"waiting\"}".to_string(), 4.0)),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_group_gauges_only_with_groups() {
    let server = RedisServer::start().unwrap();
    let q = Queue::connect(ConnectOptions::new(server.url()), "mg")
        .await
        .unwrap();
    for i in 0..2 {
        let o = JobOptions {
            group: Some("acme".into()),
            ..JobOptions::default()
        };
        q.add("n", serde_json::json!(i), o).await.unwrap();
    }
    let run = |extra: &[&str]| {
        let out = Command::new(EMQ)
            .args(["--url", &server.url(), "metrics", "mg"])
            .args(extra)
            .env_remove("EMQ_URL")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let plain = run(&[]);
    assert!(!plain.contains("emq_group_"), "{plain}");
    let text = run(&["--groups", "100"]);
    let s = samples(&text);
    assert!(
        s.contains(&(
            "emq_group_waiting{queue=\"mg\",group=\"acme\"}".to_string(),
            2.0
        )),
        "{text}"
    );
    assert!(
        s.contains(&(
            "emq_group_running{queue=\"mg\",group=\"acme\"}".to_string(),
            0.0
        )),
        "{text}"
    );
}
