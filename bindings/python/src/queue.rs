//! `emq._emq.Queue`: a handle on one queue (the native half of `emq.Queue`): its one
//! `#[pymethods]` block, every method that talks to the datastore written once
//! (`awaitable_methods!`, runtime.rs); the conversions it shares with other files are in
//! `options.rs` and `convert.rs`, the view shapes (flow ids, schedulers, events) in `extras.rs`.

use crate::convert::{json_dumps, name_text};
use crate::errors::{code_err, core_err};
use crate::extras::{events_json, job_id, job_state, payload, schedulers_json, EventStream};
use crate::options::{
    flow_spec, job_options, job_spec, number, rate_limit, seconds_ms, secs, text, whole,
};
use crate::runtime::{awaitable_methods, run, Out};
use emq::spec::ScheduleSpec;
use emq::{ErrorCode, GroupRateLimit, JobOptions, RateLimit, Schedule};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use serde_json::Value;
use std::time::Duration;

/// A queue name from Python: a `str` the core checks; one that is not valid Unicode (a lone
/// surrogate such as `"\\ud800"`) is refused as `invalid_queue_name` (it was a raw
/// `UnicodeEncodeError`), so a name that is accepted is exactly the name used.
fn queue_name_text(py: Python<'_>, v: &Bound<'_, PyAny>) -> PyResult<String> {
    if !v.is_instance_of::<pyo3::types::PyString>() {
        return Err(code_err(
            py,
            ErrorCode::InvalidQueueName,
            "a queue name must be a str",
        ));
    }
    v.extract().map_err(|_| {
        code_err(
            py,
            ErrorCode::InvalidQueueName,
            "a queue name must be valid Unicode (it holds a lone surrogate)",
        )
    })
}

/// A handle on one queue (native half of `emq.Queue`).
#[pyclass(module = "emq._emq", frozen)]
pub(crate) struct Queue {
    pub(crate) inner: emq::Queue,
    pub(crate) pid: u32,
    /// This handle's number in the process (a thread's own connection is kept by it: `local.rs`).
    pub(crate) id: u64,
}

/// A number for a new native queue handle, unique in the process.
pub(crate) fn next_queue_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// One TLS input: `bytes` are PEM, a `str` a path (or PEM text); the core reads and checks it.
fn pem(py: Python<'_>, option: &str, v: Option<&Bound<'_, PyAny>>) -> PyResult<Option<emq::Pem>> {
    let Some(v) = v.filter(|v| !v.is_none()) else {
        return Ok(None);
    };
    if let Ok(b) = v.cast::<pyo3::types::PyBytes>() {
        return Ok(Some(emq::Pem::Text(b.as_bytes().to_vec())));
    }
    match v.extract::<String>() {
        Ok(s) => Ok(Some(emq::Pem::guess(&s))),
        Err(_) => Err(code_err(
            py,
            ErrorCode::InvalidOption,
            format!("{option} must be a path (str or os.PathLike) or the PEM as bytes"),
        )),
    }
}

/// The core's connect options: the seeds, TLS (`ca_cert`, `client_cert`, `client_key`) and, with
/// `durable=(replicas, timeout_ms)`, the replicas every add waits for.
fn connect_options(
    py: Python<'_>,
    urls: Vec<String>,
    durable: Option<(i128, i128)>,
    tls: [Option<&Bound<'_, PyAny>>; 3],
) -> PyResult<emq::ConnectOptions> {
    if urls.is_empty() {
        return Err(code_err(
            py,
            ErrorCode::InvalidOption,
            "at least one URL is needed",
        ));
    }
    let tls = emq::TlsConfig {
        ca_cert: pem(py, "ca_cert", tls[0])?,
        client_cert: pem(py, "client_cert", tls[1])?,
        client_key: pem(py, "client_key", tls[2])?,
    };
    let mut options = emq::ConnectOptions::seeds(urls)
        .tls(tls)
        .map_err(|e| core_err(py, &e))?;
    if let Some((n, ms)) = durable {
        options = options.durable_counts(
            n.clamp(0, u64::MAX.into()) as u64,
            ms.clamp(0, u64::MAX.into()) as u64,
        );
    }
    Ok(options)
}

pub(crate) struct AddArgs {
    pub(crate) name: String,
    pub(crate) data: String,
    pub(crate) options: JobOptions,
}

pub(crate) fn add_args(
    py: Python<'_>,
    name: &Bound<'_, PyAny>,
    data: &Bound<'_, PyAny>,
    opts: Option<&Bound<'_, PyDict>>,
) -> PyResult<AddArgs> {
    Ok(AddArgs {
        name: name_text(py, name)?,
        data: json_dumps(py, data, "the payload")?,
        options: job_options(py, opts)?,
    })
}

/// `add_bulk`'s `(name, data, options)` tuples as the core's new jobs (each payload checked by
/// the core's rule: depth, lone surrogates, integers within 64 bits).
pub(crate) fn new_jobs(py: Python<'_>, jobs: &Bound<'_, PyAny>) -> PyResult<Vec<emq::NewJob>> {
    let mut new_jobs = Vec::new();
    for item in jobs.try_iter()? {
        let item = item?;
        let t = item.cast::<PyTuple>().map_err(|_| {
            code_err(
                py,
                ErrorCode::InvalidOption,
                "add_bulk takes (name, data, options) tuples",
            )
        })?;
        let opts = t.get_item(2)?;
        let opts = if opts.is_none() {
            None
        } else {
            Some(opts.cast_into::<PyDict>()?)
        };
        let a = add_args(py, &t.get_item(0)?, &t.get_item(1)?, opts.as_ref())?;
        let data =
            emq::job::payload_from_text("the payload", &a.data).map_err(|e| core_err(py, &e))?;
        new_jobs.push(emq::NewJob {
            name: a.name,
            data,
            options: a.options,
        });
    }
    Ok(new_jobs)
}

/// A group name: a `str` (the core checks it); `None` only where `optional` (every group).
fn group_name(py: Python<'_>, v: &Bound<'_, PyAny>, optional: bool) -> PyResult<Option<String>> {
    match text(py, "group", v)? {
        None if !optional => Err(code_err(
            py,
            ErrorCode::InvalidOption,
            "group must be a string",
        )),
        g => Ok(g),
    }
}

/// A group cap: `None` lifts it, else a whole number (the core checks its bounds).
fn group_limit(py: Python<'_>, v: &Bound<'_, PyAny>, max: u64) -> PyResult<Option<u64>> {
    (!v.is_none())
        .then(|| whole(py, "limit", v, max))
        .transpose()
}

impl Queue {
    /// The core queue, refused in a process other than the one that connected it.
    pub(crate) fn core(&self, py: Python<'_>) -> PyResult<emq::Queue> {
        if self.pid != std::process::id() {
            return Err(code_err(
                py,
                ErrorCode::Closed,
                "this Queue was connected in another process (before os.fork()); connect a new one in this process",
            ));
        }
        Ok(self.inner.clone())
    }
}

// Every method that talks to the datastore: an awaitable, or with `blocking=True` the outcome
// itself (GIL released), for the sync facade; each written once (`awaitable_methods!`).
awaitable_methods! {
    impl Queue {
        /// Connects to the datastore (`urls`: one URL, or several cluster seeds) and opens queue
        /// `name`; for `rediss://`, a private CA and a client certificate + key (mutual TLS); with
        /// `durable=(replicas, timeout_ms)` every add waits for that many replicas.
        #[staticmethod]
        #[pyo3(signature = (urls, name, durable=None, ca_cert=None, client_cert=None, client_key=None, partitions=None, blocking=false))]
        #[allow(clippy::too_many_arguments)]
        fn connect(
            py: Python<'_>,
            urls: Vec<String>,
            name: &Bound<'_, PyAny>,
            durable: Option<(i128, i128)>,
            ca_cert: Option<&Bound<'_, PyAny>>,
            client_cert: Option<&Bound<'_, PyAny>>,
            client_key: Option<&Bound<'_, PyAny>>,
            partitions: Option<i128>,
            blocking: bool,
        ) -> PyResult<Py<PyAny>> {
            let name = queue_name_text(py, name)?;
            let options = connect_options(py, urls, durable, [ca_cert, client_cert, client_key])?;
            let queue = emq::QueueOptions::with_partitions(partitions).map_err(|e| core_err(py, &e))?;
            let connect = async move {
                Ok(Out::Queue(emq::Queue::connect_with(options, &name, queue).await?))
            };
            run(py, Box::pin(connect), blocking)
        }

        /// The queue's name.
        #[getter]
        fn name(&self) -> String {
            self.inner.name().to_string()
        }

        /// How many partitions the queue has (1: a plain queue).
        #[getter]
        fn partitions(&self) -> u16 {
            self.inner.partition_count()
        }

        /// A handle on batch `id` of this queue (its id checked by the core's one gate).
        fn open_batch(&self, py: Python<'_>, id: String) -> PyResult<crate::batch::Batch> {
            let inner = self.core(py)?.open_batch(&id).map_err(|e| core_err(py, &e))?;
            Ok(crate::batch::Batch { inner })
        }

        /// `add`, blocking, on this thread's own connection (`local.rs`): the sync API's add.
        #[pyo3(signature = (name, data, options=None))]
        fn add_here(
            &self,
            py: Python<'_>,
            name: &Bound<'_, PyAny>,
            data: &Bound<'_, PyAny>,
            options: Option<&Bound<'_, PyDict>>,
        ) -> PyResult<Py<PyAny>> {
            let a = add_args(py, name, data, options)?;
            let q = self.core(py)?;
            crate::local::block_here(py, self.id, &q, move |q| {
                Box::pin(async move {
                    let id = q.add_json(&a.name, &a.data, a.options).await?;
                    Ok(Out::Str(id.to_string()))
                })
            })
        }

        /// Where this queue's direct adds go (the core's `queue/direct.rs`): (host, port) of a
        /// plain standalone server, or None.
        fn direct_endpoint(&self, py: Python<'_>) -> PyResult<Option<(String, u16)>> {
            Ok(self.core(py)?.direct_endpoint())
        }

        /// The one call of a one-job add, for the event loop's own socket: (id, the call's
        /// bytes), or None when the add must go through `add` (the core decides: `direct.rs`).
        #[pyo3(signature = (name, data, options=None))]
        fn direct_add(
            &self,
            py: Python<'_>,
            name: &Bound<'_, PyAny>,
            data: &Bound<'_, PyAny>,
            options: Option<&Bound<'_, PyDict>>,
        ) -> PyResult<Option<(String, Py<pyo3::types::PyBytes>)>> {
            let a = add_args(py, name, data, options)?;
            let q = self.core(py)?;
            let added = q
                .direct_add(&a.name, &a.data, &a.options)
                .map_err(|e| core_err(py, &e))?;
            Ok(added.map(|d| {
                (
                    d.id.to_string(),
                    pyo3::types::PyBytes::new(py, &d.frame).unbind(),
                )
            }))
        }

        /// Mints a job id now, to add later with `id=` (an add that is idempotent across retries
        /// and process restarts).
        fn mint_id(&self, py: Python<'_>) -> PyResult<String> {
            let id = self.core(py)?.mint_id().map_err(|e| core_err(py, &e))?;
            Ok(id.to_string())
        }
    }
    awaitable {
        #[pyo3(signature = (name, data, options=None, blocking=false))]
        fn add(
            &self, py, name: &Bound<'_, PyAny>, data: &Bound<'_, PyAny>,
            options: Option<&Bound<'_, PyDict>>
        ) {
            let a = add_args(py, name, data, options)?;
            let q = self.core(py)?;
            Ok(Box::pin(async move {
                let id = q.add_json(&a.name, &a.data, a.options).await?;
                Ok(Out::Str(id.to_string()))
            }))
        }

        #[pyo3(signature = (jobs, blocking=false))]
        fn add_bulk(&self, py, jobs: &Bound<'_, PyAny>) {
            let q = self.core(py)?;
            let jobs = new_jobs(py, jobs)?;
            Ok(Box::pin(async move {
                let ids = q.add_bulk(jobs).await?;
                Ok(Out::Strs(ids.iter().map(|i| i.to_string()).collect()))
            }))
        }

        #[pyo3(signature = (id, blocking=false))]
        fn get(&self, py, id: &Bound<'_, PyAny>) {
            let q = self.core(py)?;
            let id: String = id.extract().map_err(|_| {
                code_err(py, ErrorCode::InvalidJobId, "a job id is its text form (a str)")
            })?;
            Ok(Box::pin(async move {
                let job = q.get_str(&id).await?;
                Ok(Out::OptJson(job.map(|j| j.to_json().to_string())))
            }))
        }

        #[pyo3(signature = (blocking=false))]
        fn counts(&self, py) {
            let q = self.core(py)?;
            Ok(Box::pin(async move { Ok(Out::Json(serde_json::to_string(&q.counts().await?)?)) }))
        }

        #[pyo3(signature = (blocking=false))]
        fn pause(&self, py) {
            let q = self.core(py)?;
            Ok(Box::pin(async move { q.pause().await.map(|_| Out::None) }))
        }

        /// Grows the partitioned queue to `count` partitions, online (the core checks the count).
        #[pyo3(signature = (count, blocking=false))]
        fn grow_partitions(&self, py, count: &Bound<'_, PyAny>) {
            let q = self.core(py)?;
            let n = whole(py, "partitions", count, u64::from(u32::MAX))?;
            Ok(Box::pin(async move {
                Ok(Out::Int(u64::from(q.grow_partitions(i128::from(n)).await?)))
            }))
        }

        #[pyo3(signature = (blocking=false))]
        fn resume(&self, py) {
            let q = self.core(py)?;
            Ok(Box::pin(async move { q.resume().await.map(|_| Out::None) }))
        }

        #[pyo3(signature = (blocking=false))]
        fn close(&self, py) {
            let q = self.core(py)?;
            Ok(Box::pin(async move { q.close().await.map(|_| Out::None) }))
        }

        /// Adds a flow (a dict: name, data, queue, children, job options); the ids in its shape.
        #[pyo3(signature = (flow, blocking=false))]
        fn add_flow(&self, py, flow: &Bound<'_, PyAny>) {
            let q = self.core(py)?;
            let flow = flow_spec(py, flow, 0)?
                .into_flow(q.name().as_str())
                .map_err(|e| core_err(py, &e))?;
            Ok(Box::pin(async move {
                let ids = q.add_flow(flow).await?;
                Ok(Out::Json(serde_json::to_string(&ids)?))
            }))
        }

        /// Creates or replaces a scheduler; true when created.
        #[pyo3(signature = (id, every, name, data, first_after, limit=None, options=None, cron=None, tz=None, end_after=None, blocking=false))]
        #[allow(clippy::too_many_arguments)]
        fn upsert_scheduler(
            &self, py, id: String, every: &Bound<'_, PyAny>, name: &Bound<'_, PyAny>,
            data: &Bound<'_, PyAny>, first_after: &Bound<'_, PyAny>, limit: Option<u64>,
            options: Option<&Bound<'_, PyDict>>, cron: Option<String>, tz: Option<String>,
            end_after: Option<&Bound<'_, PyAny>>
        ) {
            let q = self.core(py)?;
            let opt_secs = |what: &str, v: Option<&Bound<'_, PyAny>>| {
                v.filter(|v| !v.is_none()).map(|v| secs(py, what, v)).transpose()
            };
            let spec = ScheduleSpec {
                name: name_text(py, name)?,
                data: Some(payload(py, data, "the scheduled job's data")?),
                every: opt_secs("every", Some(every))?,
                cron,
                tz,
                first_after: opt_secs("first_after", Some(first_after))?,
                end_after: opt_secs("end_after", end_after)?,
                limit: limit.map(|l| l as f64),
                options: job_spec(py, options)?,
            };
            let schedule = Schedule::try_from(spec).map_err(|e| core_err(py, &e))?;
            Ok(Box::pin(async move { Ok(Out::Bool(q.upsert_scheduler(&id, schedule).await?)) }))
        }

        #[pyo3(signature = (id, blocking=false))]
        fn remove_scheduler(&self, py, id: String) {
            let q = self.core(py)?;
            Ok(Box::pin(async move { Ok(Out::Bool(q.remove_scheduler(&id).await?)) }))
        }

        #[pyo3(signature = (blocking=false))]
        fn schedulers(&self, py) {
            let q = self.core(py)?;
            Ok(Box::pin(async move {
                Ok(Out::Json(schedulers_json(&q.schedulers().await?)?))
            }))
        }

        #[pyo3(signature = (max, window, blocking=false))]
        fn set_rate_limit(&self, py, max: &Bound<'_, PyAny>, window: &Bound<'_, PyAny>) {
            let q = self.core(py)?;
            let limit = Option::<RateLimit>::try_from(rate_limit(py, max, window)?)
                .map_err(|e| core_err(py, &e))?;
            Ok(Box::pin(async move { q.set_rate_limit(limit).await.map(|_| Out::None) }))
        }

        #[pyo3(signature = (max, window, blocking=false))]
        fn set_group_rate_limit(&self, py, max: &Bound<'_, PyAny>, window: &Bound<'_, PyAny>) {
            let q = self.core(py)?;
            let limit = Option::<GroupRateLimit>::try_from(rate_limit(py, max, window)?)
                .map_err(|e| core_err(py, &e))?;
            Ok(Box::pin(async move { q.set_group_rate_limit(limit).await.map(|_| Out::None) }))
        }

        #[pyo3(signature = (max, blocking=false))]
        fn set_global_concurrency(&self, py, max: &Bound<'_, PyAny>) {
            let q = self.core(py)?;
            let max = (!max.is_none()).then(|| number(py, "max", max)).transpose()?;
            let max = emq::spec::global_concurrency(max).map_err(|e| core_err(py, &e))?;
            Ok(Box::pin(async move { q.set_global_concurrency(max).await.map(|_| Out::None) }))
        }

        #[pyo3(signature = (group, weight, blocking=false))]
        fn set_group_weight(&self, py, group: &Bound<'_, PyAny>, weight: &Bound<'_, PyAny>) {
            let q = self.core(py)?;
            let group = group_name(py, group, false)?.unwrap_or_default();
            let weight = whole(py, "weight", weight, u32::MAX.into())? as u32;
            Ok(Box::pin(async move { q.set_group_weight(&group, weight).await.map(|_| Out::None) }))
        }

        /// `group=None`: the default of every group; `limit=None` lifts the cap.
        #[pyo3(signature = (limit, group=None, blocking=false))]
        fn set_group_concurrency(
            &self, py, limit: &Bound<'_, PyAny>, group: Option<&Bound<'_, PyAny>>
        ) {
            let q = self.core(py)?;
            let limit = group_limit(py, limit, u32::MAX.into())?.map(|n| n as u32);
            let group = group.map(|g| group_name(py, g, true)).transpose()?.flatten();
            Ok(Box::pin(async move {
                q.set_group_concurrency(limit, group.as_deref()).await.map(|_| Out::None)
            }))
        }

        /// `group=None`: the default of every group; `limit=None` lifts the cap.
        #[pyo3(signature = (limit, group=None, blocking=false))]
        fn set_group_max_waiting(
            &self, py, limit: &Bound<'_, PyAny>, group: Option<&Bound<'_, PyAny>>
        ) {
            let q = self.core(py)?;
            let limit = group_limit(py, limit, emq::spec::MAX_COUNT)?;
            let group = group.map(|g| group_name(py, g, true)).transpose()?.flatten();
            Ok(Box::pin(async move {
                q.set_group_max_waiting(limit, group.as_deref()).await.map(|_| Out::None)
            }))
        }

        #[pyo3(signature = (group, blocking=false))]
        fn pause_group(&self, py, group: &Bound<'_, PyAny>) {
            let q = self.core(py)?;
            let group = group_name(py, group, false)?.unwrap_or_default();
            Ok(Box::pin(async move { q.pause_group(&group).await.map(|_| Out::None) }))
        }

        #[pyo3(signature = (group, blocking=false))]
        fn resume_group(&self, py, group: &Bound<'_, PyAny>) {
            let q = self.core(py)?;
            let group = group_name(py, group, false)?.unwrap_or_default();
            Ok(Box::pin(async move { q.resume_group(&group).await.map(|_| Out::None) }))
        }

        /// One page of the queue's groups (the core's `GroupInfo`s), as JSON objects.
        #[pyo3(signature = (offset=0, limit=100, blocking=false))]
        fn groups(&self, py, offset: u64, limit: u64) {
            let q = self.core(py)?;
            Ok(Box::pin(async move {
                Ok(Out::Json(serde_json::to_string(&q.groups(offset, limit).await?)?))
            }))
        }

        #[pyo3(signature = (delayed=false, blocking=false))]
        fn drain(&self, py, delayed: bool) {
            let q = self.core(py)?;
            Ok(Box::pin(async move { Ok(Out::Int(q.drain(delayed).await?)) }))
        }

        #[pyo3(signature = (state, grace, limit, blocking=false))]
        fn clean(&self, py, state: &str, grace: &Bound<'_, PyAny>, limit: u64) {
            let q = self.core(py)?;
            let st = job_state(py, state)?;
            let grace = Duration::from_millis(seconds_ms(py, "grace", grace)?);
            Ok(Box::pin(async move { Ok(Out::Int(q.clean(st, grace, limit).await?)) }))
        }

        #[pyo3(signature = (force=false, blocking=false))]
        fn obliterate(&self, py, force: bool) {
            let q = self.core(py)?;
            Ok(Box::pin(async move { Ok(Out::Int(q.obliterate(force).await?)) }))
        }

        /// `op` is "remove", "retry", "promote" (a bool: whether it moved) or "logs" (a list).
        #[pyo3(signature = (op, id, blocking=false))]
        fn job_op(&self, py, op: &str, id: &Bound<'_, PyAny>) {
            let q = self.core(py)?;
            let id = job_id(py, id)?;
            Ok(match op {
                "remove" => Box::pin(async move { Ok(Out::Bool(q.remove(id).await?.is_moved())) }),
                "retry" => Box::pin(async move { Ok(Out::Bool(q.retry(id).await?.is_moved())) }),
                "promote" => {
                    Box::pin(async move { Ok(Out::Bool(q.promote(id).await?.is_moved())) })
                }
                _ => Box::pin(async move { Ok(Out::Strs(q.logs(id).await?)) }),
            })
        }

        #[pyo3(signature = (id, priority, blocking=false))]
        fn change_priority(&self, py, id: &Bound<'_, PyAny>, priority: &Bound<'_, PyAny>) {
            let q = self.core(py)?;
            let id = job_id(py, id)?;
            let priority = whole(py, "priority", priority, u32::MAX as u64)? as u32;
            Ok(Box::pin(async move {
                Ok(Out::Bool(q.change_priority(id, priority).await?.is_moved()))
            }))
        }

        /// Cancels a job; `"cancelled"`, `"requested"` (running: its worker stops it),
        /// `"finished"` or `"not_found"`.
        #[pyo3(signature = (id, reason=String::new(), blocking=false))]
        fn cancel(&self, py, id: &Bound<'_, PyAny>, reason: String) {
            let q = self.core(py)?;
            let id = job_id(py, id)?;
            Ok(Box::pin(async move {
                Ok(Out::Str(q.cancel(id, &reason).await?.as_str().to_string()))
            }))
        }

        /// Waits for a job's outcome: `{"ok": true, "result": …}` or `{"ok": false, "failure":
        /// {code, message, stack}}` (the Python layer raises `HandlerFailed` for the second).
        #[pyo3(signature = (id, timeout, blocking=false))]
        fn wait(&self, py, id: &Bound<'_, PyAny>, timeout: &Bound<'_, PyAny>) {
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

        /// The queue's default dead-letter queue (`None` clears it); checked by the core.
        #[pyo3(signature = (queue, blocking=false))]
        fn set_dead_letter(&self, py, queue: Option<String>) {
            let q = self.core(py)?;
            Ok(Box::pin(async move { q.set_dead_letter(queue.as_deref()).await.map(|_| Out::None) }))
        }

        #[pyo3(signature = (blocking=false))]
        fn dead_letter(&self, py) {
            let q = self.core(py)?;
            Ok(Box::pin(async move { Ok(Out::OptJson(q.dead_letter().await?.map(|n| Value::String(n).to_string()))) }))
        }

        /// The queue's job defaults, as `add`'s keywords (`attempts`, `backoff`, `jitter`,
        /// `remove_on_complete`, `remove_on_fail`; durations in seconds), checked by the core; none
        /// removes them.
        #[pyo3(signature = (options, blocking=false))]
        fn set_job_defaults(&self, py, options: Option<&Bound<'_, PyDict>>) {
            let q = self.core(py)?;
            let d = emq::JobDefaults::from_spec(job_spec(py, options)?).map_err(|e| core_err(py, &e))?;
            Ok(Box::pin(async move { q.set_job_defaults(&d).await.map(|_| Out::None) }))
        }

        /// The queue's job defaults as `set_job_defaults` takes them (JSON, seconds).
        #[pyo3(signature = (blocking=false))]
        fn job_defaults(&self, py) {
            let q = self.core(py)?;
            Ok(Box::pin(async move { Ok(Out::Json(q.job_defaults().await?.spec_json(true).to_string())) }))
        }

        /// The dead-lettered jobs this queue holds: `[{id, name, state, origin}]`.
        #[pyo3(signature = (limit=100, blocking=false))]
        fn dead_letters(&self, py, limit: u64) {
            let q = self.core(py)?;
            Ok(Box::pin(async move {
                let jobs = q.dead_letters(limit).await?;
                let out: Vec<Value> = jobs.iter().map(|j| serde_json::json!({
                    "id": j.id, "name": j.name, "state": j.state.map(|s| s.as_str()),
                    "origin": j.dead_letter_origin(),
                })).collect();
                Ok(Out::Json(Value::Array(out).to_string()))
            }))
        }

        /// `ids=None`: every one; returns `[{id, queue, origin_id}]`.
        #[pyo3(signature = (ids=None, blocking=false))]
        fn replay_dead_letters(&self, py, ids: Option<Vec<Bound<'_, PyAny>>>) {
            let q = self.core(py)?;
            let ids = ids
                .map(|v| v.iter().map(|i| job_id(py, i)).collect::<PyResult<Vec<_>>>())
                .transpose()?;
            Ok(Box::pin(async move {
                let done = q.replay_dead_letters(ids.as_deref()).await?;
                Ok(Out::Json(serde_json::to_string(&done)?))
            }))
        }

        /// Adds a child job to `queue` for `parent`, a job of this queue waiting for its children
        /// (`Queue::add_child`); its id.
        #[pyo3(signature = (parent, queue, name, data, options=None, blocking=false))]
        #[allow(clippy::too_many_arguments)]
        fn add_child(
            &self, py, parent: &Bound<'_, PyAny>, queue: String, name: &Bound<'_, PyAny>,
            data: &Bound<'_, PyAny>, options: Option<&Bound<'_, PyDict>>
        ) {
            let parent = job_id(py, parent)?;
            let a = add_args(py, name, data, options)?;
            let data: Value = serde_json::from_str(&a.data)
                .map_err(|e| crate::core_err(py, &emq::Error::from(e)))?;
            let q = self.core(py)?;
            Ok(Box::pin(async move {
                Ok(Out::Str(q.add_child(parent, &queue, &a.name, data, a.options).await?.to_string()))
            }))
        }

        /// Creates a batch in this queue's slot (callbacks: `{queue, name, data, options}` dicts).
        #[pyo3(signature = (on_complete=None, on_success=None, description=None, blocking=false))]
        fn batch(
            &self, py, on_complete: Option<&Bound<'_, PyDict>>,
            on_success: Option<&Bound<'_, PyDict>>, description: Option<String>
        ) {
            let options = emq::BatchOptions {
                on_complete: crate::batch::callback(py, on_complete)?,
                on_success: crate::batch::callback(py, on_success)?,
                description,
            };
            let q = self.core(py)?;
            Ok(Box::pin(async move { Ok(Out::Batch(q.batch(options).await?)) }))
        }

        #[pyo3(signature = (blocking=false))]
        fn retry_failed(&self, py) {
            let q = self.core(py)?;
            Ok(Box::pin(async move { Ok(Out::Int(q.retry_failed().await?)) }))
        }

        #[pyo3(signature = (state, offset=0, limit=100, blocking=false))]
        fn list(&self, py, state: &str, offset: u64, limit: u64) {
            let q = self.core(py)?;
            let st = job_state(py, state)?;
            Ok(Box::pin(async move {
                let jobs = q.list(st, offset, limit).await?;
                let out: Vec<Value> = jobs.iter().map(|j| j.to_json()).collect();
                Ok(Out::Json(Value::Array(out).to_string()))
            }))
        }

        #[pyo3(signature = (blocking=false))]
        fn is_paused(&self, py) {
            let q = self.core(py)?;
            Ok(Box::pin(async move { Ok(Out::Bool(q.is_paused().await?)) }))
        }

        #[pyo3(signature = (blocking=false))]
        fn metrics(&self, py) {
            let q = self.core(py)?;
            Ok(Box::pin(async move { Ok(Out::Json(serde_json::to_string(&q.metrics().await?)?)) }))
        }

        /// Copies the BullMQ (or EchoMQ 1.x) queue `<from_prefix>:<source_queue>` into this queue
        /// (see `emq migrate`); the report (the core's `MigrateReport`) as a dict.
        #[pyo3(signature = (source_queue, from_prefix, dry_run=false, completed=false, delete_source=false, batch=500, blocking=false))]
        #[allow(clippy::too_many_arguments)]
        fn migrate_from_bullmq(
            &self, py, source_queue: String, from_prefix: String, dry_run: bool, completed: bool,
            delete_source: bool, batch: usize
        ) {
            let q = self.core(py)?;
            let mut o = emq::migrate::MigrateOptions::new(from_prefix, source_queue);
            o.dry_run = dry_run;
            o.completed = completed;
            o.delete_source = delete_source;
            o.batch = batch;
            Ok(Box::pin(async move {
                Ok(Out::Json(serde_json::to_string(&q.migrate_from_bullmq(&o).await?)?))
            }))
        }

        /// The queue's live workers (the core's worker registry), as JSON objects.
        #[pyo3(signature = (blocking=false))]
        fn workers(&self, py) {
            let q = self.core(py)?;
            Ok(Box::pin(async move { Ok(Out::Json(serde_json::to_string(&q.workers().await?)?)) }))
        }

        #[pyo3(signature = (limit=100, blocking=false))]
        fn recent_events(&self, py, limit: usize) {
            let q = self.core(py)?;
            Ok(Box::pin(async move { events_json(q.recent_events(limit).await?) }))
        }

        /// Follows the queue's events from now on (or after a stream id): an `EventStream`.
        #[pyo3(signature = (after=None, blocking=false))]
        fn events(&self, py, after: Option<String>) {
            let q = self.core(py)?;
            Ok(Box::pin(async move { Ok(Out::Events(EventStream::new(q.events(after).await?))) }))
        }
    }
}
