//! Specs read from JSON: Node's options (one job's, and whole batches, flows and schedulers, as
//! JSON text) and Python's keyword options (a JSON object built from the keywords) go through
//! each spec's own `Deserialize`, so a binding lists no option. This file owns how such a reading
//! fails: the error names the field at fault by its path (`delay`, `[0].opts.backoff`), and its
//! code comes from serde's kind of error and that path, never from the message's words.
//!
//! - A data error (a value of the wrong type or shape, an unknown field) is `invalid_option`, or
//!   `invalid_job_id` when the field at fault is a job's `id`.
//! - A syntax error in text a binding wrote with its own JSON encoder is a payload the core does
//!   not read back as written (nested too deep, a lone surrogate written as a `\u` escape):
//!   `invalid_payload`.

use crate::error::{Error, ErrorCode, Result};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Reads a spec (or a batch of them) from JSON text; `what` (the call: "addBulk") opens the
/// message of an error.
pub fn from_json_text<T: DeserializeOwned>(what: &str, text: &str) -> Result<T> {
    let mut de = serde_json::Deserializer::from_str(text);
    let out: T = serde_path_to_error::deserialize(&mut de)
        .map_err(|e| error(what, e, || serde_json::from_str(text).ok()))?;
    // Nothing may follow the value (nothing does in text a JSON encoder wrote).
    de.end().map_err(|e| {
        Error::new(
            ErrorCode::InvalidPayload,
            format!("{what}: a payload does not read back as written: {e}"),
        )
    })?;
    Ok(out)
}

/// Reads a spec from a JSON value (a binding's language values, converted); `what` as above.
pub fn from_json_value<T: DeserializeOwned>(what: &str, value: Value) -> Result<T> {
    serde_path_to_error::deserialize(&value).map_err(|e| error(what, e, || Some(value.clone())))
}

/// The value at `path` in `v`, if there is one.
fn at<'v>(v: &'v Value, path: &serde_path_to_error::Path) -> Option<&'v Value> {
    use serde_path_to_error::Segment;
    path.iter().try_fold(v, |v, s| match s {
        Segment::Seq { index } => v.get(index),
        Segment::Map { key } => v.get(key),
        _ => None,
    })
}

/// The error of a reading; `input` gives the value read (on this path only), to tell a job id of
/// the wrong type (`invalid_job_id`) from an `id` where no id is taken (`invalid_option`).
fn error(
    what: &str,
    e: serde_path_to_error::Error<serde_json::Error>,
    input: impl FnOnce() -> Option<Value>,
) -> Error {
    use serde_json::error::Category;
    let path = e.path().to_string();
    let named_id = e
        .path()
        .iter()
        .next_back()
        .is_some_and(|s| matches!(s, serde_path_to_error::Segment::Map { key } if key == "id"));
    // A string there is not a wrong type: an `id` is unknown where the error is.
    let at_id =
        named_id && input().is_some_and(|v| at(&v, e.path()).is_some_and(|id| !id.is_string()));
    let inner = e.into_inner();
    let prefix = if what.is_empty() {
        String::new()
    } else {
        format!("{what}: ")
    };
    let at = if path == "." {
        String::new()
    } else {
        format!("{path}: ")
    };
    match inner.classify() {
        Category::Data if at_id => Error::new(
            ErrorCode::InvalidJobId,
            format!("{prefix}{at}a job id is its text form (a string): {inner}"),
        ),
        Category::Data => Error::new(ErrorCode::InvalidOption, format!("{prefix}{at}{inner}")),
        Category::Syntax | Category::Eof | Category::Io => Error::new(
            ErrorCode::InvalidPayload,
            format!("{prefix}a payload does not read back as written: {inner}"),
        ),
    }
}
