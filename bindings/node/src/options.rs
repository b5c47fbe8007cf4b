//! Options as JS passes them (numbers in milliseconds, camelCase names) and their conversion into the
//! core's types. Each struct converts both from a JS object (napi) and from JSON text (serde), so a
//! batch (`addBulk`, a flow, a scheduler) crosses into Rust as one string instead of one napi call
//! per property.

use emq::options::Retention;
use emq::{Backoff, Error, ErrorCode, JobId, JobOptions, ParentPolicy, WorkerOptions};
use napi::bindgen_prelude::Either3;
use napi_derive::napi;
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use std::time::Duration;

pub(crate) fn invalid_option(msg: impl Into<String>) -> Error {
    Error::new(ErrorCode::InvalidOption, msg)
}

/// A JS number that must be a whole count in `0..=max`.
pub(crate) fn whole(what: &str, v: f64, max: u64) -> emq::Result<u64> {
    if !v.is_finite() || v < 0.0 || v.fract() != 0.0 || v > max as f64 {
        return Err(invalid_option(format!(
            "{what} must be a whole number between 0 and {max}, got {v}"
        )));
    }
    Ok(v as u64)
}

/// An optional duration in milliseconds.
pub(crate) fn ms(what: &str, v: Option<f64>) -> emq::Result<Option<u64>> {
    v.map(|v| emq::options::millis(what, v)).transpose()
}

/// `backoff` of a job: `{ type: 'fixed' | 'exponential', delay, max? }` (milliseconds).
#[napi(object)]
#[derive(Deserialize)]
pub struct BackoffOptions {
    #[napi(js_name = "type")]
    #[serde(rename = "type")]
    pub kind: String,
    pub delay: Option<f64>,
    pub max: Option<f64>,
}

/// Options of one job (times in milliseconds).
#[napi(object)]
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobOpts {
    pub delay: Option<f64>,
    pub priority: Option<f64>,
    pub lifo: Option<bool>,
    pub attempts: Option<f64>,
    pub backoff: Option<BackoffOptions>,
    pub jitter: Option<f64>,
    pub lease: Option<f64>,
    pub timeout: Option<f64>,
    pub remove_on_complete: Option<bool>,
    pub remove_on_fail: Option<bool>,
    pub dedup: Option<String>,
    pub dedup_ttl: Option<f64>,
    pub debounce: Option<bool>,
    pub group: Option<String>,
    pub parent_policy: Option<String>,
    pub id: Option<String>,
}

/// Converts and validates a job's options.
pub(crate) fn job_options(o: Option<JobOpts>) -> emq::Result<JobOptions> {
    let mut out = JobOptions::default();
    let Some(o) = o else { return Ok(out) };
    if let Some(d) = ms("delay", o.delay)? {
        out.delay_ms = d;
    }
    if let Some(p) = o.priority {
        out.priority = whole("priority", p, u32::MAX as u64)? as u32;
    }
    if let Some(a) = o.attempts {
        out.attempts = whole("attempts", a, u32::MAX as u64)? as u32;
    }
    out.lifo = o.lifo.unwrap_or(false);
    if let Some(b) = o.backoff {
        let delay_ms = ms("backoff.delay", b.delay)?.unwrap_or(0);
        out.backoff = match b.kind.as_str() {
            "fixed" => Backoff::Fixed { delay_ms },
            "exponential" => Backoff::Exponential {
                delay_ms,
                max_ms: ms("backoff.max", b.max)?.unwrap_or(0),
            },
            "none" => Backoff::None,
            other => {
                return Err(invalid_option(format!(
                    "backoff.type must be 'fixed' or 'exponential', got {other:?}"
                )))
            }
        };
    }
    if let Some(j) = o.jitter {
        out.jitter = j;
    }
    if let Some(l) = ms("lease", o.lease)? {
        out.lease_ms = l;
    }
    if let Some(t) = ms("timeout", o.timeout)? {
        out.timeout_ms = t;
    }
    out.remove_on_complete = o.remove_on_complete.unwrap_or(false);
    out.remove_on_fail = o.remove_on_fail.unwrap_or(false);
    out.dedup = o.dedup;
    if let Some(t) = ms("dedupTtl", o.dedup_ttl)? {
        out.dedup_ttl_ms = t;
    }
    out.debounce = o.debounce.unwrap_or(false);
    out.group = o.group;
    if let Some(p) = o.parent_policy {
        out.parent_policy = match p.as_str() {
            "fail" => ParentPolicy::Fail,
            "ignore" => ParentPolicy::Ignore,
            "remove" => ParentPolicy::Remove,
            other => {
                return Err(invalid_option(format!(
                    "parentPolicy must be 'fail', 'ignore' or 'remove', got {other:?}"
                )))
            }
        };
    }
    if let Some(id) = o.id {
        out.id = Some(JobId::parse(&id)?);
    }
    out.validate()?;
    Ok(out)
}

/// `data` of a job as JSON text carries it: present (even `null`) or missing (the JS value did not
/// serialise: a function, a symbol, a `toJSON` returning undefined).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// One job of `addBulk`, as JSON.
#[derive(Deserialize)]
pub(crate) struct BulkEntry {
    pub name: String,
    #[serde(default, deserialize_with = "present")]
    pub data: Option<Value>,
    #[serde(default)]
    pub opts: Option<JobOpts>,
}

/// A job of a flow and its children, as JSON (`queue` defaults to the queue adding the flow).
#[derive(Deserialize)]
pub(crate) struct FlowSpec {
    #[serde(default)]
    pub queue: Option<String>,
    pub name: String,
    #[serde(default, deserialize_with = "present")]
    pub data: Option<Value>,
    #[serde(default)]
    pub opts: Option<JobOpts>,
    #[serde(default)]
    pub children: Vec<FlowSpec>,
}

/// A job scheduler, as JSON.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SchedulerSpec {
    #[serde(default)]
    pub every: Option<f64>,
    #[serde(default)]
    pub cron: Option<String>,
    #[serde(default)]
    pub tz: Option<String>,
    #[serde(default)]
    pub end_after: Option<f64>,
    #[serde(default)]
    pub first_after: Option<f64>,
    #[serde(default)]
    pub limit: Option<f64>,
    pub name: String,
    #[serde(default, deserialize_with = "present")]
    pub data: Option<Value>,
    #[serde(default)]
    pub opts: Option<JobOpts>,
}

/// The payload of a job from a JSON batch: missing means it could not be serialised.
pub(crate) fn payload(what: &str, data: Option<Value>) -> emq::Result<Value> {
    data.ok_or_else(|| {
        Error::new(
            ErrorCode::InvalidPayload,
            format!("the payload of {what} cannot be serialised as JSON"),
        )
    })
}

/// Parses a JSON batch built by `index.js`; a shape error is a bad option (the payloads themselves
/// are JSON by construction).
pub(crate) fn parse_spec<T: serde::de::DeserializeOwned>(what: &str, text: &str) -> emq::Result<T> {
    serde_json::from_str(text).map_err(|e| {
        let why = e.to_string();
        // A payload too deep or with a lone surrogate (a bad \u escape) is the payload's fault.
        if why.contains("recursion limit") || why.contains("surrogate") || why.contains("escape") {
            Error::new(
                ErrorCode::InvalidPayload,
                format!("{what}: a payload does not read back as written: {why}"),
            )
        } else {
            invalid_option(format!("{what}: {e}"))
        }
    })
}

/// Options of a worker (times in milliseconds).
#[napi(object)]
pub struct WorkerOpts {
    pub concurrency: Option<f64>,
    pub lease: Option<f64>,
    pub stalled_interval: Option<f64>,
    pub max_stalls: Option<f64>,
    pub block_timeout: Option<f64>,
    pub shutdown_timeout: Option<f64>,
    /// Retention of completed jobs, queue-wide: `true` (keep none), `false` (keep all), a count,
    /// or `{ count, age }` (age in ms; a missing field is no limit).
    pub remove_on_complete: Option<Either3<bool, f64, RetentionOpts>>,
    /// Retention of failed jobs, as `remove_on_complete`.
    pub remove_on_fail: Option<Either3<bool, f64, RetentionOpts>>,
}

/// `{ count, age }` of a retention option (age in milliseconds).
#[napi(object)]
pub struct RetentionOpts {
    pub count: Option<f64>,
    pub age: Option<f64>,
}

fn retention(what: &str, v: Either3<bool, f64, RetentionOpts>) -> emq::Result<Retention> {
    Ok(match v {
        Either3::A(true) => Retention {
            count: Some(0),
            age_ms: None,
        },
        Either3::A(false) => Retention::KEEP_ALL,
        Either3::B(n) => Retention {
            count: Some(whole(what, n, u64::MAX >> 11)?),
            age_ms: None,
        },
        Either3::C(o) => {
            if o.count.is_none() && o.age.is_none() {
                return Err(invalid_option(format!(
                    "{what} needs count, age or both, got {{}}"
                )));
            }
            Retention {
                count: o
                    .count
                    .map(|c| whole(&format!("{what}.count"), c, u64::MAX >> 11))
                    .transpose()?,
                age_ms: ms(&format!("{what}.age"), o.age)?,
            }
        }
    })
}

/// Converts and validates a worker's options.
pub(crate) fn worker_options(o: Option<WorkerOpts>) -> emq::Result<WorkerOptions> {
    let mut out = WorkerOptions::default();
    let Some(o) = o else { return Ok(out) };
    if let Some(c) = o.concurrency {
        // The bounds are the core's (WorkerOptions::validate); this only makes it a whole number.
        out.concurrency = whole("concurrency", c, u32::MAX as u64)? as usize;
    }
    let dur = |what: &str, v: Option<f64>| -> emq::Result<Option<Duration>> {
        Ok(ms(what, v)?.map(Duration::from_millis))
    };
    if let Some(d) = dur("lease", o.lease)? {
        out.lease = d;
    }
    if let Some(d) = dur("stalledInterval", o.stalled_interval)? {
        out.stalled_interval = d;
    }
    if let Some(m) = o.max_stalls {
        out.max_stalls = whole("maxStalls", m, u32::MAX as u64)? as u32;
    }
    if let Some(d) = dur("blockTimeout", o.block_timeout)? {
        out.block_timeout = d;
    }
    if let Some(d) = dur("shutdownTimeout", o.shutdown_timeout)? {
        out.shutdown_deadline = d;
    }
    if let Some(r) = o.remove_on_complete {
        out.completed = retention("removeOnComplete", r)?;
    }
    if let Some(r) = o.remove_on_fail {
        out.failed = retention("removeOnFail", r)?;
    }
    Ok(out)
}
