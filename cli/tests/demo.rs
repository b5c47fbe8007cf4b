//! `emq demo`: runs jobs through Rust workers and passes its own audit, against a given server and
//! against the embedded default.

use emq_harness::RedisServer;
use std::process::{Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

const EMQ: &str = env!("CARGO_BIN_EXE_emq");

/// The demo runs real work; a debug build on a busy machine needs a while.
const DEMO_TIMEOUT: Duration = Duration::from_secs(180);

/// Runs `emq args…` with no `EMQ_URL`, bounded by [`DEMO_TIMEOUT`].
fn emq(args: &[&str]) -> Output {
    let mut child = Command::new(EMQ)
        .args(args)
        .env_remove("EMQ_URL")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn emq");
    let deadline = Instant::now() + DEMO_TIMEOUT;
    loop {
        if child.try_wait().expect("try_wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("emq {args:?} did not finish within {DEMO_TIMEOUT:?}");
        }
        thread::sleep(Duration::from_millis(20));
    }
}

fn check_passed(out: &Output, jobs: u64) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("audit: ok"), "{stdout}");
    let row = stdout
        .lines()
        .find(|l| l.starts_with("rust"))
        .unwrap_or_else(|| panic!("no rust row:\n{stdout}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[1], jobs.to_string(), "{row}");
    assert!(
        stderr.contains("python/node workers: not built in this command yet"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("demo: {jobs}/{jobs} completed")),
        "{stderr}"
    );
}

#[test]
fn demo_on_a_given_server_passes_its_audit() {
    let server = RedisServer::start().expect("redis-server");
    let out = emq(&["demo", "--url", &server.url(), "--jobs", "3000"]);
    check_passed(&out, 3000);
    // A second run starts from empty queues, so it passes too.
    let again = emq(&[
        "--url",
        &server.url(),
        "demo",
        "--jobs",
        "300",
        "--concurrency",
        "4",
    ]);
    check_passed(&again, 300);
}

#[test]
fn demo_on_the_embedded_server_passes_its_audit() {
    let out = emq(&["demo", "--jobs", "500"]);
    check_passed(&out, 500);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("started a private redis-server"),
        "{stderr}"
    );
}

#[test]
fn demo_rejects_zero_jobs() {
    let out = emq(&["demo", "--jobs", "0", "--url", "redis://127.0.0.1:1"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("error[invalid_option]"));
}
