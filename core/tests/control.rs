//! Worker control on real servers: graceful shutdown that is not a failure, timeouts that stop
//! the handler before any retry, cancel (waiting, delayed, running), and waiting for a result.
//! Every test ends with the audit.

mod common;

use common::{audit_ok, queue_on, wait_until};

use emq::{Interrupt, JobContext, JobOptions, JobState, Worker, WorkerOptions};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn fast() -> WorkerOptions {
    WorkerOptions {
        block_timeout: Duration::from_millis(500),
        ..WorkerOptions::default()
    }
}

/// A handler that runs until told to stop, noting why.
fn until_told(seen: Arc<Mutex<Vec<Interrupt>>>) -> impl emq::Handler {
    move |job: JobContext| {
        let seen = seen.clone();
        async move {
            let why = job.cancelled().await;
            seen.lock().unwrap().push(why);
            Ok(json!("told"))
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_after_grace_tells_the_handler_and_releases_uncounted() {
    let store = common::standalone().await;
    let q = queue_on(&store, "ctl-close").await;
    let id = q
        .add(
            "long",
            json!(1),
            JobOptions {
                attempts: 1,
                ..JobOptions::default()
            },
        )
        .await
        .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    // A Rust handler that ignores the interrupt: its future is dropped.
    let w = Worker::builder(q.clone())
        .options(fast())
        .handler(|_job: JobContext| async move {
            tokio::time::sleep(Duration::from_secs(60)).await;
            Ok(json!(null))
        })
        .run()
        .unwrap();
    wait_until("the job to start", Duration::from_secs(10), || async {
        w.running() == 1
    })
    .await;
    let began = Instant::now();
    let report = w.close_within(Duration::from_millis(300)).await.unwrap();
    assert!(
        began.elapsed() < Duration::from_secs(3),
        "{:?}",
        began.elapsed()
    );
    assert_eq!(report.released, 1);
    let job = q.get(id).await.unwrap().unwrap();
    assert_eq!(job.state, Some(JobState::Waiting));
    assert_eq!(job.attempts_made, 0, "a shutdown does not use an attempt");
    assert_eq!(job.stalls, 0);
    assert!(job.failure.is_none(), "{:?}", job.failure);

    // A handler that listens is told why, and the job is released all the same.
    let w = Worker::builder(q.clone())
        .options(fast())
        .handler(until_told(seen.clone()))
        .run()
        .unwrap();
    wait_until(
        "the job to start again",
        Duration::from_secs(10),
        || async { w.running() == 1 },
    )
    .await;
    let report = w.close_within(Duration::from_millis(200)).await.unwrap();
    assert_eq!(seen.lock().unwrap().as_slice(), &[Interrupt::Shutdown]);
    // Its handler returned Ok when told; once told, the shutdown decides: released, uncounted.
    let job = q.get(id).await.unwrap().unwrap();
    assert_eq!(report.released, 1, "{job:?}");
    assert_eq!(job.state, Some(JobState::Waiting));
    assert_eq!(job.attempts_made, 0);
    assert!(job.result.is_none());

    // And it runs to completion in another worker.
    let w = Worker::builder(q.clone())
        .options(fast())
        .handler(|_job: JobContext| async move { Ok(json!("done")) })
        .run()
        .unwrap();
    wait_until(
        "the released job to complete",
        Duration::from_secs(10),
        || async { q.get(id).await.unwrap().unwrap().state == Some(JobState::Completed) },
    )
    .await;
    w.close().await.unwrap();
    let job = q.get(id).await.unwrap().unwrap();
    assert_eq!(job.attempts_made, 1);
    assert_eq!(job.result, Some(json!("done")));
    audit_ok(&q).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_during_close_releases_nothing() {
    let store = common::standalone().await;
    let q = queue_on(&store, "ctl-abort").await;
    let id = q
        .add("long", json!(1), JobOptions::default())
        .await
        .unwrap();
    let w = Worker::builder(q.clone())
        .options(WorkerOptions {
            lease: Duration::from_millis(600),
            stalled_interval: Duration::from_millis(200),
            ..fast()
        })
        .handler(|_job: JobContext| async move {
            tokio::time::sleep(Duration::from_secs(60)).await;
            Ok(json!(null))
        })
        .run()
        .unwrap();
    wait_until("the job to start", Duration::from_secs(10), || async {
        w.running() == 1
    })
    .await;
    let aborter = w.aborter();
    let close = tokio::spawn(w.close_within(Duration::from_secs(30)));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let began = Instant::now();
    aborter.abort();
    let report = close.await.unwrap().unwrap();
    assert!(
        began.elapsed() < Duration::from_secs(2),
        "{:?}",
        began.elapsed()
    );
    assert_eq!(report.released, 0);
    assert_eq!(
        q.get(id).await.unwrap().unwrap().state,
        Some(JobState::Active),
        "left to its lease, as after a crash"
    );
    // Another worker recovers it when the lease expires (a stall) and runs it.
    let w2 = Worker::builder(q.clone())
        .options(WorkerOptions {
            stalled_interval: Duration::from_millis(200),
            ..fast()
        })
        .handler(|_job: JobContext| async move { Ok(json!("ok")) })
        .run()
        .unwrap();
    wait_until(
        "the recovered job to complete",
        Duration::from_secs(10),
        || async { q.get(id).await.unwrap().unwrap().state == Some(JobState::Completed) },
    )
    .await;
    w2.close().await.unwrap();
    audit_ok(&q).await;
}
