//! Job options (the core's `JobOptions`, `Backoff`, `ParentPolicy`), a bulk add's `NewJob` and a
//! rate limit, converted into the core's types; the core validates them.

use crate::error::{invalid_option, EmqException};
use std::time::Duration;

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
    pub(crate) fn to_core(self) -> Result<emq::Backoff, EmqException> {
        Ok(match self {
            Backoff::Fixed { delay_ms } => emq::Backoff::Fixed {
                delay_ms: emq::options::millis("backoff.delay_ms", delay_ms)?,
            },
            Backoff::Exponential { delay_ms, max_ms } => emq::Backoff::Exponential {
                delay_ms: emq::options::millis("backoff.delay_ms", delay_ms)?,
                max_ms: emq::options::millis("backoff.max_ms", max_ms)?,
            },
        })
    }

    fn from_core(b: emq::Backoff) -> Option<Backoff> {
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

/// In a flow: what a child's final failure does to its parent (the core's `ParentPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Enum)]
pub enum ParentPolicy {
    /// The parent fails.
    Fail,
    /// The child counts as done; its failure is recorded for the parent to read
    /// (`childrenResults`).
    Ignore,
    /// The dependency is dropped.
    Remove,
}

impl ParentPolicy {
    pub(crate) fn to_core(self) -> emq::ParentPolicy {
        match self {
            ParentPolicy::Fail => emq::ParentPolicy::Fail,
            ParentPolicy::Ignore => emq::ParentPolicy::Ignore,
            ParentPolicy::Remove => emq::ParentPolicy::Remove,
        }
    }

    fn from_core(p: emq::ParentPolicy) -> ParentPolicy {
        match p {
            emq::ParentPolicy::Fail => ParentPolicy::Fail,
            emq::ParentPolicy::Ignore => ParentPolicy::Ignore,
            emq::ParentPolicy::Remove => ParentPolicy::Remove,
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
            remove_on_complete: o.remove_on_complete,
            remove_on_fail: o.remove_on_fail,
            timeout_ms: o.timeout_ms as f64,
            dedup: o.dedup.clone(),
            debounce: o.debounce,
            dedup_ttl_ms: o.dedup_ttl_ms as f64,
            parent_policy: match o.parent_policy {
                emq::ParentPolicy::Fail => None,
                p => Some(ParentPolicy::from_core(p)),
            },
            group: o.group.clone(),
            id: o.id.map(|id| id.to_string()),
        }
    }
}

impl JobOptions {
    /// The core's options, validated by the core.
    pub fn to_core(&self) -> Result<emq::JobOptions, EmqException> {
        let priority = u32::try_from(self.priority)
            .map_err(|_| invalid_option(format!("priority must be >= 0, got {}", self.priority)))?;
        let attempts = u32::try_from(self.attempts)
            .map_err(|_| invalid_option(format!("attempts must be >= 1, got {}", self.attempts)))?;
        let opts = emq::JobOptions {
            delay_ms: emq::options::millis("delay_ms", self.delay_ms)?,
            priority,
            attempts,
            backoff: match self.backoff {
                Some(b) => b.to_core()?,
                None => emq::Backoff::None,
            },
            jitter: self.jitter,
            lease_ms: emq::options::millis("lease_ms", self.lease_ms)?,
            lifo: self.lifo,
            remove_on_complete: self.remove_on_complete,
            remove_on_fail: self.remove_on_fail,
            timeout_ms: emq::options::millis("timeout_ms", self.timeout_ms)?,
            dedup: self.dedup.clone(),
            debounce: self.debounce,
            dedup_ttl_ms: emq::options::millis("dedup_ttl_ms", self.dedup_ttl_ms)?,
            parent_policy: self
                .parent_policy
                .map(ParentPolicy::to_core)
                .unwrap_or_default(),
            group: self.group.clone(),
            id: self.id.as_deref().map(emq::JobId::parse).transpose()?,
        };
        opts.validate()?;
        Ok(opts)
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
    pub(crate) fn to_core(&self) -> Result<emq::RateLimit, EmqException> {
        Ok(emq::RateLimit {
            max: self.max,
            window: Duration::from_millis(emq::options::millis("window_ms", self.window_ms)?),
        })
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
            remove_on_fail: true,
            timeout_ms: 700.0,
            dedup: Some("k".into()),
            debounce: true,
            dedup_ttl_ms: 900.0,
            parent_policy: Some(ParentPolicy::Ignore),
            group: Some("g".into()),
            id: None,
        };
        let core = o.to_core().unwrap();
        assert_eq!(JobOptions::from(&core), o);
        // As the record stores them (the fields that differ from the defaults) and reads them back.
        let stored: emq::JobOptions = serde_json::from_str(&core.compact_json()).unwrap();
        assert_eq!(JobOptions::from(&stored), o);
    }
}
