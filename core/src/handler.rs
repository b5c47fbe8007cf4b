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
}

impl HandlerError {
    /// A failure that may be retried.
    pub fn new(message: impl Into<String>) -> HandlerError {
        HandlerError {
            code: "handler_failed".into(),
            message: message.into(),
            stack: None,
            unrecoverable: false,
        }
    }

    /// A failure that skips the remaining attempts.
    pub fn unrecoverable(message: impl Into<String>) -> HandlerError {
        HandlerError {
            unrecoverable: true,
            ..HandlerError::new(message)
        }
    }

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

/// A leased job as its handler sees it.
#[derive(Clone)]
pub struct JobContext {
    pub(crate) job: Arc<Job>,
    pub(crate) queue: Queue,
    pub(crate) lost: Arc<AtomicBool>,
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

    /// Records progress.
    pub async fn progress(&self, progress: Value) -> Result<()> {
        self.queue.update_progress(self.job.id, &progress).await
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
