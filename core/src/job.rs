//! A job as read back from the datastore, its state, and a failure record.

use crate::error::{Error, ErrorCode, Result};
use crate::job_id::JobId;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;

/// Where a job is in its lifecycle (which container holds it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Enum))]
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
// Kotlin and Swift have called it `JobFailure` from the start.
#[cfg_attr(
    feature = "uniffi",
    derive(uniffi::Record),
    uniffi(name = "JobFailure")
)]
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
    /// Set when a stored JSON field (data, result, progress) could not be parsed: that field reads
    /// as `null` above, and [`Job::readable`] turns this into the error readers must see.
    #[serde(skip)]
    pub(crate) unreadable: Option<Error>,
    /// Set once [`Queue::cancel`](crate::Queue::cancel) was called for it: the reason given
    /// (possibly empty). A cancelled job ends failed, its failure code `cancelled`.
    pub cancelled: Option<String>,
    /// Times it came back uncounted because its worker died before its run started (it had been
    /// leased ahead). A worker reports the start of such a job before running it.
    #[serde(skip)]
    pub(crate) strands: u32,
    /// Children it waits for (flows, and children its runs added): a run of a job with some ends
    /// in waiting-children, not completed (`children_wait.lua`).
    #[serde(skip)]
    pub(crate) pending: u32,
}

/// Deepest nesting of arrays and objects a payload may have. The core reads every stored payload
/// with serde_json, which refuses 128 levels or more; a deeper payload could be stored but never
/// read back, so `add` refuses it (`invalid_payload`).
pub const MAX_PAYLOAD_DEPTH: usize = 127;

/// The nesting depth of `v` (a scalar is 0, `[1]` is 1), counted up to `MAX_PAYLOAD_DEPTH + 1`.
fn depth_over_limit(v: &Value, depth: usize) -> bool {
    let children: Box<dyn Iterator<Item = &Value>> = match v {
        Value::Array(a) => Box::new(a.iter()),
        Value::Object(m) => Box::new(m.values()),
        _ => return false,
    };
    if depth + 1 > MAX_PAYLOAD_DEPTH {
        return true;
    }
    for c in children {
        if depth_over_limit(c, depth + 1) {
            return true;
        }
    }
    false
}

/// Checks that `v` (`what`: "the payload", "the result"…) can be stored and read back as exactly
/// this value by every reader: at most [`MAX_PAYLOAD_DEPTH`] levels of arrays and objects. A
/// `serde_json::Value` cannot hold NaN, an infinity, a lone surrogate or an integer beyond 64 bits,
/// so depth is all there is to check.
pub fn check_payload(what: &str, v: &Value) -> Result<()> {
    if depth_over_limit(v, 0) {
        return Err(Error::new(
            ErrorCode::InvalidPayload,
            format!(
                "{what} nests arrays and objects more than {MAX_PAYLOAD_DEPTH} levels deep; \
                 flatten it (no reader could parse it back)"
            ),
        ));
    }
    Ok(())
}

/// Parses JSON text a binding or the CLI passes as a payload, refusing (`invalid_payload`) what
/// would not read back as the same value in every language: text that is not JSON, nesting deeper
/// than [`MAX_PAYLOAD_DEPTH`], a string with a lone surrogate escape (`"\ud800"`), a number out of
/// the double range, and an integer that fits neither `i64` nor `u64` (the core would read it back
/// as a float; send it as a string).
pub fn payload_from_text(what: &str, text: &str) -> Result<Value> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        let why = e.to_string();
        let hint = if why.contains("recursion limit") {
            format!(" (it nests more than {MAX_PAYLOAD_DEPTH} levels of arrays and objects)")
        } else if why.contains("surrogate") {
            " (a string holds a lone UTF-16 surrogate, which no reader can decode)".to_string()
        } else {
            String::new()
        };
        Error::new(
            ErrorCode::InvalidPayload,
            format!("{what} is not JSON that reads back as it was written: {why}{hint}"),
        )
    })?;
    check_integer_widths(what, text)?;
    Ok(value)
}

/// Refuses (`invalid_payload`) JSON text holding an integer literal that fits neither `i64` nor
/// `u64`: the core reads such a number back as a float, so it would not round-trip. A byte scan,
/// for text that is valid JSON (a binding's batch of payloads, checked once).
pub fn check_integer_widths(what: &str, text: &str) -> Result<()> {
    match wide_integer(text) {
        Some(n) => Err(Error::new(
            ErrorCode::InvalidPayload,
            format!(
                "{what} holds the integer {n}, beyond 64 bits: it would read back as a float; \
                 send it as a string"
            ),
        )),
        None => Ok(()),
    }
}

/// The first integer literal (no fraction, no exponent) in JSON text outside strings that fits
/// neither `i64` nor `u64`. The text is valid JSON (checked by the caller).
fn wide_integer(text: &str) -> Option<&str> {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                let mut integer = true;
                while i < b.len() && matches!(b[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    integer &= !matches!(b[i], b'.' | b'e' | b'E');
                    i += 1;
                }
                let lit = &text[start..i];
                // Up to 19 digits always fit i64 (or u64 for 20 with no sign): parse only longer ones.
                if integer
                    && lit.len() > 19
                    && lit.parse::<i64>().is_err()
                    && lit.parse::<u64>().is_err()
                {
                    return Some(lit);
                }
            }
            _ => i += 1,
        }
    }
    None
}

/// A stored JSON field that cannot be parsed: an error naming it, never a silent `null`.
fn unreadable_error(id: JobId, field: &str, e: serde_json::Error) -> Error {
    Error::new(
        ErrorCode::InvalidPayload,
        format!("the stored {field} of job {id} cannot be read back ({e}); it was written by an emq that did not check payloads"),
    )
}

/// A job's options as it reads them: the stored ones, and its batch from the record's own `batch`
/// field (`<queue>|<batch id>`, written by `batch_add.lua` for a job added in its batch's slot)
/// as a job of a batch in another slot carries it in its options ([`crate::BatchRef`]).
pub(crate) fn with_batch_field(mut options: Value, batch: Option<&String>) -> Value {
    let at = batch.and_then(|b| b.len().checked_sub(crate::job_id::TEXT_LEN + 1));
    if let (Some(b), Some(at), Value::Object(o)) = (batch, at, &mut options) {
        if b.as_bytes()[at] == b'|' {
            o.insert(
                "batch".to_string(),
                serde_json::json!({ "queue": &b[..at], "id": &b[at + 1..] }),
            );
        }
    }
    options
}

/// A stored JSON field: None when absent; when it does not parse, None and the error noted.
fn json_field(
    id: JobId,
    map: &HashMap<String, String>,
    k: &str,
    unreadable: &mut Option<Error>,
) -> Option<Value> {
    match serde_json::from_str(map.get(k)?) {
        Ok(v) => Some(v),
        Err(e) => {
            unreadable.get_or_insert_with(|| unreadable_error(id, k, e));
            None
        }
    }
}

fn num<T: std::str::FromStr>(map: &HashMap<String, String>, k: &str) -> Option<T> {
    map.get(k).and_then(|s| s.parse().ok())
}

impl Job {
    /// The options it was added with, typed (the defaults where [`Job::options`] omits a field).
    /// The record holds only what the core wrote, so this parse does not fail in practice; a
    /// record it cannot read yields the defaults rather than a half-read set.
    pub fn job_options(&self) -> crate::options::JobOptions {
        serde_json::from_value(self.options.clone()).unwrap_or_default()
    }

    /// The W3C trace context it was added in (`core/src/trace.rs`), if any: what a binding's
    /// consumer span links to (or starts under).
    pub fn trace(&self) -> Option<crate::trace::TraceContext> {
        self.options
            .get("trace")
            .and_then(|t| serde_json::from_value(t.clone()).ok())
    }

    /// Builds a job from its record's fields.
    pub(crate) fn from_record(
        id: JobId,
        state: Option<JobState>,
        map: HashMap<String, String>,
    ) -> Job {
        let mut bad = None;
        Job {
            id,
            name: map.get("name").cloned().unwrap_or_default(),
            data: json_field(id, &map, "data", &mut bad).unwrap_or(Value::Null),
            state,
            attempts_made: num(&map, "atts").unwrap_or(0),
            attempts: num(&map, "attempts").unwrap_or(1),
            stalls: num(&map, "stalls").unwrap_or(0),
            priority: num(&map, "priority").unwrap_or(0),
            created_ms: num(&map, "created_ms").unwrap_or(0),
            processed_ms: num(&map, "processed_ms"),
            finished_ms: num(&map, "finished_ms"),
            progress: json_field(id, &map, "progress", &mut bad),
            result: json_field(id, &map, "result", &mut bad),
            failure: map
                .get("failure")
                .and_then(|s| serde_json::from_str(s).ok()),
            options: with_batch_field(
                json_field(id, &map, "opts", &mut bad)
                    .unwrap_or_else(|| Value::Object(Default::default())),
                map.get("batch"),
            ),
            dedup: map.get("dedup").filter(|d| !d.is_empty()).cloned(),
            parent: map.get("parent").filter(|d| !d.is_empty()).cloned(),
            unreadable: bad,
            cancelled: map.get("cancel").cloned(),
            strands: num(&map, "strands").unwrap_or(0),
            pending: num(&map, "pending").unwrap_or(0),
        }
    }

    /// The job, or `invalid_payload` when one of its stored JSON fields could not be parsed
    /// (written by an emq that did not check payloads): a reader never sees such a field as `null`.
    pub fn readable(self) -> Result<Job> {
        match self.unreadable {
            Some(e) => Err(e),
            None => Ok(self),
        }
    }

    /// The job as read, or (unless `as_stored`, for operator views that show a broken job) the
    /// error of a stored field that could not be read.
    pub(crate) fn readable_unless(self, as_stored: bool) -> Result<Job> {
        if as_stored {
            Ok(self)
        } else {
            self.readable()
        }
    }

    /// Why a stored JSON field of this job could not be read, if one could not.
    pub fn unreadable(&self) -> Option<&Error> {
        self.unreadable.as_ref()
    }

    /// The job as one JSON object (for bindings and the CLI).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// Number of jobs per state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
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

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(levels: usize) -> String {
        format!("{}1{}", "[".repeat(levels), "]".repeat(levels))
    }

    #[test]
    fn depth_127_is_accepted_and_128_refused() {
        let v = payload_from_text("p", &nested(127)).unwrap();
        check_payload("p", &v).unwrap();
        // What a reader does with the stored text: it parses back to the same value.
        let back: Value = serde_json::from_str(&serde_json::to_string(&v).unwrap()).unwrap();
        assert_eq!(back, v);
        let e = payload_from_text("p", &nested(128)).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidPayload);
        assert!(e.message().contains("127"), "{e}");
        // A Value built in Rust (no parser involved) is checked by depth too.
        let mut deep = Value::from(1);
        for _ in 0..128 {
            deep = Value::Array(vec![deep]);
        }
        assert_eq!(
            check_payload("p", &deep).unwrap_err().code(),
            ErrorCode::InvalidPayload
        );
        let mut objects = serde_json::json!({"a": 1});
        for _ in 0..126 {
            objects = serde_json::json!({ "a": objects });
        }
        check_payload("p", &objects).unwrap();
        check_payload("p", &serde_json::json!({ "a": objects })).unwrap_err();
    }

    #[test]
    fn lone_surrogates_are_refused_and_pairs_kept() {
        for bad in [r#""\ud800""#, r#"{"a":"x\udc00"}"#, r#"["\ud800x"]"#] {
            let e = payload_from_text("p", bad).unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidPayload, "{bad}");
        }
        assert_eq!(
            payload_from_text("p", r#""\ud83d\ude00""#).unwrap(),
            Value::from("😀")
        );
    }

    #[test]
    fn integers_beyond_64_bits_are_refused() {
        for bad in [
            "1180591620717411303424",
            "[1, -9223372036854775809]",
            r#"{"n": 18446744073709551616}"#,
        ] {
            let e = payload_from_text("p", bad).unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidPayload, "{bad}");
            assert!(e.message().contains("64 bits"), "{e}");
        }
        for ok in [
            "18446744073709551615",
            "-9223372036854775808",
            "1.5e300",
            "1180591620717411303424.0",
            r#""1180591620717411303424""#,
            r#"{"k\"123456789012345678901234": "\\"}"#,
        ] {
            payload_from_text("p", ok).unwrap();
        }
        assert_eq!(
            payload_from_text("p", "1e400").unwrap_err().code(),
            ErrorCode::InvalidPayload
        );
    }

    #[test]
    fn floats_read_back_exactly() {
        // Without serde_json's float_roundtrip this parsed one ulp off (a Node payload of 2**70).
        for f in [
            2f64.powi(70),
            0.1,
            1.0 / 3.0,
            5e-324,
            1.7976931348623157e308,
        ] {
            let text = serde_json::to_string(&serde_json::json!([f])).unwrap();
            let back = payload_from_text("p", &text).unwrap();
            assert_eq!(back[0].as_f64().unwrap().to_bits(), f.to_bits(), "{text}");
        }
        let js = payload_from_text("p", "1.1805916207174113e+21").unwrap();
        assert_eq!(js.as_f64(), Some(2f64.powi(70)));
    }

    #[test]
    fn an_unreadable_stored_field_is_an_error_not_null() {
        let id = JobId::from_parts(1_700_000_000_000, 3, 7);
        let mut map = HashMap::new();
        map.insert("name".to_string(), "x".to_string());
        map.insert("data".to_string(), nested(200));
        let job = Job::from_record(id, None, map.clone());
        assert_eq!(
            job.unreadable().map(Error::code),
            Some(ErrorCode::InvalidPayload)
        );
        assert_eq!(
            job.readable().unwrap_err().code(),
            ErrorCode::InvalidPayload
        );
        map.insert("data".to_string(), "[1]".to_string());
        assert_eq!(
            Job::from_record(id, None, map).readable().unwrap().data,
            serde_json::json!([1])
        );
    }
}
