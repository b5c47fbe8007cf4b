//! `emq-bench partitions SEED_URL[,SEED_URL…]`: one logical queue on a cluster, plain or spread
//! over partitions (core/src/partitions.rs). Run by hand, never in CI: `bench/partitions.sh`
//! starts a private cluster, alternates the plain and partitioned runs and reads each master's
//! Redis CPU around them.
//!
//! One run, one JSON line on stdout: a fresh queue (PART_COUNT partitions; 1 = plain), one worker
//! at PART_CONC (100) concurrency with a no-op handler, and one producer adding PART_JOBS (20,000)
//! jobs in bulk adds of PART_BULK (100) while the worker runs; `jobs_per_s` is PART_JOBS over the
//! time from the first add to the last completion (by the worker's counters). The queue is
//! obliterated after.

use crate::env_u64;
use emq::{ConnectOptions, JobContext, NewJob, Queue, QueueOptions, Worker, WorkerOptions};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

async fn run(seeds: Vec<String>) -> Result<Value, String> {
    let count = env_u64("PART_COUNT", 1) as u16;
    let jobs = env_u64("PART_JOBS", 20_000);
    let conc = env_u64("PART_CONC", 100) as usize;
    let bulk = env_u64("PART_BULK", 100);
    let name = format!("bench-part-{}-{}", std::process::id(), count);
    let q = Queue::connect_with(
        ConnectOptions::seeds(seeds),
        &name,
        QueueOptions {
            partitions: Some(count),
        },
    )
    .await
    .map_err(|e| format!("connect: {e}"))?;
    let w = Worker::builder(q.clone())
        .options(WorkerOptions {
            concurrency: conc,
            ..WorkerOptions::default()
        })
        .handler(|_job: JobContext| futures::future::ready(Ok(Value::Null)))
        .run()
        .map_err(|e| format!("worker: {e}"))?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let started = Instant::now();
    let producer = {
        let q = q.clone();
        tokio::spawn(async move {
            let mut added = 0;
            while added < jobs {
                let n = bulk.min(jobs - added);
                let batch = (0..n)
                    .map(|i| NewJob {
                        name: "n".into(),
                        data: json!(added + i),
                        options: Default::default(),
                    })
                    .collect();
                q.add_bulk(batch).await.map_err(|e| format!("add: {e}"))?;
                added += n;
            }
            Ok::<(), String>(())
        })
    };
    while w.stats().completed < jobs {
        if started.elapsed() > Duration::from_secs(300) {
            return Err(format!("timed out at {} of {jobs}", w.stats().completed));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let secs = started.elapsed().as_secs_f64();
    producer.await.map_err(|e| e.to_string())??;
    w.close().await.map_err(|e| format!("close: {e}"))?;
    q.obliterate(true)
        .await
        .map_err(|e| format!("obliterate: {e}"))?;
    Ok(json!({
        "scenario": "partitions",
        "partitions": count,
        "jobs": jobs,
        "concurrency": conc,
        "secs": secs,
        "jobs_per_s": jobs as f64 / secs,
    }))
}

pub async fn partitions_main(seeds: Vec<String>) -> i32 {
    match run(seeds).await {
        Ok(v) => {
            println!("{v}");
            0
        }
        Err(e) => {
            eprintln!("emq-bench partitions: {e}");
            1
        }
    }
}
