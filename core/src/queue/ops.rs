//! Reads and an operator's moves on one queue: get, counts, list, pause and resume, remove, drain,
//! clean, trim, obliterate, progress and logs, retry, promote, change priority, cancel. Work on ids
//! not known in advance selects ids first, then removes each with a script that re-checks it.

use super::*;
use crate::error::{Error, ErrorCode, Result};
use crate::job::{Counts, Job, JobState};
use crate::job_id::JobId;
use crate::keyspace::JobPart;
use crate::options::{JobOptions, Retention};
use crate::outcome::Moved;
use crate::script::{self, Invocation};
use serde_json::Value;
use std::collections::HashMap;
use std::time::Duration;

impl Queue {
    /// Reads a job by its id's text form (the one gate parses it); None when there is no such job.
    pub async fn get_str(&self, id: &str) -> Result<Option<Job>> {
        self.get(JobId::parse(id)?).await
    }

    /// Reads a job and its state.
    pub async fn get(&self, id: JobId) -> Result<Option<Job>> {
        self.read_job(id, false).await
    }

    /// [`Queue::get`]; `as_stored`: a stored JSON field that cannot be read is left null with
    /// [`Job::unreadable`] saying why, instead of failing (operator views).
    pub(crate) async fn read_job(&self, id: JobId, as_stored: bool) -> Result<Option<Job>> {
        if let Some(p) = self.spread() {
            let q = super::partitioned::owner(p, id).await?;
            return q.read_job_here(id, as_stored).await;
        }
        self.read_job_here(id, as_stored).await
    }

    /// `read_job` on this queue's own slot (a plain queue, or one partition).
    pub(super) async fn read_job_here(&self, id: JobId, as_stored: bool) -> Result<Option<Job>> {
        let flat: Vec<String> = script::JOB_STATE
            .on(&self.name, Some(id))?
            .arg(id)
            .invoke(&self.store)
            .await?;
        let Some((state, rest)) = flat.split_first() else {
            return Ok(None);
        };
        let map: HashMap<String, String> = rest
            .chunks(2)
            .filter_map(|p| Some((p.first()?.clone(), p.get(1)?.clone())))
            .collect();
        Job::from_record(id, JobState::parse(state).ok(), map)
            .readable_unless(as_stored)
            .map(Some)
    }

    /// Counts jobs per state.
    pub async fn counts(&self) -> Result<Counts> {
        if let Some(p) = self.spread() {
            return Ok(super::partitioned::add_counts(
                super::partitioned::each(p, |m| Box::pin(m.counts_here())).await?,
            ));
        }
        self.counts_here().await
    }

    /// [`Queue::counts`] on this queue's own slot (a plain queue, or one partition).
    pub(super) async fn counts_here(&self) -> Result<Counts> {
        let k = &self.keys;
        let mut pipe = redis::pipe();
        pipe.cmd("LLEN").arg(&k.wait);
        pipe.cmd("LLEN").arg(&k.paused);
        pipe.cmd("ZCARD").arg(&k.active);
        pipe.cmd("ZCARD").arg(&k.delayed);
        pipe.cmd("ZCARD").arg(&k.prioritized);
        pipe.cmd("ZCARD").arg(&k.completed);
        pipe.cmd("ZCARD").arg(&k.failed);
        pipe.cmd("SCARD").arg(&k.stalled);
        pipe.cmd("ZCARD").arg(&k.waiting_children);
        pipe.cmd("ZCARD").arg(&k.group_ready);
        let v: Vec<u64> = pipe.query_async(&mut self.store.conn()).await?;
        Ok(Counts {
            // Ready jobs in wait and, for grouped jobs, in their groups.
            waiting: v[0] + v[9],
            paused: v[1],
            active: v[2],
            delayed: v[3],
            prioritized: v[4],
            completed: v[5],
            failed: v[6],
            stalled: v[7],
            waiting_children: v[8],
        })
    }

    /// Ids in one state, a page at a time: oldest first for waiting states, newest first for
    /// completed and failed.
    pub async fn list_ids(&self, state: JobState, offset: u64, limit: u64) -> Result<Vec<JobId>> {
        if let Some(p) = self.spread() {
            return (super::partitioned::list_ids(p, state, offset, limit)).await;
        }
        self.list_ids_here(state, offset, limit).await
    }

    /// [`Queue::list_ids`] on this queue's own slot (a plain queue, or one partition).
    pub(super) async fn list_ids_here(
        &self,
        state: JobState,
        offset: u64,
        limit: u64,
    ) -> Result<Vec<JobId>> {
        if limit == 0 {
            return Ok(vec![]);
        }
        let k = &self.keys;
        let (start, stop) = (offset as i64, (offset + limit) as i64 - 1);
        let mut conn = self.store.conn();
        let raw: Vec<String> = match state {
            JobState::Waiting | JobState::Paused => {
                let key = if state == JobState::Waiting {
                    &k.wait
                } else {
                    &k.paused
                };
                // Lists hold the oldest at the right.
                let mut v: Vec<String> = redis::cmd("LRANGE")
                    .arg(key)
                    .arg(-stop - 1)
                    .arg(-start - 1)
                    .query_async(&mut conn)
                    .await?;
                v.reverse();
                if state == JobState::Waiting && (v.len() as u64) < limit {
                    // Then the grouped ready jobs, group by group in name order.
                    let listed: u64 = redis::cmd("LLEN").arg(key).query_async(&mut conn).await?;
                    let from = offset.saturating_sub(listed);
                    let want = limit - v.len() as u64;
                    let members: Vec<Vec<u8>> = redis::cmd("ZRANGE")
                        .arg(&k.group_ready)
                        .arg(from)
                        .arg(from + want - 1)
                        .query_async(&mut conn)
                        .await?;
                    v.extend(members.iter().filter_map(|m| crate::groups::member_id(m)));
                }
                v
            }
            JobState::Stalled => {
                // A set (small: jobs between a lost lease and the next sweep), read whole.
                let all: Vec<String> = redis::cmd("SMEMBERS")
                    .arg(&k.stalled)
                    .query_async(&mut conn)
                    .await?;
                all.into_iter()
                    .skip(offset as usize)
                    .take(limit as usize)
                    .collect()
            }
            JobState::Completed | JobState::Failed => {
                let key = if state == JobState::Completed {
                    &k.completed
                } else {
                    &k.failed
                };
                redis::cmd("ZRANGE")
                    .arg(key)
                    .arg(start)
                    .arg(stop)
                    .arg("REV")
                    .query_async(&mut conn)
                    .await?
            }
            JobState::Active
            | JobState::Delayed
            | JobState::Prioritized
            | JobState::WaitingChildren => {
                let key = match state {
                    JobState::Active => &k.active,
                    JobState::Delayed => &k.delayed,
                    JobState::Prioritized => &k.prioritized,
                    _ => &k.waiting_children,
                };
                redis::cmd("ZRANGE")
                    .arg(key)
                    .arg(start)
                    .arg(stop)
                    .query_async(&mut conn)
                    .await?
            }
        };
        raw.iter().map(|s| JobId::parse(s)).collect()
    }

    /// Jobs in one state, a page at a time (see [`Queue::list_ids`]). Each carries the state it
    /// was listed in, its record read in one pipelined round trip with the others and its state
    /// not looked up again: a job that moved in between shows the state it was listed in (its own
    /// read, [`Queue::get`], says where it is now), one removed in between is left out.
    pub async fn list(&self, state: JobState, offset: u64, limit: u64) -> Result<Vec<Job>> {
        if let Some(p) = self.spread() {
            return (super::partitioned::list(p, state, offset, limit)).await;
        }
        self.list_here(state, offset, limit).await
    }

    /// [`Queue::list`] on this queue's own slot (a plain queue, or one partition).
    pub(super) async fn list_here(
        &self,
        state: JobState,
        offset: u64,
        limit: u64,
    ) -> Result<Vec<Job>> {
        let ids = self.list_ids(state, offset, limit).await?;
        self.jobs_listed_in(state, &ids, false).await
    }

    /// Stops handing out jobs (adds still land, in paused).
    pub async fn pause(&self) -> Result<()> {
        if let Some(p) = self.spread() {
            super::partitioned::each(p, |m| Box::pin(m.pause_here())).await?;
            return Ok(());
        }
        self.pause_here().await
    }

    /// [`Queue::pause`] on this queue's own slot (a plain queue, or one partition).
    pub(super) async fn pause_here(&self) -> Result<()> {
        let _: i64 = script::PAUSE
            .on(&self.name, None)?
            .arg(self.max_events)
            .invoke(&self.store)
            .await?;
        Ok(())
    }

    /// Hands out jobs again.
    pub async fn resume(&self) -> Result<()> {
        if let Some(p) = self.spread() {
            super::partitioned::each(p, |m| Box::pin(m.resume_here())).await?;
            return Ok(());
        }
        self.resume_here().await
    }

    /// [`Queue::resume`] on this queue's own slot (a plain queue, or one partition).
    pub(super) async fn resume_here(&self) -> Result<()> {
        let _: i64 = script::RESUME
            .on(&self.name, None)?
            .arg(self.max_events)
            .invoke(&self.store)
            .await?;
        Ok(())
    }

    /// True while paused.
    pub async fn is_paused(&self) -> Result<bool> {
        if let Some(p) = self.spread() {
            let all = super::partitioned::each(p, |m| Box::pin(m.is_paused_here())).await?;
            return Ok(all.into_iter().all(|x| x));
        }
        self.is_paused_here().await
    }

    /// [`Queue::is_paused`] on this queue's own slot (a plain queue, or one partition).
    pub(super) async fn is_paused_here(&self) -> Result<bool> {
        let v: Option<String> = redis::cmd("HGET")
            .arg(&self.keys.meta)
            .arg("paused")
            .query_async(&mut self.store.conn())
            .await?;
        Ok(v.as_deref() == Some("1"))
    }

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
        if let Some(p) = self.spread() {
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
        self.outcome(id, n).await
    }

    /// A move script's reply as a [`Moved`]: 1 moved; otherwise the job's state, read next.
    async fn outcome(&self, id: JobId, reply: i64) -> Result<Moved> {
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

    async fn remove_many(&self, ids: &[JobId], allowed: &str, older_ms: u64) -> Result<u64> {
        let mut removed = 0;
        for chunk in ids.chunks(500) {
            let invs: Vec<Invocation> = chunk
                .iter()
                .map(|id| self.remove_invocation(*id, allowed, older_ms))
                .collect::<Result<_>>()?;
            let replies: Vec<i64> = script::pipeline(&self.store, &invs).await?;
            removed += replies.iter().filter(|r| **r == 1).count() as u64;
        }
        Ok(removed)
    }

    /// Removes every waiting, paused and prioritized job, and the delayed ones too when asked.
    pub async fn drain(&self, delayed: bool) -> Result<u64> {
        if let Some(p) = self.spread() {
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
        if let Some(p) = self.spread() {
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
        if let Some(p) = self.spread() {
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
        if let Some(p) = self.spread() {
            let n = super::partitioned::sum(p, |m| Box::pin(m.obliterate_here(force))).await?;
            crate::partitions::forget_count(self).await?;
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
        let mut total = 0;
        for state in JobState::ALL {
            loop {
                let ids = self.list_ids(state, 0, 1_000).await?;
                if ids.is_empty() {
                    break;
                }
                let n = self.remove_many(&ids, "force", 0).await?;
                total += n;
                if n == 0 {
                    break;
                }
            }
        }
        // The batches it created (their keys, listed in its `batches` family: core/src/batch.rs).
        crate::batch::delete_all(self).await?;
        // Every queue-wide key (the job containers are empty by now): the families are listed
        // once, in keyspace.rs, so a new one cannot be forgotten here.
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

    /// Records a job's progress (any JSON) and announces it on the events stream.
    pub async fn update_progress(&self, id: JobId, progress: &Value) -> Result<()> {
        if let Some(p) = self.spread() {
            let q = super::partitioned::owner(p, id).await?;
            return q.update_progress_here(id, progress).await;
        }
        self.update_progress_here(id, progress).await
    }

    /// [`Queue::update_progress`] on this queue's own slot (a plain queue, or one partition).
    pub(super) async fn update_progress_here(&self, id: JobId, progress: &Value) -> Result<()> {
        let n: i64 = script::PROGRESS
            .on(&self.name, Some(id))?
            .arg(id)
            .arg(serde_json::to_string(progress)?)
            .arg(self.max_events)
            .invoke(&self.store)
            .await?;
        not_found_if_zero(n, id)
    }

    /// Appends a line to a job's log; returns the number of lines kept.
    pub async fn log(&self, id: JobId, line: &str) -> Result<u64> {
        if let Some(p) = self.spread() {
            let q = super::partitioned::owner(p, id).await?;
            return q.log_here(id, line).await;
        }
        self.log_here(id, line).await
    }

    /// [`Queue::log`] on this queue's own slot (a plain queue, or one partition).
    pub(super) async fn log_here(&self, id: JobId, line: &str) -> Result<u64> {
        let n: i64 = script::LOG
            .on(&self.name, Some(id))?
            .arg(line)
            .arg(MAX_LOG_LINES)
            .invoke(&self.store)
            .await?;
        not_found_if_zero(n, id)?;
        Ok(n as u64)
    }

    /// A job's log lines, oldest first.
    pub async fn logs(&self, id: JobId) -> Result<Vec<String>> {
        if let Some(p) = self.spread() {
            let q = super::partitioned::owner(p, id).await?;
            return q.logs_here(id).await;
        }
        self.logs_here(id).await
    }

    /// [`Queue::logs`] on this queue's own slot (a plain queue, or one partition).
    pub(super) async fn logs_here(&self, id: JobId) -> Result<Vec<String>> {
        Ok(redis::cmd("LRANGE")
            .arg(self.name.job_key(id, JobPart::Logs))
            .arg(0)
            .arg(-1)
            .query_async(&mut self.store.conn())
            .await?)
    }

    /// Sends a failed job back to wait with its attempts reset; [`Moved::WrongState`] when it is
    /// not failed.
    pub async fn retry(&self, id: JobId) -> Result<Moved> {
        if let Some(p) = self.spread() {
            let q = super::partitioned::owner(p, id).await?;
            return q.retry_here(id).await;
        }
        self.retry_here(id).await
    }

    /// [`Queue::retry`] on this queue's own slot (a plain queue, or one partition).
    pub(super) async fn retry_here(&self, id: JobId) -> Result<Moved> {
        let n: i64 = script::RETRY_JOB
            .on(&self.name, Some(id))?
            .arg(id)
            .arg(self.max_events)
            .invoke(&self.store)
            .await?;
        self.outcome(id, n).await
    }

    /// Retries every failed job; returns how many.
    pub async fn retry_failed(&self) -> Result<u64> {
        if let Some(p) = self.spread() {
            return super::partitioned::sum(p, |m| Box::pin(m.retry_failed_here())).await;
        }
        self.retry_failed_here().await
    }

    /// [`Queue::retry_failed`] on this queue's own slot (a plain queue, or one partition).
    pub(super) async fn retry_failed_here(&self) -> Result<u64> {
        let mut total = 0;
        loop {
            let ids = self.list_ids(JobState::Failed, 0, 500).await?;
            if ids.is_empty() {
                return Ok(total);
            }
            let mut n = 0;
            for id in ids {
                n += self.retry(id).await?.is_moved() as u64;
            }
            total += n;
            if n == 0 {
                return Ok(total);
            }
        }
    }

    /// Runs a delayed job now; [`Moved::WrongState`] when it is not delayed.
    pub async fn promote(&self, id: JobId) -> Result<Moved> {
        if let Some(p) = self.spread() {
            let q = super::partitioned::owner(p, id).await?;
            return q.promote_here(id).await;
        }
        self.promote_here(id).await
    }

    /// [`Queue::promote`] on this queue's own slot (a plain queue, or one partition).
    pub(super) async fn promote_here(&self, id: JobId) -> Result<Moved> {
        let n: i64 = script::PROMOTE_JOB
            .on(&self.name, None)?
            .arg(id)
            .arg(self.max_events)
            .invoke(&self.store)
            .await?;
        self.outcome(id, n).await
    }

    /// Gives a job that has not finished a new priority (0: none; at most
    /// [`MAX_PRIORITY`](crate::options::MAX_PRIORITY)). A ready job moves at once (in prioritized,
    /// among the jobs of its new priority by when it was added); a delayed one takes it when due;
    /// an active one when it is next ready (a retry, say). [`Moved::NotFound`] when there is no
    /// such job, [`Moved::WrongState`] when it has finished.
    pub async fn change_priority(&self, id: JobId, priority: u32) -> Result<Moved> {
        if let Some(p) = self.spread() {
            let q = super::partitioned::owner(p, id).await?;
            return q.change_priority_here(id, priority).await;
        }
        self.change_priority_here(id, priority).await
    }

    /// [`Queue::change_priority`] on this queue's own slot (a plain queue, or one partition).
    pub(super) async fn change_priority_here(&self, id: JobId, priority: u32) -> Result<Moved> {
        JobOptions {
            priority,
            ..JobOptions::default()
        }
        .validate()?;
        let n: i64 = script::CHANGE_PRIORITY
            .on(&self.name, Some(id))?
            .arg(id)
            .arg(priority)
            .arg(self.max_events)
            .invoke(&self.store)
            .await?;
        self.outcome(id, n).await
    }

    /// Cancels a job. One that has not run yet (waiting, paused, prioritized, delayed, stalled, a
    /// flow parent waiting for children) does not run: it moves to failed at once, its failure
    /// code `cancelled` and message "the job was cancelled: <reason>", without a retry. For a
    /// running job the request goes on the queue's `cancels` stream: the worker holding it tells
    /// its handler at once ([`JobContext::cancelled`](crate::JobContext::cancelled) resolves with
    /// [`Interrupt::Cancelled`](crate::Interrupt::Cancelled); a binding cancels its task), then
    /// fails it the same way. A job that finished is left as it is.
    pub async fn cancel(&self, id: JobId, reason: &str) -> Result<CancelOutcome> {
        if let Some(p) = self.spread() {
            let q = super::partitioned::owner(p, id).await?;
            return q.cancel_here(id, reason).await;
        }
        self.cancel_here(id, reason).await
    }

    /// [`Queue::cancel`] on this queue's own slot (a plain queue, or one partition).
    pub(super) async fn cancel_here(&self, id: JobId, reason: &str) -> Result<CancelOutcome> {
        let r: String = script::CANCEL
            .on(&self.name, Some(id))?
            .arg(id)
            .arg(reason)
            .arg(self.max_events)
            .invoke(&self.store)
            .await?;
        Ok(match r.as_str() {
            "cancelled" => CancelOutcome::Cancelled,
            "running" => CancelOutcome::Requested,
            "finished" => CancelOutcome::Finished,
            _ => CancelOutcome::NotFound,
        })
    }
}

/// What [`Queue::cancel`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CancelOutcome {
    /// It had not run: it is failed now, cancelled.
    Cancelled,
    /// It is running: its worker is told, stops the handler and fails it, cancelled.
    Requested,
    /// It had finished (completed or failed): nothing was done.
    Finished,
    /// No such job.
    NotFound,
}

impl CancelOutcome {
    /// `cancelled`, `requested`, `finished` or `not_found`.
    pub fn as_str(self) -> &'static str {
        match self {
            CancelOutcome::Cancelled => "cancelled",
            CancelOutcome::Requested => "requested",
            CancelOutcome::Finished => "finished",
            CancelOutcome::NotFound => "not_found",
        }
    }
}

fn not_found_if_zero(n: i64, id: JobId) -> Result<()> {
    if n == 0 {
        Err(Error::new(
            ErrorCode::JobNotFound,
            format!("no job {id} in this queue"),
        ))
    } else {
        Ok(())
    }
}
