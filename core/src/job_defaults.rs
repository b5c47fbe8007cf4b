//! [`JobDefaults`]: a queue's defaults for the options most of its jobs share — attempts, backoff,
//! jitter and retention (BullMQ's `defaultJobOptions`) — stored once, in the queue's `meta` hash
//! (field `defaults`, the JSON of this type), instead of in every job's record: a job that leaves
//! one of these options at its built-in default (attempts 1, no backoff, no jitter, kept under the
//! queue's retention) gets the queue's default when it runs, so the common job carries no
//! options at all (bench/RESULTS.md, "Memory per waiting job with the options users set").
//!
//! Where they apply: a worker reads the defaults before its first claim and every
//! [`DEFAULTS_REFRESH`] after (`worker/maintenance.rs`), and fills them into each job as it starts
//! (`JobFill::apply`): the handler sees them in `job.attempts` and the job's options, and
//! the job's retry, backoff and retention follow them (`fail.lua` takes the attempts the worker
//! applied when the record stores none). Changing the defaults changes them for the jobs already
//! waiting; a worker sees a change within [`DEFAULTS_REFRESH`]. [`Queue::get`] shows a job's
//! record as stored (its own options only).
//!
//! A job's own option wins, but only where it differs from the built-in default: a job added with
//! `attempts: 1` on a queue whose default is 3 gets 3 (a record stores only what differs from the
//! built-in defaults, so the two cannot be told apart).

use crate::job::Job;
use crate::options::{Backoff, Removal, Retention};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;

/// How often a running worker reads its queue's defaults again.
pub const DEFAULTS_REFRESH: Duration = Duration::from_secs(2);

/// The `meta` field that holds a queue's defaults (JSON).
pub(crate) const FIELD: &str = "defaults";

/// A queue's defaults (each `None`: the built-in default). Serialised as the same fields of a
/// job's stored options, so `JobFill::apply` fills them in as a job's own.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JobDefaults {
    /// Most attempts (at least 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempts: Option<u32>,
    /// Wait between attempts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backoff: Option<Backoff>,
    /// Fraction (0..=1) of each backoff taken off at random.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jitter: Option<f64>,
    /// What becomes of a job's record once it completes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remove_on_complete: Option<Removal>,
    /// The same once it finally fails.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remove_on_fail: Option<Removal>,
}

impl JobDefaults {
    /// The options a queue default can be given for (a binding's unknown-option error lists them).
    pub const FIELDS: &'static [&'static str] = &[
        "attempts",
        "backoff",
        "jitter",
        "remove_on_complete",
        "remove_on_fail",
    ];

    /// Whether no default is set.
    pub fn is_empty(&self) -> bool {
        *self == JobDefaults::default()
    }

    /// The defaults as a job's stored options show them (JSON; `{}` for none): what the bindings
    /// return from `job_defaults()`.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or_else(|_| Value::Object(Default::default()))
    }

    /// The defaults in the form a binding passes them (`attempts`, `backoff: {type, delay, max}`,
    /// `jitter`, `remove_on_complete` / `remove_on_fail`: `true`, `false` or `{count, age}`), each
    /// duration in ms, or in seconds when `seconds` (Python): what `job_defaults()` returns, so
    /// that what was set reads back as it was given.
    pub fn spec_json(&self, seconds: bool) -> Value {
        let t = |ms: u64| -> Value {
            if seconds {
                serde_json::json!(ms as f64 / 1000.0)
            } else {
                serde_json::json!(ms)
            }
        };
        let removal = |r: Removal| -> Value {
            match r {
                Removal::Keep => Value::Bool(false),
                Removal::Now => Value::Bool(true),
                Removal::Within(Retention {
                    count: Some(c),
                    age_ms: None,
                }) => c.into(),
                Removal::Within(k) => {
                    let mut m = serde_json::Map::new();
                    if let Some(c) = k.count {
                        m.insert("count".into(), c.into());
                    }
                    if let Some(a) = k.age_ms {
                        m.insert("age".into(), t(a));
                    }
                    Value::Object(m)
                }
            }
        };
        let mut out = serde_json::Map::new();
        if let Some(a) = self.attempts {
            out.insert("attempts".into(), a.into());
        }
        if let Some(b) = self.backoff {
            out.insert(
                "backoff".into(),
                match b {
                    Backoff::None => serde_json::json!({"type": "none"}),
                    Backoff::Fixed { delay_ms } => {
                        serde_json::json!({"type": "fixed", "delay": t(delay_ms)})
                    }
                    Backoff::Exponential {
                        delay_ms,
                        max_ms: 0,
                    } => {
                        serde_json::json!({"type": "exponential", "delay": t(delay_ms)})
                    }
                    Backoff::Exponential { delay_ms, max_ms } => serde_json::json!({
                        "type": "exponential", "delay": t(delay_ms), "max": t(max_ms)
                    }),
                },
            );
        }
        if let Some(j) = self.jitter {
            out.insert("jitter".into(), j.into());
        }
        if let Some(r) = self.remove_on_complete {
            out.insert("remove_on_complete".into(), removal(r));
        }
        if let Some(r) = self.remove_on_fail {
            out.insert("remove_on_fail".into(), removal(r));
        }
        Value::Object(out)
    }

    /// Reads the defaults stored in `meta` (none stored, or a field this build cannot read: none).
    pub(crate) fn parse(text: Option<&str>) -> JobDefaults {
        text.and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or_default()
    }
}

/// Defaults ready to fill into jobs (made once per read of the defaults, not per job): the
/// attempts, and the other options as the fields of a job's stored options.
#[derive(Debug, Default)]
pub(crate) struct JobFill {
    attempts: Option<u32>,
    fields: serde_json::Map<String, Value>,
}

impl From<&JobDefaults> for JobFill {
    fn from(d: &JobDefaults) -> JobFill {
        let Value::Object(mut fields) = d.to_json() else {
            return JobFill::default();
        };
        fields.remove("attempts");
        JobFill {
            attempts: d.attempts,
            fields,
        }
    }
}

impl JobFill {
    /// Fills the defaults into a job about to run, where the job left the option at its
    /// built-in default.
    pub(crate) fn apply(&self, job: &mut Job) {
        if let (Some(a), 1) = (self.attempts, job.attempts) {
            job.attempts = a;
        }
        if self.fields.is_empty() {
            return;
        }
        if !job.options.is_object() {
            job.options = Value::Object(Default::default());
        }
        if let Value::Object(own) = &mut job.options {
            for (k, v) in &self.fields {
                own.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(options: Value, attempts: u32) -> Job {
        let mut map = std::collections::HashMap::new();
        map.insert("name".to_string(), "j".to_string());
        map.insert("data".to_string(), "1".to_string());
        map.insert("opts".to_string(), options.to_string());
        map.insert("attempts".to_string(), attempts.to_string());
        Job::from_record(crate::JobId::from_parts(1_700_000_000_000, 3, 7), None, map)
    }

    #[test]
    fn a_job_gets_the_defaults_it_left_at_the_built_in_ones() {
        let d = JobDefaults {
            attempts: Some(3),
            backoff: Some(Backoff::Fixed { delay_ms: 500 }),
            remove_on_complete: Some(Removal::Now),
            ..Default::default()
        };
        let mut plain = job(serde_json::json!({}), 1);
        JobFill::from(&d).apply(&mut plain);
        assert_eq!(plain.attempts, 3);
        let o = plain.job_options();
        assert_eq!(o.backoff, Backoff::Fixed { delay_ms: 500 });
        assert_eq!(o.remove_on_complete, Removal::Now);
        assert_eq!(o.remove_on_fail, Removal::Keep);

        let mut own = job(
            serde_json::json!({"backoff": {"type": "none"}, "remove_on_complete": false}),
            5,
        );
        JobFill::from(&d).apply(&mut own);
        assert_eq!(own.attempts, 5, "the job's own attempts");
        assert_eq!(own.job_options().backoff, Backoff::None, "its own backoff");
    }
}
