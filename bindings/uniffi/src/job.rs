//! A job as read back (`JobRecord`). Its state, its failure and the counts per state are the
//! core's own types, exported through the core's `uniffi` feature (`emq::JobState`,
//! `emq::Failure` named `JobFailure` in Kotlin and Swift, `emq::Counts`).

use crate::options::JobOptions;
pub use emq::{Counts, Failure as JobFailure, JobState};

/// A job as read back (by `Queue.get`) or as a handler receives it. (Not `Job`: Kotlin's
/// generated code imports `kotlinx.coroutines.Job`.) A mirror of `emq::Job`, not the core's type:
/// its payload, result and progress are JSON text (`*_json`), its options the typed
/// [`JobOptions`], and its state is always set.
#[derive(Debug, Clone, PartialEq, uniffi::Record)]
pub struct JobRecord {
    pub id: String,
    pub name: String,
    /// The payload as JSON text.
    pub data_json: String,
    pub state: JobState,
    pub attempts_made: u32,
    /// Most attempts.
    pub attempts: u32,
    /// 0 for none; otherwise lower runs first.
    pub priority: u32,
    /// The result as JSON text, once completed.
    pub result_json: Option<String>,
    /// The last failure, if a run failed.
    pub failure: Option<JobFailure>,
    /// Times it stalled.
    pub stalls: u32,
    /// Server ms when it was added.
    pub created_ms: u64,
    /// Server ms when its last run started.
    pub processed_ms: Option<u64>,
    /// Server ms when it finished.
    pub finished_ms: Option<u64>,
    /// The last progress reported (`updateProgress`), as JSON text.
    pub progress_json: Option<String>,
    /// In a flow, its parent as `<queue>:<id>`.
    pub parent: Option<String>,
    /// The options it was added with.
    pub options: JobOptions,
    /// As a handler receives it: this run's fencing token (the core's `JobContext::fence`), a
    /// number that only grows across the job's runs (the datastore's clock in µs when this run's
    /// lease was written). Send it with each write to a downstream store and have the store refuse
    /// a write whose fence is below the highest it accepted: a zombie run (a worker frozen past its
    /// lease while the job ran again elsewhere) is then refused there. 0 on a job read back
    /// (`Queue.get`, `Queue.list`): fences belong to runs.
    #[uniffi(default = 0)]
    pub fence: u64,
    /// The batch this job belongs to (open it with `Queue.openBatch` on its queue), or null.
    #[uniffi(default = None)]
    pub batch: Option<emq::BatchRef>,
    /// On a batch's callback job: the batch and its counts when the callback fell due, or null.
    #[uniffi(default = None)]
    pub batch_done: Option<emq::BatchDone>,
}

impl From<&emq::Job> for JobRecord {
    fn from(j: &emq::Job) -> JobRecord {
        JobRecord {
            id: j.id.to_string(),
            name: j.name.clone(),
            data_json: j.data.to_string(),
            state: j.state.unwrap_or(JobState::Active),
            attempts_made: j.attempts_made,
            attempts: j.attempts,
            priority: j.priority,
            result_json: j.result.as_ref().map(|r| r.to_string()),
            failure: j.failure.clone(),
            stalls: j.stalls,
            created_ms: j.created_ms,
            processed_ms: j.processed_ms,
            finished_ms: j.finished_ms,
            progress_json: j.progress.as_ref().map(|p| p.to_string()),
            parent: j.parent.clone(),
            // The record stores the options that differ from the defaults; the core reads an
            // unreadable one as the defaults (`Job::from_record`), and so does this.
            options: JobOptions::from(
                &serde_json::from_value::<emq::JobOptions>(j.options.clone()).unwrap_or_default(),
            ),
            fence: 0,
            batch: j.batch_ref(),
            batch_done: j.batch_done(),
        }
    }
}
