//! A queue's job defaults (core/src/job_defaults.rs) on real servers (standalone and a 3-master
//! cluster, guarded): a job added with no options runs with the queue's attempts, backoff and
//! retention while its record stores no options; a job's own options win; the defaults read back
//! exactly, are removed by empty ones, reach every partition of a partitioned queue, and a worker
//! already running sees a change; bad defaults are typed errors that change nothing.

mod common;

use common::{audit_ok, queue_on, unique, wait_until};

use emq::spec::{BackoffSpec, JobSpec, Millis, RemovalSpec};
use emq::{
    Backoff, ErrorCode, HandlerError, JobContext, JobDefaults, JobOptions, JobState, Queue,
    QueueOptions, Removal, Store, Worker, WorkerHandle,
};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn defaults() -> JobDefaults {
    JobDefaults {
        attempts: Some(3),
        backoff: Some(Backoff::Fixed { delay_ms: 20 }),
        remove_on_complete: Some(Removal::Now),
        ..Default::default()
    }
}

/// A worker whose handler fails the first `fail_first` runs of each job, counting the runs and
/// noting the attempts each run saw.
fn flaky(
    q: &Queue,
    fail_first: u32,
    runs: Arc<AtomicU32>,
    seen: Arc<Mutex<Vec<u32>>>,
) -> WorkerHandle {
    let per_job: Arc<Mutex<HashMap<String, u32>>> = Arc::default();
    Worker::builder(q.clone())
        .handler(move |job: JobContext| {
            let (runs, seen, per_job) = (runs.clone(), seen.clone(), per_job.clone());
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                seen.lock().unwrap().push(job.job().attempts);
                let n = {
                    let mut m = per_job.lock().unwrap();
                    let n = m.entry(job.job().id.to_string()).or_insert(0);
                    *n += 1;
                    *n
                };
                if n <= fail_first {
                    Err::<Value, _>(HandlerError::new("not yet"))
                } else {
                    Ok(Value::Null)
                }
            }
        })
        .run()
        .unwrap()
}

async fn record(store: &Store, q: &Queue, id: emq::JobId) -> HashMap<String, String> {
    redis::cmd("HGETALL")
        .arg(q.name().job_key(id, emq::JobPart::Record))
        .query_async(&mut store.conn())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_without_options_runs_with_the_queue_defaults() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "defaults").await;
        q.set_job_defaults(&defaults()).await.unwrap();
        assert_eq!(
            q.job_defaults().await.unwrap(),
            defaults(),
            "{topology}: reads back"
        );
        let plain = q
            .add("j", serde_json::json!(1), JobOptions::default())
            .await
            .unwrap();
        let raw = record(&store, &q, plain).await;
        assert!(
            !raw.contains_key("opts"),
            "{topology}: no options stored: {raw:?}"
        );
        assert!(!raw.contains_key("attempts"), "{topology}: {raw:?}");

        let runs = Arc::new(AtomicU32::new(0));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let w = flaky(&q, 2, runs.clone(), seen.clone());
        wait_until("three runs and gone", Duration::from_secs(20), || async {
            q.get(plain).await.unwrap().is_none()
        })
        .await;
        w.close().await.unwrap();
        assert_eq!(
            runs.load(Ordering::SeqCst),
            3,
            "{topology}: retried twice (attempts 3)"
        );
        assert_eq!(
            *seen.lock().unwrap(),
            vec![3, 3, 3],
            "{topology}: the handler sees attempts 3"
        );
        let c = q.counts().await.unwrap();
        assert_eq!(
            c.get(JobState::Completed),
            0,
            "{topology}: removed on complete"
        );
        assert_eq!(c.get(JobState::Failed), 0);
        audit_ok(&q).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_s_own_options_win_over_the_defaults() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "defaults-own").await;
        q.set_job_defaults(&defaults()).await.unwrap();
        let own = q
            .add(
                "j",
                serde_json::json!(2),
                JobOptions {
                    attempts: 2,
                    remove_on_fail: Removal::Keep,
                    ..JobOptions::default()
                },
            )
            .await
            .unwrap();
        let runs = Arc::new(AtomicU32::new(0));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let w = flaky(&q, 10, runs.clone(), seen.clone());
        wait_until("failed for good", Duration::from_secs(20), || async {
            q.get(own).await.unwrap().and_then(|j| j.state) == Some(JobState::Failed)
        })
        .await;
        w.close().await.unwrap();
        assert_eq!(
            runs.load(Ordering::SeqCst),
            2,
            "{topology}: its own 2 attempts"
        );
        assert_eq!(*seen.lock().unwrap(), vec![2, 2]);
        audit_ok(&q).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_worker_sees_changed_defaults_and_empty_ones_remove_them() {
    let store = common::standalone().await;
    let q = queue_on(&store, "defaults-change").await;
    let runs = Arc::new(AtomicU32::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let w = flaky(&q, 10, runs.clone(), seen.clone());
    q.set_job_defaults(&JobDefaults {
        attempts: Some(4),
        ..Default::default()
    })
    .await
    .unwrap();
    // within DEFAULTS_REFRESH (2 s) the worker has read them
    tokio::time::sleep(emq::job_defaults::DEFAULTS_REFRESH + Duration::from_millis(500)).await;
    let id = q
        .add("j", serde_json::json!(3), JobOptions::default())
        .await
        .unwrap();
    wait_until("failed for good", Duration::from_secs(20), || async {
        q.get(id).await.unwrap().and_then(|j| j.state) == Some(JobState::Failed)
    })
    .await;
    assert_eq!(runs.load(Ordering::SeqCst), 4);
    q.set_job_defaults(&JobDefaults::default()).await.unwrap();
    assert!(q.job_defaults().await.unwrap().is_empty());
    let meta: Option<String> = redis::cmd("HGET")
        .arg(&q.keys().meta)
        .arg("defaults")
        .query_async(&mut store.conn())
        .await
        .unwrap();
    assert_eq!(meta, None, "empty defaults leave no field");
    w.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn defaults_reach_every_partition_and_bad_ones_are_typed() {
    let store = common::cluster().await;
    let minter = Arc::new(emq::IdMinter::start(store.clone()).await.unwrap());
    let q = Queue::open(
        store.clone(),
        minter,
        &unique("defaults-parts"),
        QueueOptions {
            partitions: Some(3),
        },
    )
    .await
    .unwrap();
    q.set_job_defaults(&defaults()).await.unwrap();
    for p in q.partitions().unwrap() {
        assert_eq!(p.job_defaults().await.unwrap(), defaults());
    }
    let spec = JobSpec {
        attempts: Some(5.0),
        backoff: Some(BackoffSpec {
            kind: "exponential".into(),
            delay: Some(Millis(100.0)),
            max: Some(Millis(1000.0)),
        }),
        remove_on_fail: Some(RemovalSpec::Count(10.0)),
        ..Default::default()
    };
    let d = JobDefaults::from_spec(spec).unwrap();
    q.set_job_defaults(&d).await.unwrap();
    assert_eq!(q.job_defaults().await.unwrap(), d);
    for bad in [
        JobSpec {
            attempts: Some(0.5),
            ..Default::default()
        },
        JobSpec {
            jitter: Some(2.0),
            ..Default::default()
        },
        JobSpec {
            group: Some("g".into()),
            ..Default::default()
        },
    ] {
        let e = JobDefaults::from_spec(bad.clone()).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidOption, "{bad:?}");
    }
    assert_eq!(
        q.job_defaults().await.unwrap(),
        d,
        "unchanged by the refusals"
    );
    q.obliterate(true).await.unwrap();
}
