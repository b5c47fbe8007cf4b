//! What `Queue`'s methods (queue.rs) share beyond the options: job ids and states from Python,
//! payloads, the view shapes they hand back (flow ids, schedulers: the core's `SchedulerView` in
//! seconds, events; JSON-shaped dicts and lists), and the events subscriber.

use crate::convert::py_to_value;
use crate::{code_err, core_err, seconds_ms, Out};
use emq::{ErrorCode, JobId, JobState};
use pyo3::prelude::*;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

pub(crate) fn job_id(py: Python<'_>, v: &Bound<'_, PyAny>) -> PyResult<JobId> {
    let text: String = v.extract().map_err(|_| {
        code_err(
            py,
            ErrorCode::InvalidJobId,
            "a job id is its text form (a str)",
        )
    })?;
    JobId::parse(&text).map_err(|e| core_err(py, &e))
}

pub(crate) fn job_state(py: Python<'_>, v: &str) -> PyResult<JobState> {
    JobState::parse(v).map_err(|e| core_err(py, &e))
}

pub(crate) fn payload(py: Python<'_>, v: &Bound<'_, PyAny>, what: &str) -> PyResult<Value> {
    py_to_value(py, v).map_err(|e| {
        code_err(
            py,
            ErrorCode::InvalidPayload,
            format!("{what} is not JSON-serialisable: {}", e.value(py)),
        )
    })
}

pub(crate) fn events_json(events: Vec<emq::events::Event>) -> emq::Result<Out> {
    Ok(Out::Json(serde_json::to_string(&events)?))
}

/// The schedulers as `Queue.schedulers` gives them: the core's `SchedulerView`, in seconds.
pub(crate) fn schedulers_json(all: &[emq::SchedulerInfo]) -> emq::Result<String> {
    let out: Vec<_> = all.iter().map(|s| s.view().in_seconds()).collect();
    Ok(serde_json::to_string(&out)?)
}

/// A subscriber on a queue's events (native half of `emq.EventStream`).
#[pyclass(module = "emq._emq", frozen)]
pub struct EventStream {
    inner: Arc<tokio::sync::Mutex<emq::events::EventStream>>,
}

impl EventStream {
    pub(crate) fn new(stream: emq::events::EventStream) -> EventStream {
        EventStream {
            inner: Arc::new(tokio::sync::Mutex::new(stream)),
        }
    }
}

#[pymethods]
impl EventStream {
    /// The next events (dicts: `stream_id`, `kind`, `job_id`, `fields`), waiting up to `wait`
    /// seconds for the first; an empty list when none came.
    #[pyo3(signature = (wait=None, count=100, blocking=false))]
    fn next_batch(
        &self,
        py: Python<'_>,
        wait: Option<&Bound<'_, PyAny>>,
        count: usize,
        blocking: bool,
    ) -> PyResult<Py<PyAny>> {
        let wait = match wait {
            Some(w) => Duration::from_millis(seconds_ms(py, "wait", w)?),
            None => Duration::from_secs(1),
        };
        let inner = self.inner.clone();
        crate::run(
            py,
            Box::pin(async move {
                let mut s = inner.lock().await;
                events_json(s.next_batch(wait, count.max(1)).await?)
            }),
            blocking,
        )
    }
}
