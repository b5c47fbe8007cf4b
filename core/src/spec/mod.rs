//! Spec types: what a binding (Python, Node, uniffi) or the CLI fills from its language's values,
//! and the one conversion of each into the core's types, with every check.
//!
//! This module owns the *knowledge* of the options a caller passes in: their names, the strings of
//! enum-like values (`"fixed"`, `"exponential"`, `"none"`; `"fail"`, `"ignore"`, `"remove"`),
//! whole-number bounds, the shapes of retention (`true`, a count, `{count, age}`), "exactly one of
//! every/cron", the flow depth cap, the rate-limit pairs. A binding converts units and language
//! values into these types (seconds to [`Millis`], a JS object to a [`JobSpec`]) and maps the
//! error; it matches no option strings and checks no bounds.
//!
//! - Every field is optional: a missing one is the core's default.
//! - Durations are [`Millis`] (a float of milliseconds, as the binding computed it from its own
//!   unit); numbers are `f64` (what JS has; Python and Kotlin ints convert exactly within every
//!   bound), so the core names the option and its bound when a value is out of range.
//! - Errors are `invalid_option` (or `invalid_job_id` for `id`, `invalid_payload` for a payload
//!   that did not serialise), their message naming the option as the core spells it
//!   (`dedup_ttl`, `backoff.delay`).
//! - Each type also deserializes from JSON (Node passes every job's options and moves batches as
//!   JSON text; Python's keyword options cross as one JSON object; the CLI reads JSON), with
//!   snake_case names and, for the multi-word ones, the camelCase alias JavaScript uses; `json.rs`
//!   reads them, naming the field at fault. A binding whose unit is seconds converts a spec read
//!   so with [`JobSpec::from_seconds`], so no binding lists the options.

use crate::error::{Error, ErrorCode, Result};
use crate::flow::FlowJob;
use crate::job_id::JobId;
use crate::limits::{GroupRateLimit, RateLimit};
use crate::options::{millis, Backoff, JobOptions, ParentPolicy, Removal, Retention};
use crate::scheduler::{Repeat, Schedule};

use serde::{Deserialize, Deserializer};
use serde_json::Value;
use std::time::Duration;

mod job_defaults;
mod json;
mod worker;
pub use json::{from_json_text, from_json_value};
pub use worker::WorkerSpec;

fn invalid(msg: impl Into<String>) -> Error {
    Error::new(ErrorCode::InvalidOption, msg)
}

/// The error for an option name a binding does not know (`kind`: "job", "worker", "flow node").
pub fn unknown_option(kind: &str, name: &str, known: &[&str]) -> Error {
    invalid(format!(
        "unknown {kind} option {name:?}; one of {}",
        known.join(", ")
    ))
}

/// A number that must be whole and in `0..=max` (the caller's number, as `f64`).
pub fn whole(what: &str, v: f64, max: u64) -> Result<u64> {
    if !v.is_finite() || v < 0.0 || v.fract() != 0.0 || v > max as f64 {
        return Err(invalid(format!(
            "{what} must be a whole number between 0 and {max}, got {v}"
        )));
    }
    Ok(v as u64)
}

/// Largest count of a retention or a schedule's limit (exact in an `f64`).
pub const MAX_COUNT: u64 = (1 << 53) - 1;

/// Deepest flow (levels below the root).
pub const MAX_FLOW_DEPTH: usize = 32;

/// A duration in milliseconds, as a binding computed it from its language's unit (seconds times
/// 1000 in Python, a JS number as is). It may be fractional, negative, NaN or huge: the core
/// checks it ([`millis`]) and names the option.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Millis(pub f64);

impl<'de> Deserialize<'de> for Millis {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Millis, D::Error> {
        struct Number;
        impl serde::de::Visitor<'_> for Number {
            type Value = Millis;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a duration (a number)")
            }
            fn visit_f64<E>(self, v: f64) -> std::result::Result<Millis, E> {
                Ok(Millis(v))
            }
            fn visit_i64<E>(self, v: i64) -> std::result::Result<Millis, E> {
                Ok(Millis(v as f64))
            }
            fn visit_u64<E>(self, v: u64) -> std::result::Result<Millis, E> {
                Ok(Millis(v as f64))
            }
        }
        d.deserialize_f64(Number)
    }
}

impl Millis {
    /// From seconds.
    pub fn from_secs_f64(s: f64) -> Millis {
        Millis(s * 1000.0)
    }

    /// This number read as seconds (a spec a binding filled in seconds).
    fn secs(self) -> Millis {
        Millis::from_secs_f64(self.0)
    }

    /// Whole milliseconds, or `invalid_option` naming `what`.
    pub fn ms(self, what: &str) -> Result<u64> {
        millis(what, self.0)
    }

    /// As a duration, or `invalid_option` naming `what`.
    pub fn duration(self, what: &str) -> Result<Duration> {
        Ok(Duration::from_millis(self.ms(what)?))
    }
}

impl From<Duration> for Millis {
    fn from(d: Duration) -> Millis {
        Millis(d.as_secs_f64() * 1000.0)
    }
}

fn opt_ms(what: &str, v: Option<Millis>) -> Result<Option<u64>> {
    v.map(|m| m.ms(what)).transpose()
}

fn opt_dur(what: &str, v: Option<Millis>) -> Result<Option<Duration>> {
    v.map(|m| m.duration(what)).transpose()
}

/// A job's backoff: `type` is `"none"`, `"fixed"` or `"exponential"`; `delay` the (first) wait;
/// `max` the cap of an exponential one (missing or 0: none).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackoffSpec {
    /// `"none"`, `"fixed"` or `"exponential"`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The wait (the first one of an exponential backoff); missing: 0.
    #[serde(default)]
    pub delay: Option<Millis>,
    /// Largest wait of an exponential backoff.
    #[serde(default)]
    pub max: Option<Millis>,
}

impl TryFrom<BackoffSpec> for Backoff {
    type Error = Error;
    fn try_from(b: BackoffSpec) -> Result<Backoff> {
        let delay_ms = opt_ms("backoff.delay", b.delay)?.unwrap_or(0);
        match b.kind.as_str() {
            "none" => Ok(Backoff::None),
            "fixed" if b.max.is_some() => Err(invalid(
                "backoff.max applies to an exponential backoff, not a fixed one",
            )),
            "fixed" => Ok(Backoff::Fixed { delay_ms }),
            "exponential" => Ok(Backoff::Exponential {
                delay_ms,
                max_ms: opt_ms("backoff.max", b.max)?.unwrap_or(0),
            }),
            other => Err(invalid(format!(
                "backoff.type must be \"none\", \"fixed\" or \"exponential\", got {other:?}"
            ))),
        }
    }
}

/// `{count, age}` of a retention: keep at most `count` finished jobs, none older than `age`; a
/// missing field is no limit (one of them is needed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetentionSpec {
    /// Keep at most this many.
    #[serde(default)]
    pub count: Option<f64>,
    /// Keep none older than this.
    #[serde(default)]
    pub age: Option<Millis>,
}

impl RetentionSpec {
    fn into_retention(self, what: &str) -> Result<Retention> {
        if self.count.is_none() && self.age.is_none() {
            return Err(invalid(format!(
                "{what} needs count, age or both, got {{}}"
            )));
        }
        Ok(Retention {
            count: self
                .count
                .map(|c| whole(&format!("{what}.count"), c, MAX_COUNT))
                .transpose()?,
            age_ms: opt_ms(&format!("{what}.age"), self.age)?,
        })
    }
}

/// `remove_on_complete` / `remove_on_fail` (BullMQ's `removeOnComplete`): `true`, `false`, a
/// count, or `{count, age}`.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum RemovalSpec {
    /// Of a job: `true` deletes it as it finishes, `false` leaves it to the queue's retention. Of
    /// a worker (queue-wide): `true` keeps none, `false` keeps all.
    Flag(bool),
    /// Keep at most this many finished jobs (from JSON: an integer, not `1.0`).
    Count(#[serde(deserialize_with = "integer")] f64),
    /// Keep at most `count`, none older than `age`.
    Limits(RetentionSpec),
}

/// A count as JSON writes a whole number (Python's `0.0` is not the count 0, and `true` is not 1).
fn integer<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<f64, D::Error> {
    match Value::deserialize(d)? {
        Value::Number(n) if n.is_i64() || n.is_u64() => Ok(n.as_f64().unwrap_or(f64::INFINITY)),
        other => Err(serde::de::Error::custom(format!(
            "expected a whole number, got {other}"
        ))),
    }
}

impl RemovalSpec {
    fn secs(self) -> RemovalSpec {
        match self {
            RemovalSpec::Limits(r) => RemovalSpec::Limits(RetentionSpec {
                age: r.age.map(Millis::secs),
                ..r
            }),
            other => other,
        }
    }

    /// As a job's option (`what`: its name in messages).
    pub fn into_removal(self, what: &str) -> Result<Removal> {
        Ok(match self {
            RemovalSpec::Flag(false) => Removal::Keep,
            RemovalSpec::Flag(true) => Removal::Now,
            RemovalSpec::Count(n) => Removal::Within(Retention {
                count: Some(whole(what, n, MAX_COUNT)?),
                age_ms: None,
            }),
            RemovalSpec::Limits(r) => Removal::Within(r.into_retention(what)?),
        })
    }

    /// As a queue-wide retention (a worker's option).
    pub fn into_retention(self, what: &str) -> Result<Retention> {
        Ok(match self {
            RemovalSpec::Flag(true) => Retention {
                count: Some(0),
                age_ms: None,
            },
            RemovalSpec::Flag(false) => Retention::KEEP_ALL,
            RemovalSpec::Count(n) => Retention {
                count: Some(whole(what, n, MAX_COUNT)?),
                age_ms: None,
            },
            RemovalSpec::Limits(r) => r.into_retention(what)?,
        })
    }
}

/// Options of one job, as a binding passes them (see [`JobOptions`] for each one's meaning).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JobSpec {
    /// A pre-minted id, in its text form.
    pub id: Option<String>,
    pub delay: Option<Millis>,
    /// 0..=[`crate::options::MAX_PRIORITY`].
    pub priority: Option<f64>,
    pub lifo: Option<bool>,
    /// 1..=`u32::MAX`.
    pub attempts: Option<f64>,
    pub backoff: Option<BackoffSpec>,
    /// 0..=1.
    pub jitter: Option<f64>,
    pub lease: Option<Millis>,
    pub timeout: Option<Millis>,
    #[serde(alias = "removeOnComplete")]
    pub remove_on_complete: Option<RemovalSpec>,
    #[serde(alias = "removeOnFail")]
    pub remove_on_fail: Option<RemovalSpec>,
    pub dedup: Option<String>,
    #[serde(alias = "dedupTtl")]
    pub dedup_ttl: Option<Millis>,
    pub debounce: Option<bool>,
    pub group: Option<String>,
    /// `"fail"`, `"ignore"` or `"remove"`.
    #[serde(alias = "parentPolicy")]
    pub parent_policy: Option<String>,
    /// Words for people, up to [`crate::options::MAX_DESCRIPTION`] bytes.
    pub description: Option<String>,
    /// The dead-letter queue (a queue name).
    #[serde(alias = "deadLetter")]
    pub dead_letter: Option<String>,
    /// The W3C `traceparent` of the span that adds the job (`core/src/trace.rs`); bindings fill it
    /// from their language's current context when the caller gives none.
    pub traceparent: Option<String>,
    /// The W3C `tracestate` that travels with it (needs `traceparent`).
    pub tracestate: Option<String>,
}

impl JobSpec {
    /// The options' names, as the core spells them (a binding's unknown-option error lists them).
    pub const FIELDS: &'static [&'static str] = &[
        "id",
        "delay",
        "priority",
        "lifo",
        "attempts",
        "backoff",
        "jitter",
        "lease",
        "timeout",
        "remove_on_complete",
        "remove_on_fail",
        "dedup",
        "dedup_ttl",
        "debounce",
        "group",
        "parent_policy",
        "description",
        "dead_letter",
        "traceparent",
        "tracestate",
    ];
}

impl JobSpec {
    /// The spec with its durations read as seconds (a binding whose unit is seconds read it from
    /// JSON). Every field is named, so a new one is placed here too, or the build fails.
    pub fn from_seconds(self) -> JobSpec {
        let JobSpec {
            id,
            delay,
            priority,
            lifo,
            attempts,
            backoff,
            jitter,
            lease,
            timeout,
            remove_on_complete,
            remove_on_fail,
            dedup,
            dedup_ttl,
            debounce,
            group,
            parent_policy,
            description,
            dead_letter,
            traceparent,
            tracestate,
        } = self;
        JobSpec {
            delay: delay.map(Millis::secs),
            backoff: backoff.map(|b| BackoffSpec {
                delay: b.delay.map(Millis::secs),
                max: b.max.map(Millis::secs),
                kind: b.kind,
            }),
            lease: lease.map(Millis::secs),
            timeout: timeout.map(Millis::secs),
            remove_on_complete: remove_on_complete.map(RemovalSpec::secs),
            remove_on_fail: remove_on_fail.map(RemovalSpec::secs),
            dedup_ttl: dedup_ttl.map(Millis::secs),
            id,
            priority,
            lifo,
            attempts,
            jitter,
            dedup,
            debounce,
            group,
            parent_policy,
            description,
            dead_letter,
            traceparent,
            tracestate,
        }
    }
}

impl TryFrom<JobSpec> for JobOptions {
    type Error = Error;
    fn try_from(s: JobSpec) -> Result<JobOptions> {
        let d = JobOptions::default();
        let o = JobOptions {
            id: s.id.as_deref().map(JobId::parse).transpose()?,
            delay_ms: opt_ms("delay", s.delay)?.unwrap_or(d.delay_ms),
            priority: match s.priority {
                Some(p) => whole("priority", p, crate::options::MAX_PRIORITY as u64)? as u32,
                None => d.priority,
            },
            lifo: s.lifo.unwrap_or(d.lifo),
            attempts: match s.attempts {
                Some(a) => whole("attempts", a, u32::MAX as u64)? as u32,
                None => d.attempts,
            },
            backoff: s
                .backoff
                .map(Backoff::try_from)
                .transpose()?
                .unwrap_or(d.backoff),
            jitter: s.jitter.unwrap_or(d.jitter),
            lease_ms: opt_ms("lease", s.lease)?.unwrap_or(d.lease_ms),
            timeout_ms: opt_ms("timeout", s.timeout)?.unwrap_or(d.timeout_ms),
            remove_on_complete: s
                .remove_on_complete
                .map(|r| r.into_removal("remove_on_complete"))
                .transpose()?
                .unwrap_or_default(),
            remove_on_fail: s
                .remove_on_fail
                .map(|r| r.into_removal("remove_on_fail"))
                .transpose()?
                .unwrap_or_default(),
            dedup: s.dedup,
            debounce: s.debounce.unwrap_or(d.debounce),
            dedup_ttl_ms: opt_ms("dedup_ttl", s.dedup_ttl)?.unwrap_or(d.dedup_ttl_ms),
            parent_policy: match s.parent_policy.as_deref() {
                None => d.parent_policy,
                Some(p) => ParentPolicy::parse(p)?,
            },
            group: s.group,
            description: s.description,
            dead_letter: s.dead_letter,
            dead_lettered: None,
            batch: None,
            batch_done: None,
            trace: match (s.traceparent, s.tracestate) {
                (None, None) => None,
                (Some(p), state) => Some(crate::trace::TraceContext::new(&p, state.as_deref())?),
                (None, Some(_)) => {
                    return Err(Error::new(
                        ErrorCode::InvalidOption,
                        "tracestate needs a traceparent",
                    ))
                }
            },
        };
        o.validate()?;
        Ok(o)
    }
}

/// `data` as JSON carries it: present (even `null`) or missing.
fn present<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

fn payload(what: &str, data: Option<Value>) -> Result<Value> {
    data.ok_or_else(|| {
        Error::new(
            ErrorCode::InvalidPayload,
            format!("the payload of {what} cannot be serialised as JSON"),
        )
    })
}

/// A job of a flow and the children it waits for; `queue` missing: its parent's queue.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    #[serde(default)]
    pub queue: Option<String>,
    pub name: String,
    /// The payload (missing: it could not be serialised, an `invalid_payload` error).
    #[serde(default, deserialize_with = "present")]
    pub data: Option<Value>,
    #[serde(default, alias = "opts")]
    pub options: JobSpec,
    #[serde(default)]
    pub children: Vec<FlowSpec>,
}

impl FlowSpec {
    /// The flow, its jobs in `queue` unless they name one (each child defaults to its parent's);
    /// at most [`MAX_FLOW_DEPTH`] levels.
    pub fn into_flow(self, queue: &str) -> Result<FlowJob> {
        self.convert(queue, "the flow", 0)
    }

    fn convert(self, queue: &str, path: &str, depth: usize) -> Result<FlowJob> {
        if depth > MAX_FLOW_DEPTH {
            return Err(invalid(format!(
                "a flow is at most {MAX_FLOW_DEPTH} levels deep"
            )));
        }
        let queue = self.queue.unwrap_or_else(|| queue.to_string());
        let children = self
            .children
            .into_iter()
            .enumerate()
            .map(|(i, c)| c.convert(&queue, &format!("{path}.children[{i}]"), depth + 1))
            .collect::<Result<Vec<_>>>()?;
        Ok(FlowJob {
            name: self.name,
            data: payload(path, self.data)?,
            options: JobOptions::try_from(self.options)?,
            children,
            queue,
        })
    }
}

/// A job scheduler: exactly one of `every` and `cron` (`tz` an IANA zone, default UTC).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleSpec {
    pub name: String,
    /// The payload (missing: it could not be serialised, an `invalid_payload` error).
    #[serde(default, deserialize_with = "present")]
    pub data: Option<Value>,
    #[serde(default)]
    pub every: Option<Millis>,
    #[serde(default)]
    pub cron: Option<String>,
    #[serde(default)]
    pub tz: Option<String>,
    #[serde(default, alias = "firstAfter")]
    pub first_after: Option<Millis>,
    #[serde(default, alias = "endAfter")]
    pub end_after: Option<Millis>,
    /// Most runs, 0..=[`MAX_COUNT`].
    #[serde(default)]
    pub limit: Option<f64>,
    #[serde(default, alias = "opts")]
    pub options: JobSpec,
}

impl TryFrom<ScheduleSpec> for Schedule {
    type Error = Error;
    fn try_from(s: ScheduleSpec) -> Result<Schedule> {
        let repeat = match (s.every, s.cron) {
            (Some(every), None) => Repeat::Every(every.duration("every")?),
            (None, Some(expr)) => Repeat::Cron {
                expr,
                tz: s.tz.unwrap_or_else(|| "UTC".into()),
            },
            _ => return Err(invalid("a scheduler needs exactly one of every and cron")),
        };
        let mut out = Schedule::new(repeat, s.name, payload("the scheduled job", s.data)?);
        out.first_after = opt_dur("first_after", s.first_after)?.unwrap_or_default();
        out.end_after = opt_dur("end_after", s.end_after)?;
        out.limit = s.limit.map(|l| whole("limit", l, MAX_COUNT)).transpose()?;
        out.options = JobOptions::try_from(s.options)?;
        Ok(out)
    }
}

/// A rate limit: `max` jobs per `window`; both missing lifts the limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimitSpec {
    #[serde(default)]
    pub max: Option<f64>,
    #[serde(default)]
    pub window: Option<Millis>,
}

impl RateLimitSpec {
    fn parts(self, what: &str) -> Result<Option<(u32, Duration)>> {
        match (self.max, self.window) {
            (None, None) => Ok(None),
            (Some(m), Some(w)) => Ok(Some((
                whole(&format!("{what}.max"), m, u32::MAX as u64)? as u32,
                w.duration(&format!("{what}.window"))?,
            ))),
            _ => Err(invalid(format!(
                "{what} needs both max and window (or neither, to lift it)"
            ))),
        }
    }
}

impl TryFrom<RateLimitSpec> for Option<RateLimit> {
    type Error = Error;
    fn try_from(s: RateLimitSpec) -> Result<Option<RateLimit>> {
        Ok(s.parts("rate_limit")?
            .map(|(max, window)| RateLimit { max, window }))
    }
}

impl TryFrom<RateLimitSpec> for Option<GroupRateLimit> {
    type Error = Error;
    fn try_from(s: RateLimitSpec) -> Result<Option<GroupRateLimit>> {
        Ok(s.parts("group_rate_limit")?
            .map(|(max, window)| GroupRateLimit { max, window }))
    }
}

/// The queue's global concurrency: a whole number ≥ 1, or none (lifted).
pub fn global_concurrency(max: Option<f64>) -> Result<Option<u32>> {
    max.map(|m| whole("global_concurrency", m, u32::MAX as u64).map(|m| m as u32))
        .transpose()
}

#[cfg(test)]
mod tests;
