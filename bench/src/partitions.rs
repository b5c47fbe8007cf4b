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
//!
//! With PART_GROW_TO (more than PART_COUNT), the producer grows the queue to that many partitions
//! (`Queue::grow_partitions`) once half the jobs are added, and the line also gives how long the
//! growth call took, how long after it the first job of a new partition completed (the worker's
//! restart over the grown queue), the jobs/s before and after the growth, how many jobs ran in the
//! new partitions, and how many ran more than once (the handler counts every id).

use crate::env_u64;
use emq::{ConnectOptions, JobContext, NewJob, Queue, QueueOptions, Worker, WorkerOptions};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the handler sees while a growth is measured: the new partitions' names, every id run,
/// the runs more than once, the runs in a new partition and when the first of them ended.
#[derive(Default)]
struct Seen {
    new_parts: Mutex<HashSet<String>>,
    ids: Mutex<HashSet<emq::JobId>>,
    twice: AtomicU64,
    in_new: AtomicU64,
    first_new_us: AtomicU64,
}

async fn run(seeds: Vec<String>) -> Result<Value, String> {
    let count = env_u64("PART_COUNT", 1) as u16;
    let jobs = env_u64("PART_JOBS", 20_000);
    let conc = env_u64("PART_CONC", 100) as usize;
    let bulk = env_u64("PART_BULK", 100);
    let grow_to = env_u64("PART_GROW_TO", 0) as u16;
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
    let seen = Arc::new(Seen::default());
    // Every time below is µs after `epoch`.
    let epoch = Instant::now();
    let builder = Worker::builder(q.clone()).options(WorkerOptions {
        concurrency: conc,
        ..WorkerOptions::default()
    });
    let w = if grow_to > count {
        let seen = seen.clone();
        builder.handler(move |job: JobContext| {
            if !seen.ids.lock().unwrap().insert(job.id()) {
                seen.twice.fetch_add(1, Ordering::Relaxed);
            }
            let part = job.queue().name().as_str();
            if seen.new_parts.lock().unwrap().contains(part) {
                seen.in_new.fetch_add(1, Ordering::Relaxed);
                let at = epoch.elapsed().as_micros() as u64;
                let _ =
                    seen.first_new_us
                        .compare_exchange(0, at, Ordering::Relaxed, Ordering::Relaxed);
            }
            futures::future::ready(Ok(Value::Null))
        })
    } else {
        builder.handler(|_job: JobContext| futures::future::ready(Ok(Value::Null)))
    }
    .run()
    .map_err(|e| format!("worker: {e}"))?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let started = Instant::now();
    let off = (started - epoch).as_secs_f64();
    // (when the growth call began and ended, µs after `epoch`; the completions then)
    let grown: Arc<Mutex<Option<(u64, u64, u64)>>> = Arc::default();
    let producer = {
        let q = q.clone();
        let (seen, grown, w_done) = (seen.clone(), grown.clone(), w.aborter());
        tokio::spawn(async move {
            let mut added = 0;
            while added < jobs {
                if grow_to > count && added >= jobs / 2 && grown.lock().unwrap().is_none() {
                    let names: Vec<String> = {
                        let t0 = epoch.elapsed().as_micros() as u64;
                        q.grow_partitions(grow_to)
                            .await
                            .map_err(|e| format!("grow: {e}"))?;
                        let t1 = epoch.elapsed().as_micros() as u64;
                        *grown.lock().unwrap() = Some((t0, t1, w_done.stats().completed));
                        q.partitions().unwrap_or_default()[usize::from(count)..]
                            .iter()
                            .map(|p| p.name().as_str().to_string())
                            .collect()
                    };
                    seen.new_parts.lock().unwrap().extend(names);
                }
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
    let growth = (*grown.lock().unwrap()).map(|(t0, t1, done_then)| {
        let (t0, t1) = (t0 as f64 / 1e6, t1 as f64 / 1e6);
        let first_new = seen.first_new_us.load(Ordering::Relaxed) as f64 / 1e6;
        json!({
            "grow_to": grow_to,
            "grow_call_ms": (t1 - t0) * 1e3,
            "first_new_done_after_ms": (first_new - t1) * 1e3,
            "jobs_per_s_before": done_then as f64 / (t0 - off),
            "jobs_per_s_after": (jobs - done_then) as f64 / (secs - (t0 - off)),
            "ran_in_new": seen.in_new.load(Ordering::Relaxed),
            "ran_twice": seen.twice.load(Ordering::Relaxed),
            "distinct_ids": seen.ids.lock().unwrap().len(),
        })
    });
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
        "growth": growth,
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
