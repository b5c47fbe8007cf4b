//! Output piped into a reader that stops early (`emq jobs … | head -1`) ends the command quietly:
//! no broken-pipe panic, exit 0, and `events --follow` stops instead of writing into the void.

use emq::{ConnectOptions, JobOptions, NewJob, Queue};
use emq_harness::RedisServer;
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

mod common;

use common::EMQ;

/// More jobs than a pipe buffers (64 KiB) once listed, one line each.
const JOBS: usize = 3000;

fn seed(url: &str, queue: &str) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let q = Queue::connect(ConnectOptions::new(url), queue)
            .await
            .unwrap();
        let jobs: Vec<NewJob> = (0..JOBS)
            .map(|i| NewJob {
                name: "a-name-long-enough-to-fill-the-pipe".into(),
                data: json!({ "n": i }),
                options: JobOptions::default(),
            })
            .collect();
        q.add_bulk(jobs).await.unwrap();
        q.close().await.unwrap();
    });
}

fn spawn(args: &[&str]) -> Child {
    Command::new(EMQ)
        .args(args)
        .env_remove("EMQ_URL")
        .env_remove("EMQ_TEST_DEFAULT_URL")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn emq")
}

/// Reads one line of stdout, then closes it, as `head -1` does.
fn read_one_line_and_close(child: &mut Child) -> String {
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    reader.read_line(&mut line).expect("a line");
    drop(reader);
    line
}

/// Waits (bounded) for the child; kills it and fails the test past `limit`.
fn wait(child: &mut Child, limit: Duration) -> (ExitStatus, String) {
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("emq still runs {limit:?} after its stdout closed");
        }
        thread::sleep(Duration::from_millis(10));
    };
    let mut err = String::new();
    use std::io::Read;
    let _ = child.stderr.take().unwrap().read_to_string(&mut err);
    (status, err)
}

fn assert_quiet(status: ExitStatus, stderr: &str) {
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!stderr.to_lowercase().contains("broken pipe"), "{stderr}");
    assert!(status.success(), "{status}: {stderr}");
}

#[test]
fn listing_into_a_closed_pipe_ends_quietly() {
    let server = RedisServer::start().expect("redis-server");
    let url = server.url();
    seed(&url, "piped");
    let limit = JOBS.to_string();
    for args in [
        &["jobs", "piped", "--state", "waiting", "--limit", &limit][..],
        &[
            "jobs", "piped", "--state", "waiting", "--limit", &limit, "--json",
        ],
        &["events", "piped", "--limit", &limit],
    ] {
        let mut all = vec!["--url", url.as_str()];
        all.extend_from_slice(args);
        let mut child = spawn(&all);
        let first = read_one_line_and_close(&mut child);
        assert!(!first.is_empty(), "{args:?}");
        let (status, stderr) = wait(&mut child, Duration::from_secs(30));
        assert_quiet(status, &stderr);
    }
}

#[test]
fn events_follow_stops_when_its_reader_goes() {
    let server = RedisServer::start().expect("redis-server");
    let url = server.url();
    seed(&url, "followed");
    let mut child = spawn(&[
        "--url", &url, "events", "followed", "--follow", "--limit", "1",
    ]);
    let first = read_one_line_and_close(&mut child);
    assert!(first.contains("added"), "{first}");
    // New events reach the follower, whose next write finds the pipe closed. Bounded: 20 adds.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let q = rt
        .block_on(Queue::connect(
            ConnectOptions::new(url.as_str()),
            "followed",
        ))
        .unwrap();
    for _ in 0..20 {
        rt.block_on(q.add("more", json!({}), JobOptions::default()))
            .unwrap();
        thread::sleep(Duration::from_millis(250));
        if child.try_wait().unwrap().is_some() {
            break;
        }
    }
    rt.block_on(q.close()).unwrap();
    // `wait` fails the test if the follower is still running.
    let (status, stderr) = wait(&mut child, Duration::from_secs(5));
    assert_quiet(status, &stderr);
}
