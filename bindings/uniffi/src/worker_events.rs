//! A worker's events (`WorkerHandle.events()`; Kotlin: `WorkerHandle.eventsFlow()` and
//! `workerEvents()`, `Flow`s, in `dev/emq/WorkerEvents.kt`): what the worker itself reports through
//! the core's hook ([`emq::worker::WorkerBuilder::on_event`], the same hook the Python and Node bindings
//! use) — the recorded outcome of each of its runs (completed, failed, also an attempt that will
//! be retried), progress its handlers reported, the stalled jobs its own sweep recovered, and its
//! own faults (a lost connection, a failed renewal), after which it keeps trying.
//!
//! The hook runs on the worker's tasks and must return quickly: it translates the event and
//! queues it for each subscription ([`Hub`]); nothing is kept while nobody subscribed. At most
//! [`CAP`] events wait per subscription, the oldest dropped beyond. Events are no longer read from
//! the queue's events stream, so `streamId` is always empty.

use crate::error::EmqException;
use emq::WorkerEventHook;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

/// Most events that wait per subscription; past it the oldest are dropped.
pub(crate) const CAP: usize = 10_000;

/// A worker's subscriptions, fed by the core's hook.
#[derive(Default)]
pub(crate) struct Hub {
    subs: Mutex<Vec<Arc<Sub>>>,
}

/// One subscription's queue.
#[derive(Default)]
struct Sub {
    inner: Mutex<SubInner>,
    notify: Notify,
}

#[derive(Default)]
struct SubInner {
    events: VecDeque<WorkerEvent>,
    closed: bool,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Hub {
    /// The hook the core calls with each of the worker's events.
    pub(crate) fn hook(self: &Arc<Hub>) -> WorkerEventHook {
        let me = self.clone();
        Arc::new(move |e: emq::WorkerEvent| me.push(&e))
    }

    fn push(&self, e: &emq::WorkerEvent) {
        let subs = lock(&self.subs).clone();
        if subs.is_empty() {
            return;
        }
        let event = translate(e);
        for s in subs {
            {
                let mut inner = lock(&s.inner);
                if inner.closed {
                    continue;
                }
                if inner.events.len() >= CAP {
                    inner.events.pop_front();
                }
                inner.events.push_back(event.clone());
            }
            s.notify.notify_waiters();
        }
    }

    fn remove(&self, sub: &Arc<Sub>) {
        lock(&self.subs).retain(|s| !Arc::ptr_eq(s, sub));
    }
}

/// What a [`WorkerEvent`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Enum)]
pub enum WorkerEventKind {
    /// A job this worker ran completed (`resultJson`).
    Completed,
    /// A run of a job this worker ran failed (`failureCode`, `failureMessage`); `willRetry` says
    /// whether another attempt follows.
    Failed,
    /// A job this worker runs reported progress (`progressJson`).
    Progress,
    /// A job of the queue had stalled (its lease expired) and was put back, or failed.
    Stalled,
    /// The subscription could not read the events (`failureCode`, `failureMessage`); it keeps
    /// trying.
    Error,
}

/// One event of a worker.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct WorkerEvent {
    pub kind: WorkerEventKind,
    /// The job, for every kind but `Error`.
    pub job_id: Option<String>,
    /// `Completed`: the result as JSON text (when the event carries it; results are capped in
    /// size in events).
    pub result_json: Option<String>,
    /// `Progress`: the progress as JSON text.
    pub progress_json: Option<String>,
    /// `Failed`: the failure's code (`handler_failed`, `timeout`, `cancelled`, …); `Error`: the
    /// error's code.
    pub failure_code: Option<String>,
    /// `Failed`, `Error`: the message.
    pub failure_message: Option<String>,
    /// `Failed`: true when the job will be retried.
    pub will_retry: bool,
    /// `Failed`, `Stalled`: attempts made so far, when the event says.
    pub attempts_made: Option<u32>,
    /// The stream entry id (empty for `Error`).
    pub stream_id: String,
}

impl WorkerEvent {
    fn new(kind: WorkerEventKind, job_id: String) -> WorkerEvent {
        WorkerEvent {
            kind,
            job_id: Some(job_id),
            result_json: None,
            progress_json: None,
            failure_code: None,
            failure_message: None,
            will_retry: false,
            attempts_made: None,
            stream_id: String::new(),
        }
    }

    fn error(e: &emq::Error) -> WorkerEvent {
        WorkerEvent {
            kind: WorkerEventKind::Error,
            job_id: None,
            result_json: None,
            progress_json: None,
            failure_code: Some(e.code().as_str().to_string()),
            failure_message: Some(e.message().to_string()),
            will_retry: false,
            attempts_made: None,
            stream_id: String::new(),
        }
    }
}

/// The core's event as this binding's record.
fn translate(e: &emq::WorkerEvent) -> WorkerEvent {
    match e {
        emq::WorkerEvent::Completed { job, result } => WorkerEvent {
            result_json: Some(result.to_string()),
            ..WorkerEvent::new(WorkerEventKind::Completed, job.id.to_string())
        },
        emq::WorkerEvent::Failed {
            job,
            failure,
            will_retry,
        } => WorkerEvent {
            failure_code: Some(failure.code.clone()),
            failure_message: Some(failure.message.clone()),
            will_retry: *will_retry,
            // The job as its run saw it: this run is one more attempt.
            attempts_made: Some(job.attempts_made.saturating_add(1)),
            ..WorkerEvent::new(WorkerEventKind::Failed, job.id.to_string())
        },
        emq::WorkerEvent::Progress { job, value } => WorkerEvent {
            progress_json: Some(value.to_string()),
            ..WorkerEvent::new(WorkerEventKind::Progress, job.id.to_string())
        },
        emq::WorkerEvent::Stalled { job_id, .. } => {
            WorkerEvent::new(WorkerEventKind::Stalled, job_id.to_string())
        }
        emq::WorkerEvent::Error { error } => WorkerEvent::error(error),
    }
}

/// A subscription to one worker's events; `close()` (Kotlin: `shutdown()`) ends it, and a read in
/// progress returns `[]` at once.
#[derive(uniffi::Object)]
pub struct WorkerEvents {
    hub: Arc<Hub>,
    sub: Arc<Sub>,
}

impl WorkerEvents {
    /// Subscribes to `hub` from now on.
    pub(crate) fn subscribe(hub: Arc<Hub>) -> WorkerEvents {
        let sub = Arc::new(Sub::default());
        lock(&hub.subs).push(sub.clone());
        WorkerEvents { hub, sub }
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl WorkerEvents {
    /// The next events (at most `count` queue events are read per call), waiting up to `wait_ms`
    /// for the first; empty when none came, or once closed. A failed read returns one `Error`
    /// event (after a pause growing to 1 s over repeated failures).
    #[uniffi::method(default(wait_ms = 1000.0, count = 100))]
    pub async fn next(&self, wait_ms: f64, count: u32) -> Result<Vec<WorkerEvent>, EmqException> {
        let wait = Duration::from_millis(emq::options::millis("wait_ms", wait_ms)?.max(1));
        let count = (count as usize).max(1);
        let deadline = tokio::time::Instant::now() + wait;
        let sub = self.sub.clone();
        loop {
            // Created before the check, so a push or close after it wakes this wait.
            let notified = sub.notify.notified();
            {
                let mut inner = lock(&sub.inner);
                if inner.closed {
                    return Ok(Vec::new());
                }
                if !inner.events.is_empty() {
                    let n = inner.events.len().min(count);
                    return Ok(inner.events.drain(..n).collect());
                }
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return Ok(Vec::new());
            }
        }
    }

    /// Ends the subscription (a read in progress returns `[]`). Kotlin names it `shutdown()`.
    pub fn close(&self) {
        {
            let mut inner = lock(&self.sub.inner);
            inner.closed = true;
            inner.events.clear();
        }
        self.sub.notify.notify_waiters();
        self.hub.remove(&self.sub);
    }
}

impl Drop for WorkerEvents {
    fn drop(&mut self) {
        self.hub.remove(&self.sub);
    }
}
