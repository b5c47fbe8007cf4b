//! Batches on real servers (standalone and a 3-master cluster, guarded): the callbacks are added
//! once, after the last outcome of a sealed batch; on_success after a failed job is retried to
//! success; jobs added by running jobs hold the batch open; jobs sit on other queues (other slots)
//! than the batch; a step cut by a crash is finished (by maintenance) exactly once; status pages
//! the failed jobs; cancel; bad input is a typed error; the audit passes.

mod common;

use common::{audit_ok, queue_on, unique, wait_until};

use emq::{
    BatchCallback, BatchOptions, ErrorCode, HandlerError, Job, JobContext, JobOptions, JobState,
    NewJob, Queue, Worker, WorkerHandle, WorkerOptions,
};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A worker whose handler fails the jobs whose data has `"fail": true` while `failing` holds,
/// and, for a job named `spawn`, adds `data.children` jobs to its batch on `data.to`.
fn worker(q: &Queue, failing: Arc<AtomicBool>) -> WorkerHandle {
    Worker::builder(q.clone())
        .options(WorkerOptions {
            concurrency: 4,
            stalled_interval: Duration::from_millis(300),
            ..WorkerOptions::default()
        })
        .handler(move |job: JobContext| {
            let failing = failing.clone();
            async move {
                if job.job().name == "spawn" {
                    let batch = job.batch().unwrap().expect("a batched job sees its batch");
                    let to = job.data()["to"].as_str().unwrap().to_string();
                    for i in 0..job.data()["children"].as_u64().unwrap() {
                        batch
                            .add(&to, "child", json!({ "i": i }), JobOptions::default())
                            .await
                            .map_err(|e| HandlerError::new(e.to_string()))?;
                    }
                    // The children are counted in: the batch waits for them, not just for us.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                if job.data()["fail"] == json!(true) && failing.load(Ordering::SeqCst) {
                    return Err(HandlerError::new("it broke"));
                }
                Ok::<Value, _>(json!("ok"))
            }
        })
        .run()
        .unwrap()
}

fn callback(q: &Queue, name: &str) -> BatchCallback {
    BatchCallback {
        queue: q.name().as_str().to_string(),
        name: name.to_string(),
        data: json!({ "cb": name }),
        options: JobOptions::default(),
    }
}

fn both_callbacks(cb: &Queue) -> BatchOptions {
    BatchOptions {
        on_complete: Some(callback(cb, "complete")),
        on_success: Some(callback(cb, "success")),
        description: Some("nightly import".into()),
    }
}

/// The callback jobs waiting in `cb`.
async fn callbacks(cb: &Queue) -> Vec<Job> {
    let mut out = Vec::new();
    for id in cb.list_ids(JobState::Waiting, 0, 100).await.unwrap() {
        out.push(cb.get(id).await.unwrap().unwrap());
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

fn plain(n: usize, fail: &[usize]) -> Vec<NewJob> {
    (0..n)
        .map(|i| NewJob {
            name: "work".into(),
            data: json!({ "i": i, "fail": fail.contains(&i) }),
            options: JobOptions::default(),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callbacks_run_once_after_the_last_outcome() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "b-home").await;
        let jobs = q.queue(&unique("b-jobs")).unwrap();
        let cb = q.queue(&unique("b-cb")).unwrap();
        let batch = q.batch(both_callbacks(&cb)).await.unwrap();
        let ids = batch
            .add_bulk(jobs.name().as_str(), plain(5, &[3]))
            .await
            .unwrap();
        let w = worker(&jobs, Arc::new(AtomicBool::new(true)));
        wait_until("every outcome", Duration::from_secs(20), || async {
            let st = batch.status(0, 10).await.unwrap();
            st.completed == 4 && st.failed == 1
        })
        .await;
        // Not sealed yet: its creator may still add, so no callback.
        assert!(callbacks(&cb).await.is_empty(), "{topology}");
        batch.seal().await.unwrap();
        batch.seal().await.unwrap();
        let st = batch.status(0, 10).await.unwrap();
        assert!(st.done && st.sealed && !st.cancelled, "{topology} {st:?}");
        assert_eq!((st.total, st.pending), (5, 0));
        assert_eq!(st.description.as_deref(), Some("nightly import"));
        assert_eq!(st.failed_jobs.len(), 1);
        assert_eq!(st.failed_jobs[0].id, ids[3]);
        assert_eq!(st.failed_jobs[0].queue, jobs.name().as_str());
        let cbs = callbacks(&cb).await;
        assert_eq!(cbs.len(), 1, "{topology}: on_complete only (a job failed)");
        let done = cbs[0].batch_done().expect("the callback carries its batch");
        assert_eq!(cbs[0].name, "complete");
        assert_eq!(cbs[0].data, json!({ "cb": "complete" }));
        assert_eq!(done.kind, "complete");
        assert_eq!(done.id, batch.id().to_string());
        assert_eq!((done.total, done.completed, done.failed), (5, 4, 1));
        // A done batch takes no more jobs.
        let e = batch
            .add(
                jobs.name().as_str(),
                "late",
                json!(1),
                JobOptions::default(),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidState, "{topology}");
        // Recording again changes nothing.
        assert_eq!(jobs.record_batch_outcomes().await.unwrap(), 0);
        w.close().await.unwrap();
        assert_eq!(callbacks(&cb).await.len(), 1);
        // Each finish's note was taken off once its batch counted it.
        let notes: u64 = redis::cmd("ZCARD")
            .arg(&jobs.keys().batch_pending)
            .query_async(&mut store.conn())
            .await
            .unwrap();
        assert_eq!(notes, 0, "{topology}");
        audit_ok(&q).await;
        audit_ok(&jobs).await;
        audit_ok(&cb).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_success_runs_once_when_a_failed_job_is_retried_to_success() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "b-retry").await;
        let cb = q.queue(&unique("b-retry-cb")).unwrap();
        let batch = q.batch(both_callbacks(&cb)).await.unwrap();
        let ids = batch
            .add_bulk(q.name().as_str(), plain(3, &[0]))
            .await
            .unwrap();
        batch.seal().await.unwrap();
        let failing = Arc::new(AtomicBool::new(true));
        let w = worker(&q, failing.clone());
        wait_until("on_complete", Duration::from_secs(20), || async {
            callbacks(&cb).await.len() == 1
        })
        .await;
        assert_eq!(callbacks(&cb).await[0].name, "complete", "{topology}");
        failing.store(false, Ordering::SeqCst);
        q.retry(ids[0]).await.unwrap();
        wait_until("on_success", Duration::from_secs(20), || async {
            callbacks(&cb).await.len() == 2
        })
        .await;
        let cbs = callbacks(&cb).await;
        let success = cbs[1].batch_done().unwrap();
        assert_eq!(cbs[1].name, "success");
        assert_eq!(
            (success.total, success.completed, success.failed),
            (3, 3, 0)
        );
        // on_complete kept the counts it fell due with.
        let complete = cbs[0].batch_done().unwrap();
        assert_eq!((complete.completed, complete.failed), (2, 1));
        let st = batch.status(0, 10).await.unwrap();
        assert_eq!((st.completed, st.failed, st.pending), (3, 0, 0));
        assert!(st.failed_jobs.is_empty());
        w.close().await.unwrap();
        assert_eq!(callbacks(&cb).await.len(), 2, "{topology}: each once");
        audit_ok(&q).await;
        audit_ok(&cb).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_added_by_running_jobs_on_another_queue_hold_the_batch() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "b-grow").await;
        let kids = q.queue(&unique("b-grow-kids")).unwrap();
        let cb = q.queue(&unique("b-grow-cb")).unwrap();
        let batch = q.batch(both_callbacks(&cb)).await.unwrap();
        batch
            .add(
                q.name().as_str(),
                "spawn",
                json!({ "to": kids.name().as_str(), "children": 3 }),
                JobOptions::default(),
            )
            .await
            .unwrap();
        batch.seal().await.unwrap();
        let wq = worker(&q, Arc::new(AtomicBool::new(true)));
        // The parent finishes while its children wait (no worker on their queue yet). Its
        // outcome reaches the batch one step after its finish (the worker records it in the
        // batch's slot): wait for the batch to count it, not for the queue.
        wait_until("the parent counted", Duration::from_secs(20), || async {
            batch.status(0, 10).await.unwrap().completed == 1
        })
        .await;
        let st = batch.status(0, 10).await.unwrap();
        assert_eq!(
            (st.total, st.completed, st.pending),
            (4, 1, 3),
            "{topology}"
        );
        assert!(!st.done);
        assert!(callbacks(&cb).await.is_empty());
        let wk = worker(&kids, Arc::new(AtomicBool::new(true)));
        wait_until("both callbacks", Duration::from_secs(20), || async {
            callbacks(&cb).await.len() == 2
        })
        .await;
        for c in callbacks(&cb).await {
            let d = c.batch_done().unwrap();
            assert_eq!((d.total, d.completed, d.failed), (4, 4, 0), "{topology}");
        }
        let child = kids.list_ids(JobState::Completed, 0, 1).await.unwrap()[0];
        let child = kids.get(child).await.unwrap().unwrap();
        assert_eq!(child.batch_ref().unwrap().id, batch.id().to_string());
        wq.close().await.unwrap();
        wk.close().await.unwrap();
        for x in [&q, &kids, &cb] {
            audit_ok(x).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_cut_by_a_crash_is_finished_exactly_once() {
    for (topology, store) in common::both().await {
        for step in [1u8, 2, 3] {
            let q = queue_on(&store, "b-crash").await;
            let jobs = q.queue(&unique("b-crash-jobs")).unwrap();
            let cb = q.queue(&unique("b-crash-cb")).unwrap();
            let batch = q.batch(both_callbacks(&cb)).await.unwrap();
            let stop_on = if step == 3 { q.name() } else { jobs.name() };
            emq::testing::stop_batch_steps_after(stop_on.as_str(), step);
            batch
                .add(jobs.name().as_str(), "x", json!({}), JobOptions::default())
                .await
                .unwrap();
            batch.seal().await.unwrap();
            let w = worker(&jobs, Arc::new(AtomicBool::new(true)));
            wait_until("completed", Duration::from_secs(20), || async {
                jobs.counts().await.unwrap().get(JobState::Completed) == 1
            })
            .await;
            w.close().await.unwrap();
            let st = batch.status(0, 10).await.unwrap();
            // As the crash left it.
            let mine = |cbs: Vec<Job>| {
                cbs.into_iter()
                    .filter(|c| c.batch_done().unwrap().id == batch.id().to_string())
                    .count()
            };
            match step {
                1 => assert_eq!((st.completed, st.pending), (0, 1), "{topology}"),
                2 => assert_eq!((st.completed, st.pending), (1, 0), "{topology}"),
                _ => assert_eq!(mine(callbacks(&cb).await), 2, "{topology}"),
            }
            if step < 3 {
                assert_eq!(mine(callbacks(&cb).await), 0, "{topology} step {step}");
            }
            emq::testing::stop_batch_steps_after(stop_on.as_str(), 0);
            if step == 1 {
                // The maintenance loop of a (new) worker finishes it after the grace.
                let w = worker(&jobs, Arc::new(AtomicBool::new(true)));
                wait_until(
                    "maintenance recorded it",
                    emq::batch::BATCH_GRACE + Duration::from_secs(10),
                    || async { batch.status(0, 10).await.unwrap().completed == 1 },
                )
                .await;
                w.close().await.unwrap();
            } else if step == 2 {
                // Counted already: recording again only adds the callbacks.
                assert_eq!(jobs.record_batch_outcomes().await.unwrap(), 0);
            } else {
                // A repeated seal finds the pinned ids: the same jobs, nothing added twice.
                batch.seal().await.unwrap();
            }
            assert_eq!(jobs.record_batch_outcomes().await.unwrap(), 0);
            let cbs = callbacks(&cb).await;
            assert_eq!(mine(cbs), 2, "{topology} step {step}: each callback once");
            let st = batch.status(0, 10).await.unwrap();
            assert_eq!((st.completed, st.pending), (1, 0), "{topology} step {step}");
            let pending: u64 = redis::cmd("ZCARD")
                .arg(&jobs.keys().batch_pending)
                .query_async(&mut store.conn())
                .await
                .unwrap();
            assert_eq!(pending, 0, "{topology} step {step}");
            for x in [&q, &jobs, &cb] {
                audit_ok(x).await;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_pages_the_failed_jobs() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "b-page").await;
        let jobs = q.queue(&unique("b-page-jobs")).unwrap();
        let batch = q.batch(BatchOptions::default()).await.unwrap();
        let ids = batch
            .add_bulk(jobs.name().as_str(), plain(9, &[0, 1, 2, 3, 4, 5, 6]))
            .await
            .unwrap();
        batch.seal().await.unwrap();
        let w = worker(&jobs, Arc::new(AtomicBool::new(true)));
        wait_until("done", Duration::from_secs(20), || async {
            batch.status(0, 0).await.unwrap().done
        })
        .await;
        w.close().await.unwrap();
        let mut seen = Vec::new();
        for (offset, len) in [(0, 3), (3, 3), (6, 1), (9, 0)] {
            let st = batch.status(offset, 3).await.unwrap();
            assert_eq!(st.failed_jobs.len(), len, "{topology} offset {offset}");
            assert_eq!((st.total, st.completed, st.failed), (9, 2, 7));
            seen.extend(st.failed_jobs.into_iter().map(|j| j.id));
        }
        seen.sort();
        let mut want = ids[..7].to_vec();
        want.sort();
        assert_eq!(seen, want, "{topology}");
        audit_ok(&q).await;
        audit_ok(&jobs).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_batch_takes_no_jobs_and_runs_no_callback() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "b-cancel").await;
        let jobs = q.queue(&unique("b-cancel-jobs")).unwrap();
        let cb = q.queue(&unique("b-cancel-cb")).unwrap();
        let batch = q.batch(both_callbacks(&cb)).await.unwrap();
        batch
            .add_bulk(jobs.name().as_str(), plain(4, &[]))
            .await
            .unwrap();
        batch.seal().await.unwrap();
        assert_eq!(batch.cancel().await.unwrap(), 4, "{topology}");
        assert_eq!(batch.cancel().await.unwrap(), 0, "{topology}: idempotent");
        assert_eq!(jobs.counts().await.unwrap().get(JobState::Failed), 4);
        let e = batch
            .add(
                jobs.name().as_str(),
                "more",
                json!(1),
                JobOptions::default(),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidState);
        let st = batch.status(0, 10).await.unwrap();
        assert!(st.cancelled && !st.done, "{st:?}");
        assert_eq!(
            (st.failed, st.pending),
            (4, 0),
            "the cancelled jobs are its failures"
        );
        assert!(callbacks(&cb).await.is_empty());
        audit_ok(&q).await;
        audit_ok(&jobs).await;
        // One job of a live batch cancelled on its own before it ran counts as failed.
        let other = q.batch(both_callbacks(&cb)).await.unwrap();
        let ids = other
            .add_bulk(jobs.name().as_str(), plain(2, &[]))
            .await
            .unwrap();
        other.seal().await.unwrap();
        jobs.cancel(ids[0], "not needed").await.unwrap();
        assert_eq!(jobs.record_batch_outcomes().await.unwrap(), 1, "{topology}");
        let st = other.status(0, 10).await.unwrap();
        assert_eq!((st.failed, st.pending), (1, 1), "{topology}");
        assert_eq!(st.failed_jobs[0].id, ids[0]);
        audit_ok(&jobs).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_a_typed_error() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "b-bad").await;
        let long = BatchOptions {
            description: Some("x".repeat(emq::options::MAX_DESCRIPTION + 1)),
            ..BatchOptions::default()
        };
        assert_eq!(
            q.batch(long).await.err().unwrap().code(),
            ErrorCode::InvalidOption
        );
        let mut bad_queue = callback(&q, "c");
        bad_queue.queue = "a:b".into();
        let opts = BatchOptions {
            on_complete: Some(bad_queue),
            ..BatchOptions::default()
        };
        assert_eq!(
            q.batch(opts).await.err().unwrap().code(),
            ErrorCode::InvalidQueueName
        );
        let mut bad_opts = callback(&q, "c");
        bad_opts.options.attempts = 0;
        let opts = BatchOptions {
            on_success: Some(bad_opts),
            ..BatchOptions::default()
        };
        assert_eq!(
            q.batch(opts).await.err().unwrap().code(),
            ErrorCode::InvalidOption
        );
        let batch = q.batch(BatchOptions::default()).await.unwrap();
        let add = |queue: &'static str, options: JobOptions| {
            let batch = batch.clone();
            async move {
                batch
                    .add(queue, "j", json!(1), options)
                    .await
                    .unwrap_err()
                    .code()
            }
        };
        assert_eq!(
            add("a b", JobOptions::default()).await,
            ErrorCode::InvalidQueueName
        );
        let dedup = JobOptions {
            dedup: Some("k".into()),
            ..JobOptions::default()
        };
        assert_eq!(add("fine", dedup).await, ErrorCode::InvalidOption);
        assert_eq!(
            q.open_batch("not-a-batch").err().unwrap().code(),
            ErrorCode::InvalidJobId
        );
        let ghost = q.open_batch(&q.mint_id().unwrap().to_string()).unwrap();
        assert_eq!(
            ghost.status(0, 1).await.unwrap_err().code(),
            ErrorCode::JobNotFound
        );
        assert_eq!(
            ghost
                .add(q.name().as_str(), "j", json!(1), JobOptions::default())
                .await
                .unwrap_err()
                .code(),
            ErrorCode::JobNotFound,
            "{topology}"
        );
        assert_eq!(
            ghost.cancel().await.unwrap_err().code(),
            ErrorCode::JobNotFound
        );
        // Nothing was counted in or added by the refused adds.
        assert_eq!(batch.status(0, 1).await.unwrap().total, 0);
        audit_ok(&q).await;
        // Obliterating the queue takes its batches with it.
        let key = q.name().batch_key(batch.id(), emq::BatchPart::Record);
        q.obliterate(true).await.unwrap();
        let left: i64 = redis::cmd("EXISTS")
            .arg(&key)
            .query_async(&mut store.conn())
            .await
            .unwrap();
        assert_eq!(left, 0, "{topology}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_failed_by_the_stall_sweep_and_a_deleted_completion_both_count() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "b-stall").await;
        let jobs = q.queue(&unique("b-stall-jobs")).unwrap();
        let cb = q.queue(&unique("b-stall-cb")).unwrap();
        let batch = q.batch(both_callbacks(&cb)).await.unwrap();
        let hang = batch
            .add(
                jobs.name().as_str(),
                "hang",
                json!({}),
                JobOptions::default(),
            )
            .await
            .unwrap();
        // A completion that deletes its record at once (complete.lua's "drop" path).
        let gone = JobOptions {
            remove_on_complete: emq::Removal::Now,
            ..JobOptions::default()
        };
        batch
            .add(jobs.name().as_str(), "quick", json!({}), gone)
            .await
            .unwrap();
        batch.seal().await.unwrap();
        let short = WorkerOptions {
            concurrency: 2,
            lease: Duration::from_millis(500),
            stalled_interval: Duration::from_millis(200),
            max_stalls: 0,
            ..WorkerOptions::default()
        };
        // A worker killed while it runs "hang": the sweep of the next fails it for good.
        let w1 = Worker::builder(jobs.clone())
            .options(short.clone())
            .handler(|job: JobContext| async move {
                if job.job().name == "hang" {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                }
                Ok(Value::Null)
            })
            .run()
            .unwrap();
        wait_until("quick completed", Duration::from_secs(10), || async {
            batch.status(0, 0).await.unwrap().completed == 1
        })
        .await;
        drop(w1);
        let w2 = Worker::builder(jobs.clone())
            .options(short)
            .handler(|_job: JobContext| async move { Ok(Value::Null) })
            .run()
            .unwrap();
        wait_until(
            "the stalled job counted failed",
            emq::batch::BATCH_GRACE + Duration::from_secs(15),
            || async { batch.status(0, 10).await.unwrap().failed == 1 },
        )
        .await;
        // The failure is recorded in the batch first and its callback added in a later call (on
        // the callback queue's slot), so the batch reads done a moment before the callback is
        // there (CI saw it on the cluster); the worker stays up until both are.
        wait_until("the callback added", Duration::from_secs(10), || async {
            !callbacks(&cb).await.is_empty()
        })
        .await;
        w2.close().await.unwrap();
        let st = batch.status(0, 10).await.unwrap();
        assert!(st.done, "{topology} {st:?}");
        assert_eq!(st.failed_jobs[0].id, hang);
        let cbs = callbacks(&cb).await;
        assert_eq!(cbs.len(), 1, "{topology}");
        assert_eq!(cbs[0].name, "complete");
        for x in [&q, &jobs, &cb] {
            audit_ok(x).await;
        }
    }
}

/// A measurement, not a check (run with `--ignored --nocapture`): 20,000 jobs added through a
/// batch against a plain bulk add, on the standalone server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn measure_a_batched_bulk_add_against_a_plain_one() {
    let store = common::standalone().await;
    let q = queue_on(&store, "b-measure").await;
    let n = 20_000;
    let rounds: usize = std::env::var("EMQ_MEASURE_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    // The server's CPU (user + sys, µs) from INFO, read before and after each side.
    async fn redis_cpu_us(store: &emq::Store) -> f64 {
        let info: String = redis::cmd("INFO")
            .arg("cpu")
            .query_async(&mut store.conn())
            .await
            .unwrap();
        info.lines()
            .filter_map(|l| l.split_once(':'))
            .filter(|(k, _)| *k == "used_cpu_user" || *k == "used_cpu_sys")
            .map(|(_, v)| v.trim().parse::<f64>().unwrap() * 1e6)
            .sum()
    }
    let (mut speed, mut cpu) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let mut plain = (0.0, 0.0);
        let mut batched = (0.0, 0.0);
        // Alternate which side goes first.
        for side in if round % 2 == 0 { [0, 1] } else { [1, 0] } {
            let c0 = redis_cpu_us(&store).await;
            let t = std::time::Instant::now();
            if side == 0 {
                let plain_q = q.queue(&unique("b-measure-plain")).unwrap();
                plain_q.add_bulk(common::jobs("p", n)).await.unwrap();
            } else {
                let batched_q = q.queue(&unique("b-measure-batched")).unwrap();
                let batch = q.batch(BatchOptions::default()).await.unwrap();
                batch
                    .add_bulk(batched_q.name().as_str(), common::jobs("b", n))
                    .await
                    .unwrap();
                assert_eq!(batch.status(0, 0).await.unwrap().total, n as u64);
            }
            let r = (
                n as f64 / t.elapsed().as_secs_f64(),
                (redis_cpu_us(&store).await - c0) / n as f64,
            );
            if side == 0 {
                plain = r;
            } else {
                batched = r;
            }
        }
        println!(
            "round {round}: plain {:.0} jobs/s {:.2} µs Redis CPU/job, batched {:.0} jobs/s {:.2} µs ({:.2}x jobs/s, {:.2}x CPU)",
            plain.0,
            plain.1,
            batched.0,
            batched.1,
            batched.0 / plain.0,
            batched.1 / plain.1
        );
        speed.push(batched.0 / plain.0);
        cpu.push(batched.1 / plain.1);
    }
    let summary = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        format!("{:.2} [{:.2}–{:.2}]", v[v.len() / 2], v[0], v[v.len() - 1])
    };
    println!(
        "batched / plain over {rounds} rounds: jobs/s {}, Redis CPU per job {}",
        summary(&mut speed),
        summary(&mut cpu)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callback_refused_for_now_holds_back_no_other_batch() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "b-held").await;
        let jobs = q.queue(&unique("b-held-jobs")).unwrap();
        let cb = q.queue(&unique("b-held-cb")).unwrap();
        // The group "g" of the callbacks' queue is full: a callback in it is refused (group_full).
        cb.set_group_max_waiting(Some(1), Some("g")).await.unwrap();
        let in_g = JobOptions {
            group: Some("g".into()),
            ..JobOptions::default()
        };
        let blocker = cb.add("blocker", json!({}), in_g.clone()).await.unwrap();
        let mut refused = callback(&cb, "complete");
        refused.options = in_g;
        let a = q
            .batch(BatchOptions {
                on_complete: Some(refused),
                ..BatchOptions::default()
            })
            .await
            .unwrap();
        let b = q.batch(both_callbacks(&cb)).await.unwrap();
        emq::testing::stop_batch_steps_after(jobs.name().as_str(), 1);
        for batch in [&a, &b] {
            batch
                .add(jobs.name().as_str(), "x", json!({}), JobOptions::default())
                .await
                .unwrap();
            batch.seal().await.unwrap();
        }
        let w = worker(&jobs, Arc::new(AtomicBool::new(true)));
        wait_until("both completed", Duration::from_secs(20), || async {
            jobs.counts().await.unwrap().get(JobState::Completed) == 2
        })
        .await;
        w.close().await.unwrap();
        emq::testing::stop_batch_steps_after(jobs.name().as_str(), 0);
        // a's callback is refused; b's steps go on all the same.
        let e = jobs.record_batch_outcomes().await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::GroupFull, "{topology}");
        let of = |batch: &emq::Batch, cbs: &[Job]| {
            cbs.iter()
                .filter(|c| {
                    c.batch_done()
                        .is_some_and(|d| d.id == batch.id().to_string())
                })
                .count()
        };
        assert_eq!(of(&b, &callbacks(&cb).await), 2, "{topology}");
        assert_eq!(of(&a, &callbacks(&cb).await), 0);
        // Room again: a retry adds a's callback, once.
        cb.remove(blocker).await.unwrap();
        jobs.record_batch_outcomes().await.unwrap();
        jobs.record_batch_outcomes().await.unwrap();
        let cbs = callbacks(&cb).await;
        assert_eq!((of(&a, &cbs), of(&b, &cbs)), (1, 2), "{topology}");
        for x in [&q, &jobs, &cb] {
            audit_ok(x).await;
        }
    }
}

/// `Queue::batches` lists a queue's batches newest first, with their counts, paged; a page size
/// outside its bounds is a typed error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_lists_its_batches_newest_first_with_their_counts() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, &unique("blist")).await;
        let mut made = Vec::new();
        for i in 0..3 {
            let b = q
                .batch(BatchOptions {
                    description: Some(format!("import {i}")),
                    ..BatchOptions::default()
                })
                .await
                .unwrap();
            for n in 0..=i {
                b.add(
                    q.name().as_str(),
                    "row",
                    json!({ "n": n }),
                    JobOptions::default(),
                )
                .await
                .unwrap();
            }
            made.push(b.id());
            // Distinct creation times, so the order is the creation order.
            tokio::time::sleep(Duration::from_millis(3)).await;
        }
        let page = q.batches(0, 10).await.unwrap();
        assert_eq!(page.total, 3, "{topology}");
        let ids: Vec<_> = page.batches.iter().map(|b| b.status.id).collect();
        assert_eq!(
            ids,
            vec![made[2], made[1], made[0]],
            "{topology}: newest first"
        );
        let newest = &page.batches[0];
        assert_eq!(newest.status.description.as_deref(), Some("import 2"));
        assert_eq!((newest.status.total, newest.status.pending), (3, 3));
        assert!(newest.created_ms >= page.batches[1].created_ms);
        let second = q.batches(1, 1).await.unwrap();
        assert_eq!(second.total, 3);
        assert_eq!(second.batches.len(), 1);
        assert_eq!(second.batches[0].status.id, made[1], "{topology}: offset 1");
        assert!(q.batches(3, 10).await.unwrap().batches.is_empty());
        for bad in [0, emq::MAX_BATCH_PAGE + 1] {
            let e = q.batches(0, bad).await.unwrap_err();
            assert_eq!(
                e.code(),
                ErrorCode::InvalidOption,
                "{topology}: limit {bad}"
            );
        }
        q.drain(true).await.unwrap();
    }
}

/// The callback jobs in `cb` made for batch `id`.
async fn callbacks_of(cb: &Queue, id: emq::JobId) -> Vec<String> {
    callbacks(cb)
        .await
        .into_iter()
        .filter(|c| c.batch_done().unwrap().id == id.to_string())
        .map(|c| c.name)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_inside_a_batch_counts_as_one_job_of_its_parent() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "b-nest").await;
        let jobs = q.queue(&unique("b-nest-jobs")).unwrap();
        let cb = q.queue(&unique("b-nest-cb")).unwrap();
        let parent = q.batch(both_callbacks(&cb)).await.unwrap();
        parent
            .add(
                jobs.name().as_str(),
                "work",
                json!({}),
                JobOptions::default(),
            )
            .await
            .unwrap();
        let child = parent.batch(both_callbacks(&cb)).await.unwrap();
        let ids = child
            .add_bulk(jobs.name().as_str(), plain(2, &[1]))
            .await
            .unwrap();
        parent.seal().await.unwrap();
        let st = parent.status(0, 10).await.unwrap();
        assert_eq!(
            (st.total, st.pending),
            (2, 2),
            "{topology}: the child is one job"
        );
        assert!(st.parent.is_none());
        let cst = child.status(0, 10).await.unwrap();
        let up = cst.parent.expect("the child names its parent");
        assert_eq!(
            (up.queue.as_str(), up.id.clone()),
            (q.name().as_str(), parent.id().to_string())
        );
        let failing = Arc::new(AtomicBool::new(true));
        let w = worker(&jobs, failing.clone());
        wait_until("the child's jobs", Duration::from_secs(20), || async {
            let c = child.status(0, 0).await.unwrap();
            c.completed == 1 && c.failed == 1
        })
        .await;
        // The parent's own job is recorded too (one worker call may finish it beside a child's
        // job, and records each batch's outcomes in turn). The child is not sealed: its parent
        // still waits for it.
        wait_until("the parent's own job", Duration::from_secs(20), || async {
            parent.status(0, 0).await.unwrap().completed == 1
        })
        .await;
        assert_eq!(parent.status(0, 0).await.unwrap().pending, 1, "{topology}");
        assert!(callbacks_of(&cb, parent.id()).await.is_empty());
        child.seal().await.unwrap();
        wait_until("the parent done", Duration::from_secs(20), || async {
            parent.status(0, 0).await.unwrap().done
        })
        .await;
        let st = parent.status(0, 10).await.unwrap();
        assert_eq!(
            (st.completed, st.failed),
            (1, 1),
            "{topology}: the child failed"
        );
        assert_eq!(st.failed_jobs[0].id, child.id());
        assert_eq!(callbacks_of(&cb, child.id()).await, ["complete"]);
        assert_eq!(callbacks_of(&cb, parent.id()).await, ["complete"]);
        // Its failed job retried to success: the child turns completed, and so does its parent.
        failing.store(false, Ordering::SeqCst);
        jobs.retry(ids[1]).await.unwrap();
        wait_until(
            "the parent's on_success",
            Duration::from_secs(20),
            || async { callbacks_of(&cb, parent.id()).await.len() == 2 },
        )
        .await;
        w.close().await.unwrap();
        let st = parent.status(0, 10).await.unwrap();
        assert_eq!(
            (st.completed, st.failed, st.pending),
            (2, 0, 0),
            "{topology}"
        );
        assert!(st.failed_jobs.is_empty());
        assert_eq!(callbacks_of(&cb, child.id()).await, ["complete", "success"]);
        assert_eq!(
            callbacks_of(&cb, parent.id()).await,
            ["complete", "success"]
        );
        assert_eq!(q.record_batch_outcomes().await.unwrap(), 0);
        assert_eq!(jobs.record_batch_outcomes().await.unwrap(), 0);
        assert_eq!(
            callbacks(&cb).await.len(),
            4,
            "{topology}: each callback once"
        );
        for x in [&q, &jobs, &cb] {
            audit_ok(x).await;
        }
        // A done parent takes no child; a missing one is not found.
        let e = parent.batch(BatchOptions::default()).await.err().unwrap();
        assert_eq!(e.code(), ErrorCode::InvalidState, "{topology}");
        let ghost = q.open_batch(&q.mint_id().unwrap().to_string()).unwrap();
        let e = ghost.batch(BatchOptions::default()).await.err().unwrap();
        assert_eq!(e.code(), ErrorCode::JobNotFound, "{topology}");
        let long = BatchOptions {
            description: Some("x".repeat(emq::options::MAX_DESCRIPTION + 1)),
            ..BatchOptions::default()
        };
        let open = q.batch(BatchOptions::default()).await.unwrap();
        let e = open.batch(long).await.err().unwrap();
        assert_eq!(e.code(), ErrorCode::InvalidOption);
        assert_eq!(
            open.status(0, 0).await.unwrap().total,
            0,
            "nothing counted in"
        );
        // Three deep: an empty grandchild sealed at once settles up the chain.
        let mid = open.batch(BatchOptions::default()).await.unwrap();
        let leaf = mid.batch(BatchOptions::default()).await.unwrap();
        open.seal().await.unwrap();
        mid.seal().await.unwrap();
        assert_eq!(open.status(0, 0).await.unwrap().pending, 1);
        leaf.seal().await.unwrap();
        let st = open.status(0, 0).await.unwrap();
        assert!(st.done && st.completed == 1, "{topology} {st:?}");
        audit_ok(&q).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_parent_cancels_its_children_and_a_child_alone_counts_failed() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "b-nest-cancel").await;
        let jobs = q.queue(&unique("b-nest-cancel-jobs")).unwrap();
        let cb = q.queue(&unique("b-nest-cancel-cb")).unwrap();
        let parent = q.batch(both_callbacks(&cb)).await.unwrap();
        let child = parent.batch(both_callbacks(&cb)).await.unwrap();
        child
            .add_bulk(jobs.name().as_str(), plain(3, &[]))
            .await
            .unwrap();
        child.seal().await.unwrap();
        parent.seal().await.unwrap();
        assert_eq!(
            parent.cancel().await.unwrap(),
            3,
            "{topology}: the child's jobs"
        );
        assert!(child.status(0, 0).await.unwrap().cancelled);
        assert_eq!(jobs.counts().await.unwrap().get(JobState::Failed), 3);
        let st = parent.status(0, 10).await.unwrap();
        assert!(
            st.cancelled && st.failed == 1 && st.pending == 0,
            "{topology} {st:?}"
        );
        assert!(callbacks(&cb).await.is_empty());
        // A child cancelled on its own fails in its live parent, which then completes.
        let parent = q.batch(both_callbacks(&cb)).await.unwrap();
        let child = parent.batch(BatchOptions::default()).await.unwrap();
        parent
            .add(jobs.name().as_str(), "w", json!({}), JobOptions::default())
            .await
            .unwrap();
        parent.seal().await.unwrap();
        child.cancel().await.unwrap();
        child.cancel().await.unwrap();
        let st = parent.status(0, 10).await.unwrap();
        assert_eq!((st.failed, st.pending), (1, 1), "{topology}");
        let e = child.batch(BatchOptions::default()).await.err().unwrap();
        assert_eq!(e.code(), ErrorCode::InvalidState);
        let w = worker(&jobs, Arc::new(AtomicBool::new(false)));
        wait_until("on_complete", Duration::from_secs(20), || async {
            callbacks_of(&cb, parent.id()).await == ["complete"]
        })
        .await;
        w.close().await.unwrap();
        for x in [&q, &jobs, &cb] {
            audit_ok(x).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_outcome_cut_by_a_crash_reaches_its_parent_once() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "b-nest-crash").await;
        let jobs = q.queue(&unique("b-nest-crash-jobs")).unwrap();
        let cb = q.queue(&unique("b-nest-crash-cb")).unwrap();
        let parent = q.batch(both_callbacks(&cb)).await.unwrap();
        let child = parent.batch(BatchOptions::default()).await.unwrap();
        child
            .add(jobs.name().as_str(), "x", json!({}), JobOptions::default())
            .await
            .unwrap();
        child.seal().await.unwrap();
        parent.seal().await.unwrap();
        // The child's note for its parent sits in its own queue's set; stop before it is read.
        emq::testing::stop_batch_steps_after(q.name().as_str(), 1);
        let w = worker(&jobs, Arc::new(AtomicBool::new(false)));
        wait_until("the child done", Duration::from_secs(20), || async {
            child.status(0, 0).await.unwrap().done
        })
        .await;
        w.close().await.unwrap();
        assert_eq!(parent.status(0, 0).await.unwrap().pending, 1, "{topology}");
        emq::testing::stop_batch_steps_after(q.name().as_str(), 0);
        assert_eq!(q.record_batch_outcomes().await.unwrap(), 1, "{topology}");
        assert_eq!(q.record_batch_outcomes().await.unwrap(), 0);
        let st = parent.status(0, 0).await.unwrap();
        assert!(st.done && st.completed == 1, "{topology} {st:?}");
        assert_eq!(
            callbacks_of(&cb, parent.id()).await,
            ["complete", "success"]
        );
        for x in [&q, &jobs, &cb] {
            audit_ok(x).await;
        }
    }
}

/// Counting in (batch_count.lua, one HMGET and one HSET per call, the calls of one add in one
/// pipeline): 1,200 jobs span three calls; an id given twice in one add and an add repeated with
/// the same ids are counted once, and every job is added once, under its id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_given_again_are_counted_in_once_across_calls() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "b-count").await;
        let jobs = q.queue(&unique("b-count-jobs")).unwrap();
        let batch = q.batch(BatchOptions::default()).await.unwrap();
        let ids: Vec<_> = (0..1_200).map(|_| jobs.mint_id().unwrap()).collect();
        let pinned = |range: std::ops::Range<usize>| -> Vec<NewJob> {
            range
                .map(|i| NewJob {
                    name: "work".into(),
                    data: json!({ "i": i }),
                    options: JobOptions {
                        id: Some(ids[i]),
                        ..JobOptions::default()
                    },
                })
                .collect()
        };
        // The first add gives job 0 twice: at the start and again after the 500th job, in the
        // second call of the pipeline.
        let mut first = pinned(0..700);
        first.insert(600, pinned(0..1).pop().unwrap());
        let got = batch.add_bulk(jobs.name().as_str(), first).await.unwrap();
        assert_eq!(got.len(), 701, "{topology}");
        assert_eq!(batch.status(0, 0).await.unwrap().total, 700, "{topology}");
        // Again from job 300: the 400 already counted are not counted again.
        let got = batch
            .add_bulk(jobs.name().as_str(), pinned(300..1_200))
            .await
            .unwrap();
        assert_eq!(got, ids[300..1_200].to_vec(), "{topology}");
        let st = batch.status(0, 0).await.unwrap();
        assert_eq!((st.total, st.pending), (1_200, 1_200), "{topology}");
        assert_eq!(jobs.counts().await.unwrap().waiting, 1_200, "{topology}");
        for &i in &[0usize, 499, 500, 1_199] {
            let job = jobs.get(ids[i]).await.unwrap().expect("added under its id");
            assert_eq!(job.data, json!({ "i": i }), "{topology}");
        }
        audit_ok(&q).await;
        audit_ok(&jobs).await;
    }
}

/// Jobs for the batch's own queue (its slot) are counted in by the add's own call
/// (`batch_add.lua`), their records naming the batch in a field of their own: the same outcomes,
/// callbacks, reads, cancel and audit as a batch whose jobs sit in another slot; ids given again
/// are counted once; and a job that existed before, outside the batch, is not counted in (it
/// would hold the batch open for ever).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_on_the_batch_own_queue_are_counted_in_by_their_add() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "b-own").await;
        let cb = q.queue(&unique("b-own-cb")).unwrap();
        let own = q.name().as_str().to_string();
        // A job of the queue that is no batch's.
        let outside = q
            .add("work", json!({ "i": 99 }), JobOptions::default())
            .await
            .unwrap();
        let batch = q.batch(both_callbacks(&cb)).await.unwrap();
        let ids: Vec<_> = (0..600).map(|_| q.mint_id().unwrap()).collect();
        let mut jobs: Vec<NewJob> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| NewJob {
                name: "work".into(),
                data: json!({ "i": i, "fail": i == 3 }),
                options: JobOptions {
                    id: Some(*id),
                    ..JobOptions::default()
                },
            })
            .collect();
        // Job 0 twice in one add (the second is the same job), and the outside job.
        jobs.insert(300, jobs[0].clone());
        jobs.push(NewJob {
            name: "work".into(),
            data: json!({}),
            options: JobOptions {
                id: Some(outside),
                ..JobOptions::default()
            },
        });
        let got = batch.add_bulk(&own, jobs.clone()).await.unwrap();
        assert_eq!(got.len(), 602, "{topology}");
        assert_eq!(got[601], outside);
        assert_eq!(batch.status(0, 0).await.unwrap().total, 600, "{topology}");
        // Again, the same ids: nothing more counted in or added.
        batch.add_bulk(&own, jobs).await.unwrap();
        assert_eq!(batch.status(0, 0).await.unwrap().total, 600, "{topology}");
        assert_eq!(q.counts().await.unwrap().waiting, 601, "{topology}");
        let job = q.get(ids[5]).await.unwrap().unwrap();
        let r = job.batch_ref().expect("the job reads its batch back");
        assert_eq!(
            (r.queue.as_str(), r.id),
            (own.as_str(), batch.id().to_string())
        );
        assert!(q.get(outside).await.unwrap().unwrap().batch_ref().is_none());
        // A running job adds to its batch on the batch's own queue.
        let spawn = batch
            .add(
                &own,
                "spawn",
                json!({ "to": own, "children": 3 }),
                JobOptions::default(),
            )
            .await
            .unwrap();
        let w = worker(&q, Arc::new(AtomicBool::new(true)));
        wait_until("every outcome", Duration::from_secs(30), || async {
            let st = batch.status(0, 10).await.unwrap();
            st.completed + st.failed == 604
        })
        .await;
        batch.seal().await.unwrap();
        let st = batch.status(0, 10).await.unwrap();
        assert!(st.done, "{topology} {st:?}");
        assert_eq!(
            (st.total, st.completed, st.failed),
            (604, 603, 1),
            "{topology}"
        );
        assert_eq!(st.failed_jobs[0].id, ids[3]);
        assert!(q.get(spawn).await.unwrap().is_some());
        let cbs = callbacks(&cb).await;
        assert_eq!(cbs.len(), 1, "{topology}: on_complete once (a job failed)");
        let done = cbs[0].batch_done().unwrap();
        assert_eq!((done.total, done.completed, done.failed), (604, 603, 1));
        w.close().await.unwrap();
        audit_ok(&q).await;
        // Cancel finds the waiting jobs counted in by the add.
        let other = q.batch(both_callbacks(&cb)).await.unwrap();
        other.add_bulk(&own, plain(4, &[])).await.unwrap();
        assert_eq!(other.cancel().await.unwrap(), 4, "{topology}");
        let st = other.status(0, 0).await.unwrap();
        assert_eq!((st.failed, st.pending), (4, 0), "{topology}");
        let e = other
            .add(&own, "more", json!(1), JobOptions::default())
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidState, "{topology}");
        audit_ok(&q).await;
        audit_ok(&cb).await;
    }
}

/// A job of a batch on the batch's own queue names its batch in its record's own field, which
/// each way a worker can get a job carries: handed over by the add to an idle worker, or claimed
/// by the one call that the wake-up marker names (`claim_id.lua`, which reads the record's fields
/// by name); each outcome reaches the batch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_worker_records_its_batch_own_jobs_however_it_got_them() {
    let store = common::standalone().await;
    let q = queue_on(&store, "b-own-idle").await;
    let own = q.name().as_str().to_string();
    let batch = q.batch(BatchOptions::default()).await.unwrap();
    let w = Worker::builder(q.clone())
        .options(WorkerOptions {
            concurrency: 1,
            block_timeout: Duration::from_secs(5),
            ..WorkerOptions::default()
        })
        .handler(|_job: JobContext| async move { Ok::<Value, HandlerError>(json!("ok")) })
        .run()
        .unwrap();
    let mut conn = store.conn();
    for (round, handed) in [(1u64, true), (2, false)] {
        // Idle: blocked and registered; without its registration, the marker path.
        wait_until("the worker registered", Duration::from_secs(10), || {
            let mut conn = conn.clone();
            let key = q.keys().waiters.clone();
            async move {
                let n: u64 = redis::cmd("ZCARD")
                    .arg(&key)
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                n == 1
            }
        })
        .await;
        if !handed {
            let _: u64 = redis::cmd("DEL")
                .arg(&q.keys().waiters)
                .query_async(&mut conn)
                .await
                .unwrap();
        }
        batch
            .add(&own, "one", json!(round), JobOptions::default())
            .await
            .unwrap();
        wait_until(
            "its outcome in the batch",
            Duration::from_secs(15),
            || async { batch.status(0, 0).await.unwrap().completed == round },
        )
        .await;
    }
    w.close().await.unwrap();
    audit_ok(&q).await;
}

/// A job for another queue under an id the caller gives that already belongs to a job outside the
/// batch (no batch's, or another batch's) is left as it is by the add, and counted out of the
/// batch again (`batch_uncount.lua`): before, it stayed pending for ever and the batch never
/// ended. Ids given again (the batch's own jobs, added before) stay counted in, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_given_id_of_a_job_outside_the_batch_is_counted_out_on_another_queue() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "b-out").await;
        let jobs = q.queue(&unique("b-out-jobs")).unwrap();
        let cb = q.queue(&unique("b-out-cb")).unwrap();
        let to = jobs.name().as_str().to_string();
        // One job that is no batch's, one of another batch.
        let loose = jobs
            .add("work", json!({ "i": "loose" }), JobOptions::default())
            .await
            .unwrap();
        let elsewhere = q.batch(BatchOptions::default()).await.unwrap();
        let theirs = elsewhere
            .add(&to, "work", json!({ "i": "theirs" }), JobOptions::default())
            .await
            .unwrap();
        let batch = q.batch(both_callbacks(&cb)).await.unwrap();
        let mine: Vec<_> = (0..3).map(|_| jobs.mint_id().unwrap()).collect();
        let with_id = |id, i: &str| NewJob {
            name: "work".into(),
            data: json!({ "i": i }),
            options: JobOptions {
                id: Some(id),
                ..JobOptions::default()
            },
        };
        let mut add: Vec<NewJob> = mine.iter().map(|id| with_id(*id, "mine")).collect();
        add.push(with_id(loose, "again"));
        add.push(with_id(theirs, "again"));
        add.extend(plain(2, &[]));
        let got = batch.add_bulk(&to, add.clone()).await.unwrap();
        assert_eq!(&got[3..5], &[loose, theirs], "{topology}");
        let st = batch.status(0, 0).await.unwrap();
        assert_eq!((st.total, st.pending), (5, 5), "{topology}: {st:?}");
        // The outside jobs are as they were.
        let l = jobs.get(loose).await.unwrap().unwrap();
        assert_eq!(
            (l.data.clone(), l.batch_ref()),
            (json!({ "i": "loose" }), None)
        );
        let t = jobs.get(theirs).await.unwrap().unwrap();
        assert_eq!(t.batch_ref().unwrap().id, elsewhere.id().to_string());
        assert_eq!(elsewhere.status(0, 0).await.unwrap().total, 1, "{topology}");
        // The same call again: the batch's own ids stay counted once, the outside ones out.
        add.truncate(5);
        batch.add_bulk(&to, add).await.unwrap();
        assert_eq!(batch.status(0, 0).await.unwrap().total, 5, "{topology}");
        batch.seal().await.unwrap();
        let w = worker(&jobs, Arc::new(AtomicBool::new(false)));
        wait_until("the batch is done", Duration::from_secs(30), || async {
            batch.status(0, 0).await.unwrap().done
        })
        .await;
        let st = batch.status(0, 0).await.unwrap();
        assert_eq!((st.total, st.completed, st.failed), (5, 5, 0), "{topology}");
        w.close().await.unwrap();
        let mut names: Vec<String> = callbacks(&cb).await.into_iter().map(|j| j.name).collect();
        names.sort();
        assert_eq!(names, ["complete", "success"], "{topology}");
        audit_ok(&q).await;
        audit_ok(&jobs).await;
    }
}

/// A job of a batch removed before its outcome (`Queue::remove`, `Queue::drain`) counts as failed
/// in its batch at once, on the batch's own queue and on another: before, it stayed pending for
/// ever and the batch never ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batched_job_removed_before_its_outcome_counts_failed() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "b-rm").await;
        let jobs = q.queue(&unique("b-rm-jobs")).unwrap();
        let cb = q.queue(&unique("b-rm-cb")).unwrap();
        let own = q.name().as_str().to_string();
        let batch = q.batch(both_callbacks(&cb)).await.unwrap();
        let there = batch
            .add_bulk(jobs.name().as_str(), plain(3, &[]))
            .await
            .unwrap();
        batch.add_bulk(&own, plain(2, &[])).await.unwrap();
        batch.seal().await.unwrap();
        assert_eq!(
            jobs.remove(there[0]).await.unwrap(),
            emq::Moved::Moved,
            "{topology}"
        );
        let st = batch.status(0, 10).await.unwrap();
        assert_eq!((st.pending, st.failed), (4, 1), "{topology}: {st:?}");
        assert_eq!(st.failed_jobs[0].id, there[0], "{topology}");
        assert_eq!(q.drain(false).await.unwrap(), 2, "{topology}");
        let st = batch.status(0, 0).await.unwrap();
        assert_eq!((st.pending, st.failed), (2, 3), "{topology}: {st:?}");
        let w = worker(&jobs, Arc::new(AtomicBool::new(false)));
        wait_until("the batch is done", Duration::from_secs(30), || async {
            batch.status(0, 0).await.unwrap().done
        })
        .await;
        w.close().await.unwrap();
        let st = batch.status(0, 0).await.unwrap();
        assert_eq!((st.total, st.completed, st.failed), (5, 2, 3), "{topology}");
        let cbs = callbacks(&cb).await;
        assert_eq!(cbs.len(), 1, "{topology}: on_complete only");
        assert_eq!(cbs[0].name, "complete");
        audit_ok(&q).await;
        audit_ok(&jobs).await;
    }
}

/// A job's two notes recorded by one call (its failure for good, then its success after a retry,
/// both still waiting in its queue's batch-pending set): `batch_record.lua` takes them in order,
/// so the job counts once, completed — not failed and completed both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_and_a_later_success_recorded_together_count_once() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "b-two").await;
        let jobs = q.queue(&unique("b-two-jobs")).unwrap();
        let batch = q.batch(BatchOptions::default()).await.unwrap();
        let ids = batch
            .add_bulk(jobs.name().as_str(), plain(1, &[0]))
            .await
            .unwrap();
        batch.seal().await.unwrap();
        // Finishes note their outcomes; nothing records them yet.
        emq::testing::stop_batch_steps_after(jobs.name().as_str(), 1);
        let failing = Arc::new(AtomicBool::new(true));
        let w = worker(&jobs, failing.clone());
        wait_until("the failure", Duration::from_secs(20), || async {
            jobs.counts().await.unwrap().failed == 1
        })
        .await;
        failing.store(false, Ordering::SeqCst);
        jobs.retry(ids[0]).await.unwrap();
        wait_until("the success", Duration::from_secs(20), || async {
            jobs.counts().await.unwrap().completed == 1
        })
        .await;
        w.close().await.unwrap();
        assert_eq!(batch.status(0, 0).await.unwrap().pending, 1, "{topology}");
        emq::testing::stop_batch_steps_after(jobs.name().as_str(), 0);
        assert_eq!(jobs.record_batch_outcomes().await.unwrap(), 2, "{topology}");
        let st = batch.status(0, 10).await.unwrap();
        assert_eq!(
            (st.total, st.completed, st.failed, st.pending),
            (1, 1, 0, 0),
            "{topology}: {st:?}"
        );
        assert!(st.done && st.failed_jobs.is_empty(), "{topology}");
        audit_ok(&q).await;
        audit_ok(&jobs).await;
    }
}
