//! Worker control from the producer's side: cancel a job, wait for a job's result.

use crate::{extras::job_id, seconds_ms, CoreFuture, Out, Queue};
use pyo3::prelude::*;
use std::time::Duration;

impl Queue {
    pub(crate) fn cancel_future(
        &self,
        py: Python<'_>,
        id: &Bound<'_, PyAny>,
        reason: String,
    ) -> PyResult<CoreFuture> {
        let q = self.core(py)?;
        let id = job_id(py, id)?;
        Ok(Box::pin(async move {
            Ok(Out::Str(q.cancel(id, &reason).await?.as_str().to_string()))
        }))
    }

    /// `{"ok": true, "result": …}` or `{"ok": false, "failure": {code, message, stack}}`; the
    /// Python layer raises `HandlerFailed` for the second.
    pub(crate) fn wait_future(
        &self,
        py: Python<'_>,
        id: &Bound<'_, PyAny>,
        timeout: &Bound<'_, PyAny>,
    ) -> PyResult<CoreFuture> {
        let q = self.core(py)?;
        let id = job_id(py, id)?;
        let timeout = Duration::from_millis(seconds_ms(py, "timeout", timeout)?);
        Ok(Box::pin(async move {
            let out = match q.wait(id, timeout).await? {
                Ok(result) => serde_json::json!({"ok": true, "result": result}),
                Err(failure) => serde_json::json!({"ok": false, "failure": failure}),
            };
            Ok(Out::Json(out.to_string()))
        }))
    }
}
