//! Removing jobs from one queue: one job, the jobs of a state (drain, clean, trim), and the whole
//! queue (obliterate). Work on ids not known in advance selects ids first, then removes each with a
//! script that re-checks it.

use super::*;
use crate::error::{Error, ErrorCode, Result};
use crate::job::JobState;
use crate::job_id::JobId;
use crate::keyspace::JobPart;
use crate::options::Retention;
use crate::outcome::Moved;
use crate::script::{self, Invocation};
use std::time::Duration;

/// `remove_job.lua`'s reply for a job removed whose failure it noted for its batch.
const REMOVED_BATCHED: i64 = 2;

/// Most rounds of 500 notes a removal records at once (the rest wait for a maintenance loop).
const RECORD_ROUNDS: usize = 20;

impl Queue {
    pub(crate) fn remove_invocation(
        &self,
        id: JobId,
        allowed: &str,
        older_ms: u64,
    ) -> Result<Invocation> {
        Ok(script::REMOVE_JOB
            .on(&self.name, Some(id))?
            .arg(id)
            .arg(allowed)
            .arg(self.max_events)
            .arg(older_ms))
    }

    /// Removes a job that is not active: [`Moved::Moved`], [`Moved::NotFound`], or
    /// [`Moved::WrongState`]`(Active)`.
    pub async fn remove(&self, id: JobId) -> Result<Moved> {
        if let Some(p) = &self.spread() {
            let q = super::partitioned::owner(p, id).await?;
            return q.remove_here(id).await;
        }
        self.remove_here(id).await
    }

    /// [`Queue::remove`] on this queue's own slot (a plain queue, or one partition).
    pub(super) async fn remove_here(&self, id: JobId) -> Result<Moved> {
        let n: i64 = self
            .remove_invocation(id, "any", 0)?
            .invoke(&self.store)
            .await?;
        if n == REMOVED_BATCHED {
            self.record_removed_outcomes().await;
            return Ok(Moved::Moved);
        }
        self.outcome(id, n).await
    }

    /// Records in their batches the failures `remove_job.lua` noted for the batched jobs it removed
    /// (the queue's `batch-pending` notes, whatever their age: recording is once per job and
    /// outcome, so one a worker records at the same time counts once). The jobs are removed
    /// whatever happens here: a note not recorded now stays, and a worker's maintenance loop (or
    /// [`Queue::record_batch_outcomes`]) records it later.
    async fn record_removed_outcomes(&self) {
        for _ in 0..RECORD_ROUNDS {
            match crate::batch::settle_due(self, Duration::ZERO, 500).await {
                Ok((seen, _)) if seen < 500 => return,
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(queue = %self.name, error = %e, "a removed job's batch outcome was not recorded yet; a worker of its queue records it later");
                    return;
                }
            }
        }
    }

    /// A move script's reply as a [`Moved`]: 1 moved; otherwise the job's state, read next.
    pub(super) async fn outcome(&self, id: JobId, reply: i64) -> Result<Moved> {
        if reply == 1 {
            return Ok(Moved::Moved);
        }
        Ok(match self.get(id).await? {
            None => Moved::NotFound,
            Some(job) => match job.state {
                Some(state) => Moved::WrongState(state),
                None => Moved::NotFound,
            },
        })
    }

    /// Removes `ids` (each re-checked by its script); returns how many went, and whether a failure
    /// was noted for the batch of one of them (record it: [`Queue::record_removed_outcomes`]).
    async fn remove_many_noting(
        &self,
        ids: &[JobId],
        allowed: &str,
        older_ms: u64,
    ) -> Result<(u64, bool)> {
        let mut removed = 0;
        let mut batched = false;
        for chunk in ids.chunks(500) {
            let invs: Vec<Invocation> = chunk
                .iter()
                .map(|id| self.remove_invocation(*id, allowed, older_ms))
                .collect::<Result<_>>()?;
            let replies: Vec<i64> = script::pipeline(&self.store, &invs).await?;
            removed += replies.iter().filter(|r| **r >= 1).count() as u64;
            batched |= replies.contains(&REMOVED_BATCHED);
        }
        Ok((removed, batched))
    }

    /// [`Queue::remove_many_noting`], the batch outcomes it noted recorded.
    async fn remove_many(&self, ids: &[JobId], allowed: &str, older_ms: u64) -> Result<u64> {
        let (removed, batched) = self.remove_many_noting(ids, allowed, older_ms).await?;
        if batched {
            self.record_removed_outcomes().await;
        }
        Ok(removed)
    }

    /// Removes every waiting, paused and prioritized job, and the delayed ones too when asked.
    pub async fn drain(&self, delayed: bool) -> Result<u64> {
        if let Some(p) = &self.spread_now().await? {
            return super::partitioned::sum(p, |m| Box::pin(m.drain_here(delayed))).await;
        }
        self.drain_here(delayed).await
    }

    /// [`Queue::drain`] on this queue's own slot (a plain queue, or one partition).
    pub(super) async fn drain_here(&self, delayed: bool) -> Result<u64> {
        let mut states = vec![JobState::Waiting, JobState::Paused, JobState::Prioritized];
        if delayed {
            states.push(JobState::Delayed);
        }
        let mut total = 0;
        for state in states {
            loop {
                let ids = self.list_ids(state, 0, 1_000).await?;
                if ids.is_empty() {
                    break;
                }
                let n = self.remove_many(&ids, "waiting", 0).await?;
                total += n;
                if n == 0 {
                    break;
                }
            }
        }
        Ok(total)
    }

    async fn select_finished(
        &self,
        state: JobState,
        keep: Option<u64>,
        age_ms: Option<u64>,
        limit: u64,
    ) -> Result<Vec<JobId>> {
        let key = match state {
            JobState::Completed => &self.keys.completed,
            JobState::Failed => &self.keys.failed,
            other => {
                return Err(Error::new(
                    ErrorCode::InvalidOption,
                    format!(
                        "only completed and failed jobs are cleaned or trimmed, not {}",
                        other.as_str()
                    ),
                ))
            }
        };
        let ids: Vec<String> = script::SELECT_FINISHED
            .prepare()
            .key(key)
            .arg(keep.map(|c| c as i64).unwrap_or(-1))
            .arg(age_ms.map(|a| a as i64).unwrap_or(-1))
            .arg(limit)
            .invoke(&self.store)
            .await?;
        ids.iter().map(|s| JobId::parse(s)).collect()
    }

    async fn remove_finished(&self, state: JobState, ids: &[JobId], older_ms: u64) -> Result<u64> {
        let key = if state == JobState::Completed {
            &self.keys.completed
        } else {
            &self.keys.failed
        };
        let mut calls = Vec::new();
        for chunk in ids.chunks(250) {
            let mut inv = script::REMOVE_FINISHED
                .prepare()
                .key(key)
                .key(&self.keys.meta)
                .key(&self.keys.events);
            for id in chunk {
                inv = inv
                    .key(&self.name.job_key(*id, JobPart::Record))
                    .key(&self.name.job_key(*id, JobPart::Logs));
            }
            inv = inv.arg(self.max_events).arg(older_ms);
            for id in chunk {
                inv = inv.arg(*id);
            }
            calls.push(inv);
        }
        let mut removed = 0;
        for chunk in calls.chunks(8) {
            let replies: Vec<u64> = script::pipeline(&self.store, chunk).await?;
            removed += replies.iter().sum::<u64>();
        }
        Ok(removed)
    }

    /// Removes up to `limit` completed or failed jobs that finished more than `grace` ago.
    pub async fn clean(&self, state: JobState, grace: Duration, limit: u64) -> Result<u64> {
        if let Some(p) = &self.spread() {
            return super::partitioned::sum(p, |m| Box::pin(m.clean_here(state, grace, limit)))
                .await;
        }
        self.clean_here(state, grace, limit).await
    }

    /// [`Queue::clean`] on this queue's own slot (a plain queue, or one partition).
    pub(super) async fn clean_here(
        &self,
        state: JobState,
        grace: Duration,
        limit: u64,
    ) -> Result<u64> {
        let grace_ms = grace.as_millis() as u64;
        let ids = self
            .select_finished(state, None, Some(grace_ms), limit)
            .await?;
        self.remove_finished(state, &ids, grace_ms).await
    }

    /// Applies a retention policy to completed or failed jobs; returns how many were removed.
    pub async fn trim(&self, state: JobState, keep: Retention) -> Result<u64> {
        if let Some(p) = &self.spread() {
            return super::partitioned::sum(p, |m| Box::pin(m.trim_here(state, keep))).await;
        }
        self.trim_here(state, keep).await
    }

    /// [`Queue::trim`] on this queue's own slot (a plain queue, or one partition).
    pub(super) async fn trim_here(&self, state: JobState, keep: Retention) -> Result<u64> {
        if keep == Retention::KEEP_ALL {
            return Ok(0);
        }
        let mut total = 0;
        loop {
            let ids = self
                .select_finished(state, keep.count, keep.age_ms, 1_000)
                .await?;
            if ids.is_empty() {
                return Ok(total);
            }
            let n = self.remove_finished(state, &ids, 0).await?;
            total += n;
            if n == 0 {
                return Ok(total);
            }
        }
    }

    /// Deletes the whole queue: every job and every key. Refuses while jobs are active unless
    /// `force`.
    pub async fn obliterate(&self, force: bool) -> Result<u64> {
        if let Some(p) = &self.spread_now().await? {
            let n = super::partitioned::sum(p, |m| Box::pin(m.obliterate_here(force))).await?;
            crate::queue::partition_set::forget_count(self).await?;
            crate::shares::forget(self).await?;
            return Ok(n);
        }
        self.obliterate_here(force).await
    }

    /// [`Queue::obliterate`] on this queue's own slot (a plain queue, or one partition).
    pub(super) async fn obliterate_here(&self, force: bool) -> Result<u64> {
        if !force && self.counts().await?.active > 0 {
            return Err(Error::new(
                ErrorCode::InvalidState,
                "the queue has active jobs; stop its workers first, or obliterate with force",
            ));
        }
        self.pause().await?;
        // The failures noted for batched jobs are not recorded: the notes go with the queue's
        // keys below (its own batches go too, and a batch elsewhere keeps such a job pending, as
        // it did before notes existed: docs/site/concepts/batches.md).
        let mut total = 0;
        for state in JobState::ALL {
            loop {
                let ids = self.list_ids(state, 0, 1_000).await?;
                if ids.is_empty() {
                    break;
                }
                let (n, _) = self.remove_many_noting(&ids, "force", 0).await?;
                total += n;
                if n == 0 {
                    break;
                }
            }
        }
        // The batches it created (their keys, listed in its `batches` family: core/src/batch/).
        crate::batch::delete_all(self).await?;
        // Every queue-wide key (the job containers are empty by now): the families are listed
        // once, in keyspace/family.rs, so a new one cannot be forgotten here.
        let mut conn = self.store.conn();
        for family in crate::keyspace::Family::ALL {
            let _: i64 = redis::cmd("DEL")
                .arg(self.name.key(family))
                .query_async(&mut conn)
                .await?;
        }
        self.unregister().await?;
        Ok(total)
    }
}
