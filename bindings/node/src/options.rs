//! Options as JS passes them (numbers in milliseconds, camelCase names), converted into the core's
//! spec types (`emq::spec`), which check every value and know every option string. A job's options
//! (one `add`'s, and every job of a batch: `addBulk`, a flow, a scheduler) cross as JSON text read
//! straight into the core's `JobSpec`, so no option is listed here and a batch costs one napi call
//! instead of one per property; a worker's options are a napi object.

use emq::spec::{JobSpec, Millis, RemovalSpec, RetentionSpec, WorkerSpec};
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

/// A job's options from the JSON of a `JobSpec` (what `addBulk` sends for each job; `None`: the
/// defaults), read and checked by the core.
pub(crate) fn job_options(opts: Option<&str>) -> emq::Result<JobOptions> {
    match opts {
        None => Ok(JobOptions::default()),
        Some(_) => JobOptions::try_from(job_spec(opts)?),
    }
}

/// A job's options as the JSON text of a `JobSpec` (none: the defaults), unconverted.
pub(crate) fn job_spec(opts: Option<&str>) -> emq::Result<JobSpec> {
    match opts {
        None => Ok(JobSpec::default()),
        Some(text) => parse_spec::<JobSpec>("", text),
    }
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

/// Reads a spec (one job's options, a batch, a flow, a scheduler) from the JSON text that
/// `node/src/payload.ts` wrote with `JSON.stringify`: the core's reading, which names the field at
/// fault and classes the error by serde's kind (`emq::spec::from_json_text`).
pub(crate) fn parse_spec<T: serde::de::DeserializeOwned>(what: &str, text: &str) -> emq::Result<T> {
    emq::spec::from_json_text(what, text)
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
        assert!(e.message().starts_with("flow: delay: "), "{}", e.message());
    }
}
