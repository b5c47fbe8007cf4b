//! `emq-bench multiqueue [REDIS_URL]`: one worker on several queues (core/src/worker/pool.rs). Run
//! by hand, never in CI: `bench/multiqueue.sh` starts a private redis-server and repeats it.
//!
//! Scenarios, each a JSON line on stdout:
//! - `weights_5to1`: MQ_JOBS (10,000) no-op jobs in each of queues `a` and `b`, one worker on both
//!   (weights a 5, b 1, concurrency 10); `a_share` is a's part of the first MQ_JOBS starts (5:1 is
//!   0.8333), and the worst a:b share of any window of 1,000 of them.
//! - `wake_single` / `wake_multi`: an idle worker (one on `w` alone, or one on `x` and `w` with
//!   equal weights), then MQ_WAKES (200) times: one job added to `w`, timed from the add's call to
//!   its handler's first line, 20 ms apart; p50 and p99 in µs. MQ_REP's parity decides which of
//!   the two runs first.
//!
//! FLUSHALL runs before each scenario.

use crate::{e2s, env_u64, open, Admin, BResult, Cfg};
use emq::{JobContext, NewJob, Queue, QueueOrder, Worker, WorkerOptions};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type Starts = Arc<Mutex<Vec<String>>>;

async fn weights(cfg: &Cfg, admin: &mut Admin, n: u64) -> BResult<Value> {
    admin.flushall().await?;
    let a = open(cfg, "a").await?;
    let b = open(cfg, "b").await?;
    for q in [&a, &b] {
        for chunk in 0..n.div_ceil(1000) {
            let jobs = (0..1000.min(n - chunk * 1000))
                .map(|i| NewJob {
                    name: "n".into(),
                    data: json!(i),
                    options: Default::default(),
                })
                .collect();
            q.add_bulk(jobs).await.map_err(e2s)?;
        }
    }
    let log: Starts = Arc::default();
    let log2 = log.clone();
    let order = QueueOrder::Weighted(BTreeMap::from([("a".into(), 5), ("b".into(), 1)]));
    let started = Instant::now();
    let w = Worker::builder_many(vec![a.clone(), b.clone()])
        .options(WorkerOptions {
            concurrency: 10,
            queue_order: order,
            ..WorkerOptions::default()
        })
        .handler(move |job: JobContext| {
            log2.lock()
                .unwrap()
                .push(job.queue().name().as_str().to_string());
            futures::future::ready(Ok(Value::Null))
        })
        .run()
        .map_err(e2s)?;
    while log.lock().unwrap().len() < (2 * n) as usize {
        if started.elapsed() > cfg.timeout {
            return Err("weights: timed out".into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let secs = started.elapsed().as_secs_f64();
    w.close().await.map_err(e2s)?;
    let log = log.lock().unwrap().clone();
    let first = &log[..n as usize];
    let share = |s: &[String]| s.iter().filter(|q| *q == "a").count() as f64 / s.len() as f64;
    let windows: Vec<f64> = first.chunks(1000).map(share).collect();
    Ok(json!({
        "scenario": "weights_5to1",
        "a_share": share(first),
        "window_min": windows.iter().cloned().fold(1.0, f64::min),
        "window_max": windows.iter().cloned().fold(0.0, f64::max),
        "jobs_per_s": (2 * n) as f64 / secs,
    }))
}

async fn wake(cfg: &Cfg, admin: &mut Admin, multi: bool, n: u64) -> BResult<Value> {
    admin.flushall().await?;
    let w_q = open(cfg, "w").await?;
    let queues: Vec<Queue> = if multi {
        vec![open(cfg, "x").await?, w_q.clone()]
    } else {
        vec![w_q.clone()]
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Instant>();
    let worker = Worker::builder_many(queues)
        .options(WorkerOptions {
            concurrency: 1,
            ..WorkerOptions::default()
        })
        .handler(move |_job: JobContext| {
            let _ = tx.send(Instant::now());
            futures::future::ready(Ok(Value::Null))
        })
        .run()
        .map_err(e2s)?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut us = Vec::with_capacity(n as usize);
    for i in 0..n {
        let t = Instant::now();
        w_q.add("n", json!(i), Default::default())
            .await
            .map_err(e2s)?;
        let at = tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .map_err(|_| "wake: a job did not start within 5 s".to_string())?
            .ok_or("wake: worker gone")?;
        us.push(at.duration_since(t).as_micros() as u64);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    worker.close().await.map_err(e2s)?;
    us.sort_unstable();
    let pct = |p: f64| us[((us.len() - 1) as f64 * p).round() as usize];
    Ok(json!({
        "scenario": if multi { "wake_multi" } else { "wake_single" },
        "p50_us": pct(0.5),
        "p99_us": pct(0.99),
    }))
}

pub async fn multiqueue_main(cfg: Cfg, admin: &mut Admin) -> i32 {
    let jobs = env_u64("MQ_JOBS", 10_000);
    let wakes = env_u64("MQ_WAKES", 200);
    let rep = env_u64("MQ_REP", 0);
    let mut lines = Vec::new();
    let order = if rep % 2 == 0 {
        [false, true]
    } else {
        [true, false]
    };
    for multi in order {
        lines.push(wake(&cfg, admin, multi, wakes).await);
    }
    lines.push(weights(&cfg, admin, jobs).await);
    crate::print_lines("multiqueue", rep, lines)
}
