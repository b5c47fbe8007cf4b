//! Worker processes under stress: one killed with SIGKILL mid-job (another completes the job after
//! the lease expires; the attempt is counted; the audit passes), and workers whose wall clocks run
//! two hours ahead and two hours behind (libfaketime) process delayed jobs when the server says they
//! are due, with leases that neither expire early nor late.

mod common;

use emq::{JobContext, JobOptions, Queue, Worker, WorkerOptions};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const CHILD_ENV: &str = "EMQ_TEST_WORKER_CHILD";

/// Body of a worker child process: `url|queue|lease_ms|sleep_ms`. Prints `STARTED <id>` when a job
/// starts and `DONE <id>` when it finishes; runs until killed or for 30 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let parts: Vec<&str> = spec.split('|').collect();
    let (url, name) = (parts[0], parts[1]);
    let lease_ms: u64 = parts[2].parse().unwrap();
    let sleep_ms: u64 = parts[3].parse().unwrap();
    // Optional: jobs leased ahead (prefetch); jobs named "quick" then take no time.
    let prefetch: Option<usize> = parts.get(4).map(|p| p.parse().unwrap());
    let q = Queue::connect(emq::ConnectOptions::new(url).guarded(true), name)
        .await
        .unwrap();
    let w = Worker::builder(q)
        .options(WorkerOptions {
            concurrency: 1,
            lease: Duration::from_millis(lease_ms),
            stalled_interval: Duration::from_millis(lease_ms / 2),
            block_timeout: Duration::from_millis(300),
            prefetch,
            ..WorkerOptions::default()
        })
        .handler(move |job: JobContext| async move {
            println!("STARTED {}", job.id());
            if job.job().name != "quick" {
                tokio::time::sleep(Duration::from_millis(sleep_ms)).await;
            }
            println!("DONE {}", job.id());
            Ok(json!({ "lease_lost": job.lease_lost() }))
        })
        .run()
        .unwrap();
    tokio::time::sleep(Duration::from_secs(30)).await;
    drop(w);
}

fn spawn_worker(spec: &str, faketime: Option<&str>) -> Child {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = match faketime {
        Some(offset) => {
            let mut c = Command::new("faketime");
            c.arg("-f").arg(offset).arg(&exe);
            // Skew the wall clock only: a process's monotonic clock is not what a skewed host has wrong.
            c.env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
            c
        }
        None => Command::new(&exe),
    };
    cmd.args(["--exact", "worker_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, spec)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn worker child")
}

/// Reads the child's stdout until a line holds `prefix`, within `limit`; returns it from there.
fn wait_line(child: &mut Child, prefix: &str, limit: Duration) -> String {
    let out = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    let prefix = prefix.to_string();
    let prefix_shown = prefix.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            // libtest may print "test worker_child ... " with no newline before the child's line.
            if let Some(at) = line.find(&prefix) {
                let _ = tx.send(line[at..].to_string());
                return;
            }
        }
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|e| panic!("the child did not print {prefix_shown:?} in time: {e}"))
}

async fn server_ms(q: &Queue) -> u64 {
    let (s, us): (u64, u64) = redis::cmd("TIME")
        .query_async(&mut q.store().conn())
        .await
        .unwrap();
    s * 1000 + us / 1000
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_job_loses_nothing() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    for (topology, store) in common::both().await {
        let urls = store.options().urls.join(",");
        let url = urls.split(',').next().unwrap().to_string();
        let name = common::unique("crash");
        let minter = std::sync::Arc::new(emq::IdMinter::start(store.clone()).await.unwrap());
        let q = Queue::with_store(store.clone(), minter, &name).unwrap();
        let id = q
            .add("work", json!({"n": 1}), JobOptions::default())
            .await
            .unwrap();
        let mut victim = spawn_worker(&format!("{url}|{name}|1000|60000"), None);
        let line = wait_line(&mut victim, "STARTED", Duration::from_secs(20));
        assert_eq!(line, format!("STARTED {id}"));
        unsafe {
            libc_kill(victim.id() as i32, 9);
        }
        victim.wait().unwrap();
        // A second worker process takes over once the lease expires.
        let mut rescuer = spawn_worker(&format!("{url}|{name}|1000|10"), None);
        let line = wait_line(&mut rescuer, "DONE", Duration::from_secs(20));
        assert_eq!(line, format!("DONE {id}"), "{topology}");
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            let c = q.counts().await.unwrap();
            if c.completed == 1 {
                break;
            }
            assert!(Instant::now() < until, "{topology}: completion recorded");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        rescuer.kill().ok();
        rescuer.wait().ok();
        let job = q.get(id).await.unwrap().unwrap();
        assert_eq!(job.stalls, 1, "{topology}");
        assert_eq!(
            job.attempts_made, 2,
            "{topology}: the killed run is counted"
        );
        let r = q.audit().await.unwrap();
        assert!(r.ok(), "{topology}: {:?}", r.problems);
        assert_eq!(q.counts().await.unwrap().total(), 1);
    }
}

/// Issue 16, defect 2: a worker SIGKILLed while it holds jobs leased ahead (prefetch). The job it
/// was running is charged (a stall and an attempt: a job that kills its worker must not loop
/// uncounted); the jobs that never reached its handler come back with their stalls and attempts
/// unchanged, and each one's next start is reported before its handler runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_worker_gives_back_its_prefetched_jobs_uncounted() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    for (topology, store) in common::both().await {
        let urls = store.options().urls.join(",");
        let url = urls.split(',').next().unwrap().to_string();
        let name = common::unique("strand");
        let minter = std::sync::Arc::new(emq::IdMinter::start(store.clone()).await.unwrap());
        let q = Queue::with_store(store.clone(), minter, &name).unwrap();
        // A quick first job proves jobs short, so the worker starts leasing ahead.
        let mut jobs = vec![emq::NewJob {
            name: "quick".into(),
            data: json!(0),
            options: JobOptions::default(),
        }];
        jobs.extend((1..=8).map(|i| emq::NewJob {
            name: "work".into(),
            data: json!(i),
            options: JobOptions::default(),
        }));
        let ids = q.add_bulk(jobs).await.unwrap();
        let quick = ids[0];
        let mut victim = spawn_worker(&format!("{url}|{name}|1000|60000|8"), None);
        let out = victim.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if let Some(at) = line.find("STARTED ") {
                    let _ = tx.send(line[at + 8..].trim().to_string());
                }
            }
        });
        let mut running = None;
        let until = Instant::now() + Duration::from_secs(20);
        while running.is_none() {
            let left = until.saturating_duration_since(Instant::now());
            let id = rx
                .recv_timeout(left)
                .expect("the victim started a job in time");
            if id != quick.to_string() {
                running = Some(emq::JobId::parse(&id).unwrap());
            }
        }
        let running = running.unwrap();
        // The victim holds the other seven ahead, and has reported the running one's start.
        let mut conn = q.store().conn();
        let until = Instant::now() + Duration::from_secs(5);
        loop {
            let leases: std::collections::HashMap<String, String> = redis::cmd("HGETALL")
                .arg(&q.keys().leases)
                .query_async(&mut conn)
                .await
                .unwrap();
            // Leased ahead: "<token>|<ms>|a"; started: "<token>|<ms>".
            let started = leases
                .get(&running.to_string())
                .is_some_and(|l| !l.ends_with("|a"));
            if leases.len() == 8 && started {
                break;
            }
            assert!(
                Instant::now() < until,
                "{topology}: expected 8 leases and the running one's start reported: {leases:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        unsafe {
            libc_kill(victim.id() as i32, 9);
        }
        victim.wait().unwrap();
        // A second worker recovers them once the leases expire, and records what each run saw.
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen2 = seen.clone();
        let rescuer = Worker::builder(q.clone())
            .options(WorkerOptions {
                concurrency: 4,
                lease: Duration::from_millis(1000),
                stalled_interval: Duration::from_millis(200),
                block_timeout: Duration::from_millis(300),
                ..WorkerOptions::default()
            })
            .handler(move |job: JobContext| {
                let seen = seen2.clone();
                async move {
                    let lease: Option<String> = redis::cmd("HGET")
                        .arg(&job.queue().keys().leases)
                        .arg(job.id().to_string())
                        .query_async(&mut job.queue().store().conn())
                        .await
                        .unwrap();
                    let j = job.job();
                    seen.lock().unwrap().push((
                        j.id,
                        j.attempts_made,
                        j.stalls,
                        lease.unwrap_or_default(),
                    ));
                    Ok(Value::Null)
                }
            })
            .run()
            .unwrap();
        let until = Instant::now() + Duration::from_secs(15);
        while q.counts().await.unwrap().completed < 9 {
            assert!(Instant::now() < until, "{topology}: all nine completed");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        rescuer.close().await.unwrap();
        let seen = seen.lock().unwrap().clone();
        assert_eq!(
            seen.len(),
            8,
            "{topology}: each recovered job ran once: {seen:?}"
        );
        for (id, atts, stalls, lease) in &seen {
            if *id == running {
                assert_eq!(
                    (*atts, *stalls),
                    (1, 1),
                    "{topology}: the killed run is charged"
                );
            } else {
                assert_eq!(
                    (*atts, *stalls),
                    (0, 0),
                    "{topology}: job {id} never started: it comes back uncounted"
                );
                // It came back uncounted once: its next start is on record before its handler runs.
                assert!(!lease.ends_with("|a"), "{topology}: {id}: lease {lease:?}");
            }
        }
        for id in &ids[1..] {
            let job = q.get(*id).await.unwrap().unwrap();
            let want = if *id == running { (2, 1) } else { (1, 0) };
            assert_eq!((job.attempts_made, job.stalls), want, "{topology}: {id}");
        }
        let r = q.audit().await.unwrap();
        assert!(r.ok(), "{topology}: {:?}", r.problems);
        let m = q.metrics().await.unwrap();
        assert_eq!(m.stalled, 1, "{topology}: one stall recorded");
    }
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skewed_worker_clocks_follow_the_server() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let store = common::standalone().await;
    let url = store.options().urls[0].clone();
    for offset in ["+2h", "-2h"] {
        let name = common::unique("clock");
        let minter = std::sync::Arc::new(emq::IdMinter::start(store.clone()).await.unwrap());
        let q = Queue::with_store(store.clone(), minter, &name).unwrap();
        // A 1 s lease and a 2.5 s job: only renewal on the server's clock keeps the lease.
        let mut worker = spawn_worker(&format!("{url}|{name}|1000|2500"), Some(offset));
        let added_at = server_ms(&q).await;
        let id = q
            .add(
                "later",
                json!({}),
                JobOptions {
                    delay_ms: 1_500,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        let line = wait_line(&mut worker, "DONE", Duration::from_secs(20));
        assert_eq!(line, format!("DONE {id}"), "{offset}");
        let until = Instant::now() + Duration::from_secs(10);
        let job = loop {
            let job = q.get(id).await.unwrap().unwrap();
            if job.finished_ms.is_some() {
                break job;
            }
            assert!(Instant::now() < until);
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        worker.kill().ok();
        worker.wait().ok();
        let started = job.processed_ms.unwrap();
        assert!(
            started >= added_at + 1_500,
            "{offset}: not before due ({} ms after add)",
            started - added_at
        );
        assert!(
            started <= added_at + 1_500 + 2_000,
            "{offset}: not late ({} ms after add)",
            started - added_at
        );
        assert_eq!(job.stalls, 0, "{offset}: the lease did not expire early");
        assert_eq!(job.result, Some(json!({"lease_lost": false})), "{offset}");
        assert!(
            job.id.unix_ms().abs_diff(added_at) < 2_000,
            "ids carry server time"
        );
        let r = q.audit().await.unwrap();
        assert!(r.ok(), "{offset}: {:?}", r.problems);
        let _ = Value::Null;
    }
}
