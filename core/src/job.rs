//! A job as read back from the datastore, its state, and a failure record.

use crate::error::{Error, ErrorCode, Result};
use crate::job_id::JobId;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;

/// Where a job is in its lifecycle (which container holds it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JobState {
    /// Ready to run (in wait or, while the queue is paused, in paused).
    Waiting,
    /// Ready, waiting in paused because the queue is paused.
    Paused,
    /// Leased to a worker.
    Active,
    /// Due later.
    Delayed,
    /// Ready, ordered by priority.
    Prioritized,
    /// Finished successfully.
    Completed,
    /// Finished with a failure.
    Failed,
    /// Its lease expired; pending recovery.
    Stalled,
    /// A parent waiting for its children.
    WaitingChildren,
}

impl JobState {
    /// Every state.
    pub const ALL: [JobState; 9] = [
        JobState::Waiting,
        JobState::Paused,
        JobState::Active,
        JobState::Delayed,
        JobState::Prioritized,
        JobState::Completed,
        JobState::Failed,
        JobState::Stalled,
        JobState::WaitingChildren,
    ];

    /// The state's name.
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Waiting => "waiting",
            JobState::Paused => "paused",
            JobState::Active => "active",
            JobState::Delayed => "delayed",
            JobState::Prioritized => "prioritized",
            JobState::Completed => "completed",
            JobState::Failed => "failed",
            JobState::Stalled => "stalled",
            JobState::WaitingChildren => "waiting-children",
        }
    }

    /// Parses a state name.
    pub fn parse(s: &str) -> Result<JobState> {
        JobState::ALL
            .iter()
            .copied()
            .find(|st| st.as_str() == s || (s == "wait" && *st == JobState::Waiting))
            .ok_or_else(|| {
                Error::new(
                    ErrorCode::InvalidOption,
                    format!("unknown job state {s:?}; one of waiting, paused, active, delayed, prioritized, completed, failed, stalled, waiting-children"),
                )
            })
    }
}

/// Why a run of a job failed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    /// A short code (`handler_failed`, `timeout`, `panic`, `stalled`, or the handler's own).
    pub code: String,
    /// The message.
    pub message: String,
    /// A stack or traceback, when the handler's language has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<String>,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for Failure {}

impl From<Failure> for Error {
    /// A job's failure as an error of the caller (`handler_failed`, the failure's code and
    /// message in the text).
    fn from(f: Failure) -> Error {
        Error::new(ErrorCode::HandlerFailed, f.to_string())
    }
}

/// A job as stored.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Job {
    /// Its id.
    pub id: JobId,
    /// Its name (what the producer called the kind of work).
    pub name: String,
    /// Its payload.
    pub data: Value,
    /// Its state when read (None when read by a worker that just leased it: active).
    pub state: Option<JobState>,
    /// Attempts made so far.
    pub attempts_made: u32,
    /// Most attempts.
    pub attempts: u32,
    /// Times it stalled.
    pub stalls: u32,
    /// Priority (0 none).
    pub priority: u32,
    /// Server ms when added.
    pub created_ms: u64,
    /// Server ms when its last run started.
    pub processed_ms: Option<u64>,
    /// Server ms when it finished.
    pub finished_ms: Option<u64>,
    /// Last progress reported.
    pub progress: Option<Value>,
    /// Its result, once completed.
    pub result: Option<Value>,
    /// Its last failure.
    pub failure: Option<Failure>,
    /// The options it was added with that differ from the defaults (JSON).
    pub options: Value,
    /// Its dedup key, if it has one.
    pub dedup: Option<String>,
    /// In a flow, its parent as `<queue>:<id>`.
    pub parent: Option<String>,
    /// Set once [`Queue::cancel`](crate::Queue::cancel) was called for it: the reason given
    /// (possibly empty). A cancelled job ends failed, its failure code `cancelled`.
    pub cancelled: Option<String>,
}

fn json_field(map: &HashMap<String, String>, k: &str) -> Option<Value> {
    map.get(k).and_then(|s| serde_json::from_str(s).ok())
}

fn num<T: std::str::FromStr>(map: &HashMap<String, String>, k: &str) -> Option<T> {
    map.get(k).and_then(|s| s.parse().ok())
}

impl Job {
    /// Builds a job from its record's fields.
    pub(crate) fn from_record(
        id: JobId,
        state: Option<JobState>,
        map: HashMap<String, String>,
    ) -> Job {
        Job {
            id,
            name: map.get("name").cloned().unwrap_or_default(),
            data: json_field(&map, "data").unwrap_or(Value::Null),
            state,
            attempts_made: num(&map, "atts").unwrap_or(0),
            attempts: num(&map, "attempts").unwrap_or(1),
            stalls: num(&map, "stalls").unwrap_or(0),
            priority: num(&map, "priority").unwrap_or(0),
            created_ms: num(&map, "created_ms").unwrap_or(0),
            processed_ms: num(&map, "processed_ms"),
            finished_ms: num(&map, "finished_ms"),
            progress: json_field(&map, "progress"),
            result: json_field(&map, "result"),
            failure: map
                .get("failure")
                .and_then(|s| serde_json::from_str(s).ok()),
            options: json_field(&map, "opts").unwrap_or_else(|| Value::Object(Default::default())),
            dedup: map.get("dedup").filter(|d| !d.is_empty()).cloned(),
            parent: map.get("parent").filter(|d| !d.is_empty()).cloned(),
            cancelled: map.get("cancel").cloned(),
        }
    }

    /// The job as one JSON object (for bindings and the CLI).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// Number of jobs per state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// In wait.
    pub waiting: u64,
    /// In paused.
    pub paused: u64,
    /// Leased.
    pub active: u64,
    /// Due later.
    pub delayed: u64,
    /// Ready by priority.
    pub prioritized: u64,
    /// Completed (kept by retention).
    pub completed: u64,
    /// Failed (kept by retention).
    pub failed: u64,
    /// Pending stalled recovery.
    pub stalled: u64,
    /// Parents waiting for children.
    pub waiting_children: u64,
}

impl Counts {
    /// The count of one state.
    pub fn get(&self, state: JobState) -> u64 {
        match state {
            JobState::Waiting => self.waiting,
            JobState::Paused => self.paused,
            JobState::Active => self.active,
            JobState::Delayed => self.delayed,
            JobState::Prioritized => self.prioritized,
            JobState::Completed => self.completed,
            JobState::Failed => self.failed,
            JobState::Stalled => self.stalled,
            JobState::WaitingChildren => self.waiting_children,
        }
    }

    /// All jobs held in any state.
    pub fn total(&self) -> u64 {
        JobState::ALL.iter().map(|s| self.get(*s)).sum()
    }
}
