//! A job as read back (`JobRecord`), its state, its failure, and the counts per state.

use crate::options::JobOptions;

/// Where a job is in its lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Enum)]
pub enum JobState {
    Waiting,
    Paused,
    Active,
    Delayed,
    Prioritized,
    Completed,
    Failed,
    Stalled,
    WaitingChildren,
}

impl From<emq::JobState> for JobState {
    fn from(s: emq::JobState) -> JobState {
        match s {
            emq::JobState::Waiting => JobState::Waiting,
            emq::JobState::Paused => JobState::Paused,
            emq::JobState::Active => JobState::Active,
            emq::JobState::Delayed => JobState::Delayed,
            emq::JobState::Prioritized => JobState::Prioritized,
            emq::JobState::Completed => JobState::Completed,
            emq::JobState::Failed => JobState::Failed,
            emq::JobState::Stalled => JobState::Stalled,
            emq::JobState::WaitingChildren => JobState::WaitingChildren,
        }
    }
}

impl JobState {
    pub(crate) fn to_core(self) -> emq::JobState {
        match self {
            JobState::Waiting => emq::JobState::Waiting,
            JobState::Paused => emq::JobState::Paused,
            JobState::Active => emq::JobState::Active,
            JobState::Delayed => emq::JobState::Delayed,
            JobState::Prioritized => emq::JobState::Prioritized,
            JobState::Completed => emq::JobState::Completed,
            JobState::Failed => emq::JobState::Failed,
            JobState::Stalled => emq::JobState::Stalled,
            JobState::WaitingChildren => emq::JobState::WaitingChildren,
        }
    }
}

/// Why the last run of a job failed.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct JobFailure {
    /// `handler_failed`, `timeout`, `panic`, `stalled`, … or the handler's own code.
    pub code: String,
    pub message: String,
    pub stack: Option<String>,
}

/// A job as read back (by `Queue.get`) or as a handler receives it. (Not `Job`: Kotlin's
/// generated code imports `kotlinx.coroutines.Job`.)
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
}

impl From<&emq::Job> for JobRecord {
    fn from(j: &emq::Job) -> JobRecord {
        JobRecord {
            id: j.id.to_string(),
            name: j.name.clone(),
            data_json: j.data.to_string(),
            state: j.state.unwrap_or(emq::JobState::Active).into(),
            attempts_made: j.attempts_made,
            attempts: j.attempts,
            priority: j.priority,
            result_json: j.result.as_ref().map(|r| r.to_string()),
            failure: j.failure.as_ref().map(|f| JobFailure {
                code: f.code.clone(),
                message: f.message.clone(),
                stack: f.stack.clone(),
            }),
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
        }
    }
}

/// Number of jobs per state.
#[derive(Debug, Clone, Default, PartialEq, Eq, uniffi::Record)]
pub struct Counts {
    pub waiting: u64,
    pub paused: u64,
    pub active: u64,
    pub delayed: u64,
    pub prioritized: u64,
    pub completed: u64,
    pub failed: u64,
    pub stalled: u64,
    pub waiting_children: u64,
}

impl From<emq::Counts> for Counts {
    fn from(c: emq::Counts) -> Counts {
        Counts {
            waiting: c.waiting,
            paused: c.paused,
            active: c.active,
            delayed: c.delayed,
            prioritized: c.prioritized,
            completed: c.completed,
            failed: c.failed,
            stalled: c.stalled,
            waiting_children: c.waiting_children,
        }
    }
}
