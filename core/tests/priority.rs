//! A job's priority holds wherever it waits, on real servers: after a delay, a retry (at once or
//! after a backoff), a manual retry, a promote, a stall, a graceful release, a group hold, and for a
//! flow's parent once its children are done. Each of these once sent the job to wait, where it ran
//! in arrival order behind jobs of a lower priority. Every test ends with the audit, which checks
//! that no job with a priority sits in wait or paused and that each delayed one has its entry in
//! the delayed-priority hash.

mod common;

use common::{audit_ok, queue_on, wait_until};

use emq::{
    Backoff, ErrorCode, FlowJob, GroupRateLimit, HandlerError, JobContext, JobId, JobOptions,
    JobState, Moved, NewJob, Queue, Repeat, Schedule, Worker, WorkerHandle, WorkerOptions,
};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One job at a time, none prefetched, so the start order is the queue's order.
fn one_at_a_time() -> WorkerOptions {
    WorkerOptions {
        concurrency: 1,
        prefetch: Some(0),
        block_timeout: Duration::from_millis(500),
        ..WorkerOptions::default()
    }
}

fn prio(priority: u32) -> JobOptions {
    JobOptions {
        priority,
        ..JobOptions::default()
    }
}

async fn add(q: &Queue, name: &str, options: JobOptions) -> JobId {
    q.add(name, json!({}), options).await.unwrap()
}

async fn state(q: &Queue, id: JobId) -> Option<JobState> {
    q.get(id).await.unwrap().unwrap().state
}

/// Runs a worker over `q` that records each start, fails the first run of `fail_first` and sleeps
/// `work` in each run; returns it and the start order.
fn recording_worker(
    q: &Queue,
    fail_first: Option<JobId>,
    work: Duration,
) -> (WorkerHandle, Arc<Mutex<Vec<JobId>>>) {
    let order = Arc::new(Mutex::new(Vec::new()));
    let o2 = order.clone();
    let worker = Worker::builder(q.clone())
        .options(one_at_a_time())
        .handler(move |job: JobContext| {
            let order = o2.clone();
            async move {
                let first = {
                    let mut o = order.lock().unwrap();
                    o.push(job.id());
                    o.iter().filter(|id| **id == job.id()).count() == 1
                };
                tokio::time::sleep(work).await;
                if first && Some(job.id()) == fail_first {
                    return Err(HandlerError::new("first try fails"));
                }
                Ok(Value::Null)
            }
        })
        .run()
        .unwrap();
    (worker, order)
}

/// Resumes the paused `q` under a recording worker (see `recording_worker`) until `n` jobs have
/// completed; returns the start order.
async fn resume_and_record(
    q: &Queue,
    fail_first: Option<JobId>,
    work: Duration,
    n: u64,
) -> Vec<JobId> {
    let (worker, order) = recording_worker(q, fail_first, work);
    q.resume().await.unwrap();
    wait_until("all completed", Duration::from_secs(15), || async {
        q.counts().await.unwrap().completed == n
    })
    .await;
    worker.close().await.unwrap();
    let order = order.lock().unwrap().clone();
    order
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delayed_job_runs_by_its_priority_once_due() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "prio-delay").await;
        q.pause().await.unwrap();
        let plain: Vec<JobId> = q
            .add_bulk(
                (0..3)
                    .map(|i| NewJob {
                        name: "plain".into(),
                        data: json!(i),
                        options: JobOptions::default(),
                    })
                    .collect(),
            )
            .await
            .unwrap();
        let urgent = add(
            &q,
            "urgent",
            JobOptions {
                delay_ms: 300,
                ..prio(1)
            },
        )
        .await;
        // Delayed, with its priority kept aside (the audit checks the entry).
        assert_eq!(state(&q, urgent).await, Some(JobState::Delayed));
        audit_ok(&q).await;
        tokio::time::sleep(Duration::from_millis(400)).await;
        let order = resume_and_record(&q, None, Duration::ZERO, 4).await;
        assert_eq!(
            order[0], urgent,
            "{topology}: due, it goes ahead of plain jobs"
        );
        assert_eq!(&order[1..], &plain[..], "{topology}");
        audit_ok(&q).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_keeps_its_priority() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "prio-retry").await;
        q.pause().await.unwrap();
        let first = add(
            &q,
            "flaky",
            JobOptions {
                attempts: 2,
                backoff: Backoff::None,
                ..prio(1)
            },
        )
        .await;
        let mut later = Vec::new();
        for _ in 0..3 {
            later.push(add(&q, "lower", prio(5)).await);
        }
        let order = resume_and_record(&q, Some(first), Duration::ZERO, 4).await;
        assert_eq!(
            &order[..2],
            &[first, first],
            "{topology}: the retry runs before the jobs of a lower priority: {order:?}"
        );
        assert_eq!(&order[2..], &later[..], "{topology}");
        audit_ok(&q).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backoff_a_promote_and_a_manual_retry_keep_the_priority() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "prio-backoff").await;
        let backoff = add(
            &q,
            "backoff",
            JobOptions {
                attempts: 2,
                backoff: Backoff::Fixed { delay_ms: 60_000 },
                ..prio(2)
            },
        )
        .await;
        let (worker, _order) = recording_worker(&q, Some(backoff), Duration::ZERO);
        wait_until(
            "retrying after a backoff",
            Duration::from_secs(10),
            || async { state(&q, backoff).await == Some(JobState::Delayed) },
        )
        .await;
        worker.close().await.unwrap();
        audit_ok(&q).await;
        assert_eq!(q.promote(backoff).await.unwrap(), Moved::Moved);
        assert_eq!(
            state(&q, backoff).await,
            Some(JobState::Prioritized),
            "{topology}: promoted, it is ready by its priority"
        );
        // A failed job retried by hand, while the queue is paused.
        let failing = add(&q, "fails", prio(3)).await;
        q.remove(backoff).await.unwrap();
        let (worker, _order) = recording_worker(&q, Some(failing), Duration::ZERO);
        wait_until("failed", Duration::from_secs(10), || async {
            state(&q, failing).await == Some(JobState::Failed)
        })
        .await;
        worker.close().await.unwrap();
        q.pause().await.unwrap();
        assert_eq!(q.retry(failing).await.unwrap(), Moved::Moved);
        assert_eq!(
            state(&q, failing).await,
            Some(JobState::Prioritized),
            "{topology}"
        );
        audit_ok(&q).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_or_released_job_keeps_its_priority() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "prio-stall").await;
        let stalled = add(&q, "stalls", prio(4)).await;
        let short = WorkerOptions {
            lease: Duration::from_millis(600),
            stalled_interval: Duration::from_millis(200),
            ..one_at_a_time()
        };
        let started = Arc::new(AtomicUsize::new(0));
        let s2 = started.clone();
        let hang = move |_job: JobContext| {
            let s = s2.clone();
            async move {
                s.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_secs(60)).await;
                Ok(Value::Null)
            }
        };
        // Taken, then the worker dies (dropped: nothing released, the lease just runs out).
        let w1 = Worker::builder(q.clone())
            .options(short.clone())
            .handler(hang.clone())
            .run()
            .unwrap();
        wait_until("started", Duration::from_secs(10), || async {
            started.load(Ordering::SeqCst) == 1
        })
        .await;
        drop(w1);
        // Another worker sweeps it back while the queue is paused, so it stays where it lands.
        q.pause().await.unwrap();
        let w2 = Worker::builder(q.clone())
            .options(short)
            .handler(|_job: JobContext| async { Ok(Value::Null) })
            .run()
            .unwrap();
        wait_until("recovered", Duration::from_secs(15), || async {
            q.get(stalled).await.unwrap().unwrap().stalls == 1
        })
        .await;
        w2.close().await.unwrap();
        assert_eq!(
            state(&q, stalled).await,
            Some(JobState::Prioritized),
            "{topology}: recovered, it is ready by its priority"
        );
        // A running job given back by a graceful close.
        q.resume().await.unwrap();
        let w3 = Worker::builder(q.clone())
            .options(one_at_a_time())
            .handler(hang)
            .run()
            .unwrap();
        wait_until("started again", Duration::from_secs(10), || async {
            started.load(Ordering::SeqCst) == 2
        })
        .await;
        q.pause().await.unwrap();
        // A new priority given while it runs holds for the release.
        assert_eq!(q.change_priority(stalled, 6).await.unwrap(), Moved::Moved);
        let report = w3.close_within(Duration::from_millis(200)).await.unwrap();
        assert_eq!(report.released, 1, "{topology}");
        assert_eq!(
            state(&q, stalled).await,
            Some(JobState::Prioritized),
            "{topology}: released, it is ready by its priority"
        );
        let score: f64 = redis::cmd("ZSCORE")
            .arg(&q.keys().prioritized)
            .arg(stalled.to_string())
            .query_async(&mut q.store().conn())
            .await
            .unwrap();
        assert_eq!((score / 4_294_967_296.0).floor(), 6.0, "{topology}");
        audit_ok(&q).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_held_by_its_group_limit_keeps_its_priority() {
    let store = common::standalone().await;
    let q = queue_on(&store, "prio-group").await;
    q.set_group_rate_limit(Some(GroupRateLimit {
        max: 1,
        window: Duration::from_millis(300),
    }))
    .await
    .unwrap();
    q.pause().await.unwrap();
    let grouped = || JobOptions {
        group: Some("tenant".into()),
        ..prio(1)
    };
    let g1 = add(&q, "g1", grouped()).await;
    let g2 = add(&q, "g2", grouped()).await;
    let mut plain = Vec::new();
    for _ in 0..8 {
        plain.push(add(&q, "plain", JobOptions::default()).await);
    }
    // Each run takes 100 ms: g2 is held until g1's window ends (300 ms), while the plain jobs need
    // 800 ms; held, it must come back ahead of them, not behind the last.
    let order = resume_and_record(&q, None, Duration::from_millis(100), 10).await;
    assert_eq!(order[0], g1);
    let at = order.iter().position(|id| *id == g2).unwrap();
    assert!(
        at < order.len() - 2,
        "g2 ran at {at} of {}: behind the plain jobs it was ahead of",
        order.len()
    );
    audit_ok(&q).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flow_parent_runs_by_its_priority_and_takes_no_delay() {
    let store = common::standalone().await;
    let q = queue_on(&store, "prio-flow").await;
    let children = q.queue(&common::unique("prio-flow-children")).unwrap();
    let child = |n: i64| FlowJob {
        queue: children.name().to_string(),
        name: "child".into(),
        data: json!(n),
        options: JobOptions::default(),
        children: vec![],
    };
    let parent = |options: JobOptions, kids: Vec<FlowJob>| FlowJob {
        queue: q.name().to_string(),
        name: "parent".into(),
        data: json!({}),
        options,
        children: kids,
    };
    let delayed = JobOptions {
        delay_ms: 1_000,
        ..JobOptions::default()
    };
    let err = q
        .add_flow(parent(delayed, vec![child(1)]))
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidOption, "{err}");
    // A bad node anywhere in the tree: nothing is added, no parent is left waiting.
    let bad_leaf = FlowJob {
        options: JobOptions {
            attempts: 0,
            ..JobOptions::default()
        },
        ..child(2)
    };
    let err = q
        .add_flow(parent(JobOptions::default(), vec![child(3), bad_leaf]))
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidOption, "{err}");
    assert_eq!(q.counts().await.unwrap().total(), 0, "nothing added");
    assert_eq!(children.counts().await.unwrap().total(), 0, "nothing added");
    // The parent's queue is paused, so once its child is done it stays where it lands.
    q.pause().await.unwrap();
    let ids = q.add_flow(parent(prio(2), vec![child(4)])).await.unwrap();
    let w = Worker::builder(children.clone())
        .options(one_at_a_time())
        .handler(|_job: JobContext| async { Ok(Value::Null) })
        .run()
        .unwrap();
    wait_until("the parent is ready", Duration::from_secs(10), || async {
        state(&q, ids.id).await != Some(JobState::WaitingChildren)
    })
    .await;
    w.close().await.unwrap();
    assert_eq!(state(&q, ids.id).await, Some(JobState::Prioritized));
    audit_ok(&q).await;
    audit_ok(&children).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduled_run_takes_the_schedules_priority() {
    let store = common::standalone().await;
    let q = queue_on(&store, "prio-schedule").await;
    q.upsert_scheduler(
        "urgent-tick",
        Schedule {
            limit: Some(1),
            options: prio(1),
            ..Schedule::new(
                Repeat::Every(Duration::from_millis(100)),
                "tick",
                json!(null),
            )
        },
    )
    .await
    .unwrap();
    q.fire_due_schedulers().await.unwrap();
    let ids = q.list_ids(JobState::Prioritized, 0, 10).await.unwrap();
    assert_eq!(ids.len(), 1, "the run waits by its priority");
    assert_eq!(q.get(ids[0]).await.unwrap().unwrap().priority, 1);
    audit_ok(&q).await;
}

/// Jobs of mixed priorities, some delayed, a third failing their first run (retried at once or
/// after a backoff), under two workers: one dies mid-run (its jobs stall and come back), the other
/// closes gracefully (its jobs are released). Paused and quiet halfway, the audit finds every job
/// with a priority in prioritized or, delayed, with its entry; in the end each job completed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mixed_load_keeps_every_priority_and_loses_nothing() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "prio-mixed").await;
        let n = 300u64;
        let ids = q
            .add_bulk(
                (0..n)
                    .map(|i| NewJob {
                        name: "mixed".into(),
                        data: json!(i),
                        options: JobOptions {
                            priority: (i % 4) as u32,
                            delay_ms: if i % 5 == 0 { 100 + (i % 7) * 50 } else { 0 },
                            attempts: 3,
                            backoff: if i % 2 == 0 {
                                Backoff::None
                            } else {
                                Backoff::Fixed { delay_ms: 100 }
                            },
                            ..JobOptions::default()
                        },
                    })
                    .collect(),
            )
            .await
            .unwrap();
        let opts = WorkerOptions {
            concurrency: 4,
            lease: Duration::from_millis(600),
            stalled_interval: Duration::from_millis(200),
            block_timeout: Duration::from_millis(500),
            ..WorkerOptions::default()
        };
        let start = |q: &Queue| {
            Worker::builder(q.clone())
                .options(opts.clone())
                .handler(|job: JobContext| async move {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    let i = job.data().as_u64().unwrap();
                    if i % 3 == 0 && job.job().attempts_made == 0 {
                        return Err(HandlerError::new("first run fails"));
                    }
                    Ok(Value::Null)
                })
                .run()
                .unwrap()
        };
        let completed = |at_least: u64| {
            let q = q.clone();
            async move { q.counts().await.unwrap().completed >= at_least }
        };
        let (dies, closes) = (start(&q), start(&q));
        wait_until("80 completed", Duration::from_secs(30), || completed(80)).await;
        drop(dies);
        wait_until("150 completed", Duration::from_secs(30), || completed(150)).await;
        q.pause().await.unwrap();
        closes
            .close_within(Duration::from_millis(100))
            .await
            .unwrap();
        audit_ok(&q).await;
        q.resume().await.unwrap();
        let finishes = start(&q);
        wait_until("all completed", Duration::from_secs(60), || completed(n)).await;
        finishes.close().await.unwrap();
        for id in &ids {
            assert_eq!(
                state(&q, *id).await,
                Some(JobState::Completed),
                "{topology}"
            );
        }
        audit_ok(&q).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn change_priority_moves_a_ready_job_and_keeps_for_the_rest() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "prio-change").await;
        q.pause().await.unwrap();
        let plain = add(&q, "plain", JobOptions::default()).await;
        let low = add(&q, "low", prio(9)).await;
        let mid = add(&q, "mid", prio(5)).await;
        let later = add(
            &q,
            "later",
            JobOptions {
                delay_ms: 300,
                ..JobOptions::default()
            },
        )
        .await;
        // Out of wait into prioritized; within prioritized to a new rank; a delayed job keeps it
        // for when it is due.
        assert_eq!(q.change_priority(plain, 1).await.unwrap(), Moved::Moved);
        assert_eq!(q.change_priority(low, 3).await.unwrap(), Moved::Moved);
        assert_eq!(q.change_priority(later, 2).await.unwrap(), Moved::Moved);
        assert_eq!(state(&q, plain).await, Some(JobState::Prioritized));
        assert_eq!(q.get(later).await.unwrap().unwrap().priority, 2);
        audit_ok(&q).await;
        // Dropped: back to plain waiting.
        assert_eq!(q.change_priority(mid, 0).await.unwrap(), Moved::Moved);
        assert_eq!(state(&q, mid).await, Some(JobState::Paused), "{topology}");
        tokio::time::sleep(Duration::from_millis(400)).await;
        let order = resume_and_record(&q, None, Duration::ZERO, 4).await;
        assert_eq!(order, vec![plain, later, low, mid], "{topology}");
        // Finished, unknown, or out of range: refused.
        assert_eq!(
            q.change_priority(plain, 4).await.unwrap(),
            Moved::WrongState(JobState::Completed)
        );
        assert_eq!(
            q.change_priority(q.mint_id().unwrap(), 4).await.unwrap(),
            Moved::NotFound
        );
        let err = q.change_priority(low, u32::MAX).await.unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidOption, "{err}");
        audit_ok(&q).await;
    }
}
