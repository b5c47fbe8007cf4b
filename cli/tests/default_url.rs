//! With no `--url` and no `EMQ_URL`, every command but `demo` and `dev` connects to
//! `redis://127.0.0.1:6379` and never starts a private server, so a job it adds is not lost.
//!
//! The tests cannot assume 6379 is free (or taken) on the machine, so most of them move the default
//! with `EMQ_TEST_DEFAULT_URL` (read by the same code path that falls back to 6379; see
//! cli/src/connect.rs). One test checks the real 6379 default, when nothing listens there.

use emq_harness::RedisServer;
use std::net::{TcpListener, TcpStream};
use std::process::Output;
use std::time::Duration;

mod common;

const RUN_TIMEOUT: Duration = Duration::from_secs(30);

fn emq(args: &[&str], env: &[(&str, &str)]) -> Output {
    common::run_emq(args, env, RUN_TIMEOUT)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A loopback port nothing listens on (bound, then released).
fn dead_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().unwrap().port()
}

fn assert_unavailable(out: &Output, url: &str) {
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    // The last line is the error; before it at most the note that the test override is in use.
    let last = stderr.lines().last().unwrap_or_default();
    assert!(last.starts_with("error[server_unavailable]: "), "{stderr}");
    assert!(stderr.lines().count() <= 2, "{stderr}");
    assert!(stderr.contains(url), "the URL tried is not named: {stderr}");
    assert!(
        stderr.contains("--url") && stderr.contains("EMQ_URL"),
        "{stderr}"
    );
    assert!(!stderr.contains("private redis-server"), "{stderr}");
    assert!(
        out.stdout.is_empty(),
        "printed output: {}",
        text(&out.stdout)
    );
}

#[test]
fn no_url_and_nothing_at_the_default_fails_and_adds_nothing() {
    let url = format!("redis://127.0.0.1:{}", dead_port());
    let env = [("EMQ_TEST_DEFAULT_URL", url.as_str())];
    for args in [
        &["add", "q", "greet", "--data", "{}"][..],
        &["stats", "q"],
        &["jobs", "q", "--state", "waiting"],
        &["events", "q"],
        &["audit", "q"],
        &["pause", "q"],
        &["metrics", "q"],
        &["groups", "q"],
        &["groups", "q", "pause", "g"],
        &["groups", "q", "weight", "g", "3"],
    ] {
        let out = emq(args, &env);
        assert_unavailable(&out, &url);
    }
}

#[test]
fn no_url_uses_the_default_server_and_the_job_stays() {
    let server = RedisServer::start().expect("redis-server");
    let url = server.url();
    let env = [("EMQ_TEST_DEFAULT_URL", url.as_str())];

    let out = emq(&["add", "kept", "greet", "--data", r#"{"n":1}"#], &env);
    assert!(out.status.success(), "{out:?}");
    let id = text(&out.stdout).trim().to_string();
    emq::JobId::parse(&id).expect("a job id");
    assert!(!text(&out.stderr).contains("redis-server"), "{out:?}");

    // A second command, again with no URL, finds the job on the same server.
    let out = emq(&["job", "kept", &id, "--json"], &env);
    assert!(out.status.success(), "{out:?}");
    let job: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(job["id"], id.as_str());
    assert_eq!(job["data"]["n"], 1);

    // And so does the server itself, asked with a given URL.
    let out = emq(&["--url", &url, "stats", "kept", "--json"], &[]);
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(stats["counts"]["waiting"], 1, "{stats}");
}

#[test]
fn a_given_url_or_emq_url_beats_the_default() {
    let server = RedisServer::start().expect("redis-server");
    let url = server.url();
    let dead = format!("redis://127.0.0.1:{}", dead_port());
    let moved = [("EMQ_TEST_DEFAULT_URL", dead.as_str())];
    let out = emq(&["--url", &url, "stats", "q"], &moved);
    assert!(out.status.success(), "{out:?}");
    let both = [("EMQ_TEST_DEFAULT_URL", dead.as_str()), ("EMQ_URL", &url)];
    let out = emq(&["stats", "q"], &both);
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn the_default_is_6379_on_loopback() {
    let help = text(&emq(&["--help"], &[]).stdout);
    assert!(help.contains("redis://127.0.0.1:6379"), "{help}");
    if TcpStream::connect_timeout(&"127.0.0.1:6379".parse().unwrap(), Duration::from_secs(1))
        .is_ok()
    {
        // Something listens on 6379: do not write to it. The override tests above cover the path.
        eprintln!("skipped the live check: something listens on 127.0.0.1:6379");
        return;
    }
    let out = emq(&["stats", "q"], &[]);
    assert_unavailable(&out, "redis://127.0.0.1:6379");
}
