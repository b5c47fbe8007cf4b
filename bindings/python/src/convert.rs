//! JSON values crossing the boundary without a text round trip: `serde_json::Value` -> Python
//! objects, and Python objects -> `Value` for the common types (None, bool, int, float, str,
//! list, tuple, dict with str keys). Anything else goes through `json.dumps(allow_nan=False)` and
//! then the core's payload rule (`emq::job::payload_from_text`: 127 levels at most, no lone
//! surrogate, integers within 64 bits), so what is accepted reads back as the same value.

use crate::errors::code_err;
use emq::ErrorCode;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

/// A JSON value as a Python object (dict, list, str, int, float, bool or None).
pub fn value_to_py(py: Python<'_>, v: &Value) -> PyResult<Py<PyAny>> {
    Ok(match v {
        Value::Null => py.None(),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any().unbind(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any().unbind()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any().unbind()
            } else {
                PyFloat::new(py, n.as_f64().unwrap_or(f64::NAN))
                    .into_any()
                    .unbind()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any().unbind(),
        Value::Array(a) => {
            let list = PyList::empty(py);
            for x in a {
                list.append(value_to_py(py, x)?)?;
            }
            list.into_any().unbind()
        }
        Value::Object(m) => {
            let d = PyDict::new(py);
            for (k, x) in m {
                d.set_item(k, value_to_py(py, x)?)?;
            }
            d.into_any().unbind()
        }
    })
}

/// Deepest nesting converted natively (deeper values go through `json.dumps`).
const MAX_DEPTH: usize = 64;

/// A Python object as JSON when it is made only of the common types; None otherwise.
fn fast(v: &Bound<'_, PyAny>, depth: usize) -> Option<Value> {
    if depth > MAX_DEPTH {
        return None;
    }
    if v.is_none() {
        return Some(Value::Null);
    }
    if let Ok(b) = v.cast_exact::<PyBool>() {
        return Some(Value::Bool(b.is_true()));
    }
    if v.cast_exact::<PyInt>().is_ok() {
        if let Ok(i) = v.extract::<i64>() {
            return Some(Value::from(i));
        }
        return v.extract::<u64>().ok().map(Value::from);
    }
    if let Ok(f) = v.cast_exact::<PyFloat>() {
        return Number::from_f64(f.value()).map(Value::Number);
    }
    if let Ok(s) = v.cast_exact::<PyString>() {
        return s.to_cow().ok().map(|s| Value::String(s.into_owned()));
    }
    if let Ok(l) = v.cast_exact::<PyList>() {
        let mut out = Vec::with_capacity(l.len());
        for x in l.iter() {
            out.push(fast(&x, depth + 1)?);
        }
        return Some(Value::Array(out));
    }
    if let Ok(t) = v.cast_exact::<PyTuple>() {
        let mut out = Vec::with_capacity(t.len());
        for x in t.iter() {
            out.push(fast(&x, depth + 1)?);
        }
        return Some(Value::Array(out));
    }
    if let Ok(d) = v.cast::<PyDict>() {
        let mut out = Map::new();
        for (k, x) in d.iter() {
            let k = k.cast_exact::<PyString>().ok()?.to_cow().ok()?.into_owned();
            out.insert(k, fast(&x, depth + 1)?);
        }
        return Some(Value::Object(out));
    }
    None
}

/// `value` as JSON: natively for the common types, else through `json.dumps(allow_nan=False)`.
/// The error is `json.dumps`'s (a `TypeError` or `ValueError`).
pub fn py_to_value(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<Value> {
    if let Some(v) = fast(value, 0) {
        return Ok(v);
    }
    let kw = PyDict::new(py);
    kw.set_item("allow_nan", false)?;
    let text: String = py
        .import("json")?
        .call_method("dumps", (value,), Some(&kw))?
        .extract()?;
    // The core's payload rule: at most 127 levels, and no integer beyond 64 bits (it would read
    // back as a float).
    emq::job::payload_from_text("the value", &text)
        .map_err(|e| PyValueError::new_err(e.message().to_string()))
}

/// `json.dumps(value, allow_nan=False)`, or an `InvalidPayload` error naming `what`.
pub(crate) fn json_dumps(py: Python<'_>, value: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    // `json.dumps(value, allow_nan=False)` builds a new `JSONEncoder` on every call (any
    // non-default argument does); one encoder made once gives the same text for a third of the
    // instructions of a one-job add.
    static ENCODE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let encode = ENCODE.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
        let kw = PyDict::new(py);
        kw.set_item("allow_nan", false)?;
        Ok(py
            .import("json")?
            .getattr("JSONEncoder")?
            .call((), Some(&kw))?
            .getattr("encode")?
            .unbind())
    })?;
    match encode
        .bind(py)
        .call1((value,))
        .and_then(|s| s.extract::<String>())
    {
        Ok(s) => Ok(s),
        Err(e) => Err(code_err(
            py,
            ErrorCode::InvalidPayload,
            format!("{what} is not JSON-serialisable: {}", e.value(py)),
        )),
    }
}

pub(crate) fn name_text(py: Python<'_>, v: &Bound<'_, PyAny>) -> PyResult<String> {
    v.extract()
        .map_err(|_| code_err(py, ErrorCode::InvalidOption, "a job name must be a str"))
}

/// `json.loads(text)`.
pub(crate) fn json_loads<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("json")?.call_method1("loads", (text,))
}
