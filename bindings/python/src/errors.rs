//! Errors: a core error as the `emq.errors` exception of its code.

use emq::ErrorCode;
use pyo3::prelude::*;

/// The `emq.errors` exception for a core error (`emq.errors.error_for_code`).
fn to_pyerr(py: Python<'_>, code: &str, message: &str) -> PyErr {
    let made = py
        .import("emq.errors")
        .and_then(|m| m.call_method1("error_for_code", (code, message)));
    match made {
        Ok(exc) => PyErr::from_value(exc),
        Err(e) => e,
    }
}

pub(crate) fn core_err(py: Python<'_>, e: &emq::Error) -> PyErr {
    to_pyerr(py, e.code().as_str(), e.message())
}

pub(crate) fn code_err(py: Python<'_>, code: ErrorCode, message: impl AsRef<str>) -> PyErr {
    to_pyerr(py, code.as_str(), message.as_ref())
}

/// Every error code of the core, for `emq.errors` to check itself against.
#[pyfunction]
pub(crate) fn error_codes() -> Vec<&'static str> {
    ErrorCode::ALL.iter().map(|c| c.as_str()).collect()
}
