//! Python values into the core's spec types (`emq::spec`): seconds (numbers or `timedelta`) become
//! [`Millis`], ints and floats `f64`, dicts and tuples the spec's shapes. The core checks every
//! value and bound, names the option, and knows the option strings; here only the language's
//! types are converted.

use crate::convert::py_to_value;
use crate::{code_err, core_err};
use emq::spec::{
    self, BackoffSpec, FlowSpec, JobSpec, Millis, RateLimitSpec, RemovalSpec, RetentionSpec,
    WorkerSpec,
};
use emq::{ErrorCode, JobOptions};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyTuple};

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

/// `None`, `(kind, seconds)` or `(kind, seconds, max_seconds)`.
fn backoff(py: Python<'_>, v: &Bound<'_, PyAny>) -> PyResult<BackoffSpec> {
    if v.is_none() {
        return Ok(BackoffSpec {
            kind: "none".into(),
            ..Default::default()
        });
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
    Ok(BackoffSpec {
        kind: t.get_item(0)?.extract().map_err(|_| shape())?,
        delay: Some(secs(py, "backoff.delay", &t.get_item(1)?)?),
        max: if t.len() == 3 {
            Some(secs(py, "backoff.max", &t.get_item(2)?)?)
        } else {
            None
        },
    })
}

/// `True`, `False`, a count, or `{"count": n, "age": seconds}`.
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

/// A job's spec from keyword arguments (`add`, a flow node, a scheduler's job).
pub(crate) fn job_spec(py: Python<'_>, opts: Option<&Bound<'_, PyDict>>) -> PyResult<JobSpec> {
    let mut s = JobSpec::default();
    let Some(opts) = opts else { return Ok(s) };
    for (k, v) in opts.iter() {
        let key: String = k.extract()?;
        let n = |what: &str| number(py, what, &v);
        match key.as_str() {
            "delay" => s.delay = Some(secs(py, "delay", &v)?),
            "priority" => s.priority = Some(n("priority")?),
            "lifo" => s.lifo = Some(flag(py, "lifo", &v)?),
            "attempts" => s.attempts = Some(n("attempts")?),
            "backoff" => s.backoff = Some(backoff(py, &v)?),
            "jitter" => s.jitter = Some(v.extract().map_err(|_| bad(py, "jitter", "a number"))?),
            "timeout" if v.is_none() => s.timeout = None,
            "timeout" => s.timeout = Some(secs(py, "timeout", &v)?),
            "lease" => s.lease = Some(secs(py, "lease", &v)?),
            "debounce" => s.debounce = Some(flag(py, "debounce", &v)?),
            "parent_policy" => s.parent_policy = Some(v.str()?.to_string()),
            "remove_on_complete" => {
                s.remove_on_complete = Some(removal(py, "remove_on_complete", &v)?)
            }
            "remove_on_fail" => s.remove_on_fail = Some(removal(py, "remove_on_fail", &v)?),
            "dedup_ttl" => s.dedup_ttl = Some(secs(py, "dedup_ttl", &v)?),
            "group" => s.group = text(py, "group", &v)?,
            "description" => s.description = text(py, "description", &v)?,
            "dead_letter" => s.dead_letter = text(py, "dead_letter", &v)?,
            "dedup" => s.dedup = text(py, "dedup", &v)?,
            "id" if v.is_none() => s.id = None,
            "id" => {
                s.id = Some(v.extract().map_err(|_| {
                    code_err(
                        py,
                        ErrorCode::InvalidJobId,
                        "a job id is its text form (a str)",
                    )
                })?)
            }
            other => {
                return Err(core_err(
                    py,
                    &spec::unknown_option("job", other, JobSpec::FIELDS),
                ))
            }
        }
    }
    Ok(s)
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
