//! The reply side of a direct add (the core's `queue/direct.rs`): where a reply ends in the bytes
//! the event loop's socket read, and what it says. `Queue.direct_add` builds the call.

use pyo3::prelude::*;

/// How many bytes the first reply in `buf` takes; None while it is incomplete.
#[pyfunction]
pub(crate) fn direct_reply_len(buf: &[u8]) -> Option<usize> {
    emq::direct_reply_len(buf)
}

/// The id the direct add of `id` returns, from its whole `reply`; None: add it again with `add`
/// (same id).
#[pyfunction]
pub(crate) fn direct_settle(py: Python<'_>, reply: &[u8], id: &str) -> PyResult<Option<String>> {
    let id = emq::JobId::parse(id).map_err(|e| crate::core_err(py, &e))?;
    Ok(match emq::direct_settle(reply, id) {
        emq::DirectOutcome::Added(id) => Some(id.to_string()),
        emq::DirectOutcome::Again => None,
    })
}
