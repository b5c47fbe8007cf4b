//! A worker's own events ([`emq::WorkerEvent`], `WorkerBuilder::on_event`) on a real server:
//! completed and failed once recorded (with `will_retry`), progress, a stalled job the sweep
//! recovered, and the final stats kept after close (they count jobs: `failed` once per job failed
//! for good, `retried` once per run that goes back for another attempt).

mod common;

use common::{audit_ok, queue_on, wait_until};

use emq::{HandlerError, JobContext, JobOptions, Worker, WorkerEvent, WorkerOptions};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn fast() -> WorkerOptions {
    WorkerOptions {
        block_timeout: Duration::from_millis(500),
        ..WorkerOptions::default()
    }
}

type Seen = Arc<Mutex<Vec<WorkerEvent>>>;

fn recorder() -> (Seen, emq::WorkerEventHook) {
    let seen: Seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    (seen, Arc::new(move |e| s.lock().unwrap().push(e)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outcomes_and_progress_are_reported_once_recorded() {
    let store = common::standalone().await;
    let q = queue_on(&store, "wev").await;
    let (seen, hook) = recorder();
    let w = Worker::builder(q.clone())
        .options(fast())
        .on_event(hook)
        .handler(|job: JobContext| async move {
            if job.job().name == "bad" {
                return Err(HandlerError::new(format!(
                    "run {}",
                    job.job().attempts_made + 1
                )));
            }
            job.progress(json!(50)).await?;
            Ok(json!({"n": job.data().clone()}))
        })
        .run()
        .unwrap();
    let aborter = w.aborter();
    let good = q
        .add("good", json!(7), JobOptions::default())
        .await
        .unwrap();
    let bad = q
        .add(
            "bad",
            json!(null),
            JobOptions {
                attempts: 2,
                ..JobOptions::default()
            },
        )
        .await
        .unwrap();
    wait_until("three outcomes", Duration::from_secs(20), || async {
        seen.lock()
            .unwrap()
            .iter()
            .filter(|e| {
                matches!(
                    e,
                    WorkerEvent::Completed { .. } | WorkerEvent::Failed { .. }
                )
            })
            .count()
            == 3
    })
    .await;
    w.close().await.unwrap();
    let seen = seen.lock().unwrap().clone();
    let kinds: Vec<&str> = seen.iter().map(|e| e.kind()).collect();
    assert_eq!(kinds.len(), 4, "{kinds:?}");
    let mut fails = Vec::new();
    for e in &seen {
        match e {
            WorkerEvent::Completed { job, result } => {
                assert_eq!(job.id, good);
                assert_eq!(result, &json!({"n": 7}));
            }
            WorkerEvent::Progress { job, value } => {
                assert_eq!((job.id, value), (good, &json!(50)));
            }
            WorkerEvent::Failed {
                job,
                failure,
                will_retry,
            } => {
                assert_eq!(job.id, bad);
                fails.push((failure.code.clone(), failure.message.clone(), *will_retry));
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(
        fails,
        [
            ("handler_failed".to_string(), "run 1".to_string(), true),
            ("handler_failed".to_string(), "run 2".to_string(), false),
        ]
    );
    let p = seen.iter().position(|e| e.kind() == "progress").unwrap();
    let c = seen.iter().position(|e| e.kind() == "completed").unwrap();
    assert!(p < c, "{kinds:?}");
    assert_eq!(
        q.get(good).await.unwrap().unwrap().state,
        Some(emq::JobState::Completed)
    );
    // The figures stay readable after close; they count jobs: the bad one failed for good once,
    // after one retried run.
    let stats = aborter.stats();
    assert_eq!(
        (stats.completed, stats.failed, stats.retried),
        (1, 1, 1),
        "{stats:?}"
    );
    audit_ok(&q).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sweep_reports_the_stalled_job_it_recovered() {
    let store = common::standalone().await;
    let q = queue_on(&store, "wev-stall").await;
    let id = q
        .add("lost", json!(1), JobOptions::default())
        .await
        .unwrap();
    // A worker that vanishes mid-job: aborted, nothing released, a short lease.
    let gone = Worker::builder(q.clone())
        .options(WorkerOptions {
            lease: Duration::from_millis(300),
            ..fast()
        })
        .handler(|_job: JobContext| async move {
            tokio::time::sleep(Duration::from_secs(60)).await;
            Ok(json!(null))
        })
        .run()
        .unwrap();
    wait_until("the job to start", Duration::from_secs(10), || async {
        gone.running() == 1
    })
    .await;
    gone.aborter().abort();
    gone.close().await.unwrap();
    let (seen, hook) = recorder();
    let w = Worker::builder(q.clone())
        .options(WorkerOptions {
            stalled_interval: Duration::from_millis(100),
            ..fast()
        })
        .on_event(hook)
        .handler(|_job: JobContext| async move { Ok(json!("again")) })
        .run()
        .unwrap();
    wait_until("the stalled event", Duration::from_secs(20), || async {
        seen.lock()
            .unwrap()
            .iter()
            .any(|e| matches!(e, WorkerEvent::Stalled { job_id, .. } if *job_id == id))
    })
    .await;
    wait_until("the job to complete", Duration::from_secs(20), || async {
        q.get(id).await.unwrap().unwrap().state == Some(emq::JobState::Completed)
    })
    .await;
    w.close().await.unwrap();
    let to = seen.lock().unwrap().iter().find_map(|e| match e {
        WorkerEvent::Stalled { to, .. } => Some(to.clone()),
        _ => None,
    });
    assert_eq!(to.as_deref(), Some("wait"));
    audit_ok(&q).await;
}

/// `stats().failed` counts jobs failed for good, `retried` the runs that went back for another
/// attempt: a job with `attempts = 3` that always fails is 1 failed and 2 retried (before the fix,
/// `failed` counted every failed run: 3).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_count_a_job_failed_for_good_once_and_its_retries_apart() {
    let store = common::standalone().await;
    let q = queue_on(&store, "wev-stats").await;
    let w = Worker::builder(q.clone())
        .options(fast())
        .handler(|_job: JobContext| async move {
            Err::<serde_json::Value, _>(HandlerError::new("always fails"))
        })
        .run()
        .unwrap();
    let id = q
        .add(
            "bad",
            json!(null),
            JobOptions {
                attempts: 3,
                ..JobOptions::default()
            },
        )
        .await
        .unwrap();
    wait_until(
        "the job to fail for good",
        Duration::from_secs(20),
        || async { q.get(id).await.unwrap().unwrap().state == Some(emq::JobState::Failed) },
    )
    .await;
    let aborter = w.aborter();
    w.close().await.unwrap();
    let stats = aborter.stats();
    assert_eq!(q.get(id).await.unwrap().unwrap().attempts_made, 3);
    assert_eq!(
        (stats.completed, stats.failed, stats.retried),
        (0, 1, 2),
        "{stats:?}"
    );
    audit_ok(&q).await;
}
