//! `emq demo [--jobs N] [--concurrency C]`: a throughput demo that checks itself.
//!
//! Empties the queues `demo-emails`, `demo-images` and `demo-reports`, starts one Rust
//! [`emq::Worker`] per queue (a no-op handler returning a small JSON result; completed jobs are
//! kept so the audit can count them), adds N jobs spread over the three queues with `add_bulk` in
//! chunks, and prints progress to stderr about once a second. At the end it prints a table (one
//! row per worker language; only `rust` so far) and audits every queue: the completed count must
//! equal the jobs added, the queue's invariants must hold, and every job must have run exactly once
//! (each handler run records its job id; a second run of an id is a failure). Exits 0 only if the
//! audit passes.

use crate::connect::connect;
use clap::Args as ClapArgs;
use emq::{
    Error, ErrorCode, IdMinter, JobContext, JobId, JobOptions, NewJob, Queue, Retention, Worker,
    WorkerHandle, WorkerOptions,
};
use serde_json::json;
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The demo's queues.
pub const QUEUES: [&str; 3] = ["demo-emails", "demo-images", "demo-reports"];

/// Jobs per `add_bulk` call.
const CHUNK: usize = 5_000;

/// Give up when no job completes for this long.
const NO_PROGRESS_LIMIT: Duration = Duration::from_secs(60);

/// `emq demo` options.
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// Jobs to run in all, spread over the three demo queues.
    #[arg(long, default_value_t = 100_000)]
    pub jobs: u64,

    /// Jobs run at once by each queue's worker.
    #[arg(long, default_value_t = 32)]
    pub concurrency: usize,
}

/// What the handlers saw: every job id once, and how many ids came back a second time.
#[derive(Default)]
struct Seen {
    ids: Mutex<HashSet<JobId>>,
    duplicates: Mutex<Vec<JobId>>,
    runs: AtomicU64,
}

/// How many of `total` jobs go to queue `i` of `n`.
fn share(total: u64, i: usize, n: usize) -> u64 {
    let n = n as u64;
    total / n + u64::from((i as u64) < total % n)
}

fn rate(jobs: u64, elapsed: Duration) -> f64 {
    let secs = elapsed.as_secs_f64();
    if secs > 0.0 {
        jobs as f64 / secs
    } else {
        0.0
    }
}

fn human_rate(r: f64) -> String {
    if r >= 1000.0 {
        format!("{:.1}k", r / 1000.0)
    } else {
        format!("{r:.0}")
    }
}

/// Runs `emq demo`. `urls` are the global `--url` options.
pub async fn run(urls: &[String], args: &Args) -> emq::Result<()> {
    if args.jobs == 0 {
        return Err(Error::new(
            ErrorCode::InvalidOption,
            "--jobs must be at least 1",
        ));
    }
    if args.concurrency == 0 {
        return Err(Error::new(
            ErrorCode::InvalidOption,
            "--concurrency must be at least 1",
        ));
    }
    let connected = connect(urls).await?;
    let store = connected.store().clone();
    let minter = Arc::new(IdMinter::start(store.clone()).await?);
    let mut queues = Vec::new();
    for name in QUEUES {
        let q = Queue::with_store(store.clone(), minter.clone(), name)?;
        // A clean slate, so the counts below are this run's alone.
        q.obliterate(true).await?;
        q.resume().await?;
        queues.push(q);
    }
    eprintln!("python/node workers: not built in this command yet");

    let seen = Arc::new(Seen::default());
    let mut workers: Vec<WorkerHandle> = Vec::new();
    for q in &queues {
        let seen = seen.clone();
        let handler = move |job: JobContext| {
            let seen = seen.clone();
            async move {
                seen.runs.fetch_add(1, Ordering::Relaxed);
                let id = job.id();
                let first = seen.ids.lock().expect("seen lock").insert(id);
                if !first {
                    seen.duplicates.lock().expect("dup lock").push(id);
                }
                Ok(json!({ "ok": true, "id": id.to_string() }))
            }
        };
        let handle = Worker::builder(q.clone())
            .options(WorkerOptions {
                concurrency: args.concurrency,
                block_timeout: Duration::from_millis(500),
                completed: Retention::KEEP_ALL,
                ..WorkerOptions::default()
            })
            .handler(handler)
            .run()?;
        workers.push(handle);
    }

    let started = Instant::now();
    let total = args.jobs;
    let mut added: Vec<Vec<JobId>> = vec![Vec::new(); queues.len()];
    let completed_now = |workers: &[WorkerHandle]| -> u64 {
        workers.iter().map(|w| w.stats().completed).sum::<u64>()
    };
    let progress = |done: u64| {
        eprintln!(
            "demo: {done}/{total} completed ({} jobs/s)",
            human_rate(rate(done, started.elapsed()))
        );
    };

    // Add in chunks, round robin over the queues, reporting about once a second.
    let mut last_report = Instant::now();
    let mut seq = 0u64;
    let wants: Vec<u64> = (0..queues.len())
        .map(|i| share(total, i, queues.len()))
        .collect();
    loop {
        let mut any = false;
        for (i, q) in queues.iter().enumerate() {
            let have = added[i].len() as u64;
            if have >= wants[i] {
                continue;
            }
            any = true;
            let n = (wants[i] - have).min(CHUNK as u64);
            let batch: Vec<NewJob> = (0..n)
                .map(|_| {
                    seq += 1;
                    NewJob {
                        name: q.name().as_str().trim_start_matches("demo-").to_string(),
                        data: json!({ "n": seq }),
                        options: JobOptions {
                            remove_on_complete: false,
                            ..JobOptions::default()
                        },
                    }
                })
                .collect();
            let ids = q.add_bulk(batch).await?;
            added[i].extend(ids);
            if last_report.elapsed() >= Duration::from_secs(1) {
                progress(completed_now(&workers));
                last_report = Instant::now();
            }
        }
        if !any {
            break;
        }
    }
    eprintln!(
        "demo: added {total} jobs in {:.2}s",
        started.elapsed().as_secs_f64()
    );

    // Wait for the workers, reporting about once a second.
    let mut last_done = completed_now(&workers);
    let mut last_change = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(50));
    let mut stalled = false;
    loop {
        tick.tick().await;
        let done = completed_now(&workers);
        if done != last_done {
            last_done = done;
            last_change = Instant::now();
        }
        if done >= total {
            break;
        }
        if last_report.elapsed() >= Duration::from_secs(1) {
            progress(done);
            last_report = Instant::now();
        }
        if last_change.elapsed() >= NO_PROGRESS_LIMIT {
            eprintln!(
                "demo: no job completed for {}s; giving up",
                NO_PROGRESS_LIMIT.as_secs()
            );
            stalled = true;
            break;
        }
    }
    let elapsed = started.elapsed();
    let done = completed_now(&workers);
    progress(done);
    let failed: u64 = workers.iter().map(|w| w.stats().failed).sum();
    for w in workers {
        w.close().await?;
    }

    println!(
        "{:<10} {:>10} {:>10} {:>12}",
        "LANGUAGE", "JOBS", "SECONDS", "JOBS/S"
    );
    println!(
        "{:<10} {:>10} {:>10.2} {:>12.0}",
        "rust",
        done,
        elapsed.as_secs_f64(),
        rate(done, elapsed)
    );

    // The audit.
    let mut problems: Vec<String> = Vec::new();
    if stalled {
        problems.push(format!("only {done} of {total} jobs completed"));
    }
    if failed > 0 {
        problems.push(format!("{failed} handler runs failed"));
    }
    for (i, q) in queues.iter().enumerate() {
        let name = q.name().as_str();
        let report = q.audit().await?;
        for p in &report.problems {
            problems.push(format!("{name}: {p}"));
        }
        let counts = q.counts().await?;
        let want = added[i].len() as u64;
        if counts.completed != want {
            problems.push(format!(
                "{name}: {} completed, {want} added",
                counts.completed
            ));
        }
        let ids = seen.ids.lock().expect("seen lock");
        let missing = added[i].iter().filter(|id| !ids.contains(id)).count();
        if missing > 0 {
            problems.push(format!("{name}: {missing} added jobs never ran"));
        }
    }
    let duplicates = seen.duplicates.lock().expect("dup lock").clone();
    if !duplicates.is_empty() {
        let shown: Vec<String> = duplicates.iter().take(5).map(|id| id.to_string()).collect();
        problems.push(format!(
            "{} jobs ran more than once (e.g. {})",
            duplicates.len(),
            shown.join(", ")
        ));
    }
    let runs = seen.runs.load(Ordering::Relaxed);
    if runs != total {
        problems.push(format!("{runs} handler runs for {total} jobs"));
    }
    drop(queues);
    drop(minter);
    drop(connected);

    if problems.is_empty() {
        println!("audit: ok");
        Ok(())
    } else {
        println!("audit: {} problems", problems.len());
        for p in &problems {
            println!("  - {p}");
        }
        Err(Error::new(
            ErrorCode::InvalidState,
            format!("the demo's audit found {} problems", problems.len()),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up() {
        for total in [1u64, 2, 3, 500, 3000, 100_001] {
            let sum: u64 = (0..3).map(|i| share(total, i, 3)).sum();
            assert_eq!(sum, total);
        }
        assert_eq!(human_rate(38_123.0), "38.1k");
        assert_eq!(human_rate(950.0), "950");
    }
}
