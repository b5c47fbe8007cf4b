//! Dead-letter queues: a job that fails for good moves, as a new job waiting there, to the queue its
//! `dead_letter` option names (or its queue's default, [`Queue::set_dead_letter`]).
//!
//! The dead-letter queue is another slot, so no script spans both; the move takes steps, each
//! atomic and idempotent (as flows do, `flow.rs`):
//! 1. the failure's own script (`fail.lua`, or `recover.lua` for a job that stalled too often,
//!    through `lib/finish.lua`) keeps the job in failed, its record naming the dead-letter queue
//!    (`dl_to`), and puts its id in the queue's `dead-letters` set;
//! 2. `dead_letter_pin.lua` (the failed job's slot) pins the id its copy takes there (`dl_id`,
//!    written once: a retry of the move reuses it);
//! 3. the copy is added to the dead-letter queue under that id (`add.lua`, which changes nothing
//!    for an id whose record exists), carrying its data, name, attempts and, in its options'
//!    `dead_lettered` ([`DeadLetterOrigin`]), the origin queue and id, the attempts it made, its
//!    last failure (code, message, stack) and its options;
//! 4. `dead_letter_done.lua` (the failed job's slot) takes the job out of failed and the set and
//!    deletes its record.
//!
//! The worker that failed the job runs 2 to 4 at once; a crash between steps leaves the id in the
//! set, and every worker's maintenance loop finishes the moves older than [`DEAD_LETTER_GRACE`]
//! (`dead_letters_due.lua`, server time), as does [`Queue::forward_dead_letters`]. The pinned id
//! makes the copy be added once however often a step is repeated.
//!
//! A replay ([`Queue::replay_dead_letters`], on the dead-letter queue) adds each copy back to its
//! origin queue under its original id with its original options (its attempts start again from
//! zero), then removes the copy: the add is idempotent (the id), so a crash between the two only
//! repeats the add, which changes nothing while the replayed job's record exists. Before the add
//! it runs step 4 for the origin (a no-op once done), so a move a crash cut after step 3 ends
//! before the job goes back, and its late last step cannot delete the replayed job.

use crate::error::Result;
use crate::job::{Job, JobState};
use crate::job_id::JobId;
use crate::keyspace::JobPart;
use crate::options::{check_dead_letter, own_dead_letter, DeadLetterOrigin, JobOptions};
use crate::outcome::Moved;
use crate::queue::Queue;
use crate::script;
use serde_json::Value;
use std::collections::HashMap;
use std::time::Duration;

/// How long a move waits in the `dead-letters` set before a maintenance loop finishes it (the
/// worker that failed the job does so within milliseconds; older entries are moves a crash cut).
pub const DEAD_LETTER_GRACE: Duration = Duration::from_secs(5);

/// A job a replay sent back: its id in the dead-letter queue and, in its origin queue, the queue
/// and the id it runs under again.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct Replayed {
    /// Its id in the dead-letter queue (removed from there).
    pub id: JobId,
    /// The queue it went back to.
    pub queue: String,
    /// Its id there (the one it failed with).
    pub origin_id: JobId,
}

impl Job {
    /// Where this job failed, when it is a dead-letter queue's copy of a failed job.
    pub fn dead_letter_origin(&self) -> Option<DeadLetterOrigin> {
        self.job_options().dead_lettered
    }
}

#[cfg(feature = "testing")]
static STOPS: std::sync::Mutex<Option<HashMap<String, u8>>> = std::sync::Mutex::new(None);

/// For `core/tests` (feature `testing`): make the moves of `queue`'s failed jobs stop after step
/// `step` (1: the failure only; 3: the copy added, the origin not yet done; 0: no stop), as a
/// crash there would.
#[cfg(feature = "testing")]
#[doc(hidden)]
pub fn stop_moves_after(queue: &str, step: u8) {
    let mut g = STOPS.lock().unwrap_or_else(|p| p.into_inner());
    g.get_or_insert_with(HashMap::new)
        .insert(queue.to_string(), step);
}

fn stopped_after(_queue: &Queue, _step: u8) -> bool {
    #[cfg(feature = "testing")]
    {
        let g = STOPS.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = g.as_ref().and_then(|m| m.get(_queue.name().as_str())) {
            return *s == _step;
        }
    }
    false
}

/// Steps 2 to 4 for failed job `id` of `q`: true when its copy went to its dead-letter queue now,
/// false when there was nothing to do (moved already, or the job left failed).
pub(crate) async fn forward(q: &Queue, id: JobId) -> Result<bool> {
    if stopped_after(q, 1) {
        return Ok(false);
    }
    let pinned: Vec<String> = script::DEAD_LETTER_PIN
        .on(q.name(), Some(id))?
        .arg(id)
        .arg(q.mint_id()?)
        .invoke(q.store())
        .await?;
    let [to, copy] = pinned.as_slice() else {
        return Ok(false);
    };
    let to = check_dead_letter(to)?;
    let copy = JobId::parse(copy)?;
    let record: HashMap<String, String> = redis::cmd("HGETALL")
        .arg(q.name().job_key(id, JobPart::Record))
        .query_async(&mut q.store().conn())
        .await?;
    let stored: Value = crate::job::with_batch_field(
        record
            .get("opts")
            .and_then(|o| serde_json::from_str(o).ok())
            .unwrap_or_else(|| Value::Object(Default::default())),
        record.get("batch"),
    );
    let was: JobOptions = serde_json::from_value(stored.clone()).unwrap_or_default();
    let num = |k: &str| record.get(k).and_then(|v| v.parse::<u64>().ok());
    let origin = DeadLetterOrigin {
        queue: q.name().as_str().to_string(),
        id: id.to_string(),
        attempts_made: num("atts").unwrap_or(0) as u32,
        stalls: num("stalls").unwrap_or(0) as u32,
        failure: record
            .get("failure")
            .and_then(|f| serde_json::from_str(f).ok())
            .unwrap_or(Value::Null),
        failed_ms: num("finished_ms").unwrap_or(0),
        options: stored,
    };
    // The copy runs as a plain job of the dead-letter queue: what ties it to its old queue (its
    // dedup key, group, delay, dead-letter queue) stays behind, in `origin.options`.
    let options = JobOptions {
        id: Some(copy),
        attempts: num("attempts").unwrap_or(was.attempts as u64).max(1) as u32,
        backoff: was.backoff,
        jitter: was.jitter,
        priority: was.priority,
        lease_ms: was.lease_ms,
        timeout_ms: was.timeout_ms,
        remove_on_complete: was.remove_on_complete,
        remove_on_fail: was.remove_on_fail,
        description: was.description,
        trace: was.trace,
        dead_lettered: Some(origin),
        ..JobOptions::default()
    };
    let name = record.get("name").cloned().unwrap_or_default();
    let data = record.get("data").cloned().unwrap_or_else(|| "null".into());
    q.queue_opened(to.as_str())
        .await?
        .add_json(&name, &data, options)
        .await?;
    if stopped_after(q, 3) {
        return Ok(false);
    }
    let n: i64 = script::DEAD_LETTER_DONE
        .on(q.name(), Some(id))?
        .arg(id)
        .arg(copy)
        .arg(q.max_events)
        .invoke(q.store())
        .await?;
    Ok(n == 1)
}

/// Finishes the moves that waited at least `age` (at most `limit` of them); returns how many
/// copies went to their dead-letter queues.
pub(crate) async fn forward_due(q: &Queue, age: Duration, limit: u64) -> Result<u64> {
    let ids: Vec<String> = script::DEAD_LETTERS_DUE
        .on(q.name(), None)?
        .arg(age.as_millis() as u64)
        .arg(limit)
        .invoke(q.store())
        .await?;
    let mut moved = 0;
    for id in ids.iter().filter_map(|t| JobId::parse(t).ok()) {
        if forward(q, id).await? {
            moved += 1;
        }
    }
    Ok(moved)
}

/// The states a dead-letter queue's copies are replayed from (not running, not completed).
const REPLAYABLE: [JobState; 5] = [
    JobState::Waiting,
    JobState::Paused,
    JobState::Prioritized,
    JobState::Delayed,
    JobState::Failed,
];

impl Queue {
    /// Sets (or with None clears) this queue's dead-letter queue: where its jobs without a
    /// `dead_letter` option of their own go once they fail for good. Stored in the queue's meta,
    /// so every producer and worker of the queue shares it. `invalid_queue_name` for a bad name,
    /// `invalid_option` for the queue itself.
    pub async fn set_dead_letter(&self, queue: Option<&str>) -> Result<()> {
        if let Some(p) = &self.spread_now().await? {
            crate::queue::partitioned::each(p, |m| Box::pin(m.set_dead_letter_here(queue))).await?;
            return Ok(());
        }
        self.set_dead_letter_here(queue).await
    }

    /// [`Queue::set_dead_letter`] on this queue's own slot (a plain queue, or one partition).
    pub(crate) async fn set_dead_letter_here(&self, queue: Option<&str>) -> Result<()> {
        let mut conn = self.store().conn();
        let meta = &self.keys().meta;
        match queue {
            Some(name) => {
                let dlq = check_dead_letter(name)?;
                if &dlq == self.name() {
                    return Err(own_dead_letter());
                }
                Ok(redis::cmd("HSET")
                    .arg(meta)
                    .arg("dead_letter")
                    .arg(dlq.as_str())
                    .query_async(&mut conn)
                    .await?)
            }
            None => Ok(redis::cmd("HDEL")
                .arg(meta)
                .arg("dead_letter")
                .query_async(&mut conn)
                .await?),
        }
    }

    /// This queue's dead-letter queue ([`Queue::set_dead_letter`]), if it has one.
    pub async fn dead_letter(&self) -> Result<Option<String>> {
        Ok(redis::cmd("HGET")
            .arg(&self.keys().meta)
            .arg("dead_letter")
            .query_async(&mut self.store().conn())
            .await?)
    }

    /// Finishes every dead-letter move of this queue's failed jobs that has not ended (a crash
    /// between its steps; workers do this on their own after [`DEAD_LETTER_GRACE`]); returns how
    /// many copies went to their dead-letter queues. Idempotent.
    pub async fn forward_dead_letters(&self) -> Result<u64> {
        if let Some(p) = &self.spread() {
            return crate::queue::partitioned::sum(p, |m| Box::pin(m.forward_dead_letters_here()))
                .await;
        }
        self.forward_dead_letters_here().await
    }

    /// [`Queue::forward_dead_letters`] on this queue's own slot (a plain queue, or one partition).
    pub(crate) async fn forward_dead_letters_here(&self) -> Result<u64> {
        let mut total = 0;
        loop {
            let n = forward_due(self, Duration::ZERO, 500).await?;
            total += n;
            if n == 0 {
                return Ok(total);
            }
        }
    }

    /// The dead-lettered jobs held by this queue (as a dead-letter queue): those waiting (or
    /// failed again) that carry a [`Job::dead_letter_origin`], at most `limit`, in the order of
    /// [`Queue::list`] per state (waiting, paused, prioritized, delayed, failed); for a
    /// partitioned queue, every partition's, merged as `list` merges them.
    pub async fn dead_letters(&self, limit: u64) -> Result<Vec<Job>> {
        let mut out = Vec::new();
        for state in REPLAYABLE {
            let mut offset = 0;
            while (out.len() as u64) < limit {
                let page = self.list(state, offset, 500).await?;
                if page.is_empty() {
                    break;
                }
                offset += page.len() as u64;
                out.extend(
                    page.into_iter()
                        .filter(|j| j.dead_letter_origin().is_some())
                        .take((limit - out.len() as u64) as usize),
                );
            }
        }
        Ok(out)
    }

    /// Sends dead-lettered jobs of this queue (`ids`, or with None every one not running) back to
    /// their origin queues: each is added there under its original id with its original options
    /// (its attempts start from zero) and removed from here. A job that is not a dead-lettered
    /// copy, is running, or whose original id is held there by a live job (its dedup key taken
    /// meanwhile) is left here and not listed. Idempotent steps: run again after a crash, it
    /// adds nothing twice while the replayed job's record lives. A partitioned queue replays from
    /// every partition.
    pub async fn replay_dead_letters(&self, ids: Option<&[JobId]>) -> Result<Vec<Replayed>> {
        let ids: Vec<JobId> = match ids {
            Some(ids) => ids.to_vec(),
            None => {
                let mut all = Vec::new();
                for state in REPLAYABLE {
                    all.extend(self.list_ids(state, 0, u32::MAX as u64).await?);
                }
                all
            }
        };
        let mut out = Vec::new();
        for id in ids {
            // The job's own queue (its partition, found once).
            let home = self.holder_of(id).await?;
            let Some(job) = home.get(id).await? else {
                continue;
            };
            let Some(origin) = job.dead_letter_origin() else {
                continue;
            };
            if job.state == Some(JobState::Active) {
                continue;
            }
            let back = self.queue(&origin.queue)?;
            let origin_id = JobId::parse(&origin.id)?;
            let mut options: JobOptions =
                serde_json::from_value(origin.options.clone()).unwrap_or_default();
            options.id = Some(origin_id);
            options.delay_ms = 0;
            options.dead_lettered = None;
            // The payload as stored (read back exactly).
            let data: Option<String> = redis::cmd("HGET")
                .arg(home.name().job_key(id, JobPart::Record))
                .arg("data")
                .query_async(&mut home.store().conn())
                .await?;
            let data = data.unwrap_or_else(|| "null".into());
            // The move's last step may be pending (a worker stopped after adding this copy): the
            // origin's record still holds the id, so the add below would change nothing and the
            // late step would then delete the job. Finish it first; it does nothing once done.
            let _: i64 = script::DEAD_LETTER_DONE
                .on(back.name(), Some(origin_id))?
                .arg(origin_id)
                .arg(id)
                .arg(back.max_events)
                .invoke(back.store())
                .await?;
            if back.add_json(&job.name, &data, options).await? != origin_id {
                continue;
            }
            match home.remove(id).await? {
                Moved::Moved | Moved::NotFound => out.push(Replayed {
                    id,
                    queue: origin.queue,
                    origin_id,
                }),
                Moved::WrongState(_) => {}
            }
        }
        Ok(out)
    }
}
