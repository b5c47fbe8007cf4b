//! Batches: a set of jobs on any queues, grown while it runs, with callbacks once every job has
//! its outcome (`on_complete`) and once every job has completed (`on_success`).
//!
//! A batch lives in the slot of the queue that created it ([`Queue::batch`]), in its own keys
//! (`emq:{q}:batch:<id>`, `…:jobs`, `…:failed`: [`BatchPart`]) and the queue's `batches` set. Its
//! jobs may sit in other slots, so nothing spans both; every crossing takes steps, each atomic and
//! idempotent (as dead letters do, `dead_letter.rs`):
//! 1. **Counting in** (`batch_count.lua`, the batch's slot): the job's id, minted before, is counted
//!    in pending once; then the job is added to its queue under that id (an idempotent add) with
//!    the batch in its options (`batch`: [`BatchRef`]). A running job of the batch adds jobs the
//!    same way ([`JobContext::batch`]): it is pending itself until its outcome is recorded, so
//!    the batch stays open until they are done.
//! 2. **An outcome** (completed, or failed for good): the job's finish script (`complete.lua`, or
//!    `fail.lua` / `recover.lua` through `lib/finish.lua`) notes it in its own queue's
//!    `batch-pending` set (`lib/batch_note.lua`); the worker then records it in the batch
//!    (`batch_record.lua`: pending → completed or failed, failed → completed for a job retried to
//!    success; once per job and outcome) and removes the note. A crash between the two leaves the
//!    note, which every worker's maintenance loop records after [`BATCH_GRACE`]
//!    (`batch_pending_due.lua`), as does [`Queue::record_batch_outcomes`].
//! 3. **A callback**: once the batch is sealed ([`Batch::seal`]: its creator added what it had to)
//!    and every job counted in has its outcome, the step that saw it (`batch_seal.lua` or
//!    `batch_record.lua`, through `lib/batch.lua`) pins the callback's job id and the counts of
//!    that moment in the batch's record; the job is added to its queue under that id (with
//!    [`BatchDone`] in its options: the batch, the kind and the counts; the failed ids are paged
//!    with [`Batch::status`]), then `batch_callback_done.lua` marks it added. A step repeated after
//!    a crash finds the pinned id and adds the same job, so each callback is added once.
//!    `on_success` falls due when the last failed job is retried to success, if that happens.
//!
//! A job cancelled before it ran (`cancel.lua`) has its failure noted the same way. Not built:
//! nested batches (a batch inside a batch); a job of a batch removed while it waits is never
//! counted out (its batch stays open); a batch's keys are not
//! trimmed (they go with [`Queue::obliterate`] of the queue that created it).

use crate::error::{Error, ErrorCode, Result};
use crate::handler::JobContext;
use crate::job::Job;
use crate::job_id::JobId;
use crate::keyspace::{BatchPart, QueueName};
use crate::options::{JobOptions, MAX_DESCRIPTION};
use crate::queue::{NewJob, Queue};
use crate::script;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::time::Duration;

/// How long an outcome waits in a queue's `batch-pending` set before a maintenance loop records it
/// (the worker that finished the job does so within milliseconds; older entries are steps a crash
/// cut).
pub const BATCH_GRACE: Duration = Duration::from_secs(5);

/// Most jobs counted in per call of `batch_count.lua`.
const COUNT_CHUNK: usize = 500;

/// The batch a job belongs to, as its options store it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchRef {
    /// The queue that created the batch (its keys live in that queue's slot).
    pub queue: String,
    /// The batch's id.
    pub id: String,
}

/// What a batch's callback job carries in its options ([`Job::batch_done`]): its batch and the
/// batch's counts when the callback fell due.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchDone {
    /// The queue that created the batch.
    pub queue: String,
    /// The batch's id.
    pub id: String,
    /// `complete` (every job had its outcome) or `success` (every job completed).
    pub kind: String,
    /// Jobs counted in.
    pub total: u64,
    /// Of those, completed.
    pub completed: u64,
    /// Of those, failed for good (their ids: [`Batch::status`]).
    pub failed: u64,
}

/// A batch's callback: the job added when it falls due.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BatchCallback {
    /// The queue it is added to (any queue).
    pub queue: String,
    /// Its name.
    pub name: String,
    /// Its payload.
    pub data: Value,
    /// Its options (its id is the one the batch pins).
    pub options: JobOptions,
}

/// What [`Queue::batch`] creates.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BatchOptions {
    /// Added once, when every job of the sealed batch has its outcome.
    pub on_complete: Option<BatchCallback>,
    /// Added once, when every job of the sealed batch has completed (at once, or later when its
    /// failed jobs are retried to success).
    pub on_success: Option<BatchCallback>,
    /// Words for people (up to [`MAX_DESCRIPTION`] bytes).
    pub description: Option<String>,
}

/// One job of a batch: its queue and id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BatchJob {
    /// Its queue.
    pub queue: String,
    /// Its id there.
    pub id: JobId,
}

/// A batch's state ([`Batch::status`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BatchStatus {
    /// The batch's id.
    pub id: JobId,
    /// Its description.
    pub description: Option<String>,
    /// Jobs counted in.
    pub total: u64,
    /// Jobs without an outcome yet.
    pub pending: u64,
    /// Jobs completed.
    pub completed: u64,
    /// Jobs failed for good (a retry to success moves one to completed).
    pub failed: u64,
    /// Whether its creator sealed it.
    pub sealed: bool,
    /// Whether it was cancelled.
    pub cancelled: bool,
    /// Whether every job had its outcome once it was sealed (no job is counted in any more).
    pub done: bool,
    /// One page of the failed jobs, oldest failure first.
    pub failed_jobs: Vec<BatchJob>,
}

/// A handle on one batch. Cheap to clone.
#[derive(Clone)]
pub struct Batch {
    queue: Queue,
    id: JobId,
}

fn bad_callback(what: &str, e: Error) -> Error {
    Error::new(e.code(), format!("{what}: {}", e.message()))
}

fn check_callback(what: &str, c: &Option<BatchCallback>) -> Result<String> {
    let Some(c) = c else { return Ok(String::new()) };
    QueueName::new(&c.queue).map_err(|e| bad_callback(what, e))?;
    check_batchable(&c.options).map_err(|e| bad_callback(what, e))?;
    Ok(serde_json::to_string(c)?)
}

/// The options a batched job (or a callback) may not have: a dedup key (an add that finds it
/// held returns another job, and the id counted in would never finish), a batch of its own.
fn check_batchable(o: &JobOptions) -> Result<()> {
    o.validate()?;
    if o.dedup.is_some() {
        return Err(Error::new(
            ErrorCode::InvalidOption,
            "a job of a batch cannot have a dedup key",
        ));
    }
    if o.batch.is_some() || o.batch_done.is_some() {
        return Err(Error::new(
            ErrorCode::InvalidOption,
            "batch and batch_done are written by emq alone",
        ));
    }
    Ok(())
}

impl Queue {
    /// Creates a batch in this queue's slot. Add its jobs with [`Batch::add`] /
    /// [`Batch::add_bulk`], then [`Batch::seal`] it: its callbacks fall due from then on.
    /// `invalid_option` for a description over [`MAX_DESCRIPTION`] bytes or a callback's bad
    /// options, `invalid_queue_name` for a callback's bad queue.
    pub async fn batch(&self, options: BatchOptions) -> Result<Batch> {
        self.plain_only("creating a batch (create it on a plain queue; its jobs may go to any)")?;
        if options
            .description
            .as_ref()
            .is_some_and(|d| d.len() > MAX_DESCRIPTION)
        {
            return Err(Error::new(
                ErrorCode::InvalidOption,
                format!("description must be at most {MAX_DESCRIPTION} bytes"),
            ));
        }
        let on_complete = check_callback("on_complete", &options.on_complete)?;
        let on_success = check_callback("on_success", &options.on_success)?;
        let id = self.mint_id()?;
        let _: i64 = script::BATCH_CREATE
            .on(self.name(), Some(id))?
            .arg(id)
            .arg(options.description.as_deref().unwrap_or(""))
            .arg(on_complete)
            .arg(on_success)
            .invoke(self.store())
            .await?;
        Ok(Batch {
            queue: self.clone(),
            id,
        })
    }

    /// A handle on batch `id` of this queue (`invalid_job_id` for a malformed id; whether it
    /// exists shows in [`Batch::status`]).
    pub fn open_batch(&self, id: &str) -> Result<Batch> {
        Ok(Batch {
            queue: self.clone(),
            id: JobId::parse(id)?,
        })
    }

    /// Records every outcome of this queue's batched jobs still on its way to its batch (a crash
    /// between the job's finish and its batch's step; workers do this on their own after
    /// [`BATCH_GRACE`]); returns how many were counted now. Idempotent.
    pub async fn record_batch_outcomes(&self) -> Result<u64> {
        let mut total = 0;
        loop {
            let (seen, counted) = settle_due(self, Duration::ZERO, 500).await?;
            total += counted;
            // Settled notes leave the set: a short page was the last.
            if seen < 500 {
                return Ok(total);
            }
        }
    }
}

impl Job {
    /// The batch this job belongs to, if it was added through one.
    pub fn batch_ref(&self) -> Option<BatchRef> {
        self.job_options().batch
    }

    /// When this job is a batch's callback: the batch and its counts when it fell due.
    pub fn batch_done(&self) -> Option<BatchDone> {
        self.job_options().batch_done
    }
}

impl JobContext {
    /// The batch this job belongs to (None when it was not added through one): a running job adds
    /// more jobs to it, and the batch is not done until those are.
    pub fn batch(&self) -> Result<Option<Batch>> {
        match self.job().batch_ref() {
            None => Ok(None),
            Some(b) => Ok(Some(Batch {
                queue: self.queue().queue(&b.queue)?,
                id: JobId::parse(&b.id)?,
            })),
        }
    }
}

impl Batch {
    /// Its id.
    pub fn id(&self) -> JobId {
        self.id
    }

    /// The queue that created it.
    pub fn queue(&self) -> &Queue {
        &self.queue
    }

    fn reference(&self) -> BatchRef {
        BatchRef {
            queue: self.queue.name().as_str().to_string(),
            id: self.id.to_string(),
        }
    }

    /// Adds a job to `queue` (any queue) as part of this batch: counted in first, then added
    /// under its id (`options.id`, or a fresh one), so a retry with the same id adds it once.
    /// `job_not_found` when there is no such batch, `invalid_state` when it was cancelled or is
    /// done, `invalid_option` for a dedup key.
    pub async fn add(
        &self,
        queue: &str,
        name: &str,
        data: Value,
        options: JobOptions,
    ) -> Result<JobId> {
        let mut ids = self
            .add_bulk(
                queue,
                vec![NewJob {
                    name: name.to_string(),
                    data,
                    options,
                }],
            )
            .await?;
        ids.pop()
            .ok_or_else(|| Error::new(ErrorCode::Internal, "add_bulk returned no id"))
    }

    /// Adds jobs to `queue` as part of this batch ([`Batch::add`] for each, counted in by 500 per
    /// call, then one bulk add).
    pub async fn add_bulk(&self, queue: &str, mut jobs: Vec<NewJob>) -> Result<Vec<JobId>> {
        // A partitioned queue's jobs go to its partitions (its stored count, one round trip).
        let target = self.queue.queue_opened(queue).await?;
        for j in &mut jobs {
            check_batchable(&j.options)?;
            crate::dead_letter::check_not_own(&target, &j.options)?;
            if j.options.id.is_none() {
                j.options.id = Some(target.mint_id()?);
            }
            j.options.batch = Some(self.reference());
        }
        for chunk in jobs.chunks(COUNT_CHUNK) {
            let mut inv = script::BATCH_COUNT.on(self.queue.name(), Some(self.id))?;
            for j in chunk {
                inv = inv
                    .arg(j.options.id.unwrap_or(self.id))
                    .arg(target.name().as_str());
            }
            let _: i64 = inv.invoke(self.queue.store()).await?;
        }
        target.add_bulk(jobs).await
    }

    /// Seals the batch: its creator has added its jobs. From now on it is done once every job
    /// counted in has its outcome (at once, for a batch whose jobs all finished), and its callbacks
    /// are added then. Idempotent. `job_not_found` when there is no such batch.
    pub async fn seal(&self) -> Result<()> {
        let due: Vec<String> = script::BATCH_SEAL
            .on(self.queue.name(), Some(self.id))?
            .arg(self.queue.mint_id()?)
            .arg(self.queue.mint_id()?)
            .invoke(self.queue.store())
            .await?;
        add_callbacks(&self.queue, self.id, &due).await
    }

    /// Its counts and one page of its failed jobs (`offset`, at most `limit`, oldest failure
    /// first). `job_not_found` when there is no such batch.
    pub async fn status(&self, offset: u64, limit: u64) -> Result<BatchStatus> {
        let name = self.queue.name();
        let mut conn = self.queue.store().conn();
        let record: HashMap<String, String> = redis::cmd("HGETALL")
            .arg(name.batch_key(self.id, BatchPart::Record))
            .query_async(&mut conn)
            .await?;
        if record.is_empty() {
            return Err(Error::new(
                ErrorCode::JobNotFound,
                format!("no batch {} in queue {name}", self.id),
            ));
        }
        let page: Vec<String> = if limit == 0 {
            Vec::new()
        } else {
            redis::cmd("ZRANGE")
                .arg(name.batch_key(self.id, BatchPart::Failed))
                .arg(offset)
                .arg(offset.saturating_add(limit - 1).min(i64::MAX as u64))
                .query_async(&mut conn)
                .await?
        };
        let num = |k: &str| {
            record
                .get(k)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        let flag = |k: &str| record.get(k).is_some_and(|v| v == "1");
        let (total, completed, failed) = (num("total"), num("completed"), num("failed"));
        Ok(BatchStatus {
            id: self.id,
            description: record.get("description").cloned(),
            total,
            pending: total.saturating_sub(completed + failed),
            completed,
            failed,
            sealed: flag("sealed"),
            cancelled: flag("cancelled"),
            done: record.contains_key("done_ms"),
            failed_jobs: page
                .iter()
                .filter_map(|m| {
                    let (queue, id) = m.rsplit_once(':')?;
                    Some(BatchJob {
                        queue: queue.to_string(),
                        id: JobId::parse(id).ok()?,
                    })
                })
                .collect(),
        })
    }

    /// Cancels the batch: no job is counted in any more and no callback falls due; its jobs that
    /// have no outcome yet are cancelled ([`Queue::cancel`]: one not running ends failed, a
    /// running one's worker is told). Returns how many jobs were cancelled or told. Idempotent.
    /// `job_not_found` when there is no such batch.
    pub async fn cancel(&self) -> Result<u64> {
        let r: String = script::BATCH_CANCEL
            .on(self.queue.name(), Some(self.id))?
            .invoke(self.queue.store())
            .await?;
        if r == "missing" {
            return Err(Error::new(ErrorCode::JobNotFound, "no such batch"));
        }
        let key = self.queue.name().batch_key(self.id, BatchPart::Jobs);
        let mut cursor: u64 = 0;
        let mut told = 0;
        let mut touched: HashMap<String, Queue> = HashMap::new();
        loop {
            let (next, page): (u64, Vec<String>) = redis::cmd("HSCAN")
                .arg(&key)
                .arg(cursor)
                .arg("COUNT")
                .arg(500)
                .query_async(&mut self.queue.store().conn())
                .await?;
            for pair in page.chunks(2) {
                let [id, v] = pair else { continue };
                let Some(queue) = v.strip_prefix("p|") else {
                    continue;
                };
                let Ok(id) = JobId::parse(id) else {
                    continue;
                };
                let Ok(q) = self.queue.queue_opened(queue).await else {
                    continue;
                };
                use crate::queue::CancelOutcome;
                match q.cancel(id, "its batch was cancelled").await? {
                    CancelOutcome::Cancelled => {
                        told += 1;
                        touched.insert(queue.to_string(), q);
                    }
                    CancelOutcome::Requested => told += 1,
                    CancelOutcome::Finished | CancelOutcome::NotFound => {}
                }
            }
            cursor = next;
            if cursor == 0 {
                break;
            }
        }
        // The cancelled jobs' failures, noted by cancel.lua, recorded now (else by maintenance).
        for q in touched.values() {
            q.record_batch_outcomes().await?;
        }
        Ok(told)
    }
}

/// Adds the due callbacks `due` (batch_seal.lua / batch_record.lua's list: kind, id, spec, total,
/// completed, failed per callback) of batch `id` of `q`, each under its pinned id, then marks it
/// added.
async fn add_callbacks(q: &Queue, id: JobId, due: &[String]) -> Result<()> {
    for c in due.chunks(6) {
        let [kind, cid, spec, total, completed, failed] = c else {
            continue;
        };
        let cid = JobId::parse(cid)?;
        let spec: BatchCallback = serde_json::from_str(spec)?;
        let n = |s: &str| s.parse::<u64>().unwrap_or(0);
        let mut options = spec.options;
        options.id = Some(cid);
        options.batch_done = Some(BatchDone {
            queue: q.name().as_str().to_string(),
            id: id.to_string(),
            kind: kind.clone(),
            total: n(total),
            completed: n(completed),
            failed: n(failed),
        });
        q.queue_opened(&spec.queue)
            .await?
            .add(&spec.name, spec.data, options)
            .await?;
        if stopped_at(q, Step::CallbackAdded) {
            continue;
        }
        let _: i64 = script::BATCH_CALLBACK_DONE
            .on(q.name(), Some(id))?
            .arg(kind.as_str())
            .arg(cid)
            .invoke(q.store())
            .await?;
    }
    Ok(())
}

/// Where a test stops the steps of a batched outcome ([`stop_batch_steps_after`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Step {
    /// The job's finish (its note in batch-pending) only.
    Finished,
    /// The outcome recorded in the batch, its note not removed, no callback added.
    Recorded,
    /// A callback added, not marked added.
    CallbackAdded,
}

#[cfg(feature = "testing")]
static STOPS: std::sync::Mutex<Option<HashMap<String, u8>>> = std::sync::Mutex::new(None);

/// For `core/tests` (feature `testing`): make the steps after a batched job's finish stop, as a
/// crash there would: for jobs of queue `queue`, after `step` 1 (the finish only) or 2 (recorded
/// in the batch, note kept, callbacks not added); for batches of queue `queue`, 3 (a callback
/// added, not marked added); 0: no stop.
#[cfg(feature = "testing")]
#[doc(hidden)]
pub fn stop_batch_steps_after(queue: &str, step: u8) {
    let mut g = STOPS.lock().unwrap_or_else(|p| p.into_inner());
    g.get_or_insert_with(HashMap::new)
        .insert(queue.to_string(), step);
}

fn stopped_at(_queue: &Queue, _step: Step) -> bool {
    #[cfg(feature = "testing")]
    {
        let g = STOPS.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = g.as_ref().and_then(|m| m.get(_queue.name().as_str())) {
            let n = match _step {
                Step::Finished => 1,
                Step::Recorded => 2,
                Step::CallbackAdded => 3,
            };
            return *s == n;
        }
    }
    false
}

/// The note a finish script leaves for a batched job (`lib/batch.lua`): `<o>|<job>|<bq>|<bid>`.
pub(crate) fn pending_entry(outcome: char, job: JobId, batch: &BatchRef) -> String {
    format!("{outcome}|{job}|{}|{}", batch.queue, batch.id)
}

/// Records the outcome noted as `entry` in `q`'s batch-pending set in its batch (adding the
/// callbacks that fall due), then removes the note. True when the batch counted it now.
pub(crate) async fn settle(q: &Queue, entry: &str) -> Result<bool> {
    if stopped_at(q, Step::Finished) {
        return Ok(false);
    }
    let parsed = entry.split_once('|').and_then(|(o, rest)| {
        let (job, rest) = rest.split_once('|')?;
        let (bq, bid) = rest.rsplit_once('|')?;
        Some((o, job, bq, bid))
    });
    let mut counted = false;
    if let Some((o, job, bq, bid)) = parsed {
        let (Ok(job), Ok(bid), Ok(bq)) = (JobId::parse(job), JobId::parse(bid), q.queue(bq)) else {
            return drop_entry(q, entry).await.map(|_| false);
        };
        let reply: Vec<String> = script::BATCH_RECORD
            .on(bq.name(), Some(bid))?
            .arg(job)
            .arg(o)
            .arg(bq.mint_id()?)
            .arg(bq.mint_id()?)
            .invoke(bq.store())
            .await?;
        counted = reply.first().is_some_and(|c| c == "1");
        if stopped_at(q, Step::Recorded) {
            return Ok(counted);
        }
        add_callbacks(&bq, bid, reply.get(1..).unwrap_or_default()).await?;
    }
    drop_entry(q, entry).await?;
    Ok(counted)
}

async fn drop_entry(q: &Queue, entry: &str) -> Result<()> {
    let _: i64 = redis::cmd("ZREM")
        .arg(&q.keys().batch_pending)
        .arg(entry)
        .query_async(&mut q.store().conn())
        .await?;
    Ok(())
}

/// Records the notes of `q` that waited at least `age` (at most `limit`); returns how many notes
/// it saw and how many outcomes the batches counted now.
pub(crate) async fn settle_due(q: &Queue, age: Duration, limit: u64) -> Result<(u64, u64)> {
    let entries: Vec<String> = script::BATCH_PENDING_DUE
        .on(q.name(), None)?
        .arg(age.as_millis() as u64)
        .arg(limit)
        .invoke(q.store())
        .await?;
    // One entry that cannot be settled now (its callback's queue refusing the add, say) does not
    // hold back the others: each is tried, and the first error is returned after.
    let (mut counted, mut first_error) = (0, None);
    for e in &entries {
        match settle(q, e).await {
            Ok(true) => counted += 1,
            Ok(false) => {}
            Err(err) => {
                first_error.get_or_insert(err);
            }
        }
    }
    match first_error {
        Some(err) => Err(err),
        None => Ok((entries.len() as u64, counted)),
    }
}

/// Deletes every batch `q` created, each with all its parts (for [`Queue::obliterate`], before
/// the queue's families, `batches` among them, go).
pub(crate) async fn delete_all(q: &Queue) -> Result<()> {
    let mut conn = q.store().conn();
    loop {
        let ids: Vec<String> = redis::cmd("ZRANGE")
            .arg(&q.keys().batches)
            .arg(0)
            .arg(499)
            .query_async(&mut conn)
            .await?;
        if ids.is_empty() {
            return Ok(());
        }
        for id in &ids {
            if let Ok(bid) = JobId::parse(id) {
                for part in BatchPart::ALL {
                    let _: i64 = redis::cmd("DEL")
                        .arg(q.name().batch_key(bid, part))
                        .query_async(&mut conn)
                        .await?;
                }
            }
            let _: i64 = redis::cmd("ZREM")
                .arg(&q.keys().batches)
                .arg(id)
                .query_async(&mut conn)
                .await?;
        }
    }
}

/// The batch part of the audit, for queue `q`: each batch it created has counters equal to its
/// jobs' states and a failed set holding exactly its failed jobs; each note in its batch-pending
/// set is well formed.
pub(crate) async fn audit(q: &Queue, problems: &mut Vec<String>) -> Result<()> {
    let mut conn = q.store().conn();
    let ids: Vec<String> = redis::cmd("ZRANGE")
        .arg(&q.keys().batches)
        .arg(0)
        .arg(-1)
        .query_async(&mut conn)
        .await?;
    for id in &ids {
        let Ok(bid) = JobId::parse(id) else {
            problems.push(format!("batches holds {id:?}, not a batch id"));
            continue;
        };
        let b = q.open_batch(id)?;
        let st = match b.status(0, 0).await {
            Ok(st) => st,
            Err(_) => {
                problems.push(format!("batch {id} is listed but has no record"));
                continue;
            }
        };
        let jobs: HashMap<String, String> = redis::cmd("HGETALL")
            .arg(q.name().batch_key(bid, BatchPart::Jobs))
            .query_async(&mut conn)
            .await?;
        let count = |s: &str| jobs.values().filter(|v| v.starts_with(s)).count() as u64;
        let (p, c, f) = (count("p|"), count("c|"), count("f|"));
        if (st.total, st.completed, st.failed) != (p + c + f, c, f) {
            problems.push(format!(
                "batch {id}: counters total {} completed {} failed {}, its jobs {} / {c} / {f}",
                st.total,
                st.completed,
                st.failed,
                p + c + f
            ));
        }
        let failed_set: u64 = redis::cmd("ZCARD")
            .arg(q.name().batch_key(bid, BatchPart::Failed))
            .query_async(&mut conn)
            .await?;
        if failed_set != f {
            problems.push(format!(
                "batch {id}: {failed_set} in its failed set, {f} failed jobs"
            ));
        }
    }
    let notes: Vec<String> = redis::cmd("ZRANGE")
        .arg(&q.keys().batch_pending)
        .arg(0)
        .arg(-1)
        .query_async(&mut conn)
        .await?;
    for n in notes {
        let ok = n.len() > 2
            && (n.starts_with("c|") || n.starts_with("f|"))
            && n[2..]
                .split_once('|')
                .and_then(|(job, rest)| Some((JobId::parse(job).ok()?, rest.rsplit_once('|')?)))
                .is_some_and(|(_, (bq, bid))| {
                    QueueName::new(bq).is_ok() && JobId::parse(bid).is_ok()
                });
        if !ok {
            problems.push(format!("batch-pending holds {n:?}, not a batched outcome"));
        }
    }
    Ok(())
}
