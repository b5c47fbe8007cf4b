//! [`Queue::wait`]: a producer waits for a job's result, through the handle's one follower of
//! the events stream (`waiters.rs`), reading the job itself for an outcome the stream no longer
//! holds.

use super::*;
use crate::error::{Error, ErrorCode};
use crate::events::{not_found, Event};
use crate::job::{Failure, JobState};
use std::time::Duration;
use tokio::sync::mpsc;

impl Queue {
    /// Waits up to `timeout` for a job to finish: `Ok(Ok(result))` once it completed,
    /// `Ok(Err(failure))` once it failed for good (its code — `cancelled` for a cancelled job —
    /// message and stack, from the record when it is kept, else from the event), and `Err` with
    /// the code `timeout` when it did not finish in time, `job_not_found` when there is no such
    /// job (or it was removed). Works for a job that finished before the call (see the module
    /// doc for why no outcome is missed). `Failure` converts into an [`Error`] (`handler_failed`),
    /// so `queue.wait(id, t).await??` works.
    pub async fn wait(
        &self,
        id: JobId,
        timeout: Duration,
    ) -> Result<std::result::Result<serde_json::Value, Failure>> {
        if let Some(p) = &self.spread() {
            let q = super::partitioned::owner(p, id).await?;
            return q.wait_here(id, timeout).await;
        }
        self.wait_here(id, timeout).await
    }

    /// [`Queue::wait`] on this queue's own slot (a plain queue, or one partition).
    pub(super) async fn wait_here(
        &self,
        id: JobId,
        timeout: Duration,
    ) -> Result<std::result::Result<serde_json::Value, Failure>> {
        let rx = self
            .waiters
            .register(self.store(), &self.keys().events, self.name(), id)
            .await?;
        let out = self.wait_registered(id, timeout, rx).await;
        self.waiters.forget(id);
        out
    }

    async fn wait_registered(
        &self,
        id: JobId,
        timeout: Duration,
        mut rx: mpsc::UnboundedReceiver<Event>,
    ) -> Result<std::result::Result<serde_json::Value, Failure>> {
        let until = tokio::time::Instant::now() + timeout;
        let mut check_record = true;
        loop {
            if check_record {
                check_record = false;
                // The record read races the follower: a job that finishes meanwhile is seen by
                // its event without waiting for the read's reply.
                let read = self.finished(id);
                tokio::pin!(read);
                let early = tokio::select! {
                    biased;
                    done = &mut read => match done? {
                        Some(done) => return Ok(done),
                        None => None,
                    },
                    ev = rx.recv() => Some(ev),
                };
                match early {
                    Some(Some(ev)) => {
                        if let Some(done) = self.outcome_of(id, ev).await? {
                            return Ok(done);
                        }
                    }
                    Some(None) => {
                        rx = self
                            .waiters
                            .register(self.store(), &self.keys().events, self.name(), id)
                            .await?;
                        check_record = true;
                        continue;
                    }
                    None => {}
                }
            }
            let left = until.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return Err(Error::new(
                    ErrorCode::Timeout,
                    format!("job {id} did not finish within {timeout:?}"),
                ));
            }
            let slice = left.min(Duration::from_secs(1));
            match tokio::time::timeout(slice, rx.recv()).await {
                Ok(Some(ev)) => {
                    if let Some(done) = self.outcome_of(id, ev).await? {
                        return Ok(done);
                    }
                }
                Ok(None) => {
                    // The follower ended (its connection failed): follow again, then re-read.
                    rx = self
                        .waiters
                        .register(self.store(), &self.keys().events, self.name(), id)
                        .await?;
                    check_record = true;
                }
                Err(_) => check_record = true,
            }
        }
    }

    /// The job's outcome from its record, when it finished.
    async fn finished(
        &self,
        id: JobId,
    ) -> Result<Option<std::result::Result<serde_json::Value, Failure>>> {
        match self.get(id).await? {
            None => Err(not_found(id, "")),
            Some(job) => Ok(match job.state {
                Some(JobState::Completed) => {
                    Some(Ok(job.result.unwrap_or(serde_json::Value::Null)))
                }
                Some(JobState::Failed) => Some(Err(job.failure.unwrap_or_else(|| Failure {
                    code: "handler_failed".into(),
                    message: "the job failed".into(),
                    stack: None,
                }))),
                _ => None,
            }),
        }
    }

    /// The outcome an event says, reading the record where the event does not carry it.
    async fn outcome_of(
        &self,
        id: JobId,
        ev: Event,
    ) -> Result<Option<std::result::Result<serde_json::Value, Failure>>> {
        match ev.kind.as_str() {
            "completed" => match ev.fields.get("result") {
                Some(r) => Ok(Some(Ok(serde_json::from_str(r)?))),
                None => match self.get(id).await? {
                    Some(job) if job.state == Some(JobState::Completed) => {
                        Ok(Some(Ok(job.result.unwrap_or(serde_json::Value::Null))))
                    }
                    _ => Err(not_found(id, ": it completed, but its result was not kept (remove_on_complete) and is longer than events carry")),
                },
            },
            "failed" => {
                if let Some(Some(f)) = self.get(id).await?.map(|j| j.failure) {
                    return Ok(Some(Err(f)));
                }
                Ok(Some(Err(Failure {
                    code: ev
                        .fields
                        .get("code")
                        .cloned()
                        .unwrap_or_else(|| "handler_failed".into()),
                    message: ev.fields.get("message").cloned().unwrap_or_default(),
                    stack: None,
                })))
            }
            "removed" => Err(not_found(id, ": it was removed")),
            _ => Ok(None),
        }
    }

    /// For tests: how many jobs have a wait registered on this handle, and whether it follows.
    #[doc(hidden)]
    pub fn waits_registered(&self) -> (usize, bool) {
        self.waiters.registered()
    }
}
