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

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_timeout_stops_the_run_before_its_retry_starts() {
    let store = common::standalone().await;
    let q = queue_on(&store, "ctl-timeout").await;
    let id = q
        .add(
            "slow",
            json!(1),
            JobOptions {
                attempts: 3,
                timeout_ms: 100,
                ..JobOptions::default()
            },
        )
        .await
        .unwrap();
    let runs: Runs = Arc::new(Mutex::new(Vec::new()));
    let told = Arc::new(Mutex::new(Vec::new()));
    let w = Worker::builder(q.clone())
        .options(WorkerOptions {
            concurrency: 1,
            ..fast()
        })
        .handler(Stubborn {
            runs: runs.clone(),
            told: told.clone(),
        })
        .run()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(20);
    while q.get(id).await.unwrap().unwrap().state != Some(JobState::Failed) {
        assert!(
            Instant::now() < until,
            "not failed after 20 s: {:?}, runs {:?}",
            q.get(id).await.unwrap(),
            runs.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    w.close().await.unwrap();
    let runs = runs.lock().unwrap().clone();
    assert_eq!(runs.len(), 3, "{runs:?}");
    for pair in runs.windows(2) {
        let end = pair[0].1.expect("the first run ended");
        assert!(
            pair[1].0 >= end,
            "a retry started {:?} before the timed-out run ended",
            end - pair[1].0
        );
    }
    assert!(told
        .lock()
        .unwrap()
        .iter()
        .all(|t| *t == Some(Interrupt::TimedOut)));
    let job = q.get(id).await.unwrap().unwrap();
    assert_eq!(job.attempts_made, 3);
    assert_eq!(job.failure.unwrap().code, "timeout");
    audit_ok(&q).await;
}

/// A handler like a binding's: its work runs on a thread of its own that stops only when it
/// looks at the interrupt, and takes a while to wind down; the worker must wait for it.
type Runs = Arc<Mutex<Vec<(Instant, Option<Instant>)>>>;

struct Stubborn {
    runs: Runs,
    told: Arc<Mutex<Vec<Option<Interrupt>>>>,
}

impl emq::Handler for Stubborn {
    fn handle(&self, job: JobContext) -> futures::future::BoxFuture<'static, emq::HandlerResult> {
        let (runs, told) = (self.runs.clone(), self.told.clone());
        Box::pin(async move {
            let n = {
                let mut r = runs.lock().unwrap();
                r.push((Instant::now(), None));
                r.len() - 1
            };
            let j = job.clone();
            let _ = tokio::task::spawn_blocking(move || {
                for _ in 0..100 {
                    if j.is_cancelled() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                std::thread::sleep(Duration::from_millis(150));
                runs.lock().unwrap()[n].1 = Some(Instant::now());
            })
            .await;
            told.lock().unwrap().push(job.interrupt());
            Ok(json!("late"))
        })
    }

    fn cooperative_cancel(&self) -> bool {
        true
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_a_waiting_a_delayed_and_a_running_job() {
    for (topology, store) in common::both().await {
        println!("{topology}");
        cancel_on(store).await;
    }
}

async fn cancel_on(store: emq::Store) {
    let q = queue_on(&store, "ctl-cancel").await;
    let waiting = q.add("w", json!(1), JobOptions::default()).await.unwrap();
    let delayed = q
        .add(
            "d",
            json!(2),
            JobOptions {
                delay_ms: 300,
                dedup: Some("d-key".into()),
                ..JobOptions::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        q.cancel(waiting, "not needed").await.unwrap(),
        emq::CancelOutcome::Cancelled
    );
    assert_eq!(
        q.cancel(delayed, "").await.unwrap(),
        emq::CancelOutcome::Cancelled
    );
    for (id, msg) in [
        (waiting, "the job was cancelled: not needed"),
        (delayed, "the job was cancelled"),
    ] {
        let job = q.get(id).await.unwrap().unwrap();
        assert_eq!(job.state, Some(JobState::Failed));
        let f = job.failure.unwrap();
        assert_eq!((f.code.as_str(), f.message.as_str()), ("cancelled", msg));
        assert!(job.cancelled.is_some());
        assert_eq!(job.attempts_made, 0);
    }
    // The dedup key is free again.
    let again = q
        .add(
            "d",
            json!(3),
            JobOptions {
                dedup: Some("d-key".into()),
                ..JobOptions::default()
            },
        )
        .await
        .unwrap();
    assert_ne!(again, delayed);
    q.remove(again).await.unwrap();
    assert_eq!(
        q.cancel(waiting, "twice").await.unwrap(),
        emq::CancelOutcome::Finished
    );

    // A running job: its handler is told at once and the job ends cancelled, not retried.
    let running = q
        .add(
            "r",
            json!(4),
            JobOptions {
                attempts: 3,
                ..JobOptions::default()
            },
        )
        .await
        .unwrap();
    let told = Arc::new(Mutex::new(None::<(Interrupt, Instant)>));
    let runs = Arc::new(Mutex::new(0));
    let (told2, runs2) = (told.clone(), runs.clone());
    let w = Worker::builder(q.clone())
        .options(fast())
        .handler(move |job: JobContext| {
            let (told, runs) = (told2.clone(), runs2.clone());
            async move {
                *runs.lock().unwrap() += 1;
                let why = job.cancelled().await;
                *told.lock().unwrap() = Some((why, Instant::now()));
                Ok(json!("ignored"))
            }
        })
        .run()
        .unwrap();
    wait_until("the job to run", Duration::from_secs(10), || async {
        w.running() == 1
    })
    .await;
    // Let the worker settle into its blocking waits.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let asked = Instant::now();
    assert_eq!(
        q.cancel(running, "user asked").await.unwrap(),
        emq::CancelOutcome::Requested
    );
    wait_until("the handler to be told", Duration::from_secs(5), || async {
        told.lock().unwrap().is_some()
    })
    .await;
    let (why, at) = told.lock().unwrap().clone().unwrap();
    let latency = at.duration_since(asked);
    println!("cancel -> handler told: {latency:?}");
    assert_eq!(why, Interrupt::Cancelled("user asked".into()));
    assert!(latency < Duration::from_millis(500), "{latency:?}");
    wait_until(
        "the job to end cancelled",
        Duration::from_secs(5),
        || async { q.get(running).await.unwrap().unwrap().state == Some(JobState::Failed) },
    )
    .await;
    let job = q.get(running).await.unwrap().unwrap();
    let f = job.failure.unwrap();
    assert_eq!(f.code, "cancelled");
    assert_eq!(f.message, "the job was cancelled: user asked");
    assert_eq!(job.attempts_made, 1);
    assert!(job.result.is_none());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(*runs.lock().unwrap(), 1, "not retried");
    w.close().await.unwrap();
    assert_eq!(
        q.cancel(running, "").await.unwrap(),
        emq::CancelOutcome::Finished
    );
    audit_ok(&q).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_a_result_before_and_after_it_finished_failed_and_timed_out() {
    let store = common::standalone().await;
    let q = queue_on(&store, "ctl-wait").await;
    let quick = q
        .add("quick", json!(1), JobOptions::default())
        .await
        .unwrap();
    let big = q
        .add(
            "big",
            json!(2),
            JobOptions {
                remove_on_complete: emq::Removal::Keep,
                ..JobOptions::default()
            },
        )
        .await
        .unwrap();
    let doomed = q
        .add(
            "doomed",
            json!(3),
            JobOptions {
                attempts: 2,
                ..JobOptions::default()
            },
        )
        .await
        .unwrap();
    let never = q
        .add(
            "never",
            json!(4),
            JobOptions {
                delay_ms: 60_000,
                ..JobOptions::default()
            },
        )
        .await
        .unwrap();
    let gate = Arc::new(tokio::sync::Notify::new());
    let gate2 = gate.clone();
    let w = Worker::builder(q.clone())
        .options(WorkerOptions {
            concurrency: 4,
            ..fast()
        })
        .handler(move |job: JobContext| {
            let gate = gate2.clone();
            async move {
                match job.job().name.as_str() {
                    "quick" => Ok(json!({"n": 1})),
                    "big" => {
                        gate.notified().await;
                        Ok(json!("x".repeat(10_000)))
                    }
                    _ => Err(emq::HandlerError::new("it broke").with_stack("at doomed()")),
                }
            }
        })
        .run()
        .unwrap();
    // Finished before the wait began.
    wait_until("quick to complete", Duration::from_secs(10), || async {
        q.get(quick).await.unwrap().unwrap().state == Some(JobState::Completed)
    })
    .await;
    assert_eq!(
        q.wait(quick, Duration::from_secs(1)).await.unwrap(),
        Ok(json!({"n": 1}))
    );
    // Finishes after the wait began, with a result longer than events carry.
    let waiter = {
        let q = q.clone();
        tokio::spawn(async move { q.wait(big, Duration::from_secs(10)).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiter.is_finished());
    let released = Instant::now();
    gate.notify_one();
    let got = waiter.await.unwrap().unwrap().unwrap();
    println!(
        "wait: result seen {:?} after the handler was let go",
        released.elapsed()
    );
    assert_eq!(got, json!("x".repeat(10_000)));
    // A failure: code, message and stack.
    let failure = q
        .wait(doomed, Duration::from_secs(10))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(failure.code, "handler_failed");
    assert_eq!(failure.message, "it broke");
    assert_eq!(failure.stack.as_deref(), Some("at doomed()"));
    let as_error: emq::Error = failure.into();
    assert_eq!(as_error.code(), emq::ErrorCode::HandlerFailed);
    // Timed out.
    let began = Instant::now();
    let e = q.wait(never, Duration::from_millis(300)).await.unwrap_err();
    assert_eq!(e.code(), emq::ErrorCode::Timeout);
    assert!(began.elapsed() >= Duration::from_millis(300));
    assert!(
        began.elapsed() < Duration::from_secs(2),
        "{:?}",
        began.elapsed()
    );
    // A cancelled job's wait ends with the cancellation.
    assert_eq!(
        q.cancel(never, "stop").await.unwrap(),
        emq::CancelOutcome::Cancelled
    );
    let f = q
        .wait(never, Duration::from_secs(1))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(f.code, "cancelled");
    w.close().await.unwrap();
    audit_ok(&q).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_carry_results_and_failure_reasons() {
    let store = common::standalone().await;
    let q = queue_on(&store, "ctl-events").await;
    let mut events = q.events(None).await.unwrap();
    let ok = q.add("ok", json!(1), JobOptions::default()).await.unwrap();
    let bad = q.add("bad", json!(2), JobOptions::default()).await.unwrap();
    let w = Worker::builder(q.clone())
        .options(fast())
        .handler(|job: JobContext| async move {
            if job.job().name == "ok" {
                Ok(json!({"v": 7}))
            } else {
                Err(emq::HandlerError::new("no luck"))
            }
        })
        .run()
        .unwrap();
    let mut seen = Vec::new();
    let until = Instant::now() + Duration::from_secs(10);
    while seen.len() < 2 && Instant::now() < until {
        for e in events
            .next_batch(Duration::from_millis(500), 100)
            .await
            .unwrap()
        {
            if e.kind == "completed" || e.kind == "failed" {
                seen.push(e);
            }
        }
    }
    w.close().await.unwrap();
    let done = seen
        .iter()
        .find(|e| e.job_id == Some(ok))
        .expect("completed");
    assert_eq!(
        done.fields.get("result").map(String::as_str),
        Some(r#"{"v":7}"#)
    );
    assert!(done.fields.keys().all(|k| !k.starts_with("r:")));
    let failed = seen.iter().find(|e| e.job_id == Some(bad)).expect("failed");
    assert_eq!(failed.fields["code"], "handler_failed");
    assert_eq!(failed.fields["message"], "no luck");
    audit_ok(&q).await;
}

/// Issue 14, item 6: a handler puts its job back to delayed for a duration, on the server's clock;
/// the attempt is not counted unless asked; a stale lease cannot delay the job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_delays_its_job() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "snooze").await;
        // (id, name, attempts_made at the run, when the run began)
        let runs = Arc::new(Mutex::new(Vec::<(emq::JobId, String, u32, Instant)>::new()));
        let r2 = runs.clone();
        let w = Worker::builder(q.clone())
            .options(WorkerOptions {
                concurrency: 2,
                ..fast()
            })
            .handler(move |job: JobContext| {
                let runs = r2.clone();
                async move {
                    let j = job.job();
                    let first = {
                        let mut runs = runs.lock().unwrap();
                        let first = !runs.iter().any(|r| r.0 == j.id);
                        runs.push((j.id, j.name.clone(), j.attempts_made, Instant::now()));
                        first
                    };
                    match (j.name.as_str(), first) {
                        ("snooze", true) => {
                            Err(emq::HandlerError::delay(Duration::from_millis(400)))
                        }
                        ("counted", true) => {
                            Err(emq::HandlerError::delay(Duration::from_millis(100))
                                .counting_attempt(true))
                        }
                        ("stale", true) => {
                            // Another worker holds the lease now: the delay must be refused.
                            let _: () = redis::cmd("HSET")
                                .arg(&job.queue().keys().leases)
                                .arg(j.id.to_string())
                                .arg("someone-else|1")
                                .query_async(&mut job.queue().store().conn())
                                .await
                                .unwrap();
                            Err(emq::HandlerError::delay(Duration::from_millis(100)))
                        }
                        ("bad", _) => Err(emq::HandlerError::delay_millis(-1.0)),
                        _ => Ok(json!("done")),
                    }
                }
            })
            .run()
            .unwrap();
        let snooze = q
            .add("snooze", json!({}), JobOptions::default())
            .await
            .unwrap();
        let counted = q
            .add("counted", json!({}), JobOptions::default())
            .await
            .unwrap();
        wait_until("both completed", Duration::from_secs(10), || async {
            q.counts().await.unwrap().completed == 2
        })
        .await;
        let runs_of = |id| -> Vec<(u32, Instant)> {
            runs.lock()
                .unwrap()
                .iter()
                .filter(|r| r.0 == id)
                .map(|r| (r.2, r.3))
                .collect()
        };
        let s = runs_of(snooze);
        assert_eq!(s.len(), 2, "{topology}");
        assert_eq!(
            (s[0].0, s[1].0),
            (0, 0),
            "{topology}: the delay is not an attempt"
        );
        let gap = s[1].1 - s[0].1;
        assert!(
            gap >= Duration::from_millis(350),
            "{topology}: ran again after {gap:?}"
        );
        let c = runs_of(counted);
        assert_eq!((c[0].0, c[1].0), (0, 1), "{topology}: counted when asked");
        assert_eq!(q.get(snooze).await.unwrap().unwrap().attempts_made, 1);
        assert_eq!(q.get(counted).await.unwrap().unwrap().attempts_made, 2);
        let events = q.recent_events(200).await.unwrap();
        let delayed: Vec<_> = events.iter().filter(|e| e.kind == "delayed").collect();
        assert_eq!(delayed.len(), 2, "{topology}: {events:?}");
        assert!(delayed.iter().all(|e| e.fields.contains_key("due")));
        // A bad duration fails the job with invalid_option.
        let bad = q
            .add(
                "bad",
                json!({}),
                JobOptions {
                    attempts: 1,
                    ..JobOptions::default()
                },
            )
            .await
            .unwrap();
        wait_until("the bad delay failed", Duration::from_secs(10), || async {
            q.counts().await.unwrap().failed == 1
        })
        .await;
        let failure = q.get(bad).await.unwrap().unwrap().failure.unwrap();
        assert_eq!(failure.code, "invalid_option", "{topology}");
        audit_ok(&q).await;
        // A stale lease cannot delay the job: refused as a lost lease, the job is not delayed.
        // (The test forges the lease, so the queue is not audited after this.)
        let stale = q
            .add("stale", json!({}), JobOptions::default())
            .await
            .unwrap();
        wait_until("the refusal counted", Duration::from_secs(10), || async {
            w.stats().lease_lost == 1
        })
        .await;
        assert_eq!(q.counts().await.unwrap().delayed, 0, "{topology}");
        assert_eq!(runs_of(stale).len(), 1);
        w.close().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_asked_as_soon_as_the_job_starts_reaches_it() {
    let store = common::standalone().await;
    let q = queue_on(&store, "ctl-cancel-early").await;
    // The worker's task that follows the cancels stream is slow to run, as on a loaded machine.
    emq::testing::delay_cancel_follow(q.name().as_str(), Duration::from_millis(400));
    let running = q.add("r", json!(1), JobOptions::default()).await.unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let w = Worker::builder(q.clone())
        .options(fast())
        .handler(until_told(seen.clone()))
        .run()
        .unwrap();
    wait_until("the job to run", Duration::from_secs(10), || async {
        w.running() == 1
    })
    .await;
    assert_eq!(
        q.cancel(running, "at once").await.unwrap(),
        emq::CancelOutcome::Requested
    );
    wait_until("the handler to be told", Duration::from_secs(5), || async {
        !seen.lock().unwrap().is_empty()
    })
    .await;
    assert_eq!(
        seen.lock().unwrap().clone(),
        vec![Interrupt::Cancelled("at once".into())]
    );
    wait_until(
        "the job to end cancelled",
        Duration::from_secs(5),
        || async { q.get(running).await.unwrap().unwrap().state == Some(JobState::Failed) },
    )
    .await;
    w.close().await.unwrap();
    audit_ok(&q).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_cancelled_last_in_the_buffer_leaves_its_slot_to_the_next_jobs() {
    // Concurrency 1 and one job leased ahead: the second job runs until let go while the third
    // waits in the buffer and is cancelled there. The slot, finding the cancelled job and nothing
    // after it, ends once (it used to count its end twice: a panic in a debug build, a pool that
    // thought itself full for good in a release one), so later jobs still run.
    let store = common::standalone().await;
    let q = queue_on(&store, "ctl-cancel-buffered").await;
    let ids: Vec<emq::JobId> = {
        let mut v = Vec::new();
        for i in 0..3 {
            v.push(q.add("j", json!(i), JobOptions::default()).await.unwrap());
        }
        v
    };
    let gate = Arc::new(tokio::sync::Notify::new());
    let ran: Arc<Mutex<Vec<emq::JobId>>> = Arc::default();
    let (gate2, ran2, gated) = (gate.clone(), ran.clone(), ids[1]);
    let w = Worker::builder(q.clone())
        .options(WorkerOptions {
            concurrency: 1,
            prefetch: Some(1),
            ..fast()
        })
        .handler(move |job: JobContext| {
            let (gate, ran) = (gate2.clone(), ran2.clone());
            async move {
                ran.lock().unwrap().push(job.id());
                if job.id() == gated {
                    gate.notified().await;
                }
                Ok(json!(null))
            }
        })
        .run()
        .unwrap();
    wait_until(
        "the second job runs, the third leased ahead",
        Duration::from_secs(10),
        || async {
            let started = ran.lock().unwrap().len();
            started == 2 && q.counts().await.unwrap().active == 2
        },
    )
    .await;
    assert_eq!(
        q.cancel(ids[2], "not needed").await.unwrap(),
        emq::CancelOutcome::Requested
    );
    // The worker hears of the cancel (its cancels stream) before the slot frees.
    tokio::time::sleep(Duration::from_millis(300)).await;
    gate.notify_one();
    wait_until(
        "the third job failed as cancelled",
        Duration::from_secs(10),
        || async { q.get(ids[2]).await.unwrap().and_then(|j| j.state) == Some(JobState::Failed) },
    )
    .await;
    let later = q.add("j", json!(3), JobOptions::default()).await.unwrap();
    wait_until("a later job runs", Duration::from_secs(10), || async {
        q.get(later).await.unwrap().and_then(|j| j.state) == Some(JobState::Completed)
    })
    .await;
    assert!(
        !ran.lock().unwrap().contains(&ids[2]),
        "the cancelled job never ran"
    );
    w.close().await.unwrap();
    audit_ok(&q).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leased_ahead_job_with_a_longer_lease_of_its_own_runs_once() {
    // A job whose own lease (60 s) is longer than the worker's (3 s) waits in the buffer while
    // the job before it runs: it starts once its turn comes, on the lease its claim took (the
    // worker's), and is not given back for having less than a quarter of its own lease left.
    let store = common::standalone().await;
    let q = queue_on(&store, "ctl-own-lease").await;
    q.add("quick", json!(0), JobOptions::default())
        .await
        .unwrap();
    q.add("slow", json!(1), JobOptions::default())
        .await
        .unwrap();
    let own = q
        .add(
            "own-lease",
            json!(2),
            JobOptions {
                lease_ms: 60_000,
                ..JobOptions::default()
            },
        )
        .await
        .unwrap();
    let ran: Arc<Mutex<Vec<String>>> = Arc::default();
    let ran2 = ran.clone();
    let w = Worker::builder(q.clone())
        .options(WorkerOptions {
            concurrency: 1,
            prefetch: Some(1),
            // Renewed every second: the job leased ahead starts before its first renewal.
            lease: Duration::from_secs(3),
            ..fast()
        })
        .handler(move |job: JobContext| {
            let ran = ran2.clone();
            async move {
                ran.lock().unwrap().push(job.job().name.clone());
                if job.job().name == "slow" {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                }
                Ok(json!(null))
            }
        })
        .run()
        .unwrap();
    wait_until(
        "the job with its own lease completes",
        Duration::from_secs(10),
        || async { q.get(own).await.unwrap().and_then(|j| j.state) == Some(JobState::Completed) },
    )
    .await;
    w.close().await.unwrap();
    let ran = ran.lock().unwrap().clone();
    assert_eq!(ran, ["quick", "slow", "own-lease"], "{ran:?}");
    let (events, _) = q.job_events(own, 0, 1_000).await.unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert!(!kinds.contains(&"released"), "given back unrun: {kinds:?}");
    audit_ok(&q).await;
}
