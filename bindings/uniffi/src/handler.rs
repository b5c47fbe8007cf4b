//! The handler: a foreign-implemented async [`JobHandler`] wrapped into the core's [`emq::Handler`].

use crate::job::JobRecord;
use emq::{ErrorCode, HandlerError, JobContext};
use futures::future::BoxFuture;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What a handler throws to fail a job. `Failed(reason, unrecoverable)`: the job fails with
/// `reason` as its failure message (code `handler_failed`), and is retried while attempts remain
/// unless `unrecoverable`. Any other exception a handler throws also fails the job (retryably),
/// with the exception's text as the message; it never stops the worker.
///
/// `Delayed(delayMs, countAttempt)` is not a failure: the job goes back to delayed for `delayMs`
/// milliseconds (server clock; BullMQ's `DelayedError`), its run counted as an attempt only with
/// `countAttempt`; a negative, non-finite or over-365-days delay fails it with `invalid_option`.
#[derive(Debug, Clone, PartialEq, uniffi::Error)]
pub enum HandlerFailure {
    Failed { reason: String, unrecoverable: bool },
    Delayed { delay_ms: f64, count_attempt: bool },
}

impl std::fmt::Display for HandlerFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HandlerFailure::Failed { reason, .. } => f.write_str(reason),
            HandlerFailure::Delayed { delay_ms, .. } => write!(f, "delayed for {delay_ms} ms"),
        }
    }
}

impl std::error::Error for HandlerFailure {}

/// An exception the handler threw that is not a `HandlerFailure` (uniffi's unexpected-error path):
/// it fails the job like a retryable failure.
impl From<uniffi::UnexpectedUniFFICallbackError> for HandlerFailure {
    fn from(e: uniffi::UnexpectedUniFFICallbackError) -> HandlerFailure {
        HandlerFailure::Failed {
            reason: e.reason,
            unrecoverable: false,
        }
    }
}

/// Processes jobs; implemented in Kotlin or Swift. Returns the job's result as JSON text (an
/// empty string stores `null`), or throws `HandlerFailure` to fail it.
#[uniffi::export(with_foreign)]
#[async_trait::async_trait]
pub trait JobHandler: Send + Sync {
    async fn handle(&self, job: JobRecord) -> Result<String, HandlerFailure>;
}

/// The core handler around a foreign one. Cooperative: when the worker interrupts a run (a cancel,
/// the job's timeout, the end of the shutdown grace period), the foreign call is dropped, which
/// cancels the Kotlin coroutine (Swift: the task), and the run resolves only once the coroutine
/// has stopped (see [`Call`]), so the core records the outcome — and a retry can start — only
/// after the handler is done.
pub(crate) struct ForeignHandler(pub(crate) Arc<dyn JobHandler>);

impl emq::Handler for ForeignHandler {
    fn cooperative_cancel(&self) -> bool {
        true
    }

    fn handle(&self, ctx: JobContext) -> BoxFuture<'static, emq::HandlerResult> {
        let foreign = self.0.clone();
        let running = Running::start(&ctx);
        let job = JobRecord {
            fence: ctx.fence(),
            ..JobRecord::from(ctx.job())
        };
        Box::pin(async move {
            let _running = running;
            let mut call = Call(Some(Box::pin(async move { foreign.handle(job).await })));
            let done = tokio::select! {
                r = call.run() => r,
                why = ctx.cancelled() => {
                    call.stop().await;
                    // The interrupt decides the outcome (the core ignores this error's text).
                    return Err(HandlerError::new(why.message()));
                }
            };
            match done {
                Ok(text) if text.trim().is_empty() => Ok(serde_json::Value::Null),
                Ok(text) => serde_json::from_str(&text).map_err(|e| {
                    HandlerError::new(format!("the handler's result is not valid JSON: {e}"))
                        .with_code(ErrorCode::InvalidPayload.as_str())
                }),
                Err(HandlerFailure::Failed {
                    reason,
                    unrecoverable,
                }) => Err(if unrecoverable {
                    HandlerError::unrecoverable(reason)
                } else {
                    HandlerError::new(reason)
                }),
                Err(HandlerFailure::Delayed {
                    delay_ms,
                    count_attempt,
                }) => Err(HandlerError::delay_millis(delay_ms).counting_attempt(count_attempt)),
            }
        })
    }
}

/// The runs this process's workers have under way, by job id: `Queue.updateProgress` on one of
/// them records it through the run's own context ([`JobContext::progress`]), which also reports
/// it to the worker's event hook (`WorkerHandle.events`), as a Python or Node handler's
/// `job.progress` does.
static RUNNING: std::sync::LazyLock<Mutex<HashMap<emq::JobId, Vec<JobContext>>>> =
    std::sync::LazyLock::new(Default::default);

/// One run in [`RUNNING`], removed when dropped (the run ended, or was dropped unfinished).
struct Running(emq::JobId);

impl Running {
    fn start(ctx: &JobContext) -> Running {
        let id = ctx.job().id;
        lock_running().entry(id).or_default().push(ctx.clone());
        Running(id)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let mut g = lock_running();
        if let Some(v) = g.get_mut(&self.0) {
            v.pop();
            if v.is_empty() {
                g.remove(&self.0);
            }
        }
    }
}

fn lock_running() -> std::sync::MutexGuard<'static, HashMap<emq::JobId, Vec<JobContext>>> {
    RUNNING.lock().unwrap_or_else(|p| p.into_inner())
}

/// The context of a run of `id` under way in this process, if any.
pub(crate) fn running(id: emq::JobId) -> Option<JobContext> {
    lock_running().get(&id).and_then(|v| v.last().cloned())
}

type ForeignCall = BoxFuture<'static, Result<String, HandlerFailure>>;

/// One call of the foreign handler. Dropping uniffi's foreign future runs the foreign side's
/// "dropped" callback, which cancels the coroutine; in Kotlin that callback also joins the
/// coroutine (generate.sh adds the join to the generated code), so the drop returns once the
/// handler has stopped. That blocks the dropping thread, so an unfinished call is always dropped
/// on a blocking thread, never on a runtime worker: awaited by [`Call::stop`], in the background
/// when the run itself is dropped (a worker's abort).
struct Call(Option<ForeignCall>);

impl Call {
    async fn run(&mut self) -> Result<String, HandlerFailure> {
        let r = self.0.as_mut().expect("a call runs once").await;
        // Finished: the coroutine is returning, its join is immediate.
        self.0 = None;
        r
    }

    /// Cancels the foreign call and resolves once it has stopped.
    async fn stop(&mut self) {
        if let Some(fut) = self.0.take() {
            let _ = tokio::task::spawn_blocking(move || drop(fut)).await;
        }
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        if let Some(fut) = self.0.take() {
            match tokio::runtime::Handle::try_current() {
                Ok(rt) => {
                    rt.spawn_blocking(move || drop(fut));
                }
                Err(_) => drop(fut),
            }
        }
    }
}
