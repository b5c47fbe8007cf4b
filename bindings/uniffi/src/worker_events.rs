//! A worker's events (`WorkerHandle.events()`; Kotlin: `WorkerHandle.eventsFlow()`, a `Flow`,
//! in `dev/emq/WorkerEvents.kt`): what happened to the jobs this worker ran — completed, failed
//! (also an attempt that will be retried), progress — plus the queue's stalled jobs and the
//! subscription's own errors.
//!
//! Built from what the core offers: the queue's events stream (`emq::events`), read from the
//! moment of the subscription, and the ids of the jobs this worker's handler started
//! ([`RunLog`], fed by [`crate::handler::ForeignHandler`]). An event is this worker's when it
//! names a job the handler started; `stalled` is reported for every job of the queue (a stalled
//! job's worker is gone; any live worker's sweep put it back). A failed read (a lost connection)
//! comes out as an `Error` event and the subscription keeps trying, with a pause that grows to
//! 1 s.

use crate::error::EmqException;
use crate::runtime::on_runtime;
use emq::JobId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// At most this many started-but-not-yet-seen runs are remembered per worker; past it, new runs
/// are not tracked (their events are not reported) until events are read.
pub(crate) const RUN_LOG_CAP: usize = 100_000;

/// Runs the handler started, while someone listens: job id → runs not yet matched by an event.
#[derive(Default)]
pub(crate) struct RunLog {
    inner: Mutex<RunLogInner>,
}

#[derive(Default)]
struct RunLogInner {
    listeners: usize,
    runs: HashMap<JobId, u32>,
}

impl RunLog {
    /// The handler started a run of `id`.
    pub(crate) fn started(&self, id: JobId) {
        let mut g = self.inner.lock().expect("run log");
        if g.listeners == 0 || (g.runs.len() >= RUN_LOG_CAP && !g.runs.contains_key(&id)) {
            return;
        }
        *g.runs.entry(id).or_insert(0) += 1;
    }

    fn is_ours(&self, id: &JobId) -> bool {
        self.inner.lock().expect("run log").runs.contains_key(id)
    }

    /// A run of `id` ended (completed, failed or retrying).
    fn ended(&self, id: &JobId) -> bool {
        let mut g = self.inner.lock().expect("run log");
        match g.runs.get_mut(id) {
            Some(n) if *n > 1 => {
                *n -= 1;
                true
            }
            Some(_) => {
                g.runs.remove(id);
                true
            }
            None => false,
        }
    }

    fn listen(&self) {
        self.inner.lock().expect("run log").listeners += 1;
    }

    fn unlisten(&self) {
        let mut g = self.inner.lock().expect("run log");
        g.listeners = g.listeners.saturating_sub(1);
        if g.listeners == 0 {
            g.runs.clear();
        }
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
    fn new(kind: WorkerEventKind, e: &emq::events::Event) -> WorkerEvent {
        WorkerEvent {
            kind,
            job_id: e.job_id.map(|id| id.to_string()),
            result_json: None,
            progress_json: None,
            failure_code: None,
            failure_message: None,
            will_retry: false,
            attempts_made: e.fields.get("atts").and_then(|a| a.parse().ok()),
            stream_id: e.stream_id.clone(),
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

/// Maps one queue event to this worker's event, if it is one.
fn translate(log: &RunLog, e: &emq::events::Event) -> Option<WorkerEvent> {
    let id = e.job_id?;
    let field = |k: &str| e.fields.get(k).cloned();
    match e.kind.as_str() {
        "completed" if log.ended(&id) => Some(WorkerEvent {
            result_json: field("result"),
            ..WorkerEvent::new(WorkerEventKind::Completed, e)
        }),
        kind @ ("failed" | "retrying") if log.ended(&id) => Some(WorkerEvent {
            failure_code: field("code"),
            failure_message: field("message"),
            will_retry: kind == "retrying",
            ..WorkerEvent::new(WorkerEventKind::Failed, e)
        }),
        "progress" if log.is_ours(&id) => Some(WorkerEvent {
            progress_json: field("progress"),
            ..WorkerEvent::new(WorkerEventKind::Progress, e)
        }),
        "stalled" => Some(WorkerEvent::new(WorkerEventKind::Stalled, e)),
        _ => None,
    }
}

/// A subscription to one worker's events; `close()` (Kotlin: `shutdown()`) ends it, and a read in
/// progress returns `[]` at once.
#[derive(uniffi::Object)]
pub struct WorkerEvents {
    log: Arc<RunLog>,
    stream: Arc<tokio::sync::Mutex<(emq::events::EventStream, u32)>>,
    closed: tokio::sync::watch::Sender<bool>,
}

impl WorkerEvents {
    pub(crate) async fn subscribe(
        queue: emq::Queue,
        log: Arc<RunLog>,
    ) -> Result<WorkerEvents, EmqException> {
        // Listening first: a run that starts while the stream position is taken is tracked.
        log.listen();
        let stream = match on_runtime(async move { queue.events(None).await }).await {
            Ok(s) => s,
            Err(e) => {
                log.unlisten();
                return Err(e);
            }
        };
        Ok(WorkerEvents {
            log,
            stream: Arc::new(tokio::sync::Mutex::new((stream, 0))),
            closed: tokio::sync::watch::channel(false).0,
        })
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
        let stream = self.stream.clone();
        let log = self.log.clone();
        let mut closed = self.closed.subscribe();
        on_runtime(async move {
            if *closed.borrow() {
                return Ok(Vec::new());
            }
            let mut guard = tokio::select! {
                s = stream.lock() => s,
                _ = closed.wait_for(|c| *c) => return Ok(Vec::new()),
            };
            let (stream, failures) = &mut *guard;
            let read = tokio::select! {
                r = stream.next_batch(wait, count) => r,
                _ = closed.wait_for(|c| *c) => return Ok(Vec::new()),
            };
            match read {
                Ok(events) => {
                    *failures = 0;
                    Ok(events.iter().filter_map(|e| translate(&log, e)).collect())
                }
                Err(e) => {
                    *failures = (*failures + 1).min(10);
                    let pause = Duration::from_millis((100 * *failures as u64).min(1000));
                    tokio::select! {
                        _ = tokio::time::sleep(pause) => {}
                        _ = closed.wait_for(|c| *c) => return Ok(Vec::new()),
                    }
                    Ok(vec![WorkerEvent::error(&e)])
                }
            }
        })
        .await
    }

    /// Ends the subscription (a read in progress returns `[]`). Kotlin names it `shutdown()`.
    pub fn close(&self) {
        if !self.closed.send_replace(true) {
            self.log.unlisten();
        }
    }
}

impl Drop for WorkerEvents {
    fn drop(&mut self) {
        if !*self.closed.borrow() {
            self.log.unlisten();
        }
    }
}
