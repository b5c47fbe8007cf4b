//! What a job's options carry about its batch: [`BatchRef`] (a job of a batch) and [`BatchDone`]
//! (a batch's callback job). Plain data, read by `options.rs` and `job.rs` without the batch's
//! steps.

use serde::{Deserialize, Serialize};

/// The batch a job belongs to, as its options store it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct BatchRef {
    /// The queue that created the batch (its keys live in that queue's slot).
    pub queue: String,
    /// The batch's id.
    pub id: String,
}

/// What a batch's callback job carries in its options ([`crate::Job::batch_done`]): its batch and the
/// batch's counts when the callback fell due.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct BatchDone {
    /// The queue that created the batch.
    pub queue: String,
    /// The batch's id.
    pub id: String,
    /// `complete` (every job had its outcome) or `success` (every job completed).
    pub kind: String,
    /// Jobs counted in.
    pub total: u64,
    /// Of those, completed.
    pub completed: u64,
    /// Of those, failed for good (their ids: [`Batch::status`]).
    pub failed: u64,
}
