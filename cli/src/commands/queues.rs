//! `emq queues [--json] [--repair]` and `emq workers [QUEUE…] [--json]`: the queue registry with
//! counts per state, and the live workers (both kept by the core: `emq::registry`,
//! `emq::worker_registry`).
//!
//! The registry is filled as queues are used; queues made by an emq before it (or by a foreign
//! writer) show up after `--repair`, a bounded SCAN of every node (run by itself when the registry
//! is empty).

use crate::connect::{connect, server_time_ms};
use crate::human::{self, Clock};
use clap::Args as ClapArgs;
use emq::{registry, Counts, IdMinter, JobState, Queue, QueueName, Store, WorkerInfo};
use serde::Serialize;
use std::sync::Arc;

/// `emq queues` options.
#[derive(ClapArgs, Debug)]
pub struct QueuesArgs {
    /// Print a JSON array: `[{"queue", "counts": {<state>: n}, "total", "paused",
    /// "oldest_waiting_age_ms", "workers", "partitions"}]` (a partitioned queue is one entry, its
    /// partitions' counts added up).
    #[arg(long)]
    pub json: bool,

    /// First register the queues a SCAN of the datastore finds (every master of a cluster).
    #[arg(long)]
    pub repair: bool,
}

/// `emq workers` options.
#[derive(ClapArgs, Debug)]
pub struct WorkersArgs {
    /// Only these queues (default: every registered queue).
    pub queues: Vec<String>,

    /// Print a JSON array of workers (`id`, `queue`, `host`, `pid`, `language`, `concurrency`,
    /// `running`, `version`, `started_ms`, `beat_ms`, `lapse_ms`; stamps are server ms).
    #[arg(long)]
    pub json: bool,
}

/// One queue at a glance (also what `emq ui` shows on its overview).
#[derive(Serialize, Debug, Clone)]
pub struct QueueSummary {
    /// The bare queue name.
    pub queue: String,
    /// Jobs per state.
    pub counts: Counts,
    /// Jobs in all states.
    pub total: u64,
    /// True while paused.
    pub paused: bool,
    /// Age of the oldest waiting job in ms, on the datastore's clock (null when none waits).
    pub oldest_waiting_age_ms: Option<u64>,
    /// Live workers.
    pub workers: usize,
    /// Its partitions (1: a plain queue); the counts are all of them together.
    pub partitions: u16,
}

/// Reads one queue's summary; `now_ms` is the datastore's clock.
pub async fn summary(q: &Queue, now_ms: u64) -> emq::Result<QueueSummary> {
    let counts = q.counts().await?;
    let oldest = if counts.waiting > 0 {
        q.list_as_stored(JobState::Waiting, 0, 1).await?
    } else if counts.paused > 0 {
        q.list_as_stored(JobState::Paused, 0, 1).await?
    } else {
        vec![]
    };
    Ok(QueueSummary {
        queue: q.name().as_str().to_string(),
        total: counts.total(),
        counts,
        paused: q.is_paused().await?,
        oldest_waiting_age_ms: oldest.first().map(|j| now_ms.saturating_sub(j.created_ms)),
        workers: q.workers().await?.len(),
        partitions: q.partition_count(),
    })
}

/// When to run the registry's SCAN repair before listing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Repair {
    /// Never (every page of `emq ui`: a SCAN per request would be unbounded work).
    Never,
    /// When the registry is empty (queues made before it; `emq queues`).
    IfEmpty,
    /// Always (`emq queues --repair`).
    Always,
}

/// The registered queues, repairing first as `repair` says; a partitioned queue's partitions
/// folded into its name (`registry::logical_queues`).
pub async fn registered(store: &Store, repair: Repair) -> emq::Result<Vec<QueueName>> {
    let mut names = registry::logical_queues(store).await?;
    if repair == Repair::Always || (repair == Repair::IfEmpty && names.is_empty()) {
        let repair = repair == Repair::Always;
        let report = registry::repair(store).await?;
        if repair {
            eprintln!(
                "repair: scanned {} node(s), found {} queue(s), {} newly registered{}",
                report.nodes,
                report.found,
                report.added,
                if report.complete {
                    ""
                } else {
                    " (stopped at its bound)"
                }
            );
        }
        names = registry::logical_queues(store).await?;
    }
    Ok(names)
}

/// Opens each named queue on one store and id minter, each with its stored partition count (a
/// partitioned queue's handle spans its partitions).
pub async fn open_all(store: &Store, names: &[QueueName]) -> emq::Result<Vec<Queue>> {
    let minter = Arc::new(IdMinter::start(store.clone()).await?);
    let mut out = Vec::with_capacity(names.len());
    for n in names {
        out.push(open_one(store, &minter, n.as_str()).await?);
    }
    Ok(out)
}

/// Opens one queue by name with its stored partition count.
pub async fn open_one(store: &Store, minter: &Arc<IdMinter>, name: &str) -> emq::Result<Queue> {
    Queue::open(
        store.clone(),
        minter.clone(),
        name,
        emq::QueueOptions::default(),
    )
    .await
}

/// Runs `emq queues`.
pub async fn run_queues(urls: &[String], args: &QueuesArgs) -> emq::Result<()> {
    let connected = connect(urls).await?;
    let store = connected.store();
    let mode = if args.repair {
        Repair::Always
    } else {
        Repair::IfEmpty
    };
    let names = registered(store, mode).await?;
    let now = server_time_ms(store).await?;
    let mut rows = Vec::new();
    for q in open_all(store, &names).await? {
        rows.push(summary(&q, now).await?);
    }
    if args.json {
        outln!("{}", super::to_json(&rows)?);
        return Ok(());
    }
    outln!(
        "{:<24} {:>8} {:>7} {:>8} {:>8} {:>10} {:>8} {:>7} {:>7}  OLDEST WAITING",
        "QUEUE",
        "WAITING",
        "ACTIVE",
        "DELAYED",
        "PRIORITY",
        "COMPLETED",
        "FAILED",
        "PAUSED",
        "WORKERS"
    );
    for r in &rows {
        let c = &r.counts;
        outln!(
            "{:<24} {:>8} {:>7} {:>8} {:>8} {:>10} {:>8} {:>7} {:>7}  {}",
            if r.partitions > 1 {
                format!("{} ({} partitions)", r.queue, r.partitions)
            } else {
                r.queue.clone()
            },
            c.waiting + c.paused,
            c.active,
            c.delayed,
            c.prioritized,
            c.completed,
            c.failed,
            if r.paused { "yes" } else { "no" },
            r.workers,
            r.oldest_waiting_age_ms
                .map(human::duration)
                .unwrap_or_else(|| "-".into())
        );
    }
    eprintln!("{} queue(s)", rows.len());
    Ok(())
}

/// The live workers of `queues` (every registered queue when empty).
pub async fn workers_of(store: &Store, queues: &[String]) -> emq::Result<Vec<WorkerInfo>> {
    let names = if queues.is_empty() {
        registered(store, Repair::Never).await?
    } else {
        queues
            .iter()
            .map(|n| QueueName::new(n))
            .collect::<emq::Result<_>>()?
    };
    let mut all = Vec::new();
    for q in open_all(store, &names).await? {
        all.extend(q.workers().await?);
    }
    Ok(all)
}

/// Runs `emq workers`.
pub async fn run_workers(urls: &[String], args: &WorkersArgs) -> emq::Result<()> {
    for n in &args.queues {
        QueueName::new(n)?;
    }
    let connected = connect(urls).await?;
    let store = connected.store();
    let all = workers_of(store, &args.queues).await?;
    if args.json {
        outln!("{}", super::to_json(&all)?);
        return Ok(());
    }
    let clock = Clock::read(store).await?;
    outln!(
        "{:<18} {:<20} {:<16} {:>8} {:<8} {:>7}  {:<12} LAST BEAT",
        "ID",
        "QUEUE",
        "HOST",
        "PID",
        "LANGUAGE",
        "RUNNING",
        "STARTED"
    );
    for w in &all {
        outln!(
            "{:<18} {:<20} {:<16} {:>8} {:<8} {:>7}  {:<12} {}",
            w.id,
            w.queue,
            w.host,
            w.pid,
            w.language,
            format!("{}/{}", w.running, w.concurrency),
            human::relative(w.started_ms, clock.now_ms()),
            human::relative(w.beat_ms, clock.now_ms())
        );
    }
    eprintln!("{} worker(s)", all.len());
    Ok(())
}
