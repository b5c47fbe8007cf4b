//! What a worker tells its host while it runs ([`WorkerEvent`]): the recorded outcome of each of
//! its runs, progress its handlers reported, the stalled jobs its sweep recovered, and its own
//! troubles (a lost connection, a failed renewal), after which it keeps trying.
//!
//! A host registers one hook with [`WorkerBuilder::on_event`](super::WorkerBuilder::on_event);
//! the worker calls it on its own tasks, so the hook must return quickly (a binding queues the
//! event for its language's thread). These are the worker's own events, in its process; the
//! queue-wide stream that every client can follow is [`crate::events`].

use crate::error::Error;
use crate::job::{Failure, Job};
use crate::job_id::JobId;
use serde_json::Value;
use std::sync::Arc;

/// One thing a worker reports.
#[derive(Clone, Debug)]
pub enum WorkerEvent {
    /// A run's result was recorded: the job is completed.
    Completed {
        /// The job as its run saw it.
        job: Arc<Job>,
        /// The handler's result.
        result: Value,
    },
    /// A run's failure was recorded (a timeout and a cancel count; a job given back at shutdown
    /// does not).
    Failed {
        /// The job as its run saw it.
        job: Arc<Job>,
        /// The failure recorded.
        failure: Failure,
        /// True when the job goes back for another attempt.
        will_retry: bool,
    },
    /// A handler of this worker recorded progress.
    Progress {
        /// The job.
        job: Arc<Job>,
        /// The progress value.
        value: Value,
    },
    /// This worker's stalled sweep found a job whose worker vanished and recovered it.
    Stalled {
        /// The job.
        job_id: JobId,
        /// Where it went: `"wait"` (another attempt) or `"failed"` (past its stall limit).
        to: String,
    },
    /// A fault of the worker itself; it keeps trying.
    Error {
        /// What went wrong (its code is the error's).
        error: Error,
    },
}

impl WorkerEvent {
    /// The event's name: `completed`, `failed`, `progress`, `stalled` or `error`.
    pub fn kind(&self) -> &'static str {
        match self {
            WorkerEvent::Completed { .. } => "completed",
            WorkerEvent::Failed { .. } => "failed",
            WorkerEvent::Progress { .. } => "progress",
            WorkerEvent::Stalled { .. } => "stalled",
            WorkerEvent::Error { .. } => "error",
        }
    }

    /// The event as JSON: `kind`, and `job` (the job's fields), `result`, `failure`,
    /// `will_retry`, `value`, `job_id`, `to` or `error` (`code`, `message`) as it has them.
    pub fn to_json(&self) -> Value {
        use serde_json::json;
        match self {
            WorkerEvent::Completed { job, result } => {
                json!({"kind": self.kind(), "job": job.to_json(), "result": result})
            }
            WorkerEvent::Failed {
                job,
                failure,
                will_retry,
            } => json!({
                "kind": self.kind(), "job": job.to_json(), "failure": failure, "will_retry": will_retry,
            }),
            WorkerEvent::Progress { job, value } => {
                json!({"kind": self.kind(), "job": job.to_json(), "value": value})
            }
            WorkerEvent::Stalled { job_id, to } => {
                json!({"kind": self.kind(), "job_id": job_id.to_string(), "to": to})
            }
            WorkerEvent::Error { error } => json!({
                "kind": self.kind(), "error": {"code": error.code().as_str(), "message": error.message()},
            }),
        }
    }
}

/// The hook a worker calls with each of its events.
pub type WorkerEventHook = Arc<dyn Fn(WorkerEvent) + Send + Sync>;

/// Calls `hook` when there is one.
pub(crate) fn emit(hook: &Option<WorkerEventHook>, event: impl FnOnce() -> WorkerEvent) {
    if let Some(h) = hook {
        h(event());
    }
}
