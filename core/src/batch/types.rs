//! A batch's shapes: its options and callbacks (what [`crate::Queue::batch`] takes) and its status
//! (what [`super::Batch::status`] reads back).

use crate::job_id::JobId;
use crate::options::JobOptions;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A batch's callback: the job added when it falls due.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BatchCallback {
    /// The queue it is added to (any queue).
    pub queue: String,
    /// Its name.
    pub name: String,
    /// Its payload.
    pub data: Value,
    /// Its options (its id is the one the batch pins).
    pub options: JobOptions,
}

/// What [`crate::Queue::batch`] creates.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BatchOptions {
    /// Added once, when every job of the sealed batch has its outcome.
    pub on_complete: Option<BatchCallback>,
    /// Added once, when every job of the sealed batch has completed (at once, or later when its
    /// failed jobs are retried to success).
    pub on_success: Option<BatchCallback>,
    /// Words for people (up to [`crate::options::MAX_DESCRIPTION`] bytes).
    pub description: Option<String>,
}

/// One job of a batch: its queue and id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct BatchJob {
    /// Its queue.
    pub queue: String,
    /// Its id there.
    pub id: JobId,
}

/// A batch's state ([`super::Batch::status`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct BatchStatus {
    /// The batch's id.
    pub id: JobId,
    /// Its description.
    pub description: Option<String>,
    /// Jobs counted in.
    pub total: u64,
    /// Jobs without an outcome yet.
    pub pending: u64,
    /// Jobs completed.
    pub completed: u64,
    /// Jobs failed for good (a retry to success moves one to completed).
    pub failed: u64,
    /// Whether its creator sealed it.
    pub sealed: bool,
    /// Whether it was cancelled.
    pub cancelled: bool,
    /// Whether every job had its outcome once it was sealed (no job is counted in any more).
    pub done: bool,
    /// The batch it sits inside ([`super::Batch::batch`]), if any.
    pub parent: Option<super::BatchRef>,
    /// One page of the failed jobs, oldest failure first.
    pub failed_jobs: Vec<BatchJob>,
}
