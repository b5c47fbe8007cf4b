//! The queue's extras, as core futures for the `Queue` methods in `lib.rs`: flows, job
//! schedulers, rate limit and global concurrency, the events subscriber, and maintenance (drain,
//! clean, obliterate, remove, retry, promote, logs, list, metrics). Durations arrive in seconds
//! (numbers or `timedelta`) and leave in seconds; everything else is JSON-shaped dicts and lists.

use crate::convert::py_to_value;
use crate::options::{flow_spec, job_spec, number, rate_limit, secs, whole};
use crate::{code_err, core_err, name_text, seconds_ms, CoreFuture, Out, Queue};
use emq::spec::ScheduleSpec;
use emq::{ErrorCode, FlowIds, GroupRateLimit, JobId, JobState, RateLimit, Schedule};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde_json::{json, Value};
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

fn state(py: Python<'_>, v: &str) -> PyResult<JobState> {
    JobState::parse(v).map_err(|e| core_err(py, &e))
}

fn payload(py: Python<'_>, v: &Bound<'_, PyAny>, what: &str) -> PyResult<Value> {
    py_to_value(py, v).map_err(|e| {
        code_err(
            py,
            ErrorCode::InvalidPayload,
            format!("{what} is not JSON-serialisable: {}", e.value(py)),
        )
    })
}

fn flow_ids_json(ids: &FlowIds) -> Value {
    json!({
        "queue": ids.queue,
        "id": ids.id.to_string(),
        "children": ids.children.iter().map(flow_ids_json).collect::<Vec<_>>(),
    })
}

fn ms_to_s(ms: u64) -> f64 {
    ms as f64 / 1000.0
}

fn events_json(events: Vec<emq::events::Event>) -> emq::Result<Out> {
    Ok(Out::Json(serde_json::to_string(&events)?))
}

impl Queue {
    pub(crate) fn add_flow_future(
        &self,
        py: Python<'_>,
        flow: &Bound<'_, PyAny>,
    ) -> PyResult<CoreFuture> {
        let q = self.core(py)?;
        let flow = flow_spec(py, flow, 0)?
            .into_flow(q.name().as_str())
            .map_err(|e| core_err(py, &e))?;
        Ok(Box::pin(async move {
            let ids = q.add_flow(flow).await?;
            Ok(Out::Json(flow_ids_json(&ids).to_string()))
        }))
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn upsert_scheduler_future(
        &self,
        py: Python<'_>,
        id: String,
        every: &Bound<'_, PyAny>,
        name: &Bound<'_, PyAny>,
        data: &Bound<'_, PyAny>,
        first_after: &Bound<'_, PyAny>,
        limit: Option<u64>,
        options: Option<&Bound<'_, PyDict>>,
        cron: Option<String>,
        tz: Option<String>,
        end_after: &Bound<'_, PyAny>,
    ) -> PyResult<CoreFuture> {
        let q = self.core(py)?;
        let opt_secs = |what: &str, v: &Bound<'_, PyAny>| {
            (!v.is_none()).then(|| secs(py, what, v)).transpose()
        };
        let spec = ScheduleSpec {
            name: name_text(py, name)?,
            data: Some(payload(py, data, "the scheduled job's data")?),
            every: opt_secs("every", every)?,
            cron,
            tz,
            first_after: opt_secs("first_after", first_after)?,
            end_after: opt_secs("end_after", end_after)?,
            limit: limit.map(|l| l as f64),
            options: job_spec(py, options)?,
        };
        let schedule = Schedule::try_from(spec).map_err(|e| core_err(py, &e))?;
        Ok(Box::pin(async move {
            Ok(Out::Bool(q.upsert_scheduler(&id, schedule).await?))
        }))
    }

    pub(crate) fn remove_scheduler_future(
        &self,
        py: Python<'_>,
        id: String,
    ) -> PyResult<CoreFuture> {
        let q = self.core(py)?;
        Ok(Box::pin(async move {
            Ok(Out::Bool(q.remove_scheduler(&id).await?))
        }))
    }

    pub(crate) fn schedulers_future(&self, py: Python<'_>) -> PyResult<CoreFuture> {
        let q = self.core(py)?;
        Ok(Box::pin(async move {
            let all = q.schedulers().await?;
            let out: Vec<Value> = all
                .iter()
                .map(|s| {
                    json!({
                        "id": s.id,
                        "name": s.name,
                        "every": (s.every_ms > 0).then(|| ms_to_s(s.every_ms)),
                        "cron": s.cron,
                        "tz": s.tz,
                        "ends_in": s.ends_in_ms.map(ms_to_s),
                        "count": s.count,
                        "limit": if s.limit == 0 { None } else { Some(s.limit) },
                        "next_in": s.next_in_ms.map(ms_to_s),
                    })
                })
                .collect();
            Ok(Out::Json(Value::Array(out).to_string()))
        }))
    }

    pub(crate) fn set_rate_limit_future(
        &self,
        py: Python<'_>,
        max: &Bound<'_, PyAny>,
        window: &Bound<'_, PyAny>,
    ) -> PyResult<CoreFuture> {
        let q = self.core(py)?;
        let limit = Option::<RateLimit>::try_from(rate_limit(py, max, window)?)
            .map_err(|e| core_err(py, &e))?;
        Ok(Box::pin(async move {
            q.set_rate_limit(limit).await?;
            Ok(Out::None)
        }))
    }

    pub(crate) fn set_group_rate_limit_future(
        &self,
        py: Python<'_>,
        max: &Bound<'_, PyAny>,
        window: &Bound<'_, PyAny>,
    ) -> PyResult<CoreFuture> {
        let q = self.core(py)?;
        let limit = Option::<GroupRateLimit>::try_from(rate_limit(py, max, window)?)
            .map_err(|e| core_err(py, &e))?;
        Ok(Box::pin(async move {
            q.set_group_rate_limit(limit).await?;
            Ok(Out::None)
        }))
    }

    pub(crate) fn set_global_concurrency_future(
        &self,
        py: Python<'_>,
        max: &Bound<'_, PyAny>,
    ) -> PyResult<CoreFuture> {
        let q = self.core(py)?;
        let max = (!max.is_none())
            .then(|| number(py, "max", max))
            .transpose()?;
        let max = emq::spec::global_concurrency(max).map_err(|e| core_err(py, &e))?;
        Ok(Box::pin(async move {
            q.set_global_concurrency(max).await?;
            Ok(Out::None)
        }))
    }

    pub(crate) fn drain_future(&self, py: Python<'_>, delayed: bool) -> PyResult<CoreFuture> {
        let q = self.core(py)?;
        Ok(Box::pin(
            async move { Ok(Out::Int(q.drain(delayed).await?)) },
        ))
    }

    pub(crate) fn clean_future(
        &self,
        py: Python<'_>,
        st: &str,
        grace: &Bound<'_, PyAny>,
        limit: u64,
    ) -> PyResult<CoreFuture> {
        let q = self.core(py)?;
        let st = state(py, st)?;
        let grace = Duration::from_millis(seconds_ms(py, "grace", grace)?);
        Ok(Box::pin(async move {
            Ok(Out::Int(q.clean(st, grace, limit).await?))
        }))
    }

    pub(crate) fn obliterate_future(&self, py: Python<'_>, force: bool) -> PyResult<CoreFuture> {
        let q = self.core(py)?;
        Ok(Box::pin(
            async move { Ok(Out::Int(q.obliterate(force).await?)) },
        ))
    }

    /// `remove`, `retry`, `promote` (a bool) or `logs` (a list) of one job.
    pub(crate) fn job_op_future(
        &self,
        py: Python<'_>,
        op: &str,
        id: &Bound<'_, PyAny>,
    ) -> PyResult<CoreFuture> {
        let q = self.core(py)?;
        let id = job_id(py, id)?;
        Ok(match op {
            "remove" => Box::pin(async move { Ok(Out::Bool(q.remove(id).await?.is_moved())) }),
            "retry" => Box::pin(async move { Ok(Out::Bool(q.retry(id).await?.is_moved())) }),
            "promote" => Box::pin(async move { Ok(Out::Bool(q.promote(id).await?.is_moved())) }),
            _ => Box::pin(async move { Ok(Out::Strs(q.logs(id).await?)) }),
        })
    }

    pub(crate) fn change_priority_future(
        &self,
        py: Python<'_>,
        id: &Bound<'_, PyAny>,
        priority: &Bound<'_, PyAny>,
    ) -> PyResult<CoreFuture> {
        let q = self.core(py)?;
        let id = job_id(py, id)?;
        let priority = whole(py, "priority", priority, u32::MAX as u64)? as u32;
        Ok(Box::pin(async move {
            Ok(Out::Bool(q.change_priority(id, priority).await?.is_moved()))
        }))
    }

    pub(crate) fn retry_failed_future(&self, py: Python<'_>) -> PyResult<CoreFuture> {
        let q = self.core(py)?;
        Ok(Box::pin(
            async move { Ok(Out::Int(q.retry_failed().await?)) },
        ))
    }

    pub(crate) fn list_future(
        &self,
        py: Python<'_>,
        st: &str,
        offset: u64,
        limit: u64,
    ) -> PyResult<CoreFuture> {
        let q = self.core(py)?;
        let st = state(py, st)?;
        Ok(Box::pin(async move {
            let jobs = q.list(st, offset, limit).await?;
            let out: Vec<Value> = jobs.iter().map(|j| j.to_json()).collect();
            Ok(Out::Json(Value::Array(out).to_string()))
        }))
    }

    pub(crate) fn is_paused_future(&self, py: Python<'_>) -> PyResult<CoreFuture> {
        let q = self.core(py)?;
        Ok(Box::pin(async move { Ok(Out::Bool(q.is_paused().await?)) }))
    }

    /// `emq migrate` from Python: copies a BullMQ (or EchoMQ 1.x) queue into this one; the report
    /// as JSON (the core's `MigrateReport`).
    pub(crate) fn migrate_future(
        &self,
        py: Python<'_>,
        options: emq::migrate::MigrateOptions,
    ) -> PyResult<CoreFuture> {
        let q = self.core(py)?;
        Ok(Box::pin(async move {
            let report = q.migrate_from_bullmq(&options).await?;
            Ok(Out::Json(serde_json::to_string(&report)?))
        }))
    }

    pub(crate) fn metrics_future(&self, py: Python<'_>) -> PyResult<CoreFuture> {
        let q = self.core(py)?;
        Ok(Box::pin(async move {
            Ok(Out::Json(serde_json::to_string(&q.metrics().await?)?))
        }))
    }

    pub(crate) fn recent_events_future(
        &self,
        py: Python<'_>,
        limit: usize,
    ) -> PyResult<CoreFuture> {
        let q = self.core(py)?;
        Ok(Box::pin(async move {
            events_json(q.recent_events(limit).await?)
        }))
    }

    pub(crate) fn events_future(
        &self,
        py: Python<'_>,
        after: Option<String>,
    ) -> PyResult<CoreFuture> {
        let q = self.core(py)?;
        Ok(Box::pin(async move {
            let stream = q.events(after).await?;
            Ok(Out::Events(EventStream {
                inner: Arc::new(tokio::sync::Mutex::new(stream)),
            }))
        }))
    }
}

/// A subscriber on a queue's events (native half of `emq.EventStream`).
#[pyclass(module = "emq._emq", frozen)]
pub struct EventStream {
    inner: Arc<tokio::sync::Mutex<emq::events::EventStream>>,
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
