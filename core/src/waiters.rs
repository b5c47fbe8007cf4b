//! [`Queue::wait`]: a producer waits for a job's result.
//!
//! Every wait of one queue handle (and its clones) shares one follower: a task that reads the
//! queue's events stream (XREAD BLOCK on one dedicated connection, see [`EventStream`]) and hands
//! each job's `completed`, `failed` and `removed` events to the waits registered for that job.
//! So a thousand concurrent waits cost one connection and one stream read, not a thousand, and a
//! wait after the first costs no connection set-up. The follower starts with the first wait and
//! ends after [`IDLE`] with none.
//!
//! **No lost wake-up.** A wait registers first, then reads the job's record; the follower's
//! stream position is pinned before the first registration is served. An outcome written before
//! the record read is in the record; one written after it is an event the follower reads after
//! the registration, so it is delivered. Each wait also re-reads the record every second (the
//! stream is capped, and a follower can lose its connection), so a wait never depends on one
//! event alone.

use crate::error::{Error, ErrorCode, Result};
use crate::events::{not_found, Event, EventStream};
use crate::job::{Failure, JobState};
use crate::job_id::JobId;
use crate::queue::Queue;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::mpsc;

/// How long the follower keeps reading with no wait registered before it ends.
pub const IDLE: Duration = Duration::from_secs(1);

/// Most events one follower read takes.
const BATCH: usize = 1_000;

/// The waits of one queue handle, by job.
#[derive(Default)]
pub(crate) struct Waiters {
    state: Mutex<State>,
    /// Held while a follower is being started, so two waits do not start two.
    starting: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct State {
    by_job: HashMap<JobId, Vec<mpsc::UnboundedSender<Event>>>,
    following: bool,
}

impl Waiters {
    /// Registers a wait for `id` and makes sure a follower is reading (its position pinned
    /// before this returns).
    async fn register(&self, queue: &Queue, id: JobId) -> Result<mpsc::UnboundedReceiver<Event>> {
        let (tx, rx) = mpsc::unbounded_channel();
        {
            let mut st = self.state.lock().expect("waiters");
            st.by_job.entry(id).or_default().push(tx);
            if st.following {
                return Ok(rx);
            }
        }
        let _starting = self.starting.lock().await;
        if self.state.lock().expect("waiters").following {
            return Ok(rx);
        }
        let stream =
            EventStream::new(queue.store().clone(), queue.keys().events.clone(), None).await?;
        self.state.lock().expect("waiters").following = true;
        tokio::spawn(follow(queue.clone(), stream));
        Ok(rx)
    }

    /// Hands the events to their waits; drops the waits that ended. True when none is left.
    fn dispatch(&self, events: Vec<Event>) -> bool {
        let mut st = self.state.lock().expect("waiters");
        for ev in events {
            let Some(id) = ev.job_id else { continue };
            if !matches!(ev.kind.as_str(), "completed" | "failed" | "removed") {
                continue;
            }
            if let Some(txs) = st.by_job.get_mut(&id) {
                txs.retain(|tx| tx.send(ev.clone()).is_ok());
            }
        }
        st.by_job.retain(|_, txs| {
            txs.retain(|tx| !tx.is_closed());
            !txs.is_empty()
        });
        st.by_job.is_empty()
    }

    /// Ends following when no wait is registered (under the lock, so a registration either sees
    /// the follower running or starts a new one). Returns true when it ended.
    fn stop_if_idle(&self) -> bool {
        let mut st = self.state.lock().expect("waiters");
        if st.by_job.is_empty() {
            st.following = false;
            true
        } else {
            false
        }
    }

    /// Drops the ended waits of `id` (a wait that returned without an event for it; a wait whose
    /// future was dropped is dropped at the next dispatch).
    fn forget(&self, id: JobId) {
        let mut st = self.state.lock().expect("waiters");
        if let Some(txs) = st.by_job.get_mut(&id) {
            txs.retain(|tx| !tx.is_closed());
            if txs.is_empty() {
                st.by_job.remove(&id);
            }
        }
    }

    /// The follower failed: every wait is woken (its channel closes) and re-registers.
    fn fail_all(&self) {
        let mut st = self.state.lock().expect("waiters");
        st.by_job.clear();
        st.following = false;
    }
}

async fn follow(queue: Queue, mut stream: EventStream) {
    let waiters = queue.waiters.clone();
    let mut idle_since: Option<std::time::Instant> = None;
    loop {
        match stream.next_batch(IDLE / 2, BATCH).await {
            Ok(events) => {
                if waiters.dispatch(events) {
                    let since = *idle_since.get_or_insert_with(std::time::Instant::now);
                    if since.elapsed() >= IDLE && waiters.stop_if_idle() {
                        return;
                    }
                } else {
                    idle_since = None;
                }
            }
            Err(e) => {
                tracing::debug!(queue = %queue.name(), error = %e, "wait follower: stream read failed");
                waiters.fail_all();
                return;
            }
        }
    }
}

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
        let rx = self.waiters.register(self, id).await?;
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
                        rx = self.waiters.register(self, id).await?;
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
                    rx = self.waiters.register(self, id).await?;
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
}

/// For tests: how many jobs have a wait registered on this handle, and whether it follows.
#[doc(hidden)]
pub fn registered(queue: &Queue) -> (usize, bool) {
    let st = queue.waiters.state.lock().expect("waiters");
    (st.by_job.len(), st.following)
}
