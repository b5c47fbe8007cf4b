//! The queue's extras, as core futures for the `Queue` methods in `lib.rs`: flows, job
//! schedulers, rate limit and global concurrency, the events subscriber, and maintenance (drain,
//! clean, obliterate, remove, retry, promote, logs, list, metrics). Durations arrive in seconds
//! (numbers or `timedelta`) and leave in seconds; everything else is JSON-shaped dicts and lists.

use crate::convert::py_to_value;
use crate::{
    code_err, core_err, int_u32, job_options, name_text, seconds_ms, CoreFuture, Out, Queue,
};
use emq::{
    ErrorCode, FlowIds, FlowJob, GroupRateLimit, JobId, JobState, RateLimit, Repeat, Schedule,
};
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

/// A flow from its dict: `{"name", "data", "queue"?, "children"?: [...], **job options}`; a
/// child without `queue` goes to its parent's queue.
fn flow_job(py: Python<'_>, v: &Bound<'_, PyAny>, queue: &str, depth: usize) -> PyResult<FlowJob> {
    if depth > 32 {
        return Err(code_err(
            py,
            ErrorCode::InvalidOption,
            "a flow is at most 32 levels deep",
        ));
    }
    let d = v.cast::<PyDict>().map_err(|_| {
        code_err(
            py,
            ErrorCode::InvalidOption,
            "a flow node is a dict with 'name', 'data', 'queue', 'children' and job options",
        )
    })?;
    let opts = d.copy()?;
    let name = match opts.get_item("name")? {
        Some(n) => name_text(py, &n)?,
        None => {
            return Err(code_err(
                py,
                ErrorCode::InvalidOption,
                "a flow node needs a 'name'",
            ))
        }
    };
    let data = match opts.get_item("data")? {
        Some(x) => payload(py, &x, "a flow job's data")?,
        None => Value::Null,
    };
    let queue = match opts.get_item("queue")? {
        Some(q) if !q.is_none() => q
            .extract::<String>()
            .map_err(|_| code_err(py, ErrorCode::InvalidOption, "a flow node's queue is a str"))?,
        _ => queue.to_string(),
    };
    let mut children = Vec::new();
    if let Some(cs) = opts.get_item("children")? {
        if !cs.is_none() {
            for c in cs.try_iter()? {
                children.push(flow_job(py, &c?, &queue, depth + 1)?);
            }
        }
    }
    for k in ["name", "data", "queue", "children"] {
        if opts.contains(k)? {
            opts.del_item(k)?;
        }
    }
    let options = job_options(py, Some(&opts))?;
    Ok(FlowJob {
        queue,
        name,
        data,
        options,
        children,
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

/// `max` jobs per `window` seconds, or None when `max` is None (the limit is lifted).
fn rate_limit(
    py: Python<'_>,
    max: &Bound<'_, PyAny>,
    window: &Bound<'_, PyAny>,
) -> PyResult<Option<RateLimit>> {
    if max.is_none() {
        return Ok(None);
    }
    Ok(Some(RateLimit {
        max: int_u32(py, "max", max)?,
        window: Duration::from_millis(seconds_ms(py, "window", window)?),
    }))
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
        let flow = flow_job(py, flow, q.name().as_str(), 0)?;
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
        cron: Option<(String, String)>,
        end_after: &Bound<'_, PyAny>,
    ) -> PyResult<CoreFuture> {
        let q = self.core(py)?;
        let repeat = match (every.is_none(), cron) {
            (false, None) => Repeat::Every(Duration::from_millis(seconds_ms(py, "every", every)?)),
            (true, Some((expr, tz))) => Repeat::Cron { expr, tz },
            _ => {
                return Err(code_err(
                    py,
                    ErrorCode::InvalidOption,
                    "a scheduler needs exactly one of every= and cron=",
                ))
            }
        };
        let mut schedule = Schedule::new(
            repeat,
            name_text(py, name)?,
            payload(py, data, "the scheduled job's data")?,
        );
        schedule.first_after = Duration::from_millis(seconds_ms(py, "first_after", first_after)?);
        schedule.limit = limit;
        schedule.end_after = if end_after.is_none() {
            None
        } else {
            Some(Duration::from_millis(seconds_ms(
                py,
                "end_after",
                end_after,
            )?))
        };
        schedule.options = job_options(py, options)?;
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
        let limit = rate_limit(py, max, window)?;
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
        let limit = rate_limit(py, max, window)?.map(|l| GroupRateLimit {
            max: l.max,
            window: l.window,
        });
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
        let max = if max.is_none() {
            None
        } else {
            Some(int_u32(py, "max", max)?)
        };
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
        let priority = int_u32(py, "priority", priority)?;
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
