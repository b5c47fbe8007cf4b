//! The job handler trait the core defines and every binding implements around its own callable,
//! and the context a handler receives.

use crate::error::Result;
use crate::job::Job;
use crate::job_id::JobId;
use crate::queue::Queue;
use futures::future::BoxFuture;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::sync::watch;

/// Why a handler failed.
#[derive(Clone, Debug, PartialEq)]
pub struct HandlerError {
    /// A short code (`handler_failed` unless the handler names one).
    pub code: String,
    /// The message.
    pub message: String,
    /// A stack or traceback.
    pub stack: Option<String>,
    /// Skip the remaining attempts.
    pub unrecoverable: bool,
    /// Set by [`HandlerError::delay`]: not a failure; the job goes back to delayed for this long
    /// (due on the server's clock), its lease checked.
    pub delay: Option<std::time::Duration>,
    /// With `delay`: the run counts as an attempt (by default it does not).
    pub count_attempt: bool,
}

impl HandlerError {
    /// A failure that may be retried.
    pub fn new(message: impl Into<String>) -> HandlerError {
        HandlerError {
            code: "handler_failed".into(),
            message: message.into(),
            stack: None,
            unrecoverable: false,
            delay: None,
            count_attempt: false,
        }
    }

    /// Not a failure: put the job back to delayed for `delay` (BullMQ's `DelayedError` /
    /// `moveToDelayed`, River's snooze). It becomes due `delay` after the server receives the
    /// request (server clock); the attempt is not counted unless [`HandlerError::counting_attempt`]
    /// is set; a worker whose lease was lost cannot delay the job (`lease_lost`, as a completion).
    /// The job keeps its priority and group. The `delayed` event says when it is due. At most
    /// [`HandlerError::MAX_DELAY`]; a longer delay fails the job with `invalid_option`.
    pub fn delay(delay: std::time::Duration) -> HandlerError {
        if delay > HandlerError::MAX_DELAY {
            return HandlerError::new(format!(
                "a handler's delay must be at most {} s, got {:.3} s",
                HandlerError::MAX_DELAY.as_secs(),
                delay.as_secs_f64()
            ))
            .with_code(crate::error::ErrorCode::InvalidOption.as_str());
        }
        HandlerError {
            delay: Some(delay),
            ..HandlerError::new(format!("delayed for {} ms", delay.as_millis()))
                .with_code("delayed")
        }
    }

    /// [`HandlerError::delay`] from milliseconds as a binding receives them (a float): NaN, a
    /// negative or an infinite value fails the job with `invalid_option`, naming the bound.
    pub fn delay_millis(ms: f64) -> HandlerError {
        if !ms.is_finite() || ms < 0.0 {
            return HandlerError::new(format!(
                "a handler's delay must be between 0 and {} ms, got {ms}",
                HandlerError::MAX_DELAY.as_millis()
            ))
            .with_code(crate::error::ErrorCode::InvalidOption.as_str());
        }
        let max = HandlerError::MAX_DELAY.as_millis() as f64;
        HandlerError::delay(std::time::Duration::from_secs_f64(
            ms.min(max + 1.0) / 1000.0,
        ))
    }

    /// The longest [`HandlerError::delay`]: 365 days.
    pub const MAX_DELAY: std::time::Duration = std::time::Duration::from_secs(365 * 24 * 3600);

    /// With [`HandlerError::delay`]: count the run as an attempt (the job's `attempts_made` grows,
    /// as after a failure; the attempts limit still applies only when a run fails).
    pub fn counting_attempt(mut self, count: bool) -> HandlerError {
        self.count_attempt = count;
        self
    }

    /// A failure that skips the remaining attempts.
    pub fn unrecoverable(message: impl Into<String>) -> HandlerError {
        HandlerError {
            unrecoverable: true,
            ..HandlerError::new(message)
        }
    }

    /// The handler did not finish because its host is shutting down (an event loop cancelled its
    /// task, a runtime went away): not a failure of the job. The worker gives the job back to
    /// waiting without counting the attempt, and takes no new jobs from then on (it is going
    /// down). Code [`HandlerError::INTERRUPTED`].
    pub fn interrupted(message: impl Into<String>) -> HandlerError {
        HandlerError::new(message).with_code(HandlerError::INTERRUPTED)
    }

    /// The code of [`HandlerError::interrupted`].
    pub const INTERRUPTED: &'static str = "interrupted";

    /// Sets the code.
    pub fn with_code(mut self, code: impl Into<String>) -> HandlerError {
        self.code = code.into();
        self
    }

    /// Sets the stack.
    pub fn with_stack(mut self, stack: impl Into<String>) -> HandlerError {
        self.stack = Some(stack.into());
        self
    }
}

impl<E: std::error::Error> From<E> for HandlerError {
    fn from(e: E) -> HandlerError {
        HandlerError::new(e.to_string())
    }
}

/// What a handler returns: a JSON result, or a failure.
pub type HandlerResult = std::result::Result<Value, HandlerError>;

/// Processes jobs. Implemented by closures in Rust and by each binding around its callable.
pub trait Handler: Send + Sync + 'static {
    /// Runs one job.
    fn handle(&self, job: JobContext) -> BoxFuture<'static, HandlerResult>;

    /// How the worker stops a run it interrupts ([`Interrupt`]: a cancel, a timeout, the end of
    /// the shutdown grace period). It always tells the handler first
    /// ([`JobContext::cancelled`] resolves, [`JobContext::interrupt`] says why); then
    ///
    /// - `false` (the default, right for Rust closures): it drops the handler's future if it has
    ///   not ended [`crate::worker::INTERRUPT_DROP_AFTER`] (100 ms) later;
    /// - `true` (bindings): it waits for the future to end, which the binding guarantees happens
    ///   once the foreign handler has stopped (it cancels the handler's task / coroutine / signal
    ///   when `cancelled` resolves). A foreign handler that ignores the request keeps its job
    ///   (leased, renewed) until it returns.
    ///
    /// Either way the outcome (a timeout failure, a cancellation, a release) is recorded only after
    /// the run has stopped, so no retry of the job can overlap it.
    fn cooperative_cancel(&self) -> bool {
        false
    }
}

impl<F, Fut> Handler for F
where
    F: Fn(JobContext) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = HandlerResult> + Send + 'static,
{
    fn handle(&self, job: JobContext) -> BoxFuture<'static, HandlerResult> {
        Box::pin((self)(job))
    }
}

/// Why the worker asks a running handler to stop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Interrupt {
    /// [`Queue::cancel`] was called for the job (with its reason): the job ends failed with the
    /// failure code `cancelled`, without a retry.
    Cancelled(String),
    /// The run went past the job's `timeout`: the job fails with the code `timeout` (and retries
    /// while attempts remain).
    TimedOut,
    /// The worker is closing and the shutdown grace period is over: the job goes back to waiting,
    /// its attempt not counted.
    Shutdown,
}

impl Interrupt {
    /// A short name: `cancelled`, `timeout` or `shutdown`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Interrupt::Cancelled(_) => "cancelled",
            Interrupt::TimedOut => "timeout",
            Interrupt::Shutdown => "shutdown",
        }
    }

    /// A sentence for logs and the handler.
    pub fn message(&self) -> String {
        match self {
            Interrupt::Cancelled(r) if r.is_empty() => "the job was cancelled".into(),
            Interrupt::Cancelled(r) => format!("the job was cancelled: {r}"),
            Interrupt::TimedOut => "the job ran past its timeout".into(),
            Interrupt::Shutdown => "the worker is shutting down".into(),
        }
    }
}

/// The sending half of a run's interrupt: the worker holds it, the context reads it.
pub(crate) type InterruptTx = Arc<watch::Sender<Option<Interrupt>>>;

/// A new interrupt channel for one run.
pub(crate) fn interrupt_channel() -> (InterruptTx, watch::Receiver<Option<Interrupt>>) {
    let (tx, rx) = watch::channel(None);
    (Arc::new(tx), rx)
}

/// Sets a run's interrupt unless one is set already (the first reason wins).
pub(crate) fn interrupt(tx: &InterruptTx, why: Interrupt) -> bool {
    tx.send_if_modified(|v| {
        if v.is_none() {
            *v = Some(why);
            true
        } else {
            false
        }
    })
}

/// A leased job as its handler sees it.
#[derive(Clone)]
pub struct JobContext {
    pub(crate) job: Arc<Job>,
    pub(crate) queue: Queue,
    pub(crate) lost: Arc<AtomicBool>,
    pub(crate) interrupt: watch::Receiver<Option<Interrupt>>,
    /// The worker's hook for its host's events (the `progress` event).
    pub(crate) events: Option<crate::worker::hooks::WorkerEventHook>,
    /// This run's fencing token ([`JobContext::fence`]).
    pub(crate) fence: u64,
    /// This run's lease token (children it adds are counted in under it).
    pub(crate) token: String,
    /// Set once this run counted a child in ([`JobContext::add_child`]): its end waits for them.
    pub(crate) children: Arc<AtomicBool>,
}

/// The fencing token a lease token carries: its leading digits, the server's clock in microseconds
/// when the lease was written (`lib/claim.lua`, `add.lua`, `claim_id.lua`: `<µs>.<place>`).
pub(crate) fn fence_of(token: &str) -> u64 {
    token
        .split('.')
        .next()
        .and_then(|us| us.parse().ok())
        .unwrap_or(0)
}

impl JobContext {
    /// The job.
    pub fn job(&self) -> &Job {
        &self.job
    }

    /// Its id.
    pub fn id(&self) -> JobId {
        self.job.id
    }

    /// This run's fencing token: a number that only grows across the job's runs (the datastore's
    /// clock, in microseconds, when this run's lease was written; each new lease of a job is
    /// written after the last one ended or expired). Send it with each write to a downstream
    /// store and have the store refuse a write whose fence is below the highest it has accepted
    /// for the job: a zombie run — a worker frozen past its lease, whose job has run again
    /// elsewhere — is then refused there, as `complete` and `fail` refuse its stale lease here.
    /// It relies on the datastore's clock moving forward (after a failover, the new master's).
    pub fn fence(&self) -> u64 {
        self.fence
    }

    /// Its payload.
    pub fn data(&self) -> &Value {
        &self.job.data
    }

    /// The queue it came from.
    pub fn queue(&self) -> &Queue {
        &self.queue
    }

    /// True once the worker learned that its lease on this job is gone (another worker may run
    /// it); a long handler should stop early.
    pub fn lease_lost(&self) -> bool {
        self.lost.load(Ordering::Relaxed)
    }

    /// Why the worker asked this run to stop, once it did (a cancel, a timeout, shutdown).
    pub fn interrupt(&self) -> Option<Interrupt> {
        self.interrupt.borrow().clone()
    }

    /// True once the worker asked this run to stop (see [`JobContext::interrupt`]).
    pub fn is_cancelled(&self) -> bool {
        self.interrupt.borrow().is_some()
    }

    /// Resolves when the worker asks this run to stop — the job was cancelled
    /// ([`Queue::cancel`]), ran past its timeout, or the worker's shutdown grace period ended —
    /// with the reason. Pending forever otherwise. Use it in `tokio::select!` around long work,
    /// or let the worker drop the handler's future (the default for Rust handlers).
    pub async fn cancelled(&self) -> Interrupt {
        let mut rx = self.interrupt.clone();
        let got = rx.wait_for(Option::is_some).await.map(|v| v.clone());
        match got {
            Ok(Some(why)) => why,
            // The worker dropped the run's sender: the run is over for it.
            _ => std::future::pending().await,
        }
    }

    /// Records progress (and reports it as the worker's `progress` event).
    pub async fn progress(&self, progress: Value) -> Result<()> {
        self.queue.update_progress(self.job.id, &progress).await?;
        if let Some(hook) = &self.events {
            hook(crate::worker::hooks::WorkerEvent::Progress {
                job: self.job.clone(),
                value: progress,
            });
        }
        Ok(())
    }

    /// In a flow, the results of this job's children by `<queue>:<id>`.
    pub async fn children_results(&self) -> Result<std::collections::HashMap<String, Value>> {
        self.queue.children_results(self.job.id).await
    }

    /// Appends a log line.
    pub async fn log(&self, line: &str) -> Result<u64> {
        self.queue.log(self.job.id, line).await
    }
}

impl JobContext {
    /// The batch this job belongs to (None when it was not added through one): a running job adds
    /// more jobs to it, and the batch is not done until those are.
    pub fn batch(&self) -> Result<Option<crate::batch::Batch>> {
        match self.job().batch_ref() {
            None => Ok(None),
            Some(b) => Ok(Some(crate::batch::Batch::of(
                self.queue().queue(&b.queue)?,
                JobId::parse(&b.id)?,
            ))),
        }
    }
}
