//! Per-job retention on a real server: `remove_on_complete` / `remove_on_fail` as a count or an
//! age (BullMQ's `{count, age}`), applied by the worker soon after the job finishes, and the
//! queue-wide default left alone when no job asks for its own. Every wait is bounded.

mod common;

use common::{audit_ok, queue_on, wait_until};

use emq::spec::{JobSpec, Millis, RemovalSpec, RetentionSpec};
use emq::{HandlerError, JobContext, JobOptions, Retention, Worker, WorkerOptions};
use serde_json::json;
use std::time::Duration;

/// A worker that keeps everything queue-wide and trims only every `trim` (so what goes is the
/// jobs' own retention).
fn keep_all(trim: Duration) -> WorkerOptions {
    WorkerOptions {
        block_timeout: Duration::from_millis(500),
        completed: Retention::KEEP_ALL,
        failed: Retention::KEEP_ALL,
        trim_interval: trim,
        ..WorkerOptions::default()
    }
}

fn opts(spec: JobSpec) -> JobOptions {
    JobOptions::try_from(spec).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobs_count_keeps_the_newest_completed_and_failed() {
    let store = common::standalone().await;
    let q = queue_on(&store, "ret-count").await;
    let keep2 = opts(JobSpec {
        remove_on_complete: Some(RemovalSpec::Count(2.0)),
        remove_on_fail: Some(RemovalSpec::Limits(RetentionSpec {
            count: Some(1.0),
            age: None,
        })),
        ..JobSpec::default()
    });
    let mut ids = Vec::new();
    for i in 0..6 {
        ids.push(q.add("ok", json!(i), keep2.clone()).await.unwrap());
    }
    let mut bad = Vec::new();
    for i in 0..3 {
        bad.push(q.add("bad", json!(i), keep2.clone()).await.unwrap());
    }
    // The periodic trim is an hour away: only the jobs' own retention can remove anything.
    let w = Worker::builder(q.clone())
        .options(keep_all(Duration::from_secs(3600)))
        .handler(|job: JobContext| async move {
            if job.job().name == "bad" {
                return Err(HandlerError::new("no"));
            }
            Ok(json!(1))
        })
        .run()
        .unwrap();
    wait_until(
        "completed trimmed to 2",
        Duration::from_secs(10),
        || async {
            let c = q.counts().await.unwrap();
            c.completed == 2 && c.failed == 1 && c.waiting == 0 && c.active == 0
        },
    )
    .await;
    // Within one worker at concurrency 1 the newest finished are the last added.
    for id in &ids[..4] {
        assert!(q.get(*id).await.unwrap().is_none(), "{id} was trimmed");
    }
    for id in &ids[4..] {
        assert!(q.get(*id).await.unwrap().is_some(), "{id} was kept");
    }
    assert!(q.get(bad[2]).await.unwrap().is_some());
    w.close().await.unwrap();
    audit_ok(&q).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobs_age_removes_it_once_it_is_that_old() {
    let store = common::standalone().await;
    let q = queue_on(&store, "ret-age").await;
    let young = opts(JobSpec {
        remove_on_complete: Some(RemovalSpec::Limits(RetentionSpec {
            count: None,
            age: Some(Millis(800.0)),
        })),
        ..JobSpec::default()
    });
    let w = Worker::builder(q.clone())
        .options(keep_all(Duration::from_millis(200)))
        .handler(|_job: JobContext| async move { Ok(json!(1)) })
        .run()
        .unwrap();
    let id = q.add("a", json!(1), young.clone()).await.unwrap();
    let r = q.wait(id, Duration::from_secs(10)).await.unwrap().unwrap();
    assert_eq!(r, json!(1));
    // Kept while younger than its age (several trims run meanwhile)...
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(q.get(id).await.unwrap().is_some(), "kept while young");
    // ...and removed once older, by the periodic trims.
    wait_until("the job to age out", Duration::from_secs(10), || async {
        q.get(id).await.unwrap().is_none()
    })
    .await;
    assert_eq!(q.counts().await.unwrap().completed, 0);
    w.close().await.unwrap();
    audit_ok(&q).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_jobs_retention_the_queue_wide_one_applies() {
    let store = common::standalone().await;
    let q = queue_on(&store, "ret-none").await;
    let w = Worker::builder(q.clone())
        .options(keep_all(Duration::from_millis(100)))
        .handler(|_job: JobContext| async move { Ok(json!(1)) })
        .run()
        .unwrap();
    let mut last = None;
    for i in 0..4 {
        last = Some(q.add("a", json!(i), JobOptions::default()).await.unwrap());
    }
    q.wait(last.unwrap(), Duration::from_secs(10))
        .await
        .unwrap()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(q.counts().await.unwrap().completed, 4, "keep-all keeps all");
    w.close().await.unwrap();
    audit_ok(&q).await;
}
