//! An operator's moves on one queue: pause and resume, progress and logs, retry, promote, change
//! priority, cancel (reads are `reads.rs`, removals `cleanup.rs`).

use super::*;
use crate::error::{Error, ErrorCode, Result};
use crate::job::JobState;
use crate::job_id::JobId;
use crate::keyspace::JobPart;
use crate::options::JobOptions;
use crate::outcome::Moved;
use crate::script;
use serde_json::Value;

impl Queue {
    /// Stops handing out jobs (adds still land, in paused).
    pub async fn pause(&self) -> Result<()> {
        if let Some(p) = &self.spread_now().await? {
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
        if let Some(p) = &self.spread_now().await? {
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
        if let Some(p) = &self.spread() {
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

    /// Records a job's progress (any JSON) and announces it on the events stream.
    pub async fn update_progress(&self, id: JobId, progress: &Value) -> Result<()> {
        if let Some(p) = &self.spread() {
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
        if let Some(p) = &self.spread() {
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
        if let Some(p) = &self.spread() {
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
        if let Some(p) = &self.spread() {
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
        if let Some(p) = &self.spread_now().await? {
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
        if let Some(p) = &self.spread() {
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
        if let Some(p) = &self.spread() {
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
        if let Some(p) = &self.spread() {
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
