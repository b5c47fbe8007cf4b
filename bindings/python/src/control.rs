//! Worker control from the producer's side: cancel a job, wait for a job's result.

use crate::{extras::job_id, CoreFuture, Out, Queue};
use pyo3::prelude::*;

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
}
