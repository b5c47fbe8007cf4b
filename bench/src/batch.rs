//! `emq-bench batch [REDIS_URL]`: a batched job against a plain one (core/src/batch/). Run by
//! hand, never in CI: `bench/batch.sh` starts a private redis-server and repeats it.
//!
//! Scenarios, each a JSON line on stdout, FLUSHALL before each:
//! - `add_plain` / `add_batched`: BATCH_JOBS (20,000) jobs added in calls of 1,000, by
//!   `Queue::add_bulk`, or by `Batch::add_bulk` into one batch (with an `on_complete` callback)
//!   that is then sealed; jobs/s and the Redis server's CPU (main thread, user + sys) per job.
//! - `process_plain` / `process_batched`: those jobs, added as above, processed by one worker
//!   (concurrency 10, no-op handler), timed from its start until the last completed (batched:
//!   until the batch is done and its callback added); jobs/s and Redis CPU per job.
//!
//! Each run first adds both sides once, untimed (scripts loaded, the server's memory grown).
//! BATCH_REP's parity decides whether the plain or the batched side of each pair runs first.

use crate::{e2s, env_u64, open, Admin, BResult, Cfg};
use emq::{
    BatchCallback, BatchOptions, JobContext, JobOptions, NewJob, Queue, Worker, WorkerOptions,
};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn jobs(from: u64, n: u64) -> Vec<NewJob> {
    (from..from + n)
        .map(|i| NewJob {
            name: "n".into(),
            data: json!(i),
            options: JobOptions::default(),
        })
        .collect()
}

/// Adds `n` jobs to `q`, plain or into a new sealed batch (returned).
async fn add(q: &Queue, n: u64, batched: bool) -> BResult<Option<emq::Batch>> {
    let batch = if batched {
        Some(
            q.batch(BatchOptions {
                on_complete: Some(BatchCallback {
                    queue: "bench-callbacks".into(),
                    name: "done".into(),
                    data: Value::Null,
                    options: JobOptions::default(),
                }),
                ..BatchOptions::default()
            })
            .await
            .map_err(e2s)?,
        )
    } else {
        None
    };
    let mut from = 0;
    while from < n {
        let k = 1000.min(n - from);
        match &batch {
            Some(b) => {
                b.add_bulk(q.name().as_str(), jobs(from, k))
                    .await
                    .map_err(e2s)?;
            }
            None => {
                q.add_bulk(jobs(from, k)).await.map_err(e2s)?;
            }
        }
        from += k;
    }
    if let Some(b) = &batch {
        b.seal().await.map_err(e2s)?;
    }
    Ok(batch)
}

fn side(batched: bool) -> &'static str {
    if batched {
        "batched"
    } else {
        "plain"
    }
}

async fn add_run(cfg: &Cfg, admin: &mut Admin, n: u64, batched: bool) -> BResult<Value> {
    admin.flushall().await?;
    let q = open(cfg, "b").await?;
    let cpu0 = admin.redis_cpu_s().await?;
    let t = Instant::now();
    add(&q, n, batched).await?;
    let secs = t.elapsed().as_secs_f64();
    let cpu = admin.redis_cpu_s().await? - cpu0;
    Ok(json!({
        "scenario": format!("add_{}", side(batched)),
        "jobs": n,
        "jobs_per_s": n as f64 / secs,
        "redis_cpu_us_per_job": cpu * 1e6 / n as f64,
    }))
}

async fn process_run(cfg: &Cfg, admin: &mut Admin, n: u64, batched: bool) -> BResult<Value> {
    admin.flushall().await?;
    let q = open(cfg, "b").await?;
    let batch = add(&q, n, batched).await?;
    let cpu0 = admin.redis_cpu_s().await?;
    let t = Instant::now();
    let w = Worker::builder(q.clone())
        .options(WorkerOptions {
            concurrency: 10,
            ..WorkerOptions::default()
        })
        .handler(|_job: JobContext| futures::future::ready(Ok(Value::Null)))
        .run()
        .map_err(e2s)?;
    loop {
        let done = match &batch {
            Some(b) => b.status(0, 0).await.map_err(e2s)?.done,
            None => q.counts().await.map_err(e2s)?.completed >= n,
        };
        if done {
            break;
        }
        if t.elapsed() > cfg.timeout {
            return Err(format!("process_{}: timed out", side(batched)));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let secs = t.elapsed().as_secs_f64();
    let cpu = admin.redis_cpu_s().await? - cpu0;
    w.close().await.map_err(e2s)?;
    Ok(json!({
        "scenario": format!("process_{}", side(batched)),
        "jobs": n,
        "jobs_per_s": n as f64 / secs,
        "redis_cpu_us_per_job": cpu * 1e6 / n as f64,
    }))
}

pub async fn batch_main(cfg: Cfg, admin: &mut Admin) -> i32 {
    let n = env_u64("BATCH_JOBS", 20_000);
    let rep = env_u64("BATCH_REP", 0);
    let order = if rep % 2 == 0 {
        [false, true]
    } else {
        [true, false]
    };
    // One untimed add of each side first: the scripts loaded and the server's memory grown
    // before either side is timed (the first run of a process otherwise pays both).
    for batched in order {
        if let Err(e) = add_run(&cfg, admin, n, batched).await {
            eprintln!("emq-bench batch: warm-up: {e}");
            return 1;
        }
    }
    let mut lines = Vec::new();
    for batched in order {
        lines.push(add_run(&cfg, admin, n, batched).await);
    }
    // BATCH_ADD_ONLY=1: the add scenarios only (to look at the server's side of them alone).
    if env_u64("BATCH_ADD_ONLY", 0) == 0 {
        for batched in order {
            lines.push(process_run(&cfg, admin, n, batched).await);
        }
    }
    crate::print_lines("batch", rep, lines)
}
