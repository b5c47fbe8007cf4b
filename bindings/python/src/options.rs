//! Python values into the core's spec types (`emq::spec`): a job's keyword options become one JSON
//! object that the core's `JobSpec` reads (seconds, numbers or `timedelta`, read as seconds by
//! `JobSpec::from_seconds`), so no job option is listed here; a worker's arguments, a rate limit
//! and a flow's shape are converted field by field (seconds into [`Millis`], ints and floats
//! `f64`). The core checks every value and bound, names the option, and knows the option strings;
//! here only the language's types are converted.

use crate::convert::py_to_value;
use crate::{code_err, core_err};
use emq::spec::{
    self, FlowSpec, JobSpec, Millis, RateLimitSpec, RemovalSpec, RetentionSpec, WorkerSpec,
};
use emq::{ErrorCode, JobOptions};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyTuple};
use serde_json::{Map, Number, Value};

fn bad(py: Python<'_>, what: &str, expected: &str) -> PyErr {
    code_err(
        py,
        ErrorCode::InvalidOption,
        format!("{what} must be {expected}"),
    )
}

/// Seconds (an int, a float or a `datetime.timedelta`).
pub(crate) fn secs(py: Python<'_>, what: &str, v: &Bound<'_, PyAny>) -> PyResult<Millis> {
    // A number first: `hasattr` on a float raises and swallows an AttributeError.
    let s = if v.is_instance_of::<PyFloat>() || v.is_instance_of::<PyInt>() {
        v.clone()
    } else if v.hasattr("total_seconds")? {
        v.call_method0("total_seconds")?
    } else {
        v.clone()
    };
    if s.is_instance_of::<PyBool>() {
        return Err(bad(py, what, "a number of seconds or a timedelta"));
    }
    s.extract::<f64>()
        .map(Millis::from_secs_f64)
        .map_err(|_| bad(py, what, "a number of seconds or a timedelta"))
}

/// Seconds as whole milliseconds (the core's rule).
pub(crate) fn seconds_ms(py: Python<'_>, what: &str, v: &Bound<'_, PyAny>) -> PyResult<u64> {
    secs(py, what, v)?.ms(what).map_err(|e| core_err(py, &e))
}

/// A number (an int or a float, not a bool); an int too large for a float is infinite, which the
/// core refuses with its bound.
pub(crate) fn number(py: Python<'_>, what: &str, v: &Bound<'_, PyAny>) -> PyResult<f64> {
    if v.is_instance_of::<PyBool>()
        || !(v.is_instance_of::<PyInt>() || v.is_instance_of::<PyFloat>())
    {
        return Err(code_err(
            py,
            ErrorCode::InvalidOption,
            format!("{what} must be a whole number, got {}", v.repr()?),
        ));
    }
    Ok(v.extract::<f64>().unwrap_or(if v.lt(0)? {
        f64::NEG_INFINITY
    } else {
        f64::INFINITY
    }))
}

/// A whole number in `0..=max` (the core's check).
pub(crate) fn whole(py: Python<'_>, what: &str, v: &Bound<'_, PyAny>, max: u64) -> PyResult<u64> {
    spec::whole(what, number(py, what, v)?, max).map_err(|e| core_err(py, &e))
}

fn flag(py: Python<'_>, what: &str, v: &Bound<'_, PyAny>) -> PyResult<bool> {
    v.extract().map_err(|_| bad(py, what, "a bool"))
}

pub(crate) fn text(py: Python<'_>, what: &str, v: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    if v.is_none() {
        return Ok(None);
    }
    v.extract()
        .map(Some)
        .map_err(|_| bad(py, what, "a string or None"))
}

/// `True`, `False`, a count, or `{"count": n, "age": seconds}` (a worker's queue-wide retention).
fn removal(py: Python<'_>, what: &str, v: &Bound<'_, PyAny>) -> PyResult<RemovalSpec> {
    if v.is_instance_of::<PyBool>() {
        return Ok(RemovalSpec::Flag(v.is_truthy()?));
    }
    if let Ok(d) = v.cast::<PyDict>() {
        let mut r = RetentionSpec::default();
        for (k, x) in d.iter() {
            match k.extract::<String>().unwrap_or_default().as_str() {
                "count" => r.count = Some(number(py, &format!("{what}.count"), &x)?),
                "age" => r.age = Some(secs(py, &format!("{what}.age"), &x)?),
                other => {
                    return Err(spec::unknown_option(what, other, &["count", "age"]))
                        .map_err(|e| core_err(py, &e))
                }
            }
        }
        return Ok(RemovalSpec::Limits(r));
    }
    if v.is_instance_of::<PyInt>() {
        return Ok(RemovalSpec::Count(number(py, what, v)?));
    }
    Err(bad(
        py,
        what,
        "True, False, a count or {\"count\": n, \"age\": seconds}",
    ))
}

/// A Python option value as JSON, for the core's reading of a spec: None, bools, ints, finite
/// floats, strings, lists, tuples, dicts with str keys, and a `timedelta` as its seconds. No
/// option is named here: the core knows them and their types (`what`: the value's path, for a
/// refusal of what JSON cannot hold).
fn option_value(py: Python<'_>, what: &str, v: &Bound<'_, PyAny>) -> PyResult<Value> {
    let refuse = |expected: &str| -> PyResult<Value> {
        Err(code_err(
            py,
            ErrorCode::InvalidOption,
            format!("{what} must be {expected}, got {}", v.repr()?),
        ))
    };
    if v.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = v.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if v.is_instance_of::<PyInt>() {
        if let Ok(i) = v.extract::<i64>() {
            return Ok(Value::from(i));
        }
        if let Ok(u) = v.extract::<u64>() {
            return Ok(Value::from(u));
        }
        // Past 64 bits: a float as large (or, past a float, the largest), which every bound refuses.
        let f = v
            .extract::<f64>()
            .unwrap_or(if v.lt(0)? { f64::MIN } else { f64::MAX });
        return Ok(Number::from_f64(f).map_or(Value::Null, Value::Number));
    }
    if let Ok(f) = v.cast::<PyFloat>() {
        return match Number::from_f64(f.value()) {
            Some(n) => Ok(Value::Number(n)),
            None => refuse("a finite number"),
        };
    }
    if let Ok(s) = v.extract::<String>() {
        return Ok(Value::String(s));
    }
    if let Ok(d) = v.cast::<PyDict>() {
        let mut m = Map::new();
        for (k, x) in d.iter() {
            let Ok(k) = k.extract::<String>() else {
                return refuse("a dict with str keys");
            };
            let x = option_value(py, &format!("{what}.{k}"), &x)?;
            m.insert(k, x);
        }
        return Ok(Value::Object(m));
    }
    if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        let mut out = Vec::new();
        for (i, x) in v.try_iter()?.enumerate() {
            out.push(option_value(py, &format!("{what}[{i}]"), &x?)?);
        }
        return Ok(Value::Array(out));
    }
    if v.hasattr("total_seconds")? {
        return option_value(py, what, &v.call_method0("total_seconds")?);
    }
    refuse("None, a bool, a number, a timedelta, a str, a list or a dict")
}

/// A job's spec from keyword arguments (`add`, a flow node, a scheduler's job): the keywords as one
/// JSON object, read by the core's `JobSpec` (every name, type and value checked there, durations
/// in seconds). Python's own shapes are written out first: `backoff` as a tuple (`None`: no
/// backoff); names are snake_case (the core's camelCase aliases are JavaScript's).
pub(crate) fn job_spec(py: Python<'_>, opts: Option<&Bound<'_, PyDict>>) -> PyResult<JobSpec> {
    let Some(opts) = opts.filter(|d| !d.is_empty()) else {
        return Ok(JobSpec::default());
    };
    let mut m = Map::new();
    for (k, v) in opts.iter() {
        let key: String = k.extract()?;
        if key.chars().any(|c| c.is_ascii_uppercase()) {
            return Err(core_err(
                py,
                &spec::unknown_option("job", &key, JobSpec::FIELDS),
            ));
        }
        let value = if key == "backoff" {
            backoff_value(py, &v)?
        } else {
            option_value(py, &key, &v)?
        };
        m.insert(key, value);
    }
    spec::from_json_value::<JobSpec>("", Value::Object(m))
        .map(JobSpec::from_seconds)
        .map_err(|e| core_err(py, &e))
}

/// Python's `backoff`: `None`, `(kind, seconds)` or `(kind, seconds, max_seconds)`, as the
/// `{type, delay, max}` object the core reads.
fn backoff_value(py: Python<'_>, v: &Bound<'_, PyAny>) -> PyResult<Value> {
    if v.is_none() {
        return Ok(serde_json::json!({ "type": "none" }));
    }
    let shape = || {
        bad(
            py,
            "backoff",
            "None, (\"fixed\", seconds) or (\"exponential\", seconds[, max_seconds])",
        )
    };
    let t = v.cast::<PyTuple>().map_err(|_| shape())?;
    if t.len() < 2 || t.len() > 3 {
        return Err(shape());
    }
    let mut m = Map::new();
    m.insert(
        "type".into(),
        option_value(py, "backoff.type", &t.get_item(0)?)?,
    );
    m.insert(
        "delay".into(),
        option_value(py, "backoff.delay", &t.get_item(1)?)?,
    );
    if t.len() == 3 {
        m.insert(
            "max".into(),
            option_value(py, "backoff.max", &t.get_item(2)?)?,
        );
    }
    Ok(Value::Object(m))
}

/// A job's options, converted and checked by the core.
pub(crate) fn job_options(
    py: Python<'_>,
    opts: Option<&Bound<'_, PyDict>>,
) -> PyResult<JobOptions> {
    JobOptions::try_from(job_spec(py, opts)?).map_err(|e| core_err(py, &e))
}

/// A flow from its dict: `{"name", "data", "queue"?, "children"?: [...], **job options}`.
pub(crate) fn flow_spec(py: Python<'_>, v: &Bound<'_, PyAny>, depth: usize) -> PyResult<FlowSpec> {
    if depth > spec::MAX_FLOW_DEPTH {
        // The core refuses it too; stop before converting a deeper (perhaps cyclic) structure.
        return Ok(FlowSpec {
            children: vec![FlowSpec::default()],
            ..Default::default()
        });
    }
    let d = v.cast::<PyDict>().map_err(|_| {
        bad(
            py,
            "a flow node",
            "a dict with 'name', 'data', 'queue', 'children' and job options",
        )
    })?;
    let opts = d.copy()?;
    let mut s = FlowSpec::default();
    match opts.get_item("name")? {
        Some(n) => s.name = crate::name_text(py, &n)?,
        None => return Err(bad(py, "a flow node", "given a 'name'")),
    }
    s.data = Some(match opts.get_item("data")? {
        Some(x) => py_to_value(py, &x).map_err(|e| {
            code_err(
                py,
                ErrorCode::InvalidPayload,
                format!(
                    "a flow job's data is not JSON-serialisable: {}",
                    e.value(py)
                ),
            )
        })?,
        None => serde_json::Value::Null,
    });
    if let Some(q) = opts.get_item("queue")? {
        s.queue = text(py, "a flow node's queue", &q)?;
    }
    if let Some(cs) = opts.get_item("children")? {
        if !cs.is_none() {
            for c in cs.try_iter()? {
                s.children.push(flow_spec(py, &c?, depth + 1)?);
            }
        }
    }
    for k in ["name", "data", "queue", "children"] {
        if opts.contains(k)? {
            opts.del_item(k)?;
        }
    }
    s.options = job_spec(py, Some(&opts))?;
    Ok(s)
}

/// `max` jobs per `window` seconds; both None lifts the limit.
pub(crate) fn rate_limit(
    py: Python<'_>,
    max: &Bound<'_, PyAny>,
    window: &Bound<'_, PyAny>,
) -> PyResult<RateLimitSpec> {
    Ok(RateLimitSpec {
        max: (!max.is_none())
            .then(|| number(py, "max", max))
            .transpose()?,
        window: (!window.is_none() && !max.is_none())
            .then(|| secs(py, "window", window))
            .transpose()?,
    })
}

/// A worker's spec from the `Worker` arguments (None: the core's default).
pub(crate) struct WorkerArgs<'a, 'py> {
    pub concurrency: Option<&'a Bound<'py, PyAny>>,
    pub lease: Option<&'a Bound<'py, PyAny>>,
    pub shutdown_timeout: Option<&'a Bound<'py, PyAny>>,
    pub stalled_interval: Option<&'a Bound<'py, PyAny>>,
    pub max_stalls: Option<&'a Bound<'py, PyAny>>,
    pub remove_on_complete: Option<&'a Bound<'py, PyAny>>,
    pub remove_on_fail: Option<&'a Bound<'py, PyAny>>,
    /// A worker on several queues: strict order (a bool).
    pub strict: Option<&'a Bound<'py, PyAny>>,
    /// A worker on several queues: weights by queue name (a dict of numbers).
    pub weights: Option<&'a Bound<'py, PyAny>>,
}

pub(crate) fn worker_options<'py>(
    py: Python<'py>,
    a: WorkerArgs<'_, 'py>,
) -> PyResult<emq::WorkerOptions> {
    fn some<'py>(v: Option<&Bound<'py, PyAny>>) -> Option<Bound<'py, PyAny>> {
        v.filter(|v| !v.is_none()).cloned()
    }
    let mut s = WorkerSpec::default();
    if let Some(v) = some(a.concurrency) {
        s.concurrency = Some(number(py, "concurrency", &v)?);
    }
    if let Some(v) = some(a.lease) {
        s.lease = Some(secs(py, "lease", &v)?);
    }
    if let Some(v) = some(a.shutdown_timeout) {
        s.shutdown_timeout = Some(secs(py, "shutdown_timeout", &v)?);
    }
    if let Some(v) = some(a.stalled_interval) {
        s.stalled_interval = Some(secs(py, "stalled_interval", &v)?);
    }
    if let Some(v) = some(a.max_stalls) {
        s.max_stalls = Some(number(py, "max_stalls", &v)?);
    }
    if let Some(v) = some(a.remove_on_complete) {
        s.remove_on_complete = Some(removal(py, "remove_on_complete", &v)?);
    }
    if let Some(v) = some(a.remove_on_fail) {
        s.remove_on_fail = Some(removal(py, "remove_on_fail", &v)?);
    }
    if let Some(v) = some(a.strict) {
        s.strict = Some(flag(py, "strict", &v)?);
    }
    if let Some(v) = some(a.weights) {
        let d = v
            .cast::<PyDict>()
            .map_err(|_| bad(py, "weights", "a dict of queue name to weight"))?;
        let mut w = std::collections::BTreeMap::new();
        for (k, n) in d.iter() {
            let name: String = k
                .extract()
                .map_err(|_| bad(py, "weights", "keyed by queue names (str)"))?;
            let n = number(py, &format!("the weight of queue {name:?}"), &n)?;
            w.insert(name, n);
        }
        s.weights = Some(w);
    }
    emq::WorkerOptions::try_from(s).map_err(|e| core_err(py, &e))
}
