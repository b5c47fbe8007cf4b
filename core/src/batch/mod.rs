//! Batches: a set of jobs on any queues, grown while it runs, with callbacks once every job has
//! its outcome (`on_complete`) and once every job has completed (`on_success`).
//!
//! A batch lives in the slot of the queue that created it ([`Queue::batch`]), in its own keys
//! (`emq:{q}:batch:<id>`, `…:jobs`, `…:failed`: [`BatchPart`]) and the queue's `batches` set. Its
//! jobs may sit in other slots, so nothing spans both; every crossing takes steps, each atomic and
//! idempotent (as dead letters do, `dead_letter.rs`):
//! 1. **Counting in** (`batch_count.lua`, the batch's slot): the job's id, minted before, is counted
//!    in pending once; then the job is added to its queue under that id (an idempotent add) with
//!    the batch in its options (`batch`: [`BatchRef`]); a caller's own id that turns out to belong
//!    to a job outside the batch (the add leaves that job as it is) is counted out again
//!    (`batch_uncount.lua`), so it does not hold the batch open. A job for the batch's own queue shares its
//!    slot: one call (`batch_add.lua`) adds it and counts it in, its record naming the batch in a
//!    field of its own (`batch`: `<queue>|<id>`, read back into the options by `Job`), and a job
//!    whose id existed already is not counted in by it. A running job of the batch adds jobs the
//!    same way ([`crate::JobContext::batch`]): it is pending itself until its outcome is recorded, so
//!    the batch stays open until they are done.
//! 2. **An outcome** (completed, or failed for good): the job's finish script (`complete.lua`, or
//!    `fail.lua` / `recover.lua` through `lib/finish.lua`) notes it in its own queue's
//!    `batch-pending` set (`lib/batch_note.lua`); the worker then records it in the batch
//!    (`batch_record.lua`: pending → completed or failed, failed → completed for a job retried to
//!    success; once per job and outcome; one call per batch for all the outcomes of one of its
//!    completion calls, taken in order) and removes the notes. A crash between the two leaves the
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
//! 4. **A batch inside a batch** ([`Batch::batch`], `batch_nest.lua`): created in its parent's
//!    slot and counted in the parent as one pending job under its own id. Once it is done (or
//!    cancelled), the step that saw it notes its outcome for the parent in its queue's
//!    `batch-pending` set, as a job's finish does (`lib/batch.lua` `emq_batch_note_parent`:
//!    completed when every job of it completed, failed otherwise; once per outcome, so a child
//!    whose failed jobs are retried to success turns completed in its parent too), and the parent
//!    records it as step 2 does, with the same crash recovery.
//!
//! A job cancelled before it ran (`cancel.lua`), or removed before its outcome (`remove_job.lua`:
//! [`Queue::remove`], [`Queue::drain`]; the remover records it at once), has its failure noted
//! the same way. Not built: a batch's jobs on a queue that is obliterated stay pending in a batch
//! of another queue (the notes go with the queue's keys); a batch's keys are not trimmed (they go
//! with [`Queue::obliterate`] of the queue that created it).

use crate::error::{Error, ErrorCode, Result};
use crate::job::Job;
use crate::job_id::JobId;
use crate::keyspace::{BatchPart, QueueName};
use crate::options::{JobOptions, MAX_DESCRIPTION};
use crate::queue::{NewJob, Queue};
use crate::script;
use serde_json::Value;
use std::collections::HashMap;
use std::time::Duration;

pub(crate) mod marks;
mod steps;
mod types;

pub use marks::{BatchDone, BatchRef};
#[cfg(feature = "testing")]
pub use steps::stop_batch_steps_after;
use steps::{add_callbacks, settle_parent_note};
pub(crate) use steps::{audit, delete_all, pending_entry, settle_due, settle_many};
pub use types::{BatchCallback, BatchJob, BatchOptions, BatchStatus};

/// How long an outcome waits in a queue's `batch-pending` set before a maintenance loop records it
/// (the worker that finished the job does so within milliseconds; older entries are steps a crash
/// cut).
pub const BATCH_GRACE: Duration = Duration::from_secs(5);

/// Most jobs counted in per call of `batch_count.lua`.
const COUNT_CHUNK: usize = 500;

/// A handle on one batch. Cheap to clone.
#[derive(Clone)]
pub struct Batch {
    queue: Queue,
    id: JobId,
}

/// `options` checked (the description's length, each callback's queue and options); the
/// callbacks as the batch's record stores them (JSON, '' for none).
fn check_batch_options(options: &BatchOptions) -> Result<(String, String)> {
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
    Ok((
        check_callback("on_complete", &options.on_complete)?,
        check_callback("on_success", &options.on_success)?,
    ))
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
    /// Creates a batch in this queue's slot (on a partitioned queue, in the partition its id
    /// routes to). Add its jobs with [`Batch::add`] / [`Batch::add_bulk`], then [`Batch::seal`]
    /// it: its callbacks fall due from then on. `invalid_option` for a description over
    /// [`MAX_DESCRIPTION`] bytes or a callback's bad options, `invalid_queue_name` for a
    /// callback's bad queue.
    pub async fn batch(&self, options: BatchOptions) -> Result<Batch> {
        let (on_complete, on_success) = check_batch_options(&options)?;
        let id = self.mint_id()?;
        let home = self.batch_home(id);
        let _: i64 = script::BATCH_CREATE
            .on(home.name(), Some(id))?
            .arg(id)
            .arg(options.description.as_deref().unwrap_or(""))
            .arg(on_complete)
            .arg(on_success)
            .invoke(home.store())
            .await?;
        Ok(Batch { queue: home, id })
    }

    /// A handle on batch `id` of this queue (`invalid_job_id` for a malformed id; whether it
    /// exists shows in [`Batch::status`]).
    pub fn open_batch(&self, id: &str) -> Result<Batch> {
        let id = JobId::parse(id)?;
        Ok(Batch {
            queue: self.batch_home(id),
            id,
        })
    }

    /// Where batch `id` of this queue lives: the queue, or the partition its id routes to.
    fn batch_home(&self, id: JobId) -> Queue {
        match &self.spread() {
            Some(p) => p.for_id(id).clone(),
            None => self.clone(),
        }
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

impl Batch {
    /// The handle on batch `id` of `queue` (the queue that created it).
    pub(crate) fn of(queue: Queue, id: JobId) -> Batch {
        Batch { queue, id }
    }

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

    /// Adds a job to `queue` (any queue) as part of this batch: counted in first (on the batch's own
    /// queue, by the add's own call), then added under its id (`options.id`, or a fresh one), so a
    /// retry with the same id adds it once.
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

    /// Adds jobs to `queue` as part of this batch ([`Batch::add`] for each: counted in by 500 per
    /// call, the calls in one pipeline, then one bulk add).
    pub async fn add_bulk(&self, queue: &str, mut jobs: Vec<NewJob>) -> Result<Vec<JobId>> {
        // Jobs for the batch's own queue (a plain queue, or the partition it lives in, by its
        // name) share its slot: they are counted in by the add's own call (batch_add.lua), one
        // step instead of two, and no round trip reads the queue's partition count.
        if queue == self.queue.name().as_str() {
            for j in &jobs {
                check_batchable(&j.options)?;
            }
            return self.queue.add_bulk_sent(jobs, Some(self.id)).await;
        }
        // A partitioned queue's jobs go to its partitions (its stored count, one round trip).
        let target = self.queue.queue_opened(queue).await?;
        // Which ids were minted here: a chunk of those alone is counted in without reading first.
        let mut minted = Vec::with_capacity(jobs.len());
        for j in &mut jobs {
            check_batchable(&j.options)?;
            crate::options::check_dead_letter_not_own(target.name(), &j.options)?;
            minted.push(j.options.id.is_none());
            if j.options.id.is_none() {
                j.options.id = Some(target.mint_id()?);
            }
            j.options.batch = Some(self.reference());
        }
        // Every chunk's count goes out in one pipeline (one round trip, in the batch's slot), and
        // only then are the jobs added: a job is counted in before it can have an outcome.
        let counts = jobs
            .chunks(COUNT_CHUNK)
            .zip(minted.chunks(COUNT_CHUNK))
            .map(|(chunk, minted)| {
                // The ids end to end, one argument (batch_count.lua cuts them).
                let mut ids = String::with_capacity(chunk.len() * crate::job_id::TEXT_LEN);
                for j in chunk {
                    use std::fmt::Write;
                    let _ = write!(ids, "{}", j.options.id.unwrap_or(self.id));
                }
                Ok(script::BATCH_COUNT
                    .on(self.queue.name(), Some(self.id))?
                    .arg(target.name().as_str())
                    .arg(ids)
                    .arg(if minted.iter().all(|&m| m) { "1" } else { "" }))
            })
            .collect::<Result<Vec<_>>>()?;
        if !counts.is_empty() {
            let _: Vec<i64> = script::pipeline(self.queue.store(), &counts).await?;
        }
        let ids = target.add_bulk(jobs).await?;
        // A caller's own id may belong to a job outside the batch already (the add left that job
        // as it was): counted in above, it would hold the batch open for ever, so it is counted
        // out again. Minted ids are fresh, so only the caller's are read.
        let own: Vec<JobId> = ids
            .iter()
            .zip(&minted)
            .filter(|(_, m)| !**m)
            .map(|(id, _)| *id)
            .collect();
        if !own.is_empty() {
            self.count_out_outsiders(&target, &own).await?;
        }
        Ok(ids)
    }

    /// The last step of [`Batch::add_bulk`] for another slot: of `ids` (the caller's own, just
    /// added to `target`), those whose job's record names no batch or another one are counted out
    /// (`batch_uncount.lua`; only entries still pending, so a repeat changes nothing). A record
    /// that is gone already is this batch's job, finished and removed: its outcome counts.
    async fn count_out_outsiders(&self, target: &Queue, ids: &[JobId]) -> Result<()> {
        let ours = Some(self.reference());
        let jobs = futures::future::try_join_all(ids.iter().map(|id| target.get(*id))).await?;
        let outsiders: Vec<JobId> = ids
            .iter()
            .zip(jobs)
            .filter(|(_, job)| job.as_ref().is_some_and(|j| j.batch_ref() != ours))
            .map(|(id, _)| *id)
            .collect();
        for chunk in outsiders.chunks(COUNT_CHUNK) {
            let mut call = script::BATCH_UNCOUNT
                .on(self.queue.name(), Some(self.id))?
                .arg(target.name().as_str())
                .arg(self.queue.mint_id()?)
                .arg(self.queue.mint_id()?);
            for id in chunk {
                call = call.arg(*id);
            }
            let reply: Vec<String> = call.invoke(self.queue.store()).await?;
            add_callbacks(&self.queue, self.id, reply.get(2..).unwrap_or_default()).await?;
            settle_parent_note(&self.queue, reply.get(1)).await?;
        }
        Ok(())
    }

    /// Seals the batch: its creator has added its jobs. From now on it is done once every job
    /// counted in has its outcome (at once, for a batch whose jobs all finished), and its callbacks
    /// are added then. Idempotent. `job_not_found` when there is no such batch.
    pub async fn seal(&self) -> Result<()> {
        let reply: Vec<String> = script::BATCH_SEAL
            .on(self.queue.name(), Some(self.id))?
            .arg(self.queue.mint_id()?)
            .arg(self.queue.mint_id()?)
            .invoke(self.queue.store())
            .await?;
        add_callbacks(&self.queue, self.id, reply.get(1..).unwrap_or_default()).await?;
        settle_parent_note(&self.queue, reply.first()).await
    }

    /// Creates a batch inside this one, in the same queue's slot: it counts in this batch as one
    /// job (under its own id), pending until it is done, then completed when every job of it
    /// completed and failed otherwise (completed later, when its failed jobs are retried to
    /// success). Seal it as any batch; its callbacks run as any batch's. Cancelling this batch
    /// cancels it; cancelling it alone counts it failed here. `job_not_found` when there is no
    /// such batch, `invalid_state` when it was cancelled or is done, and the checks of
    /// [`Queue::batch`].
    pub async fn batch(&self, options: BatchOptions) -> Result<Batch> {
        let (on_complete, on_success) = check_batch_options(&options)?;
        let name = self.queue.name();
        let id = self.queue.mint_id()?;
        let _: i64 = script::BATCH_NEST
            .prepare()
            .key(&name.batch_key(id, BatchPart::Record))
            .key(&self.queue.keys().batches)
            .key(&name.batch_key(self.id, BatchPart::Record))
            .key(&name.batch_key(self.id, BatchPart::Jobs))
            .arg(id)
            .arg(options.description.as_deref().unwrap_or(""))
            .arg(on_complete)
            .arg(on_success)
            .arg(name.as_str())
            .arg(self.id)
            .invoke(self.queue.store())
            .await?;
        Ok(Batch {
            queue: self.queue.clone(),
            id,
        })
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
            parent: record.get("parent_note").and_then(|n| {
                let (_, rest) = n.split_once('|')?;
                let (queue, id) = rest.rsplit_once('|')?;
                Some(BatchRef {
                    queue: queue.to_string(),
                    id: id.to_string(),
                })
            }),
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
        Box::pin(self.cancel_inner()).await
    }

    async fn cancel_inner(&self) -> Result<u64> {
        let (r, note): (String, String) = script::BATCH_CANCEL
            .on(self.queue.name(), Some(self.id))?
            .invoke(self.queue.store())
            .await?;
        if r == "missing" {
            return Err(Error::new(ErrorCode::JobNotFound, "no such batch"));
        }
        // A batch inside a batch counts failed in its parent (unless its parent is cancelling it).
        settle_parent_note(&self.queue, Some(&note)).await?;
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
                    CancelOutcome::Finished => {}
                    // Not a job: a batch inside this one, cancelled with its jobs.
                    CancelOutcome::NotFound => {
                        if let Ok(n) = Box::pin(Batch::of(q, id).cancel_inner()).await {
                            told += n;
                        }
                    }
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
