//! Job options (the core's `JobOptions`, `Backoff`, per-job retention), a bulk add's `NewJob` and
//! a rate limit: Kotlin/Swift records filled into the core's spec types (`emq::spec`), which
//! check every value. (Mirrors, not the core's types: they take durations as `f64` milliseconds
//! for the core to check, and `JobOptions` has the Kotlin/Swift defaults and field names.)
//! `ParentPolicy` is the core's own enum, exported through its `uniffi` feature.

use crate::error::EmqException;
use emq::spec::{BackoffSpec, JobSpec, Millis, RateLimitSpec, RemovalSpec, RetentionSpec};
pub use emq::ParentPolicy;

/// How long to wait before a failed job's next attempt (the core's `Backoff`; no backoff, retrying
/// at once, is a null `backoff` option). Durations in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, uniffi::Enum)]
pub enum Backoff {
    /// The same wait before every retry.
    Fixed { delay_ms: f64 },
    /// `delay_ms * 2^(attempt-1)`, capped at `max_ms` (0: no cap).
    Exponential { delay_ms: f64, max_ms: f64 },
}

impl Backoff {
    pub(crate) fn to_spec(self) -> BackoffSpec {
        match self {
            Backoff::Fixed { delay_ms } => BackoffSpec {
                kind: "fixed".into(),
                delay: Some(Millis(delay_ms)),
                max: None,
            },
            Backoff::Exponential { delay_ms, max_ms } => BackoffSpec {
                kind: "exponential".into(),
                delay: Some(Millis(delay_ms)),
                max: Some(Millis(max_ms)),
            },
        }
    }

    pub(crate) fn from_core(b: emq::Backoff) -> Option<Backoff> {
        match b {
            emq::Backoff::None => None,
            emq::Backoff::Fixed { delay_ms } => Some(Backoff::Fixed {
                delay_ms: delay_ms as f64,
            }),
            emq::Backoff::Exponential { delay_ms, max_ms } => Some(Backoff::Exponential {
                delay_ms: delay_ms as f64,
                max_ms: max_ms as f64,
            }),
        }
    }
}

/// A retention: keep at most `count` finished jobs, none older than `age_ms` (a null field is no
/// limit; one of them is needed).
#[derive(Debug, Clone, Copy, PartialEq, uniffi::Record)]
pub struct Retention {
    #[uniffi(default = None)]
    pub count: Option<u64>,
    #[uniffi(default = None)]
    pub age_ms: Option<f64>,
}

impl Retention {
    pub(crate) fn to_spec(self) -> RemovalSpec {
        RemovalSpec::Limits(RetentionSpec {
            count: self.count.map(|c| c as f64),
            age: self.age_ms.map(Millis),
        })
    }

    fn from_core(r: emq::Retention) -> Retention {
        Retention {
            count: r.count,
            age_ms: r.age_ms.map(|a| a as f64),
        }
    }
}

/// Options of one job: the core's `JobOptions`, field for field. Durations are milliseconds
/// (`Double`); every value is checked by the core.
#[derive(Debug, Clone, PartialEq, uniffi::Record)]
pub struct JobOptions {
    /// Run no sooner than this after the server receives the job.
    #[uniffi(default = 0.0)]
    pub delay_ms: f64,
    /// 0 for none; otherwise lower numbers run first (1 is the most urgent).
    #[uniffi(default = 0)]
    pub priority: i32,
    /// Most attempts (at least 1).
    #[uniffi(default = 1)]
    pub attempts: i32,
    /// Wait between attempts; null retries at once.
    #[uniffi(default = None)]
    pub backoff: Option<Backoff>,
    /// Fraction (0..=1) of each backoff taken off at random, to spread retries.
    #[uniffi(default = 0.0)]
    pub jitter: f64,
    /// Lease length for this job (0: the worker's).
    #[uniffi(default = 0.0)]
    pub lease_ms: f64,
    /// Run before the jobs already waiting.
    #[uniffi(default = false)]
    pub lifo: bool,
    /// Delete the job as soon as it completes.
    #[uniffi(default = false)]
    pub remove_on_complete: bool,
    /// Delete the job as soon as it finally fails.
    #[uniffi(default = false)]
    pub remove_on_fail: bool,
    /// Keep the job when it completes, and the queue's completed jobs within this (BullMQ's
    /// `removeOnComplete: {count, age}`; the latest job's wins). Null: the worker's retention.
    #[uniffi(default = None)]
    pub keep_completed: Option<Retention>,
    /// As `keep_completed`, for jobs that finally failed.
    #[uniffi(default = None)]
    pub keep_failed: Option<Retention>,
    /// Time limit for one run of the handler (0: none).
    #[uniffi(default = 0.0)]
    pub timeout_ms: f64,
    /// While a job with this key is waiting or active (or for `dedup_ttl_ms`), adding another
    /// returns the first one's id. Data, never a key name.
    #[uniffi(default = None)]
    pub dedup: Option<String>,
    /// With `dedup` and `delay_ms`: when the holder of the key is still delayed, replace its data
    /// and push its due time to now + `delay_ms` instead of dropping the new job.
    #[uniffi(default = false)]
    pub debounce: bool,
    /// With `dedup`: hold the key this long after the add, whatever becomes of the job (0: while
    /// the job lives).
    #[uniffi(default = 0.0)]
    pub dedup_ttl_ms: f64,
    /// In a flow: what this job's final failure does to its parent (null: `Fail`).
    #[uniffi(default = None)]
    pub parent_policy: Option<ParentPolicy>,
    /// The job's group for the queue's per-group rate limit.
    #[uniffi(default = None)]
    pub group: Option<String>,
    /// Words for people about this job (at most 1,024 bytes), shown by `emq job` and `emq ui`.
    #[uniffi(default = None)]
    pub description: Option<String>,
    /// The queue this job moves to, as a new waiting job, once it fails for good (null: the
    /// queue's own, `Queue.setDeadLetter`, if any).
    #[uniffi(default = None)]
    pub dead_letter: Option<String>,
    /// The W3C `traceparent` of the span that adds the job (`dev.emq.Tracing` fills it from the
    /// current OpenTelemetry context); kept in the job's record, read by the run's span.
    #[uniffi(default = None)]
    pub traceparent: Option<String>,
    /// The W3C `tracestate` that travels with `traceparent` (needs it).
    #[uniffi(default = None)]
    pub tracestate: Option<String>,
    /// Use this id (from `Queue.mintId()`, in this or another process) instead of minting one:
    /// adding the same id twice adds one job. Read back as null (the id is the record's).
    #[uniffi(default = None)]
    pub id: Option<String>,
}

impl Default for JobOptions {
    fn default() -> JobOptions {
        JobOptions::from(&emq::JobOptions::default())
    }
}

impl From<&emq::JobOptions> for JobOptions {
    /// The core's options as a binding reads them back (`JobRecord.options`); a default parent
    /// policy reads as null, like the default it is.
    fn from(o: &emq::JobOptions) -> JobOptions {
        JobOptions {
            delay_ms: o.delay_ms as f64,
            priority: i32::try_from(o.priority).unwrap_or(i32::MAX),
            attempts: i32::try_from(o.attempts).unwrap_or(i32::MAX),
            backoff: Backoff::from_core(o.backoff),
            jitter: o.jitter,
            lease_ms: o.lease_ms as f64,
            lifo: o.lifo,
            remove_on_complete: o.remove_on_complete.is_now(),
            remove_on_fail: o.remove_on_fail.is_now(),
            keep_completed: o.remove_on_complete.retention().map(Retention::from_core),
            keep_failed: o.remove_on_fail.retention().map(Retention::from_core),
            timeout_ms: o.timeout_ms as f64,
            dedup: o.dedup.clone(),
            debounce: o.debounce,
            dedup_ttl_ms: o.dedup_ttl_ms as f64,
            parent_policy: match o.parent_policy {
                emq::ParentPolicy::Fail => None,
                p => Some(p),
            },
            group: o.group.clone(),
            description: o.description.clone(),
            dead_letter: o.dead_letter.clone(),
            traceparent: o.trace.as_ref().map(|t| t.traceparent.clone()),
            tracestate: o.trace.as_ref().and_then(|t| t.tracestate.clone()),
            id: o.id.map(|id| id.to_string()),
        }
    }
}

/// `remove_on_*` and `keep_*` (two fields of this record for the core's one option).
pub(crate) fn removal(
    what: &str,
    remove: bool,
    keep: Option<Retention>,
) -> Result<Option<RemovalSpec>, EmqException> {
    Ok(match (remove, keep) {
        (false, None) => None,
        (true, None) => Some(RemovalSpec::Flag(true)),
        (false, Some(k)) => Some(k.to_spec()),
        (true, Some(_)) => {
            return Err(crate::error::invalid_option(format!(
                "remove_on_{what} and keep_{what} exclude each other"
            )))
        }
    })
}

impl JobOptions {
    /// The core's options, validated by the core.
    pub fn to_core(&self) -> Result<emq::JobOptions, EmqException> {
        Ok(emq::JobOptions::try_from(self.to_spec()?)?)
    }

    pub(crate) fn to_spec(&self) -> Result<JobSpec, EmqException> {
        Ok(JobSpec {
            id: self.id.clone(),
            delay: Some(Millis(self.delay_ms)),
            priority: Some(self.priority as f64),
            lifo: Some(self.lifo),
            attempts: Some(self.attempts as f64),
            backoff: self.backoff.map(Backoff::to_spec),
            jitter: Some(self.jitter),
            lease: Some(Millis(self.lease_ms)),
            timeout: Some(Millis(self.timeout_ms)),
            remove_on_complete: removal("complete", self.remove_on_complete, self.keep_completed)?,
            remove_on_fail: removal("fail", self.remove_on_fail, self.keep_failed)?,
            dedup: self.dedup.clone(),
            debounce: Some(self.debounce),
            dedup_ttl: Some(Millis(self.dedup_ttl_ms)),
            group: self.group.clone(),
            parent_policy: self.parent_policy.map(|p| p.as_str().to_string()),
            description: self.description.clone(),
            dead_letter: self.dead_letter.clone(),
            traceparent: self.traceparent.clone(),
            tracestate: self.tracestate.clone(),
        })
    }
}

/// Parses JSON text a caller passed in (`invalid_payload` when it is not JSON).
pub(crate) fn json(text: &str) -> Result<serde_json::Value, EmqException> {
    serde_json::from_str(text).map_err(|e| EmqException::from(emq::Error::from(e)))
}

/// One job of a bulk add.
#[derive(Debug, Clone, PartialEq, uniffi::Record)]
pub struct NewJob {
    pub name: String,
    /// The payload as JSON text.
    pub data_json: String,
    #[uniffi(default = None)]
    pub options: Option<JobOptions>,
}

impl NewJob {
    pub(crate) fn to_core(&self) -> Result<emq::NewJob, EmqException> {
        Ok(emq::NewJob {
            name: self.name.clone(),
            data: json(&self.data_json)?,
            options: self.options.clone().unwrap_or_default().to_core()?,
        })
    }
}

/// A rate: at most `max` jobs per `window_ms`.
#[derive(Debug, Clone, PartialEq, uniffi::Record)]
pub struct RateLimit {
    /// Jobs per window (at least 1).
    pub max: u32,
    /// The window in milliseconds (at least 1).
    pub window_ms: f64,
}

impl RateLimit {
    pub(crate) fn to_spec(&self) -> RateLimitSpec {
        RateLimitSpec {
            max: Some(self.max as f64),
            window: Some(Millis(self.window_ms)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use emq::ErrorCode;

    #[test]
    fn options_convert_and_validate() {
        let o = JobOptions {
            delay_ms: 1.6,
            backoff: Some(Backoff::Fixed { delay_ms: 50.0 }),
            attempts: 2,
            ..Default::default()
        }
        .to_core()
        .unwrap();
        assert_eq!(o.delay_ms, 2);
        assert_eq!(o.attempts, 2);
        assert_eq!(o.backoff, emq::Backoff::Fixed { delay_ms: 50 });
        let bad = |o: JobOptions| o.to_core().unwrap_err().error_code();
        for o in [
            JobOptions {
                attempts: 0,
                ..Default::default()
            },
            JobOptions {
                attempts: -1,
                ..Default::default()
            },
            JobOptions {
                priority: -1,
                ..Default::default()
            },
            JobOptions {
                delay_ms: f64::NAN,
                ..Default::default()
            },
            JobOptions {
                backoff: Some(Backoff::Fixed { delay_ms: -5.0 }),
                ..Default::default()
            },
            JobOptions {
                backoff: Some(Backoff::Exponential {
                    delay_ms: 10.0,
                    max_ms: f64::NAN,
                }),
                ..Default::default()
            },
            JobOptions {
                jitter: 1.5,
                ..Default::default()
            },
            JobOptions {
                lease_ms: -1.0,
                ..Default::default()
            },
            JobOptions {
                debounce: true,
                ..Default::default()
            },
        ] {
            assert_eq!(bad(o), ErrorCode::InvalidOption);
        }
    }

    #[test]
    fn a_pre_minted_id_goes_through_the_parser() {
        // The accepted path needs a minted id (QueueTest / WorkerControlTest add with one).
        for text in ["not an id", "", "J0000000000000000"] {
            let bad = JobOptions {
                id: Some(text.into()),
                ..Default::default()
            };
            assert_eq!(
                bad.to_core().unwrap_err().error_code(),
                ErrorCode::InvalidJobId
            );
        }
    }

    #[test]
    fn every_option_round_trips_through_the_core_type() {
        assert_eq!(
            JobOptions::default().to_core().unwrap(),
            emq::JobOptions::default()
        );
        let o = JobOptions {
            delay_ms: 5.0,
            priority: 3,
            attempts: 4,
            backoff: Some(Backoff::Exponential {
                delay_ms: 10.0,
                max_ms: 80.0,
            }),
            jitter: 0.25,
            lease_ms: 2000.0,
            lifo: true,
            remove_on_complete: true,
            remove_on_fail: false,
            keep_completed: None,
            keep_failed: Some(Retention {
                count: Some(10),
                age_ms: Some(5000.0),
            }),
            timeout_ms: 700.0,
            dedup: Some("k".into()),
            debounce: true,
            dedup_ttl_ms: 900.0,
            parent_policy: Some(ParentPolicy::Ignore),
            group: Some("g".into()),
            description: Some("the nightly import of account 7 — ünïcode too".into()),
            dead_letter: Some("imports-dlq".into()),
            traceparent: Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into()),
            tracestate: Some("k=v".into()),
            id: None,
        };
        let core = o.to_core().unwrap();
        assert_eq!(JobOptions::from(&core), o);
        // As the record stores them (the fields that differ from the defaults) and reads them back.
        let stored: emq::JobOptions = serde_json::from_str(&core.compact_json()).unwrap();
        assert_eq!(JobOptions::from(&stored), o);
    }
}
