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
//! (a failed or completed record inserted and marked in one step) for finished jobs.
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

use crate::error::{Error, ErrorCode, Result};
use crate::flow::FlowJob;
use crate::job_id::JobId;
use crate::keyspace::Family;
use crate::options::{Backoff, JobOptions, Removal, MAX_PRIORITY};
use crate::queue::{NewJob, Queue, MAX_LOG_LINES};
use crate::scheduler::{Repeat, Schedule};
use crate::script;
use futures::future::join_all;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

/// Longest deduplication id copied as an emq dedup key (longer ones are reported, not mapped).
const MAX_DEDUP_KEY: usize = 1_024;

/// Most skipped jobs listed one by one in a report (all are counted).
pub const MAX_LISTED_SKIPS: usize = 1_000;

/// Jobs per `add_bulk` call: at most one `add.lua` batch (250 in queue.rs), so the calls, made one
/// after the other, land in order.
const ORDERED_ADD: usize = 250;

fn chunked<T>(mut v: Vec<T>, n: usize) -> Vec<Vec<T>> {
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

    fn row(&mut self, state: &str) -> &mut StateReport {
        if let Some(i) = self.states.iter().position(|s| s.state == state) {
            return &mut self.states[i];
        }
        self.states.push(StateReport {
            state: state.into(),
            ..Default::default()
        });
        self.states.last_mut().expect("pushed")
    }

    fn skip(&mut self, state: &str, source_id: &str, reason: String) {
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

/// The source queue's keys (BullMQ's, not emq's: flat, in any slot).
struct Source {
    base: String,
}

impl Source {
    fn key(&self, suffix: &str) -> String {
        format!("{}:{suffix}", self.base)
    }
    fn job(&self, id: &str) -> String {
        format!("{}:{id}", self.base)
    }
}

/// Source ids of one container, with their scores (sorted sets only), in order.
type Ids = Vec<(String, Option<f64>)>;

/// Where a job sits in the source, and how it is copied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A list (`wait`, `paused`, `active`): copied as waiting, in list order.
    List,
    /// `prioritized`: copied with its priority, in score order.
    Prioritized,
    /// `delayed`: copied with the delay left.
    Delayed,
    /// `failed` or `completed`: inserted finished.
    Finished,
}

/// One source job read, ready to copy.
struct Read {
    source_id: String,
    field: String,
    fields: HashMap<String, String>,
    /// Due time (server ms) for a delayed job.
    due_ms: Option<u64>,
}

/// The due time of a BullMQ delayed score: `due * 4096 + counter` since BullMQ 3 (scores above
/// 2^52 / 4096 ms cannot be plain timestamps), the due time itself before.
pub fn bullmq_due_ms(score: f64) -> u64 {
    let s = score.max(0.0) as u64;
    if s > 100_000_000_000_000 {
        s / 4096
    } else {
        s
    }
}

fn num(v: Option<&Value>) -> Option<u64> {
    v.and_then(|x| x.as_u64().or_else(|| x.as_f64().map(|f| f.max(0.0) as u64)))
}

/// The emq options of a BullMQ job's `opts` (and its attempts made); what does not map is counted
/// in `not_mapped`.
fn map_options(
    opts: &Value,
    attempts_made: u32,
    not_mapped: &mut BTreeMap<String, u64>,
) -> JobOptions {
    let mut o = JobOptions::default();
    let mut miss = |what: &str| *not_mapped.entry(what.to_string()).or_default() += 1;
    let attempts = num(opts.get("attempts"))
        .unwrap_or(1)
        .clamp(1, u32::MAX as u64) as u32;
    o.attempts = attempts.saturating_sub(attempts_made).max(1);
    if let Some(p) = num(opts.get("priority")) {
        if p > MAX_PRIORITY as u64 {
            miss("priority above 2097151 (capped)");
        }
        o.priority = p.min(MAX_PRIORITY as u64) as u32;
    }
    o.lifo = opts.get("lifo").and_then(Value::as_bool).unwrap_or(false);
    match opts.get("backoff") {
        None | Some(Value::Null) => {}
        Some(b) if b.is_number() => {
            o.backoff = Backoff::Fixed {
                delay_ms: num(Some(b)).unwrap_or(0),
            }
        }
        Some(b) => {
            let delay_ms = num(b.get("delay")).unwrap_or(0);
            match b.get("type").and_then(Value::as_str) {
                Some("fixed") => o.backoff = Backoff::Fixed { delay_ms },
                Some("exponential") => {
                    o.backoff = Backoff::Exponential {
                        delay_ms,
                        max_ms: 0,
                    }
                }
                _ => miss("backoff of a custom type"),
            }
            if let Some(j) = b.get("jitter").and_then(Value::as_f64) {
                o.jitter = j.clamp(0.0, 1.0);
            }
        }
    }
    for (name, removal) in [
        ("removeOnComplete", &mut o.remove_on_complete),
        ("removeOnFail", &mut o.remove_on_fail),
    ] {
        // BullMQ's `true | count | {count, age}` (age in seconds) is emq's per-job retention.
        let v = opts.get(name);
        let keep = |count: Option<u64>, age_ms: Option<u64>| {
            Removal::Within(crate::options::Retention { count, age_ms })
        };
        match v {
            None | Some(Value::Null) | Some(Value::Bool(false)) => {}
            Some(Value::Bool(true)) => *removal = Removal::Now,
            Some(Value::Number(_)) => *removal = keep(num(v), None),
            Some(Value::Object(m)) if m.contains_key("count") || m.contains_key("age") => {
                *removal = keep(
                    num(m.get("count")),
                    num(m.get("age")).map(|s| s.saturating_mul(1000)),
                )
            }
            Some(_) => miss(&format!("{name} of another shape")),
        }
    }
    if let Some(g) = opts
        .get("group")
        .and_then(|g| g.get("id"))
        .and_then(|i| i.as_str().map(String::from).or_else(|| Some(i.to_string())))
    {
        if !g.is_empty() && g.len() <= 256 {
            o.group = Some(g);
        } else {
            miss("group id");
        }
    }
    // BullMQ's deduplication (`opts.de`, older `deduplication`): its id becomes the emq dedup key
    // (data in the queue's dedup hash, never a key); a ttl restarts at the migration.
    if let Some(de) = opts
        .get("de")
        .or_else(|| opts.get("deduplication"))
        .filter(|v| !v.is_null())
    {
        let key = de.get("id").and_then(|i| match i {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        });
        match key {
            Some(k) if !k.is_empty() && k.len() <= MAX_DEDUP_KEY => {
                o.dedup = Some(k);
                if let Some(ttl) = num(de.get("ttl")).filter(|t| *t > 0) {
                    o.dedup_ttl_ms = ttl;
                    miss("deduplication ttl (restarted at the migration)");
                }
                if ["extend", "replace"]
                    .iter()
                    .any(|f| de.get(*f).and_then(Value::as_bool) == Some(true))
                {
                    miss("deduplication extend/replace (debounce)");
                }
            }
            _ => miss("deduplication id"),
        }
    }
    for (name, what) in [
        ("debounce", "debounce"),
        ("rateLimiterKey", "rate-limiter key"),
    ] {
        if opts.get(name).is_some_and(|v| !v.is_null()) {
            miss(what);
        }
    }
    o
}

fn data_of(fields: &HashMap<String, String>) -> Value {
    match fields.get("data") {
        None => Value::Null,
        Some(t) => serde_json::from_str(t).unwrap_or_else(|_| Value::String(t.clone())),
    }
}

fn opts_of(fields: &HashMap<String, String>) -> Value {
    fields
        .get("opts")
        .and_then(|t| serde_json::from_str(t).ok())
        .unwrap_or(Value::Null)
}

fn attempts_made(fields: &HashMap<String, String>) -> u32 {
    fields
        .get("atm")
        .or_else(|| fields.get("attemptsMade"))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn field_u64(fields: &HashMap<String, String>, name: &str) -> Option<u64> {
    fields
        .get(name)
        .and_then(|v| v.parse::<f64>().ok())
        .map(|f| f.max(0.0) as u64)
}

impl Queue {
    /// The emq id a migration gave the source job `<prefix>:<queue>:<source_id>` (minted before its
    /// copy was written: check the job exists with [`Queue::get`]); None when it was never migrated
    /// into this queue.
    pub async fn migrated_id(
        &self,
        from_prefix: &str,
        source_queue: &str,
        source_id: &str,
    ) -> Result<Option<JobId>> {
        let v: Option<String> = redis::cmd("HGET")
            .arg(self.name().key(Family::Migrated))
            .arg(format!("{from_prefix}:{source_queue}:{source_id}"))
            .query_async(&mut self.store().conn())
            .await?;
        match v {
            None => Ok(None),
            Some(v) => Ok(Some(JobId::parse(v.split('|').next().unwrap_or(""))?)),
        }
    }

    /// The source job key (`<prefix>:<queue>:<source id>`) a migrated job was copied from.
    pub async fn migrated_source(&self, id: JobId) -> Result<Option<String>> {
        Ok(redis::cmd("HGET")
            .arg(self.name().key(Family::Migrated))
            .arg(format!("={id}"))
            .query_async(&mut self.store().conn())
            .await?)
    }

    /// Copies one BullMQ (or EchoMQ 1.x) queue into this queue; see the [module](crate::migrate)
    /// for what maps and why a run may be killed and run again.
    pub async fn migrate_from_bullmq(&self, options: &MigrateOptions) -> Result<MigrateReport> {
        options.validate()?;
        let started = Instant::now();
        let src = Source {
            base: format!("{}:{}", options.from_prefix, options.source_queue),
        };
        let mut m = Migration {
            q: self,
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
        // The ready jobs are read first: a flow moves only when all its children are among them.
        let mut ready = Vec::new();
        for list in ["wait", "paused"] {
            ready.push((list, Kind::List, m.list_ids(list).await?));
        }
        for (set, kind) in [
            ("prioritized", Kind::Prioritized),
            ("delayed", Kind::Delayed),
        ] {
            ready.push((set, kind, m.zset_ids(set).await?));
        }
        m.plan_flows(&ready).await?;
        m.active().await?;
        for (container, kind, ids) in ready {
            let state = if kind == Kind::List {
                "wait"
            } else {
                container
            };
            m.copy(state, container, kind, ids).await?;
        }
        m.copy_flows().await?;
        let failed = m.zset_ids("failed").await?;
        m.copy("failed", "failed", Kind::Finished, failed).await?;
        if options.completed {
            let done = m.zset_ids("completed").await?;
            m.copy("completed", "completed", Kind::Finished, done)
                .await?;
        } else {
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

struct Migration<'a> {
    q: &'a Queue,
    o: &'a MigrateOptions,
    src: Source,
    report: MigrateReport,
    /// Ids of the source schedulers migrated (their pending runs are not copied).
    schedulers: HashSet<String>,
    /// Flows that move whole (a parent and its children, all in this queue and not started).
    flows: Vec<Flow>,
    /// The source keys of those flows' children: not copied on their own.
    flow_children: HashSet<String>,
}

/// A source flow planned for copying: its parent and children as read.
struct Flow {
    parent: Read,
    /// Each child, with the container it waits in.
    children: Vec<(Read, &'static str)>,
}

impl Migration<'_> {
    fn conn(&self) -> crate::store::Conn {
        self.q.store().conn()
    }

    /// A list's ids, oldest first (BullMQ pushes on the left and takes from the right).
    async fn list_ids(&self, list: &str) -> Result<Vec<(String, Option<f64>)>> {
        let mut ids: Vec<String> = redis::cmd("LRANGE")
            .arg(self.src.key(list))
            .arg(0)
            .arg(-1)
            .query_async(&mut self.conn())
            .await?;
        ids.reverse();
        Ok(ids.into_iter().map(|i| (i, None)).collect())
    }

    /// A sorted set's ids and scores, lowest score first.
    async fn zset_ids(&self, set: &str) -> Result<Vec<(String, Option<f64>)>> {
        let v: Vec<(String, f64)> = redis::cmd("ZRANGE")
            .arg(self.src.key(set))
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query_async(&mut self.conn())
            .await?;
        Ok(v.into_iter().map(|(i, s)| (i, Some(s))).collect())
    }

    /// Active jobs: a live lock means a BullMQ worker runs it (skipped); without one it is copied
    /// as waiting (BullMQ would recover it as stalled).
    async fn active(&mut self) -> Result<()> {
        let ids = self.list_ids("active").await?;
        if ids.is_empty() {
            return Ok(());
        }
        let locks = join_all(ids.iter().map(|(id, _)| {
            let mut c = self.conn();
            let key = format!("{}:lock", self.src.job(id));
            async move {
                redis::cmd("EXISTS")
                    .arg(key)
                    .query_async::<i64>(&mut c)
                    .await
            }
        }))
        .await;
        let mut free = Vec::new();
        for ((id, s), lock) in ids.into_iter().zip(locks) {
            if lock? == 1 {
                self.report.row("active").read += 1;
                self.report.skip(
                    "active",
                    &id,
                    "active: its lock lives (a BullMQ worker holds it; stop it and run again)"
                        .into(),
                );
            } else {
                free.push((id, s));
            }
        }
        self.copy("active", "active", Kind::List, free).await
    }

    /// Plans the flows that move whole: a parent in `waiting-children` whose children all wait,
    /// not started, in this queue (`ready`), none finished yet and none a parent itself; the rest
    /// stay in BullMQ, reported.
    async fn plan_flows(&mut self, ready: &[(&'static str, Kind, Ids)]) -> Result<()> {
        let parents = self.zset_ids("waiting-children").await?;
        if parents.is_empty() {
            return Ok(());
        }
        let mut waiting: HashMap<String, (&'static str, Option<f64>)> = HashMap::new();
        for (container, _, ids) in ready {
            for (id, score) in ids {
                waiting.insert(self.src.job(id), (*container, *score));
            }
        }
        for (pid, _) in parents {
            self.report.row("waiting-children").read += 1;
            let pfield = self.src.job(&pid);
            let mut c = self.conn();
            let phash: HashMap<String, String> = redis::cmd("HGETALL")
                .arg(&pfield)
                .query_async(&mut c)
                .await?;
            let deps: Vec<String> = redis::cmd("SMEMBERS")
                .arg(format!("{pfield}:dependencies"))
                .query_async(&mut c)
                .await?;
            let mut done = 0u64;
            for part in ["processed", "failed", "unsuccessful"] {
                let key = format!("{pfield}:{part}");
                let kind: String = redis::cmd("TYPE").arg(&key).query_async(&mut c).await?;
                let n: u64 = match kind.as_str() {
                    "hash" => redis::cmd("HLEN").arg(&key).query_async(&mut c).await?,
                    "set" => redis::cmd("SCARD").arg(&key).query_async(&mut c).await?,
                    "zset" => redis::cmd("ZCARD").arg(&key).query_async(&mut c).await?,
                    _ => 0,
                };
                done += n;
            }
            let reason = if phash.is_empty() {
                Some("gone: its job hash no longer exists in the source")
            } else if phash.contains_key("parentKey") {
                Some("flow: a nested flow (its parent has a parent; let BullMQ finish it)")
            } else if done > 0 {
                Some("flow: some of its children already finished in BullMQ (let BullMQ finish it)")
            } else if deps.is_empty() {
                Some("flow: no pending children listed (let BullMQ finish it)")
            } else if deps.iter().any(|d| !waiting.contains_key(d)) {
                Some("flow: a child is active, in another queue or a parent itself (let BullMQ finish it)")
            } else {
                None
            };
            if let Some(reason) = reason {
                self.report.skip("waiting-children", &pid, reason.into());
                continue;
            }
            let mut children = Vec::new();
            for d in deps {
                let (container, score) = waiting[&d];
                let h: HashMap<String, String> =
                    redis::cmd("HGETALL").arg(&d).query_async(&mut c).await?;
                let source_id = d
                    .strip_prefix(&format!("{}:", self.src.base))
                    .unwrap_or(&d)
                    .to_string();
                children.push((
                    Read {
                        source_id,
                        field: d.clone(),
                        fields: h,
                        due_ms: if container == "delayed" {
                            score.map(bullmq_due_ms)
                        } else {
                            None
                        },
                    },
                    container,
                ));
            }
            for (child, _) in &children {
                self.flow_children.insert(child.field.clone());
            }
            self.flows.push(Flow {
                parent: Read {
                    source_id: pid,
                    field: pfield,
                    fields: phash,
                    due_ms: None,
                },
                children,
            });
        }
        Ok(())
    }

    /// Copies the planned flows with `Queue::add_flow` (ids stored first, as for every job).
    async fn copy_flows(&mut self) -> Result<()> {
        let mapping = self.q.name().key(Family::Migrated);
        let flows = std::mem::take(&mut self.flows);
        for flow in flows {
            let n = flow.children.len() as u64;
            let mut fields: Vec<&str> = vec![flow.parent.field.as_str()];
            fields.extend(flow.children.iter().map(|(c, _)| c.field.as_str()));
            let marks: Vec<Option<String>> = redis::cmd("HMGET")
                .arg(&mapping)
                .arg(&fields)
                .query_async(&mut self.conn())
                .await?;
            if marks[0].as_deref().is_some_and(|m| m.contains('|')) {
                self.report.row("waiting-children").already += 1;
                self.report.row("flow-children").read += n;
                self.report.row("flow-children").already += n;
                if self.o.delete_source {
                    self.delete_flow_source(&flow).await?;
                }
                continue;
            }
            self.report.row("waiting-children").written += 1;
            self.report.row("flow-children").read += n;
            self.report.row("flow-children").written += n;
            if self.o.dry_run {
                continue;
            }
            let mut pending = HashMap::new();
            for (f, m) in fields.iter().zip(&marks) {
                if let Some(m) = m {
                    pending.insert(
                        f.to_string(),
                        JobId::parse(m.split('|').next().unwrap_or(""))?,
                    );
                }
            }
            let ids = self.claim_ids(&fields, &pending).await?;
            let now = self.q.server_time_ms().await?;
            let job = |this: &mut Self, r: &Read, id: JobId| {
                let mut o = map_options(
                    &opts_of(&r.fields),
                    attempts_made(&r.fields),
                    &mut this.report.not_mapped,
                );
                o.id = Some(id);
                o.delay_ms = r.due_ms.map_or(0, |d| d.saturating_sub(now));
                if r.due_ms.is_none() {
                    o.lifo = false;
                }
                FlowJob {
                    queue: this.q.name().to_string(),
                    name: r.fields.get("name").cloned().unwrap_or_default(),
                    data: data_of(&r.fields),
                    options: o,
                    children: Vec::new(),
                }
            };
            let mut parent = job(self, &flow.parent, ids[0]);
            parent.options.delay_ms = 0;
            for ((child, _), id) in flow.children.iter().zip(&ids[1..]) {
                let c = job(self, child, *id);
                parent.children.push(c);
            }
            self.q.add_flow(parent).await?;
            let mut pipe = redis::pipe();
            for (f, id) in fields.iter().zip(&ids) {
                pipe.cmd("HSET")
                    .arg(&mapping)
                    .arg(*f)
                    .arg(format!("{id}|flow"))
                    .arg(format!("={id}"))
                    .arg(*f)
                    .ignore();
            }
            let _: () = pipe.query_async(&mut self.conn()).await?;
            if self.o.delete_source {
                self.delete_flow_source(&flow).await?;
            }
        }
        Ok(())
    }

    async fn delete_flow_source(&mut self, flow: &Flow) -> Result<()> {
        for (child, container) in &flow.children {
            let one = [(child.source_id.clone(), child.field.clone())];
            self.delete_sources(container, &one).await?;
        }
        let one = [(flow.parent.source_id.clone(), flow.parent.field.clone())];
        self.delete_sources("waiting-children", &one).await?;
        Ok(())
    }

    /// The emq id of each source job: the one stored by an earlier run (`pending`), else one minted
    /// now and stored first (HSETNX: a racing run's id wins, and is read back).
    async fn claim_ids(
        &self,
        fields: &[&str],
        pending: &HashMap<String, JobId>,
    ) -> Result<Vec<JobId>> {
        let mapping = self.q.name().key(Family::Migrated);
        let mut ids: Vec<JobId> = Vec::with_capacity(fields.len());
        let mut fresh = Vec::new();
        for f in fields {
            match pending.get(*f) {
                Some(id) => ids.push(*id),
                None => {
                    let id = self.q.mint_id()?;
                    ids.push(id);
                    fresh.push((ids.len() - 1, id));
                }
            }
        }
        if fresh.is_empty() {
            return Ok(ids);
        }
        let mut pipe = redis::pipe();
        for (i, id) in &fresh {
            pipe.cmd("HSETNX")
                .arg(&mapping)
                .arg(fields[*i])
                .arg(id.to_string());
        }
        let set: Vec<i64> = pipe.query_async(&mut self.conn()).await?;
        let lost: Vec<usize> = fresh
            .iter()
            .zip(set)
            .filter(|(_, s)| *s == 0)
            .map(|((i, _), _)| *i)
            .collect();
        for i in lost {
            let v: String = redis::cmd("HGET")
                .arg(&mapping)
                .arg(fields[i])
                .query_async(&mut self.conn())
                .await?;
            if v.contains('|') {
                return Err(Error::new(
                    ErrorCode::InvalidState,
                    format!(
                        "{} was migrated by another run meanwhile; run one migration at a time",
                        fields[i]
                    ),
                ));
            }
            ids[i] = JobId::parse(&v)?;
        }
        Ok(ids)
    }

    /// Copies one source container's jobs, a batch at a time. `state` names the report row,
    /// `container` the source key the ids were read from.
    async fn copy(
        &mut self,
        state: &str,
        container: &str,
        kind: Kind,
        ids: Vec<(String, Option<f64>)>,
    ) -> Result<()> {
        let batch = self.o.batch;
        for chunk in ids.chunks(batch) {
            self.copy_batch(state, container, kind, chunk).await?;
        }
        Ok(())
    }

    async fn copy_batch(
        &mut self,
        state: &str,
        container: &str,
        kind: Kind,
        chunk: &[(String, Option<f64>)],
    ) -> Result<()> {
        let mapping = self.q.name().key(Family::Migrated);
        let fields: Vec<String> = chunk.iter().map(|(id, _)| self.src.job(id)).collect();
        // The source hashes (each may be on another node) and the marks, concurrently.
        let hashes = join_all(fields.iter().map(|f| {
            let mut c = self.conn();
            let f = f.clone();
            async move {
                redis::cmd("HGETALL")
                    .arg(f)
                    .query_async::<HashMap<String, String>>(&mut c)
                    .await
            }
        }))
        .await;
        let marks: Vec<Option<String>> = redis::cmd("HMGET")
            .arg(&mapping)
            .arg(&fields)
            .query_async(&mut self.conn())
            .await?;
        let mut todo: Vec<Read> = Vec::new();
        let mut done_before: Vec<(String, String)> = Vec::new();
        let mut pending: HashMap<String, JobId> = HashMap::new();
        for ((((id, score), field), hash), mark) in chunk.iter().zip(&fields).zip(hashes).zip(marks)
        {
            let hash = hash?;
            if self.flow_children.contains(field) {
                continue; // copied with its flow (copy_flows)
            }
            self.report.row(state).read += 1;
            if let Some(mark) = &mark {
                if mark.contains('|') {
                    self.report.row(state).already += 1;
                    done_before.push((id.clone(), field.clone()));
                    continue;
                }
            }
            if hash.is_empty() {
                self.report.skip(
                    state,
                    id,
                    "gone: its job hash no longer exists in the source".into(),
                );
                continue;
            }
            if hash.contains_key("parentKey") || hash.contains_key("parent") {
                self.report.skip(
                    state,
                    id,
                    "flow: a child of a parent job (flows are not migrated; let BullMQ finish it)"
                        .into(),
                );
                continue;
            }
            if let Some(rjk) = hash.get("rjk") {
                if self.schedulers.contains(rjk) {
                    self.report.skip(
                        state,
                        id,
                        "scheduler run: the next run of a migrated scheduler (the emq scheduler makes its own)"
                            .into(),
                    );
                    continue;
                }
            }
            if let Some(mark) = mark {
                pending.insert(field.clone(), JobId::parse(&mark)?);
            }
            todo.push(Read {
                source_id: id.clone(),
                field: field.clone(),
                fields: hash,
                due_ms: match kind {
                    Kind::Delayed => score.map(bullmq_due_ms),
                    _ => None,
                },
            });
        }
        if self.o.delete_source {
            self.delete_sources(container, &done_before).await?;
        }
        if todo.is_empty() {
            return Ok(());
        }
        if self.o.dry_run {
            for r in &todo {
                let opts = opts_of(&r.fields);
                map_options(&opts, attempts_made(&r.fields), &mut self.report.not_mapped);
            }
            self.report.row(state).written += todo.len() as u64;
            return Ok(());
        }
        let fields: Vec<&str> = todo.iter().map(|r| r.field.as_str()).collect();
        let ids = self.claim_ids(&fields, &pending).await?;
        let now = self.q.server_time_ms().await?;
        let written_state = match kind {
            Kind::Finished => state,
            Kind::Delayed => "delayed",
            Kind::Prioritized => "prioritized",
            Kind::List => "waiting",
        };
        if kind == Kind::Finished {
            let mut calls = Vec::with_capacity(todo.len());
            for (r, id) in todo.iter().zip(&ids) {
                calls.push(self.finished_call(state, r, *id, now)?);
            }
            let _: Vec<i64> = script::pipeline(self.q.store(), &calls).await?;
        } else {
            let mut jobs = Vec::with_capacity(todo.len());
            for (r, id) in todo.iter().zip(&ids) {
                let opts = opts_of(&r.fields);
                let mut o =
                    map_options(&opts, attempts_made(&r.fields), &mut self.report.not_mapped);
                o.id = Some(*id);
                if kind == Kind::Delayed {
                    // LIFO applies when it is due.
                    o.delay_ms = r.due_ms.map_or(0, |d| d.saturating_sub(now));
                } else {
                    // A ready job's place is its order: added oldest first, each at the back.
                    o.lifo = false;
                }
                jobs.push(NewJob {
                    name: r.fields.get("name").cloned().unwrap_or_default(),
                    data: data_of(&r.fields),
                    options: o,
                });
            }
            // In order: one add_bulk call of more than one add.lua batch sends its batches
            // concurrently, so a later one may land first.
            let mut got = Vec::with_capacity(todo.len());
            for part in chunked(jobs, ORDERED_ADD) {
                got.extend(self.q.add_bulk(part).await?);
            }
            self.copy_logs(&todo, &ids, &got).await?;
            if !self.o.pause_per_batch.is_zero() {
                // Tests only: the widest window a crash can hit, copies written and not marked.
                tokio::time::sleep(self.o.pause_per_batch).await;
            }
            let mut pipe = redis::pipe();
            let mut deduplicated = 0;
            for ((r, id), held) in todo.iter().zip(&ids).zip(&got) {
                if held != id {
                    // Its dedup id was held by a job copied before: it is that job now, as in
                    // BullMQ had both been added while the first waited.
                    deduplicated += 1;
                    self.report.skip(
                        state,
                        &r.source_id,
                        format!(
                            "deduplicated: its deduplication id is held by the copied job {held}"
                        ),
                    );
                    pipe.cmd("HSET")
                        .arg(&mapping)
                        .arg(&r.field)
                        .arg(format!("{held}|deduplicated"))
                        .ignore();
                    continue;
                }
                pipe.cmd("HSET")
                    .arg(&mapping)
                    .arg(&r.field)
                    .arg(format!("{id}|{written_state}"))
                    .arg(format!("={id}"))
                    .arg(&r.field)
                    .ignore();
            }
            let _: () = pipe.query_async(&mut self.conn()).await?;
            self.report.row(state).written += (todo.len() - deduplicated) as u64;
        }
        if kind == Kind::Finished {
            self.copy_logs(&todo, &ids, &ids).await?;
            self.report.row(state).written += todo.len() as u64;
        }
        if self.o.delete_source {
            let gone: Vec<(String, String)> = todo
                .iter()
                .map(|r| (r.source_id.clone(), r.field.clone()))
                .collect();
            self.delete_sources(container, &gone).await?;
        }
        Ok(())
    }

    /// Appends each source job's log lines (`<prefix>:<queue>:<id>:logs`) to its copy's log:
    /// the lines the copy lacks, so a re-run after a crash neither repeats nor drops one (a
    /// copy whose log already holds [`MAX_LOG_LINES`] is left as it is, and so is a copy that
    /// already ran and was removed). `got` is what the adds returned: a job deduplicated into
    /// another (`got` ≠ `ids`) keeps its lines out of the other's log.
    async fn copy_logs(&mut self, todo: &[Read], ids: &[JobId], got: &[JobId]) -> Result<()> {
        let sources = join_all(todo.iter().map(|r| {
            let mut c = self.conn();
            let key = format!("{}:logs", r.field);
            async move {
                redis::cmd("LRANGE")
                    .arg(key)
                    .arg(0)
                    .arg(-1)
                    .query_async::<Vec<String>>(&mut c)
                    .await
            }
        }))
        .await;
        for ((lines, id), held) in sources.into_iter().zip(ids).zip(got) {
            let lines = lines?;
            if lines.is_empty() || id != held {
                continue;
            }
            let have = self.q.logs(*id).await?.len() as u64;
            if have >= MAX_LOG_LINES {
                continue;
            }
            for line in lines.iter().skip(have as usize) {
                match self.q.log(*id, line).await {
                    Ok(_) => self.report.log_lines += 1,
                    Err(e) if e.code() == ErrorCode::JobNotFound => break,
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(())
    }

    fn finished_call(
        &mut self,
        state: &str,
        r: &Read,
        id: JobId,
        now: u64,
    ) -> Result<script::Invocation> {
        let f = &r.fields;
        let atts = attempts_made(f);
        let opts = opts_of(f);
        let mut o = map_options(&opts, 0, &mut self.report.not_mapped);
        o.lifo = false;
        let finished = field_u64(f, "finishedOn").unwrap_or(now);
        let processed = field_u64(f, "processedOn");
        let created = field_u64(f, "timestamp").unwrap_or(finished);
        let outcome = if state == "failed" {
            let stack = f
                .get("stacktrace")
                .and_then(|t| serde_json::from_str::<Vec<Value>>(t).ok())
                .and_then(|v| v.last().and_then(|s| s.as_str().map(String::from)));
            let mut failure = json!({
                "code": "handler_failed",
                "message": f.get("failedReason").cloned().unwrap_or_default(),
            });
            if let Some(s) = stack {
                failure["stack"] = Value::String(s);
            }
            failure.to_string()
        } else {
            match f.get("returnvalue") {
                Some(t) if serde_json::from_str::<serde::de::IgnoredAny>(t).is_ok() => t.clone(),
                Some(t) => Value::String(t.clone()).to_string(),
                None => "null".into(),
            }
        };
        let name = self.q.name();
        Ok(script::MIGRATE_FINISHED
            .prepare()
            .key(&name.job_key(id, crate::keyspace::JobPart::Record))
            .key(&name.key(if state == "failed" {
                Family::Failed
            } else {
                Family::Completed
            }))
            .key(&name.key(Family::Meta))
            .key(&name.key(Family::Migrated))
            .arg(id)
            .arg(&r.field)
            .arg(state)
            .arg(f.get("name").map(String::as_str).unwrap_or(""))
            .arg(serde_json::to_string(&data_of(f))?)
            .arg(o.compact_json())
            .arg(o.attempts)
            .arg(atts)
            .arg(outcome)
            .arg(now.saturating_sub(finished))
            .arg(processed.map_or(-1, |p| finished.saturating_sub(p) as i64))
            .arg(now.saturating_sub(created)))
    }

    /// Deletes copied source jobs: out of their container, then their hash, lock and logs.
    async fn delete_sources(&mut self, container: &str, jobs: &[(String, String)]) -> Result<()> {
        if jobs.is_empty() {
            return Ok(());
        }
        let ckey = self.src.key(container);
        let is_list = matches!(container, "wait" | "paused" | "active");
        let results = join_all(jobs.iter().map(|(id, field)| {
            let mut c = self.conn();
            let (ckey, id, field) = (ckey.clone(), id.clone(), field.clone());
            async move {
                let cmd = if is_list {
                    redis::cmd("LREM").arg(&ckey).arg(0).arg(&id).clone()
                } else {
                    redis::cmd("ZREM").arg(&ckey).arg(&id).clone()
                };
                let _: i64 = cmd.query_async(&mut c).await?;
                let mut n = 0;
                for key in [
                    field.clone(),
                    format!("{field}:logs"),
                    format!("{field}:lock"),
                    format!("{field}:dependencies"),
                ] {
                    n += redis::cmd("DEL")
                        .arg(key)
                        .query_async::<i64>(&mut c)
                        .await?;
                }
                Ok::<i64, redis::RedisError>(n)
            }
        }))
        .await;
        for r in results {
            if r? > 0 {
                self.report.source_deleted += 1;
            }
        }
        Ok(())
    }

    /// Job schedulers (BullMQ 5.16+: the `repeat` set and `repeat:<id>` hashes) become emq
    /// schedulers where the spec maps.
    async fn schedulers(&mut self) -> Result<()> {
        let ids = self.zset_ids("repeat").await?;
        if ids.is_empty() {
            return Ok(());
        }
        let now = self.q.server_time_ms().await?;
        let mut left_in_source = 0;
        for (id, next) in ids {
            self.report.row("schedulers").read += 1;
            let key = self.src.key(&format!("repeat:{id}"));
            let h: HashMap<String, String> = redis::cmd("HGETALL")
                .arg(&key)
                .query_async(&mut self.conn())
                .await?;
            if h.is_empty() {
                self.report.skip(
                    "schedulers",
                    &id,
                    "scheduler: a legacy repeatable job with no scheduler hash (re-create it with upsert_scheduler)"
                        .into(),
                );
                continue;
            }
            let schedule = match self.schedule_of(&h, next.map(|n| n as u64), now) {
                Ok(s) => s,
                Err(reason) => {
                    self.report.skip("schedulers", &id, reason);
                    continue;
                }
            };
            if self.o.dry_run {
                self.report.row("schedulers").written += 1;
                self.schedulers.insert(id);
                continue;
            }
            match self.q.upsert_scheduler(&id, schedule).await {
                Ok(_) => {
                    self.report.row("schedulers").written += 1;
                    if self.o.delete_source {
                        let _: i64 = redis::cmd("ZREM")
                            .arg(self.src.key("repeat"))
                            .arg(&id)
                            .query_async(&mut self.conn())
                            .await?;
                        let n: i64 = redis::cmd("DEL")
                            .arg(&key)
                            .query_async(&mut self.conn())
                            .await?;
                        self.report.source_deleted += n as u64;
                    } else {
                        left_in_source += 1;
                    }
                    self.schedulers.insert(id);
                }
                Err(e) if e.code() == ErrorCode::InvalidOption => {
                    self.report
                        .skip("schedulers", &id, format!("scheduler: {}", e.message()));
                }
                Err(e) => return Err(e),
            }
        }
        if left_in_source > 0 {
            self.report.notes.push(format!(
                "{left_in_source} scheduler(s) now exist in both BullMQ and emq: remove them from \
                 BullMQ (or run again with --delete-source) before BullMQ workers run again, or \
                 both will enqueue"
            ));
        }
        Ok(())
    }

    fn schedule_of(
        &mut self,
        h: &HashMap<String, String>,
        next_ms: Option<u64>,
        now: u64,
    ) -> std::result::Result<Schedule, String> {
        let every = field_u64(h, "every").filter(|e| *e > 0);
        let pattern = h.get("pattern").filter(|p| !p.is_empty());
        let start = field_u64(h, "startDate");
        let repeat = match (every, pattern) {
            (Some(ms), None) => Repeat::Every(Duration::from_millis(ms)),
            (None, Some(p)) => {
                Repeat::cron(p.clone(), h.get("tz").cloned().unwrap_or("UTC".into()))
            }
            (Some(_), Some(_)) => return Err("scheduler: both every and pattern".into()),
            (None, None) => return Err("scheduler: neither every nor pattern".into()),
        };
        if h.get("offset").is_some_and(|o| o != "0") && every.is_some() {
            *self
                .report
                .not_mapped
                .entry("scheduler offset (runs follow the next due time)".into())
                .or_default() += 1;
        }
        let first_after = match &repeat {
            Repeat::Every(_) => next_ms.unwrap_or(now).saturating_sub(now),
            Repeat::Cron { .. } => start.unwrap_or(now).saturating_sub(now),
        };
        let end_after = match field_u64(h, "endDate") {
            None => None,
            Some(end) if end <= now => return Err("scheduler: its endDate has passed".into()),
            Some(end) => Some(Duration::from_millis(end - now)),
        };
        let limit = field_u64(h, "limit").filter(|l| *l > 0).map(|l| {
            // `ic` counts the runs BullMQ has made (from 1, the first one pending).
            let made = field_u64(h, "ic").unwrap_or(1).saturating_sub(1);
            l.saturating_sub(made).max(1)
        });
        let opts = h
            .get("opts")
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or(Value::Null);
        let mut options = map_options(&opts, 0, &mut self.report.not_mapped);
        options.lifo = false;
        let data = h
            .get("data")
            .map(|t| serde_json::from_str(t).unwrap_or_else(|_| Value::String(t.clone())))
            .unwrap_or(Value::Null);
        Ok(Schedule {
            repeat,
            first_after: Duration::from_millis(first_after),
            limit,
            end_after,
            name: h.get("name").cloned().unwrap_or_default(),
            data,
            options,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delayed_scores_decode_both_ways() {
        let due = 1_767_225_600_000u64; // 2026-01-01
        assert_eq!(bullmq_due_ms((due * 4096 + 7) as f64), due);
        assert_eq!(bullmq_due_ms(due as f64), due);
    }

    #[test]
    fn options_map_and_count_what_does_not() {
        let mut miss = BTreeMap::new();
        let o = map_options(
            &json!({"attempts": 5, "priority": 3, "backoff": {"type": "exponential", "delay": 100},
                    "removeOnComplete": true, "removeOnFail": 10, "de": {"id": "x"}}),
            2,
            &mut miss,
        );
        assert_eq!(o.attempts, 3);
        assert_eq!(o.priority, 3);
        assert_eq!(
            o.backoff,
            Backoff::Exponential {
                delay_ms: 100,
                max_ms: 0
            }
        );
        assert_eq!(o.remove_on_complete, Removal::Now);
        assert_eq!(
            o.remove_on_fail,
            Removal::Within(crate::options::Retention {
                count: Some(10),
                age_ms: None
            })
        );
        assert_eq!(
            o.dedup.as_deref(),
            Some("x"),
            "the deduplication id is the dedup key"
        );
        assert!(miss.is_empty(), "{miss:?}");
        assert!(o.validate().is_ok());
        let o = map_options(
            &json!({"de": {"id": 42, "ttl": 5000, "extend": true}}),
            0,
            &mut miss,
        );
        assert_eq!((o.dedup.as_deref(), o.dedup_ttl_ms), (Some("42"), 5000));
        assert!(o.validate().is_ok());
        assert!(miss.contains_key("deduplication ttl (restarted at the migration)"));
        assert!(miss.contains_key("deduplication extend/replace (debounce)"));
        let o = map_options(&json!({"attempts": 2, "backoff": 50}), 7, &mut miss);
        assert_eq!(o.attempts, 1, "at least one attempt is left");
        assert_eq!(o.backoff, Backoff::Fixed { delay_ms: 50 });
    }

    #[test]
    fn options_are_checked() {
        assert!(MigrateOptions::new("bull", "q").validate().is_ok());
        for o in [
            MigrateOptions::new("", "q"),
            MigrateOptions::new("bull", "a b"),
            MigrateOptions {
                batch: 0,
                ..MigrateOptions::new("bull", "q")
            },
            MigrateOptions {
                dry_run: true,
                delete_source: true,
                ..MigrateOptions::new("bull", "q")
            },
        ] {
            assert_eq!(o.validate().unwrap_err().code(), ErrorCode::InvalidOption);
        }
    }
}
