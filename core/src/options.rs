//! Job options and their validation: the one place a binding's numbers become durations and limits;
//! also the worker options' order between queues ([`QueueOrder`]) and the group-name check, which
//! options, workers and groups all use (so none of them imports the others for it).

use crate::error::{Error, ErrorCode, Result};
use crate::job_id::JobId;
use serde::{Deserialize, Serialize};
use std::time::Duration;

pub use crate::retention::{Removal, Retention};
pub use crate::worker_options::{
    worker_bounds, QueueOrder, WorkerOptions, MAX_QUEUE_WEIGHT, PREFETCH_MAX_JOB,
};

/// How long to wait before a failed job's next attempt.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Backoff {
    /// Retry at once.
    None,
    /// The same wait before every retry.
    Fixed {
        /// Wait in ms.
        delay_ms: u64,
    },
    /// `delay * 2^(attempt-1)`, capped.
    Exponential {
        /// First wait in ms.
        delay_ms: u64,
        /// Largest wait in ms (0: no cap).
        max_ms: u64,
    },
}

impl Backoff {
    /// The wait before the retry that follows `attempts_made` attempts, with up to `jitter` (0..=1)
    /// of it taken off at random.
    pub fn delay(&self, attempts_made: u32, jitter: f64) -> Duration {
        let base = match *self {
            Backoff::None => 0,
            Backoff::Fixed { delay_ms } => delay_ms,
            Backoff::Exponential { delay_ms, max_ms } => {
                let exp = attempts_made.saturating_sub(1).min(40);
                let d = delay_ms.saturating_mul(1u64 << exp);
                if max_ms > 0 {
                    d.min(max_ms)
                } else {
                    d
                }
            }
        };
        let cut = if jitter > 0.0 {
            (base as f64 * jitter * rand::random::<f64>()) as u64
        } else {
            0
        };
        Duration::from_millis(base - cut.min(base))
    }
}

/// Options of one job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct JobOptions {
    /// Use this id (minted earlier by this or another process) instead of minting one: adding the
    /// same id twice adds one job.
    #[serde(skip)]
    pub id: Option<JobId>,
    /// Run no sooner than this after the server receives the job.
    pub delay_ms: u64,
    /// 0 for none; otherwise lower numbers run first (1 is the most urgent), and run before every
    /// job without a priority. The job keeps it whenever it is ready again: once its delay or
    /// backoff ends, after a stall or a release on close, on a manual retry or promote.
    pub priority: u32,
    /// Run before the jobs already waiting.
    pub lifo: bool,
    /// Most attempts (at least 1).
    pub attempts: u32,
    /// Wait between attempts.
    pub backoff: Backoff,
    /// Fraction (0..=1) of each backoff taken off at random, to spread retries.
    pub jitter: f64,
    /// Lease length for this job (0: the worker's).
    pub lease_ms: u64,
    /// Time limit for one run of the handler (0: none).
    pub timeout_ms: u64,
    /// What becomes of the job's record once it completes: kept under the queue's retention
    /// (the default), deleted at once, or kept within this job's own retention.
    pub remove_on_complete: Removal,
    /// The same once the job finally fails.
    pub remove_on_fail: Removal,
    /// While a job with this key is waiting or active, adding another returns the first one's id.
    /// It is data (a field of the queue's dedup hash), never a key.
    pub dedup: Option<String>,
    /// With `dedup` and `delay_ms`: when the holder of the key is still delayed, replace its data
    /// and push its due time to now + `delay_ms` (debounce) instead of dropping the new job.
    pub debounce: bool,
    /// With `dedup`: hold the key for this long after the add, whatever becomes of the job (0: while
    /// the job is waiting or active).
    pub dedup_ttl_ms: u64,
    /// In a flow: what this job's final failure does to its parent.
    pub parent_policy: ParentPolicy,
    /// The job's group (a tenant, a customer): groups take turns (fair groups, `core/src/groups.rs`:
    /// weights, per-group concurrency, a cap on waiting jobs, pause), and the per-group rate limit
    /// (`Queue::set_group_rate_limit`) counts each group on its own. 1 to 256 bytes, no NUL. It is
    /// data (members and fields of the queue's group containers), never a key.
    pub group: Option<String>,
    /// Words for people about this job (up to [`MAX_DESCRIPTION`] bytes): stored with its options,
    /// shown by `emq job` and the dashboard, never read by emq itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The queue this job moves to, as a new job waiting there, once it fails for good (its
    /// attempts used, unrecoverable, or stalled too often); None: the queue's own dead-letter
    /// queue ([`crate::Queue::set_dead_letter`]), if any, else it stays in failed. A queue name,
    /// not this job's own queue. See `core/src/dead_letter.rs`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dead_letter: Option<String>,
    /// The W3C trace context of the code that added the job (`core/src/trace.rs`): kept in the
    /// record with the other options, through every retry, and read by the bindings' consumer
    /// spans. None: the job belongs to no trace (and costs nothing for it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<crate::trace::TraceContext>,
    /// Written by emq alone, on the copy a dead-letter move adds: where the job failed. Bindings
    /// never set it (no spec field); read it with [`crate::Job::dead_letter_origin`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dead_lettered: Option<DeadLetterOrigin>,
    /// Written by emq alone, on a job added through a batch ([`crate::batch::Batch::add`]): the
    /// batch it belongs to. Bindings never set it (no spec field); read it with
    /// [`crate::Job::batch_ref`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch: Option<crate::batch::marks::BatchRef>,
    /// Written by emq alone, on a batch's callback job: the batch and its counts when the callback
    /// fell due ([`crate::batch::BatchDone`]). Read it with [`crate::Job::batch_done`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch_done: Option<crate::batch::marks::BatchDone>,
}

/// Where a dead-lettered job came from: its queue, its id there, the attempts it made and its last
/// failure (`{code, message, stack}`), and the options it had (what a replay adds it back with).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeadLetterOrigin {
    /// The queue it failed in.
    pub queue: String,
    /// Its id there (a replay adds it back under this id).
    pub id: String,
    /// The attempts it made there.
    pub attempts_made: u32,
    /// The stalls it had there.
    #[serde(default)]
    pub stalls: u32,
    /// Its last failure, as the record stored it: `{code, message, stack}`.
    pub failure: serde_json::Value,
    /// When it failed for good (server ms).
    pub failed_ms: u64,
    /// Its options there, as stored (non-default ones only).
    pub options: serde_json::Value,
}

/// Longest job description, in bytes.
pub const MAX_DESCRIPTION: usize = 1_024;

/// What a child's final failure does to its parent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Enum))]
#[serde(rename_all = "snake_case")]
pub enum ParentPolicy {
    /// The parent fails.
    #[default]
    Fail,
    /// The child counts as done; its failure is recorded for the parent to read.
    Ignore,
    /// The dependency is dropped.
    Remove,
}

impl ParentPolicy {
    /// The policy of its name (`"fail"`, `"ignore"`, `"remove"`), or `invalid_option`.
    pub fn parse(name: &str) -> Result<ParentPolicy> {
        match name {
            "fail" => Ok(ParentPolicy::Fail),
            "ignore" => Ok(ParentPolicy::Ignore),
            "remove" => Ok(ParentPolicy::Remove),
            other => Err(invalid(format!(
                "parent_policy must be \"fail\", \"ignore\" or \"remove\", got {other:?}"
            ))),
        }
    }

    /// The name the scripts use.
    pub fn as_str(self) -> &'static str {
        match self {
            ParentPolicy::Fail => "fail",
            ParentPolicy::Ignore => "ignore",
            ParentPolicy::Remove => "remove",
        }
    }
}

impl Default for JobOptions {
    fn default() -> JobOptions {
        JobOptions {
            id: None,
            delay_ms: 0,
            priority: 0,
            lifo: false,
            attempts: 1,
            backoff: Backoff::None,
            jitter: 0.0,
            lease_ms: 0,
            timeout_ms: 0,
            remove_on_complete: Removal::Keep,
            remove_on_fail: Removal::Keep,
            dedup: None,
            debounce: false,
            dedup_ttl_ms: 0,
            parent_policy: ParentPolicy::Fail,
            group: None,
            description: None,
            dead_letter: None,
            dead_lettered: None,
            batch: None,
            batch_done: None,
            trace: None,
        }
    }
}

/// The largest priority (so that priority and order fit a ZSET score exactly).
pub const MAX_PRIORITY: u32 = 2_097_151;

fn invalid(msg: String) -> Error {
    Error::new(ErrorCode::InvalidOption, msg)
}

impl JobOptions {
    /// The options that differ from the defaults, as a JSON object (what a job record stores, so
    /// that small records stay in Redis's compact hash encoding).
    pub fn compact_json(&self) -> String {
        static DEFAULTS: std::sync::OnceLock<(JobOptions, serde_json::Value)> =
            std::sync::OnceLock::new();
        let (default, base) = DEFAULTS.get_or_init(|| {
            let d = JobOptions::default();
            let v = serde_json::to_value(&d).unwrap_or(serde_json::Value::Null);
            (d, v)
        });
        if self == default {
            return "{}".into();
        }
        let full = serde_json::to_value(self).unwrap_or(serde_json::Value::Null);
        let mut out = serde_json::Map::new();
        if let (Some(f), Some(b)) = (full.as_object(), base.as_object()) {
            for (k, v) in f {
                if b.get(k) != Some(v) {
                    out.insert(k.clone(), v.clone());
                }
            }
        }
        serde_json::Value::Object(out).to_string()
    }

    /// Checks every option; bindings call [`millis`] first for their own number types.
    pub fn validate(&self) -> Result<()> {
        if self.attempts == 0 {
            return Err(invalid("attempts must be at least 1".into()));
        }
        if self.priority > MAX_PRIORITY {
            return Err(invalid(format!("priority must be at most {MAX_PRIORITY}")));
        }
        if !(0.0..=1.0).contains(&self.jitter) {
            return Err(invalid(format!(
                "jitter must be between 0 and 1, got {}",
                self.jitter
            )));
        }
        if self.dedup_ttl_ms > 0 && self.dedup.is_none() {
            return Err(invalid("dedup_ttl_ms needs a dedup key".into()));
        }
        if self.debounce && (self.dedup.is_none() || self.delay_ms == 0) {
            return Err(invalid("debounce needs a dedup key and a delay".into()));
        }
        if let Some(g) = &self.group {
            check_group_name(g)?;
        }
        if self
            .description
            .as_ref()
            .is_some_and(|d| d.len() > MAX_DESCRIPTION)
        {
            return Err(invalid(format!(
                "description must be at most {MAX_DESCRIPTION} bytes"
            )));
        }
        if let Some(d) = &self.dedup {
            if d.is_empty() || d.len() > 512 {
                return Err(invalid("dedup must be 1 to 512 bytes".into()));
            }
        }
        if let Some(q) = &self.dead_letter {
            check_dead_letter(q)?;
        }
        if let Some(t) = &self.trace {
            t.validate()?;
        }
        Ok(())
    }
}

/// Checks a dead-letter queue's name (a job's `dead_letter` option or a queue's default): a queue
/// name, else `invalid_queue_name` saying which option it was.
pub fn check_dead_letter(name: &str) -> Result<crate::keyspace::QueueName> {
    crate::keyspace::QueueName::new(name)
        .map_err(|e| Error::new(e.code(), format!("dead_letter: {}", e.message())))
}

/// The refusal of a dead-letter queue that is the job's own queue.
pub(crate) fn own_dead_letter() -> Error {
    Error::new(
        ErrorCode::InvalidOption,
        "dead_letter names the job's own queue: a dead-letter queue must be another queue",
    )
}

/// `invalid_option` when a job's `dead_letter` names `queue`, the queue it is added to.
pub(crate) fn check_dead_letter_not_own(
    queue: &crate::keyspace::QueueName,
    options: &JobOptions,
) -> Result<()> {
    match &options.dead_letter {
        Some(d) if check_dead_letter(d)? == *queue => Err(own_dead_letter()),
        _ => Ok(()),
    }
}

/// Converts a binding's duration in milliseconds (a float, possibly negative or NaN) into whole
/// milliseconds, or an `invalid_option` error naming the option.
pub fn millis(what: &str, ms: f64) -> Result<u64> {
    if !ms.is_finite() || ms < 0.0 {
        return Err(invalid(format!(
            "{what} must be a finite, non-negative duration, got {ms}"
        )));
    }
    if ms > 1e15 {
        return Err(invalid(format!(
            "{what} is too large: {ms} ms (at most 1000000000000000 ms, about 31,700 years)"
        )));
    }
    Ok(ms.round() as u64)
}

/// Most bytes in a group name.
pub const MAX_GROUP_NAME: usize = 256;

/// Refuses a group name the keyspace cannot hold: empty, over [`MAX_GROUP_NAME`] bytes, or with a
/// NUL byte (the separator inside the `group-ready` members).
pub fn check_group_name(group: &str) -> Result<()> {
    if group.is_empty() || group.len() > MAX_GROUP_NAME {
        return Err(Error::new(
            ErrorCode::InvalidOption,
            format!("group must be 1 to {MAX_GROUP_NAME} bytes"),
        ));
    }
    if group.contains('\0') {
        return Err(Error::new(
            ErrorCode::InvalidOption,
            "group must not contain a NUL character",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_and_millis() {
        assert!(JobOptions::default().validate().is_ok());
        let zero = JobOptions {
            attempts: 0,
            ..Default::default()
        };
        assert_eq!(
            zero.validate().unwrap_err().code(),
            ErrorCode::InvalidOption
        );
        assert_eq!(
            millis("delay", -1.0).unwrap_err().code(),
            ErrorCode::InvalidOption
        );
        assert!(millis("delay", f64::NAN).is_err());
        assert_eq!(millis("delay", 1.6).unwrap(), 2);
    }

    #[test]
    fn worker_options_hold_their_bounds() {
        assert!(WorkerOptions::default().validate().is_ok());
        let bad = [
            (
                "concurrency",
                WorkerOptions {
                    concurrency: 0,
                    ..Default::default()
                },
            ),
            (
                "concurrency",
                WorkerOptions {
                    concurrency: 1_000_000_000,
                    ..Default::default()
                },
            ),
            (
                "lease",
                WorkerOptions {
                    lease: Duration::ZERO,
                    ..Default::default()
                },
            ),
            (
                "stalled_interval",
                WorkerOptions {
                    stalled_interval: Duration::ZERO,
                    ..Default::default()
                },
            ),
            (
                "block_timeout",
                WorkerOptions {
                    block_timeout: Duration::ZERO,
                    ..Default::default()
                },
            ),
            (
                "trim_interval",
                WorkerOptions {
                    trim_interval: Duration::from_millis(1),
                    ..Default::default()
                },
            ),
            (
                "max_stalls",
                WorkerOptions {
                    max_stalls: u32::MAX,
                    ..Default::default()
                },
            ),
            (
                "prefetch",
                WorkerOptions {
                    prefetch: Some(usize::MAX),
                    ..Default::default()
                },
            ),
        ];
        for (what, opts) in bad {
            let e = opts.validate().unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidOption, "{what}");
            assert!(e.message().starts_with(what), "{what}: {}", e.message());
        }
    }

    #[test]
    fn backoff_grows_and_caps() {
        let b = Backoff::Exponential {
            delay_ms: 100,
            max_ms: 1_000,
        };
        assert_eq!(b.delay(1, 0.0).as_millis(), 100);
        assert_eq!(b.delay(3, 0.0).as_millis(), 400);
        assert_eq!(b.delay(10, 0.0).as_millis(), 1_000);
        let j = b.delay(3, 0.5).as_millis();
        assert!((200..=400).contains(&j));
    }
}
