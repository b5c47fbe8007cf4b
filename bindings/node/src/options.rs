//! Options as JS passes them (numbers in milliseconds, camelCase names), converted into the core's
//! spec types (`emq::spec`), which check every value and know every option string. A single `add`
//! passes a JS object (napi); a batch (`addBulk`, a flow, a scheduler) crosses as JSON text read
//! straight into the core's specs, so it costs one napi call instead of one per property.

use emq::spec::{BackoffSpec, JobSpec, Millis, RemovalSpec, RetentionSpec, WorkerSpec};
use emq::{Error, ErrorCode, JobOptions, WorkerOptions};
use napi::bindgen_prelude::Either3;
use napi_derive::napi;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

pub(crate) fn invalid_option(msg: impl Into<String>) -> Error {
    Error::new(ErrorCode::InvalidOption, msg)
}

pub(crate) use emq::spec::whole;

/// An optional duration in milliseconds.
pub(crate) fn ms(what: &str, v: Option<f64>) -> emq::Result<Option<u64>> {
    v.map(|v| emq::options::millis(what, v)).transpose()
}

fn millis(v: Option<f64>) -> Option<Millis> {
    v.map(Millis)
}

/// `backoff` of a job: `{ type: 'fixed' | 'exponential' | 'none', delay, max? }` (milliseconds).
#[napi(object)]
pub struct BackoffOptions {
    #[napi(js_name = "type")]
    pub kind: String,
    pub delay: Option<f64>,
    pub max: Option<f64>,
}

/// `{ count, age }` of a retention option (age in milliseconds).
#[napi(object)]
pub struct RetentionOpts {
    pub count: Option<f64>,
    pub age: Option<f64>,
}

/// `true`, `false`, a count or `{ count, age }`.
pub type Removal = Either3<bool, f64, RetentionOpts>;

fn removal(v: Option<Removal>) -> Option<RemovalSpec> {
    v.map(|v| match v {
        Either3::A(b) => RemovalSpec::Flag(b),
        Either3::B(n) => RemovalSpec::Count(n),
        Either3::C(o) => RemovalSpec::Limits(RetentionSpec {
            count: o.count,
            age: millis(o.age),
        }),
    })
}

/// Options of one job (times in milliseconds).
#[napi(object)]
pub struct JobOpts {
    pub delay: Option<f64>,
    pub priority: Option<f64>,
    pub lifo: Option<bool>,
    pub attempts: Option<f64>,
    pub backoff: Option<BackoffOptions>,
    pub jitter: Option<f64>,
    pub lease: Option<f64>,
    pub timeout: Option<f64>,
    /// `true` (delete at once), `false` (the queue's retention), a count or `{ count, age }`
    /// (keep the queue's completed jobs within it, as BullMQ does).
    pub remove_on_complete: Option<Removal>,
    /// As `remove_on_complete`, for final failures.
    pub remove_on_fail: Option<Removal>,
    pub dedup: Option<String>,
    pub dedup_ttl: Option<f64>,
    pub debounce: Option<bool>,
    pub group: Option<String>,
    pub parent_policy: Option<String>,
    pub id: Option<String>,
    pub description: Option<String>,
    pub dead_letter: Option<String>,
}

/// Converts a job's options; the core validates them.
pub(crate) fn job_options(o: Option<JobOpts>) -> emq::Result<JobOptions> {
    let Some(o) = o else {
        return Ok(JobOptions::default());
    };
    JobOptions::try_from(JobSpec {
        id: o.id,
        delay: millis(o.delay),
        priority: o.priority,
        lifo: o.lifo,
        attempts: o.attempts,
        backoff: o.backoff.map(|b| BackoffSpec {
            kind: b.kind,
            delay: millis(b.delay),
            max: millis(b.max),
        }),
        jitter: o.jitter,
        lease: millis(o.lease),
        timeout: millis(o.timeout),
        remove_on_complete: removal(o.remove_on_complete),
        remove_on_fail: removal(o.remove_on_fail),
        dedup: o.dedup,
        dedup_ttl: millis(o.dedup_ttl),
        debounce: o.debounce,
        group: o.group,
        parent_policy: o.parent_policy,
        description: o.description,
        dead_letter: o.dead_letter,
    })
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
    pub opts: JobSpec,
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

/// Parses a JSON batch built by `node/src/payload.ts` with `JSON.stringify`, classified by serde's
/// own error kind: the text is JSON by construction, so a syntax error is a payload that JSON text
/// carries but the core does not read back (nested too deep, a lone surrogate written as a `\u`
/// escape): `invalid_payload`; a data error (a value of the wrong type or shape where the spec
/// expects another) is a bad option: `invalid_option`.
pub(crate) fn parse_spec<T: serde::de::DeserializeOwned>(what: &str, text: &str) -> emq::Result<T> {
    serde_json::from_str(text).map_err(|e| spec_error(what, &e))
}

fn spec_error(what: &str, e: &serde_json::Error) -> Error {
    use serde_json::error::Category;
    match e.classify() {
        Category::Data => invalid_option(format!("{what}: {e}")),
        Category::Syntax | Category::Eof | Category::Io => Error::new(
            ErrorCode::InvalidPayload,
            format!("{what}: a payload does not read back as written: {e}"),
        ),
    }
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
    pub remove_on_complete: Option<Removal>,
    /// Retention of failed jobs, as `remove_on_complete`.
    pub remove_on_fail: Option<Removal>,
    /// A worker on several queues: no job of a later queue starts while an earlier one has one.
    pub strict: Option<bool>,
    /// A worker on several queues: starts shared by weight, keyed by queue name.
    pub weights: Option<std::collections::HashMap<String, f64>>,
}

/// Converts a worker's options; the core validates them.
pub(crate) fn worker_options(o: Option<WorkerOpts>) -> emq::Result<WorkerOptions> {
    let Some(o) = o else {
        return Ok(WorkerOptions::default());
    };
    WorkerOptions::try_from(WorkerSpec {
        concurrency: o.concurrency,
        lease: millis(o.lease),
        stalled_interval: millis(o.stalled_interval),
        max_stalls: o.max_stalls,
        block_timeout: millis(o.block_timeout),
        shutdown_timeout: millis(o.shutdown_timeout),
        remove_on_complete: removal(o.remove_on_complete),
        remove_on_fail: removal(o.remove_on_fail),
        strict: o.strict,
        weights: o.weights.map(|w| w.into_iter().collect()),
        ..WorkerSpec::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use emq::spec::JobSpec;

    fn code_of(text: &str) -> ErrorCode {
        parse_spec::<Vec<BulkEntry>>("addBulk", text)
            .err()
            .expect("refused")
            .code()
    }

    #[test]
    fn a_payload_the_core_cannot_read_back_is_invalid_payload() {
        // Nested past serde's recursion limit (128 levels).
        let deep = format!(
            r#"[{{"name":"a","data":{}{}}}]"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        assert_eq!(code_of(&deep), ErrorCode::InvalidPayload);
        // A lone surrogate, as JSON.stringify writes one.
        assert_eq!(
            code_of(r#"[{"name":"a","data":"\ud800"}]"#),
            ErrorCode::InvalidPayload
        );
    }

    #[test]
    fn a_spec_of_the_wrong_shape_is_invalid_option_whatever_its_text_says() {
        // Wrong types, including values whose own text reads like a payload fault: the code
        // comes from serde's kind of error, never from the message.
        assert_eq!(
            code_of(r#"[{"name":5,"data":null}]"#),
            ErrorCode::InvalidOption
        );
        assert_eq!(
            code_of(
                r#"[{"name":"a","data":1,"opts":{"delay":"recursion limit surrogate escape"}}]"#
            ),
            ErrorCode::InvalidOption
        );
        assert_eq!(
            code_of(r#"[{"name":"a","data":1,"opts":{"recursion limit":1}}]"#),
            ErrorCode::InvalidOption
        );
        let e = parse_spec::<JobSpec>("flow", r#"{"delay":"soon"}"#).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidOption);
        assert!(e.message().starts_with("flow: "), "{}", e.message());
    }
}
