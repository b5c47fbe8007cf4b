//! `Batch`: the native half of `emq.Batch` (core/src/batch/), a handle on one batch: adds,
//! batches inside it, seal, status, cancel, each awaitable or blocking (`awaitable_methods!`). It converts values
//! only; the core checks them.

use crate::queue::{add_args, new_jobs};
use crate::runtime::{awaitable_methods, Out};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// A handle on one batch (from `Queue.batch`, `Queue.open_batch` or a running job's `batch`).
#[pyclass(module = "emq._emq", frozen)]
pub struct Batch {
    pub(crate) inner: emq::Batch,
}

/// A callback as Python gives it: `{"queue", "name", "data", "options"}` (options: the keywords
/// of `Queue.add`, as a dict), converted to the core's [`emq::BatchCallback`].
pub(crate) fn callback(
    py: Python<'_>,
    spec: Option<&Bound<'_, PyDict>>,
) -> PyResult<Option<emq::BatchCallback>> {
    let Some(spec) = spec else { return Ok(None) };
    let get = |k: &str| spec.get_item(k);
    let missing = |k: &str| {
        crate::code_err(
            py,
            emq::ErrorCode::InvalidOption,
            format!("a batch callback needs a {k:?}"),
        )
    };
    let queue = get("queue")?.ok_or_else(|| missing("queue"))?;
    let name = get("name")?.ok_or_else(|| missing("name"))?;
    let data = get("data")?.unwrap_or_else(|| py.None().into_bound(py));
    let options = get("options")?;
    let options = match &options {
        Some(o) if !o.is_none() => Some(o.cast::<PyDict>().map_err(|_| {
            crate::code_err(
                py,
                emq::ErrorCode::InvalidOption,
                "a batch callback's options are a dict",
            )
        })?),
        _ => None,
    };
    let a = add_args(py, &name, &data, options)?;
    Ok(Some(emq::BatchCallback {
        queue: crate::name_text(py, &queue)?,
        name: a.name,
        data: serde_json::from_str(&a.data)
            .map_err(|e| crate::core_err(py, &emq::Error::from(e)))?,
        options: a.options,
    }))
}

awaitable_methods! {
    impl Batch {
        /// The batch's id.
        #[getter]
        fn id(&self) -> String {
            self.inner.id().to_string()
        }

        /// The queue that created it.
        #[getter]
        fn queue(&self) -> String {
            self.inner.queue().name().to_string()
        }
    }
    awaitable {
        /// Adds a job to `queue` as part of the batch; its id.
        #[pyo3(signature = (queue, name, data, options=None, blocking=false))]
        fn add(
            &self, py, queue: String, name: &Bound<'_, PyAny>, data: &Bound<'_, PyAny>,
            options: Option<&Bound<'_, PyDict>>
        ) {
            let a = add_args(py, name, data, options)?;
            let data: serde_json::Value = serde_json::from_str(&a.data)
                .map_err(|e| crate::core_err(py, &emq::Error::from(e)))?;
            let b = self.inner.clone();
            Ok(Box::pin(async move {
                Ok(Out::Str(b.add(&queue, &a.name, data, a.options).await?.to_string()))
            }))
        }

        /// Adds `(name, data, options)` jobs to `queue` as part of the batch; their ids.
        #[pyo3(signature = (queue, jobs, blocking=false))]
        fn add_bulk(&self, py, queue: String, jobs: &Bound<'_, PyAny>) {
            let jobs = new_jobs(py, jobs)?;
            let b = self.inner.clone();
            Ok(Box::pin(async move {
                let ids = b.add_bulk(&queue, jobs).await?;
                Ok(Out::Strs(ids.iter().map(|i| i.to_string()).collect()))
            }))
        }

        /// Its creator added its jobs: the callbacks fall due once every job has its outcome.
        #[pyo3(signature = (blocking=false))]
        fn seal(&self, py) {
            let b = self.inner.clone();
            Ok(Box::pin(async move { b.seal().await.map(|_| Out::None) }))
        }

        /// `{id, description, total, pending, completed, failed, sealed, cancelled, done,
        /// failed_jobs: [{queue, id}]}` with one page of the failed jobs.
        #[pyo3(signature = (offset=0, limit=100, blocking=false))]
        fn status(&self, py, offset: u64, limit: u64) {
            let b = self.inner.clone();
            Ok(Box::pin(async move {
                Ok(Out::Json(serde_json::to_string(&b.status(offset, limit).await?)?))
            }))
        }

        /// Creates a batch inside this one (callbacks: `{queue, name, data, options}` dicts).
        #[pyo3(signature = (on_complete=None, on_success=None, description=None, blocking=false))]
        fn batch(
            &self, py, on_complete: Option<&Bound<'_, PyDict>>,
            on_success: Option<&Bound<'_, PyDict>>, description: Option<String>
        ) {
            let options = emq::BatchOptions {
                on_complete: callback(py, on_complete)?,
                on_success: callback(py, on_success)?,
                description,
            };
            let b = self.inner.clone();
            Ok(Box::pin(async move { Ok(Out::Batch(b.batch(options).await?)) }))
        }

        /// Cancels the batch and its jobs without an outcome; how many were cancelled or told.
        #[pyo3(signature = (blocking=false))]
        fn cancel(&self, py) {
            let b = self.inner.clone();
            Ok(Box::pin(async move { Ok(Out::Int(b.cancel().await?)) }))
        }
    }
}
