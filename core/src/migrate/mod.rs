//! `emq migrate`: copies the jobs of one BullMQ queue, or of an EchoMQ 1.x (v1) queue, which speaks
//! the same wire under the `emq` prefix, into an emq queue, crash-safe and idempotent.
//!
//! **The source** is the flat BullMQ keyspace of one queue, `<prefix>:<queue>:<type>` (`bull` is
//! BullMQ's default prefix, `emq` the v1 one): the `wait`, `paused` and `active` lists, the
//! `prioritized`, `delayed`, `waiting-children`, `failed` and `completed` sorted sets, each job's hash
//! `<prefix>:<queue>:<id>` (with `:lock` and `:logs` beside it), and the job schedulers (`repeat`
//! sorted set, `repeat:<id>` hashes). These keys are not emq's: they are read here with plain
//! single-key commands (never from inside an emq script, whose keys must be declared and share the
//! queue's slot; on a cluster each source key may live on another node and the store routes each
//! command), and written only with `delete_source`, after the job's copy exists.
//!
//! **The target** is written only through emq's own API: [`Queue::add_bulk`] with a pre-minted
//! [`JobOptions::id`] for waiting, prioritized and delayed jobs (the add script makes a second add
//! of the same id a no-op), [`Queue::upsert_scheduler`] for schedulers, and `migrate_finished.lua`
//! (a failed or completed record inserted and marked in one step) for finished jobs. A
//! partitioned target gets one pass per partition, each copying the source jobs that belong to
//! it (its group's, else its dedup key's, else its source key's partition: `Migration::mine`),
//! with the `migrated` hash of that partition; flows go through the target's `add_flow`.
//!
//! **Crash safety.** Before a job's copy is written, the id minted for it is stored with `HSETNX` in
//! the queue's `migrated` hash (field: the source job's key `<prefix>:<queue>:<id>`, data); once the
//! copy exists, the value becomes `<id>|<state>` (and `=<id>` maps back to the source). A run killed
//! at any point and run again reuses the stored id, so an add that did land is not repeated and one
//! that did not is made, and a source marked copied is skipped. One window remains: a run killed
//! between an add's reply and its mark, whose job is then run *and* deleted (retention,
//! `remove_on_complete`) before the next run, would be added again by that run. `migrate_finished`
//! closes it for finished jobs (insert and mark are one script).
//!
//! **What maps**: name; data (verbatim JSON; the source id lives in the `migrated` hash, see
//! [`Queue::migrated_id`] and [`Queue::migrated_source`], so the payload the handler sees is the
//! source's); attempts left (`attempts - attemptsMade`, at least 1); backoff (fixed, exponential,
//! jitter); priority; LIFO (order of the source lists kept: jobs are added oldest first); the delay
//! left (the source's due time minus the server's `TIME`; BullMQ 5+ scores a delayed job
//! `due * 4096 + counter`, older ones `due`); `removeOnComplete` / `removeOnFail` when `true`;
//! failures (reason, the last stack trace, attempts made, when it finished); results of completed
//! jobs (with `completed`); schedulers repeating `every` N ms or by cron `pattern` with `tz`,
//! `limit`, `startDate`, `endDate`; flows whose parent waits in `waiting-children` for children
//! that all wait, not started, in this queue (copied whole with [`Queue::add_flow`], the children
//! after the plain waiting jobs). **What does not** is counted in [`MigrateReport::not_mapped`] or
//! skipped with a reason: active jobs whose lock lives (a BullMQ worker runs them; active jobs
//! without a lock are copied as waiting), other flows (nested, across queues, or with a child
//! started or finished: parent and children stay in BullMQ to finish there), the next run a
//! migrated scheduler had pending (the emq scheduler makes its own), legacy repeatable jobs without
//! a scheduler hash, and options emq has no equivalent of (keep-N/age retention, custom backoff,
//! deduplication's extend/replace). Job logs are copied (the lines a copy lacks, so a re-run
//! repeats none); a deduplication id becomes the copy's dedup key (a ttl restarts at the
//! migration), and a job whose id is already held by a copied job is reported as deduplicated.
//!
//! The files: this one the options, the report and the entry points on [`Queue`]; `source.rs`
//! reading a BullMQ job and mapping its options; `run.rs` the migration's steps (read the
//! containers, claim ids, copy in batches, delete the sources); `flows.rs` the flows that move
//! whole; `schedulers.rs` the job schedulers.

use crate::error::{Error, ErrorCode, Result};
use crate::job_id::JobId;
use crate::keyspace::Family;
use crate::queue::Queue;
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

mod flows;
mod run;
mod schedulers;
mod source;

use run::Migration;
pub use source::bullmq_due_ms;
use source::*;

/// Longest deduplication id copied as an emq dedup key (longer ones are reported, not mapped).
pub(super) const MAX_DEDUP_KEY: usize = 1_024;

/// Most skipped jobs listed one by one in a report (all are counted).
pub const MAX_LISTED_SKIPS: usize = 1_000;

/// Jobs per `add_bulk` call: at most one `add.lua` batch (250 in queue.rs), so the calls, made one
/// after the other, land in order.
pub(super) const ORDERED_ADD: usize = 250;

pub(super) fn chunked<T>(mut v: Vec<T>, n: usize) -> Vec<Vec<T>> {
    let mut out = Vec::new();
    while v.len() > n {
        let rest = v.split_off(n);
        out.push(std::mem::replace(&mut v, rest));
    }
    out.push(v);
    out
}

/// What to migrate, and how.
#[derive(Clone, Debug)]
pub struct MigrateOptions {
    /// The source's key prefix: `bull` (BullMQ's default) or `emq` (EchoMQ 1.x).
    pub from_prefix: String,
    /// The source queue's name, verbatim.
    pub source_queue: String,
    /// Read and count only; write nothing (no mapping, no job, no source change).
    pub dry_run: bool,
    /// Copy completed jobs too (they are only counted otherwise).
    pub completed: bool,
    /// Delete each source job once its copy exists (and migrated schedulers with their pending
    /// run). Without it the source is never written.
    pub delete_source: bool,
    /// Jobs read and written per step (1 to 10,000).
    pub batch: usize,
    /// For tests only: sleep this long after each batch of adds, before the batch is marked
    /// copied (the widest window a crash can hit), so a test can kill a migration there (the CLI
    /// sets it from `EMQ_TEST_MIGRATE_PAUSE_MS`).
    pub pause_per_batch: Duration,
}

impl MigrateOptions {
    /// Options for migrating `<prefix>:<queue>`: no dry run, no completed jobs, source kept.
    pub fn new(from_prefix: impl Into<String>, source_queue: impl Into<String>) -> MigrateOptions {
        MigrateOptions {
            from_prefix: from_prefix.into(),
            source_queue: source_queue.into(),
            dry_run: false,
            completed: false,
            delete_source: false,
            batch: 500,
            pause_per_batch: Duration::ZERO,
        }
    }

    /// Checks the options (`invalid_option`).
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::new(ErrorCode::InvalidOption, m));
        for (what, v) in [
            ("the source prefix", &self.from_prefix),
            ("the source queue", &self.source_queue),
        ] {
            if v.is_empty() || v.len() > 256 {
                return bad(format!("{what} must be 1 to 256 bytes"));
            }
            if v.chars().any(|c| c.is_whitespace() || c.is_control()) {
                return bad(format!("{what} {v:?} has whitespace or control characters"));
            }
        }
        if self.batch == 0 || self.batch > 10_000 {
            return bad(format!(
                "batch must be between 1 and 10000, got {}",
                self.batch
            ));
        }
        if self.dry_run && self.delete_source {
            return bad("dry_run and delete_source exclude each other".into());
        }
        Ok(())
    }
}

/// Counts of one source state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StateReport {
    /// The source state.
    pub state: String,
    /// Jobs found in it.
    pub read: u64,
    /// Copied by this run (in a dry run: would be).
    pub written: u64,
    /// Copied by an earlier run (found marked in the `migrated` hash).
    pub already: u64,
    /// Not copied (see the reasons).
    pub skipped: u64,
}

/// One job not copied.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// Its source state.
    pub state: String,
    /// Its source id.
    pub source_id: String,
    /// Why.
    pub reason: String,
}

/// What a migration read, wrote and skipped.
#[derive(Clone, Debug, Default, Serialize)]
pub struct MigrateReport {
    /// `<prefix>:<queue>`.
    pub source: String,
    /// The emq queue.
    pub target: String,
    /// True when nothing was written.
    pub dry_run: bool,
    /// Per source state, in the order they were migrated (`schedulers` first).
    pub states: Vec<StateReport>,
    /// Skipped jobs, by reason.
    pub reasons: BTreeMap<String, u64>,
    /// The first [`MAX_LISTED_SKIPS`] skipped jobs.
    pub skipped: Vec<Skipped>,
    /// Source options with no emq equivalent, by name: how many copied jobs carried each.
    pub not_mapped: BTreeMap<String, u64>,
    /// Source jobs (and schedulers) deleted (with `delete_source`).
    pub source_deleted: u64,
    /// Job log lines copied (a source job's `:logs` list, appended to its copy's log).
    pub log_lines: u64,
    /// Notes for the operator (a paused source, schedulers left running in BullMQ).
    pub notes: Vec<String>,
    /// Wall time of the run.
    pub elapsed_ms: u64,
}

impl MigrateReport {
    /// The counts of one state (zero when it was not visited).
    pub fn state(&self, state: &str) -> StateReport {
        self.states
            .iter()
            .find(|s| s.state == state)
            .cloned()
            .unwrap_or_else(|| StateReport {
                state: state.into(),
                ..Default::default()
            })
    }

    /// Jobs copied by this run, every state.
    pub fn written(&self) -> u64 {
        self.states.iter().map(|s| s.written).sum()
    }

    pub(super) fn row(&mut self, state: &str) -> &mut StateReport {
        if let Some(i) = self.states.iter().position(|s| s.state == state) {
            return &mut self.states[i];
        }
        self.states.push(StateReport {
            state: state.into(),
            ..Default::default()
        });
        self.states.last_mut().expect("pushed")
    }

    pub(super) fn skip(&mut self, state: &str, source_id: &str, reason: String) {
        self.row(state).skipped += 1;
        *self.reasons.entry(reason.clone()).or_default() += 1;
        if self.skipped.len() < MAX_LISTED_SKIPS {
            self.skipped.push(Skipped {
                state: state.into(),
                source_id: source_id.into(),
                reason,
            });
        }
    }
}

impl Queue {
    /// The emq id a migration gave the source job `<prefix>:<queue>:<source_id>` (minted before its
    /// copy was written: check the job exists with [`Queue::get`]); None when it was never migrated
    /// into this queue (a partitioned one: into any of its partitions).
    pub async fn migrated_id(
        &self,
        from_prefix: &str,
        source_queue: &str,
        source_id: &str,
    ) -> Result<Option<JobId>> {
        let v = self
            .migrated_field(&format!("{from_prefix}:{source_queue}:{source_id}"))
            .await?;
        match v {
            None => Ok(None),
            Some(v) => Ok(Some(JobId::parse(v.split('|').next().unwrap_or(""))?)),
        }
    }

    /// The source job key (`<prefix>:<queue>:<source id>`) a migrated job was copied from.
    pub async fn migrated_source(&self, id: JobId) -> Result<Option<String>> {
        self.migrated_field(&format!("={id}")).await
    }

    /// A field of the migration's id mapping: this queue's, or the first partition's that has it.
    async fn migrated_field(&self, field: &str) -> Result<Option<String>> {
        let spread = self.spread();
        let homes: Vec<&Queue> = match &spread {
            Some(p) => p.members.iter().collect(),
            None => vec![self],
        };
        for q in homes {
            let v: Option<String> = redis::cmd("HGET")
                .arg(q.name().key(Family::Migrated))
                .arg(field)
                .query_async(&mut q.store().conn())
                .await?;
            if v.is_some() {
                return Ok(v);
            }
        }
        Ok(None)
    }

    /// Copies one BullMQ (or EchoMQ 1.x) queue into this queue; see the [module](crate::migrate)
    /// for what maps and why a run may be killed and run again.
    ///
    /// Into a partitioned queue, the source is read once per partition: each pass copies the
    /// jobs that belong to its partition (by their group, else dedup key, else source key; see
    /// `Migration::mine`), keeping their id mapping in that partition's slot, so a finished job's
    /// copy and its mark stay one step; the schedulers are copied once, before the passes.
    pub async fn migrate_from_bullmq(&self, options: &MigrateOptions) -> Result<MigrateReport> {
        options.validate()?;
        let started = Instant::now();
        let src = Source {
            base: format!("{}:{}", options.from_prefix, options.source_queue),
        };
        let mut m = Migration {
            q: self,
            target: self,
            part: None,
            o: options,
            src,
            report: MigrateReport {
                source: format!("{}:{}", options.from_prefix, options.source_queue),
                target: self.name().to_string(),
                dry_run: options.dry_run,
                ..Default::default()
            },
            schedulers: HashSet::new(),
            flows: Vec::new(),
            flow_children: HashSet::new(),
        };
        let paused: Option<String> = redis::cmd("HGET")
            .arg(m.src.key("meta"))
            .arg("paused")
            .query_async(&mut self.store().conn())
            .await?;
        if paused.is_some() {
            m.report.notes.push(
                "the source queue is paused; its jobs were copied as ready (pause the emq queue \
                 first if they must not run yet)"
                    .into(),
            );
        }
        m.schedulers().await?;
        let spread = self.spread();
        let passes: Vec<(
            &Queue,
            Option<(usize, &crate::queue::partition_set::Partitions)>,
        )> = match &spread {
            None => vec![(self, None)],
            Some(p) => p
                .members
                .iter()
                .enumerate()
                .map(|(i, q)| (q, Some((i, p.as_ref()))))
                .collect(),
        };
        for (q, part) in passes {
            m.q = q;
            m.part = part;
            m.flows.clear();
            m.flow_children.clear();
            m.copy_all().await?;
        }
        if !options.completed {
            let n: u64 = redis::cmd("ZCARD")
                .arg(m.src.key("completed"))
                .query_async(&mut self.store().conn())
                .await?;
            if n > 0 {
                let row = m.report.row("completed");
                row.read = n;
                row.skipped = n;
                *m.report
                    .reasons
                    .entry("completed: not asked for (--completed)".into())
                    .or_default() += n;
            }
        }
        m.report.elapsed_ms = started.elapsed().as_millis() as u64;
        Ok(m.report)
    }
}

impl Migration<'_> {
    /// This pass's copies: the ready jobs (and the flows that move whole), the active ones
    /// without a lock, the failed and, when asked, the completed ones.
    async fn copy_all(&mut self) -> Result<()> {
        // The ready jobs are read first: a flow moves only when all its children are among them.
        let mut ready = Vec::new();
        for list in ["wait", "paused"] {
            ready.push((list, Kind::List, self.list_ids(list).await?));
        }
        for (set, kind) in [
            ("prioritized", Kind::Prioritized),
            ("delayed", Kind::Delayed),
        ] {
            ready.push((set, kind, self.zset_ids(set).await?));
        }
        self.plan_flows(&ready).await?;
        self.active().await?;
        for (container, kind, ids) in ready {
            let state = if kind == Kind::List {
                "wait"
            } else {
                container
            };
            self.copy(state, container, kind, ids).await?;
        }
        self.copy_flows().await?;
        let failed = self.zset_ids("failed").await?;
        self.copy("failed", "failed", Kind::Finished, failed)
            .await?;
        if self.o.completed {
            let done = self.zset_ids("completed").await?;
            self.copy("completed", "completed", Kind::Finished, done)
                .await?;
        }
        Ok(())
    }
}
