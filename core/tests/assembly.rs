//! The assembled scripts on a real server, in both modes. A script's text carries only the guard
//! and library definitions it names (core/src/script/assemble.rs, `prologue`): every script must still
//! compile in both modes, and the unguarded texts, which users run and every other suite (guarded)
//! does not, must still run a job's life: the one-job add and the batch add, the hand-off to a
//! blocked worker, claim, completion, a failure and its retry, the operator's calls, the audit.

mod common;

use common::wait_until;
use emq::testing::script;
use emq::{
    ConnectOptions, HandlerError, IdMinter, JobContext, JobOptions, JobState, Moved, NewJob, Queue,
    Store, Worker, WorkerOptions,
};
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

async fn store(guarded: bool) -> Store {
    let url = emq_harness::shared_standalone().url();
    Store::connect(ConnectOptions::new(url).guarded(guarded))
        .await
        .expect("connect standalone")
}

#[tokio::test]
async fn every_script_compiles_in_both_modes() {
    for guarded in [false, true] {
        let store = store(guarded).await;
        script::load_all(&store).await.unwrap_or_else(|e| {
            panic!("guarded {guarded}: {e}");
        });
        let mut conn = store.conn();
        let mut exists = redis::cmd("SCRIPT");
        exists.arg("EXISTS");
        for s in script::ALL {
            exists.arg(s.sha(guarded));
        }
        let loaded: Vec<i64> = exists.query_async(&mut conn).await.unwrap();
        assert_eq!(loaded, vec![1; script::ALL.len()], "guarded {guarded}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unguarded_scripts_run_a_jobs_life() {
    let store = store(false).await;
    assert!(!store.guarded());
    let minter = Arc::new(IdMinter::start(store.clone()).await.unwrap());
    let q = Queue::with_store(store.clone(), minter, &common::unique("unguarded-life")).unwrap();
    // add_one.lua (plain), add.lua (priority; a batch), both before any worker.
    let plain = q
        .add("ok", json!({"n": 1}), JobOptions::default())
        .await
        .unwrap();
    let urgent = q
        .add(
            "ok",
            json!({"n": 2}),
            JobOptions {
                priority: 3,
                ..JobOptions::default()
            },
        )
        .await
        .unwrap();
    let flaky = q
        .add(
            "flaky",
            json!({}),
            JobOptions {
                attempts: 2,
                ..JobOptions::default()
            },
        )
        .await
        .unwrap();
    let bulk = q
        .add_bulk(
            (0..3)
                .map(|i| NewJob {
                    name: "ok".into(),
                    data: json!({ "n": 10 + i }),
                    options: JobOptions::default(),
                })
                .collect(),
        )
        .await
        .unwrap();
    let c = q.counts().await.unwrap();
    assert_eq!((c.waiting, c.prioritized), (5, 1));
    let runs = Arc::new(AtomicUsize::new(0));
    let runs2 = runs.clone();
    let worker = Worker::builder(q.clone())
        .options(WorkerOptions {
            block_timeout: Duration::from_millis(500),
            concurrency: 2,
            ..WorkerOptions::default()
        })
        .handler(move |job: JobContext| {
            let runs = runs2.clone();
            async move {
                if job.job().name == "flaky" && runs.fetch_add(1, Ordering::SeqCst) == 0 {
                    return Err(HandlerError::new("first try"));
                }
                Ok(json!(job.data()["n"].as_i64().unwrap_or(0) * 2))
            }
        })
        .run()
        .unwrap();
    wait_until("six completions", Duration::from_secs(20), || async {
        q.counts().await.unwrap().completed == 6
    })
    .await;
    // The queue is empty and the worker blocked: this add may be handed off (add_one.lua's
    // hand-off branch) or claimed after its marker; either way it completes.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let late = q
        .add("ok", json!({"n": 21}), JobOptions::default())
        .await
        .unwrap();
    wait_until(
        "the late add completes",
        Duration::from_secs(20),
        || async { q.counts().await.unwrap().completed == 7 },
    )
    .await;
    worker.close().await.unwrap();
    for (id, result) in [
        (plain, 2),
        (urgent, 4),
        (flaky, 0),
        (bulk[2], 24),
        (late, 42),
    ] {
        let job = q.get(id).await.unwrap().unwrap();
        assert_eq!(job.state, Some(JobState::Completed), "{id}");
        assert_eq!(job.result, Some(json!(result)), "{id}");
    }
    assert_eq!(q.get(flaky).await.unwrap().unwrap().attempts_made, 2);
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    // Operator calls on the unguarded texts.
    q.pause().await.unwrap();
    assert!(q.is_paused().await.unwrap());
    let parked = q.add("ok", json!({}), JobOptions::default()).await.unwrap();
    assert_eq!(q.counts().await.unwrap().paused, 1);
    q.resume().await.unwrap();
    assert_eq!(q.remove(parked).await.unwrap(), Moved::Moved);
    let r = q.audit().await.unwrap();
    assert!(r.ok(), "audit: {:?}", r.problems);
}

#[tokio::test]
async fn the_clock_helpers_give_times_digits_padded_or_not() {
    // now_ms_text, now_clock and us_text_of as the assembler emits them, with TIME's reply given
    // as the arguments: six-digit microseconds take the short way, fewer are padded; both must
    // give the server's milliseconds and microseconds exactly.
    let body = "-- clock check\n-- KEYS: none\nlocal ms, t = now_ms_text()\n\
                local us, ms2, n = now_clock()\n\
                return {ms, us, ms2, tostring(n), us_text_of(t)}\n";
    let source = script::assemble(body, false).replace("redis.call('TIME')", "{ARGV[1], ARGV[2]}");
    assert!(!source.contains("redis.call"), "{source}");
    let store = store(false).await;
    let mut conn = store.conn();
    for micros in [
        0u64, 7, 42, 999, 1_000, 12_345, 99_999, 100_000, 123_456, 999_999,
    ] {
        let secs = 1_796_000_000u64;
        let got: Vec<String> = redis::cmd("EVAL")
            .arg(&source)
            .arg(0)
            .arg(secs)
            .arg(micros)
            .query_async(&mut conn)
            .await
            .unwrap();
        let ms = (secs * 1000 + micros / 1000).to_string();
        let us = (secs * 1_000_000 + micros).to_string();
        assert_eq!(
            got,
            [&ms, &us, &ms, &ms, &us].map(String::as_str),
            "{micros} µs"
        );
    }
}
