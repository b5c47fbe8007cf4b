//! `emq._emq.Queue`: a handle on one queue (the native half of `emq.Queue`). More of its methods
//! are in `extras.rs` (flows, schedulers, limits, clean-up, events) and `control.rs`.

use crate::convert::{json_dumps, name_text};
use crate::errors::{code_err, core_err};
use crate::options::job_options;
use crate::runtime::{run, CoreFuture, Out};
use emq::{ErrorCode, JobOptions};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

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

/// `ca_cert`, `client_cert`, `client_key` as the core's `TlsConfig`.
type TlsArgs<'a, 'py> = [Option<&'a Bound<'py, PyAny>>; 3];

fn connect_future(
    py: Python<'_>,
    urls: Vec<String>,
    name: String,
    durable: Option<(i128, i128)>,
    tls: TlsArgs<'_, '_>,
) -> PyResult<CoreFuture> {
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
    let options = emq::ConnectOptions::seeds(urls)
        .tls(tls)
        .map_err(|e| core_err(py, &e))?;
    Ok(Box::pin(async move {
        let mut opts = options;
        if let Some((n, ms)) = durable {
            opts = opts.durable_counts(
                n.clamp(0, u64::MAX.into()) as u64,
                ms.clamp(0, u64::MAX.into()) as u64,
            );
        }
        let q = emq::Queue::connect(opts, &name).await?;
        Ok(Out::Queue(q))
    }))
}

struct AddArgs {
    name: String,
    data: String,
    options: JobOptions,
}

fn add_args(
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

    fn add_future(&self, py: Python<'_>, a: AddArgs) -> PyResult<CoreFuture> {
        let q = self.core(py)?;
        Ok(Box::pin(async move {
            let id = q.add_json(&a.name, &a.data, a.options).await?;
            Ok(Out::Str(id.to_string()))
        }))
    }

    fn bulk_future(&self, py: Python<'_>, jobs: &Bound<'_, PyAny>) -> PyResult<CoreFuture> {
        let q = self.core(py)?;
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
            // The core's payload rule (depth, lone surrogates, integers within 64 bits).
            let data = emq::job::payload_from_text("the payload", &a.data)
                .map_err(|e| core_err(py, &e))?;
            new_jobs.push(emq::NewJob {
                name: a.name,
                data,
                options: a.options,
            });
        }
        Ok(Box::pin(async move {
            let ids = q.add_bulk(new_jobs).await?;
            Ok(Out::Strs(ids.iter().map(|i| i.to_string()).collect()))
        }))
    }

    fn get_future(&self, py: Python<'_>, id: &Bound<'_, PyAny>) -> PyResult<CoreFuture> {
        let q = self.core(py)?;
        let id: String = id.extract().map_err(|_| {
            code_err(
                py,
                ErrorCode::InvalidJobId,
                "a job id is its text form (a str)",
            )
        })?;
        Ok(Box::pin(async move {
            let job = q.get_str(&id).await?;
            Ok(Out::OptJson(job.map(|j| j.to_json().to_string())))
        }))
    }

    fn counts_future(&self, py: Python<'_>) -> PyResult<CoreFuture> {
        let q = self.core(py)?;
        Ok(Box::pin(async move {
            let c = q.counts().await?;
            Ok(Out::Json(serde_json::to_string(&c)?))
        }))
    }
}

#[pymethods]
impl Queue {
    /// Connects to the datastore (`urls`: one URL, or several cluster seeds) and opens queue
    /// `name`; for `rediss://`, a private CA and a client certificate + key (mutual TLS); with
    /// `durable=(replicas, timeout_ms)` every add waits for that many replicas. Like every method
    /// here that talks to the datastore: an awaitable, or with `blocking=True` the outcome itself
    /// (GIL released), for the sync facade.
    #[staticmethod]
    #[pyo3(signature = (urls, name, durable=None, ca_cert=None, client_cert=None, client_key=None, blocking=false))]
    #[allow(clippy::too_many_arguments)]
    fn connect(
        py: Python<'_>,
        urls: Vec<String>,
        name: &Bound<'_, PyAny>,
        durable: Option<(i128, i128)>,
        ca_cert: Option<&Bound<'_, PyAny>>,
        client_cert: Option<&Bound<'_, PyAny>>,
        client_key: Option<&Bound<'_, PyAny>>,
        blocking: bool,
    ) -> PyResult<Py<PyAny>> {
        let f = connect_future(
            py,
            urls,
            queue_name_text(py, name)?,
            durable,
            [ca_cert, client_cert, client_key],
        )?;
        run(py, f, blocking)
    }

    /// The queue's name.
    #[getter]
    fn name(&self) -> String {
        self.inner.name().to_string()
    }

    /// Mints a job id now, to add later with `id=` (an add that is idempotent across retries and
    /// process restarts).
    fn mint_id(&self, py: Python<'_>) -> PyResult<String> {
        let id = self.core(py)?.mint_id().map_err(|e| core_err(py, &e))?;
        Ok(id.to_string())
    }

    #[pyo3(signature = (name, data, options=None, blocking=false))]
    fn add<'py>(
        &self,
        py: Python<'py>,
        name: &Bound<'py, PyAny>,
        data: &Bound<'py, PyAny>,
        options: Option<&Bound<'py, PyDict>>,
        blocking: bool,
    ) -> PyResult<Py<PyAny>> {
        let a = add_args(py, name, data, options)?;
        let f = self.add_future(py, a)?;
        run(py, f, blocking)
    }

    #[pyo3(signature = (jobs, blocking=false))]
    fn add_bulk<'py>(
        &self,
        py: Python<'py>,
        jobs: &Bound<'py, PyAny>,
        blocking: bool,
    ) -> PyResult<Py<PyAny>> {
        let f = self.bulk_future(py, jobs)?;
        run(py, f, blocking)
    }

    #[pyo3(signature = (id, blocking=false))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        id: &Bound<'py, PyAny>,
        blocking: bool,
    ) -> PyResult<Py<PyAny>> {
        let f = self.get_future(py, id)?;
        run(py, f, blocking)
    }

    #[pyo3(signature = (blocking=false))]
    fn counts(&self, py: Python<'_>, blocking: bool) -> PyResult<Py<PyAny>> {
        let f = self.counts_future(py)?;
        run(py, f, blocking)
    }

    #[pyo3(signature = (blocking=false))]
    fn pause(&self, py: Python<'_>, blocking: bool) -> PyResult<Py<PyAny>> {
        let q = self.core(py)?;
        run(
            py,
            Box::pin(async move { q.pause().await.map(|_| Out::None) }),
            blocking,
        )
    }

    #[pyo3(signature = (blocking=false))]
    fn resume(&self, py: Python<'_>, blocking: bool) -> PyResult<Py<PyAny>> {
        let q = self.core(py)?;
        run(
            py,
            Box::pin(async move { q.resume().await.map(|_| Out::None) }),
            blocking,
        )
    }

    #[pyo3(signature = (blocking=false))]
    fn close(&self, py: Python<'_>, blocking: bool) -> PyResult<Py<PyAny>> {
        let q = self.core(py)?;
        run(
            py,
            Box::pin(async move { q.close().await.map(|_| Out::None) }),
            blocking,
        )
    }

    // The extras (bodies in extras.rs).

    /// Adds a flow (a dict: name, data, queue, children, job options); the ids in its shape.
    #[pyo3(signature = (flow, blocking=false))]
    fn add_flow(
        &self,
        py: Python<'_>,
        flow: &Bound<'_, PyAny>,
        blocking: bool,
    ) -> PyResult<Py<PyAny>> {
        run(py, self.add_flow_future(py, flow)?, blocking)
    }

    /// Creates or replaces a scheduler; true when created.
    #[pyo3(signature = (id, every, name, data, first_after, limit=None, options=None, cron=None, tz=None, end_after=None, blocking=false))]
    #[allow(clippy::too_many_arguments)]
    fn upsert_scheduler(
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
        end_after: Option<&Bound<'_, PyAny>>,
        blocking: bool,
    ) -> PyResult<Py<PyAny>> {
        let none = py.None().into_bound(py);
        let f = self.upsert_scheduler_future(
            py,
            id,
            every,
            name,
            data,
            first_after,
            limit,
            options,
            cron,
            tz,
            end_after.unwrap_or(&none),
        )?;
        run(py, f, blocking)
    }

    #[pyo3(signature = (id, blocking=false))]
    fn remove_scheduler(&self, py: Python<'_>, id: String, blocking: bool) -> PyResult<Py<PyAny>> {
        run(py, self.remove_scheduler_future(py, id)?, blocking)
    }

    #[pyo3(signature = (blocking=false))]
    fn schedulers(&self, py: Python<'_>, blocking: bool) -> PyResult<Py<PyAny>> {
        run(py, self.schedulers_future(py)?, blocking)
    }

    #[pyo3(signature = (max, window, blocking=false))]
    fn set_rate_limit(
        &self,
        py: Python<'_>,
        max: &Bound<'_, PyAny>,
        window: &Bound<'_, PyAny>,
        blocking: bool,
    ) -> PyResult<Py<PyAny>> {
        run(py, self.set_rate_limit_future(py, max, window)?, blocking)
    }

    #[pyo3(signature = (max, window, blocking=false))]
    fn set_group_rate_limit(
        &self,
        py: Python<'_>,
        max: &Bound<'_, PyAny>,
        window: &Bound<'_, PyAny>,
        blocking: bool,
    ) -> PyResult<Py<PyAny>> {
        run(
            py,
            self.set_group_rate_limit_future(py, max, window)?,
            blocking,
        )
    }

    #[pyo3(signature = (max, blocking=false))]
    fn set_global_concurrency(
        &self,
        py: Python<'_>,
        max: &Bound<'_, PyAny>,
        blocking: bool,
    ) -> PyResult<Py<PyAny>> {
        run(py, self.set_global_concurrency_future(py, max)?, blocking)
    }

    #[pyo3(signature = (delayed=false, blocking=false))]
    fn drain(&self, py: Python<'_>, delayed: bool, blocking: bool) -> PyResult<Py<PyAny>> {
        run(py, self.drain_future(py, delayed)?, blocking)
    }

    #[pyo3(signature = (state, grace, limit, blocking=false))]
    fn clean(
        &self,
        py: Python<'_>,
        state: &str,
        grace: &Bound<'_, PyAny>,
        limit: u64,
        blocking: bool,
    ) -> PyResult<Py<PyAny>> {
        run(py, self.clean_future(py, state, grace, limit)?, blocking)
    }

    #[pyo3(signature = (force=false, blocking=false))]
    fn obliterate(&self, py: Python<'_>, force: bool, blocking: bool) -> PyResult<Py<PyAny>> {
        run(py, self.obliterate_future(py, force)?, blocking)
    }

    /// `op` is "remove", "retry", "promote" or "logs".
    #[pyo3(signature = (op, id, blocking=false))]
    fn job_op(
        &self,
        py: Python<'_>,
        op: &str,
        id: &Bound<'_, PyAny>,
        blocking: bool,
    ) -> PyResult<Py<PyAny>> {
        run(py, self.job_op_future(py, op, id)?, blocking)
    }

    #[pyo3(signature = (id, priority, blocking=false))]
    fn change_priority(
        &self,
        py: Python<'_>,
        id: &Bound<'_, PyAny>,
        priority: &Bound<'_, PyAny>,
        blocking: bool,
    ) -> PyResult<Py<PyAny>> {
        run(py, self.change_priority_future(py, id, priority)?, blocking)
    }

    /// Cancels a job; `"cancelled"`, `"requested"` (running: its worker stops it), `"finished"` or
    /// `"not_found"`.
    #[pyo3(signature = (id, reason=String::new(), blocking=false))]
    fn cancel(
        &self,
        py: Python<'_>,
        id: &Bound<'_, PyAny>,
        reason: String,
        blocking: bool,
    ) -> PyResult<Py<PyAny>> {
        run(py, self.cancel_future(py, id, reason)?, blocking)
    }

    /// Waits for a job's outcome (see `emq.Queue.wait`).
    #[pyo3(signature = (id, timeout, blocking=false))]
    fn wait(
        &self,
        py: Python<'_>,
        id: &Bound<'_, PyAny>,
        timeout: &Bound<'_, PyAny>,
        blocking: bool,
    ) -> PyResult<Py<PyAny>> {
        run(py, self.wait_future(py, id, timeout)?, blocking)
    }

    #[pyo3(signature = (blocking=false))]
    fn retry_failed(&self, py: Python<'_>, blocking: bool) -> PyResult<Py<PyAny>> {
        run(py, self.retry_failed_future(py)?, blocking)
    }

    #[pyo3(signature = (state, offset=0, limit=100, blocking=false))]
    fn list(
        &self,
        py: Python<'_>,
        state: &str,
        offset: u64,
        limit: u64,
        blocking: bool,
    ) -> PyResult<Py<PyAny>> {
        run(py, self.list_future(py, state, offset, limit)?, blocking)
    }

    #[pyo3(signature = (blocking=false))]
    fn is_paused(&self, py: Python<'_>, blocking: bool) -> PyResult<Py<PyAny>> {
        run(py, self.is_paused_future(py)?, blocking)
    }

    #[pyo3(signature = (blocking=false))]
    fn metrics(&self, py: Python<'_>, blocking: bool) -> PyResult<Py<PyAny>> {
        run(py, self.metrics_future(py)?, blocking)
    }

    /// Copies the BullMQ (or EchoMQ 1.x) queue `<from_prefix>:<source_queue>` into this queue
    /// (see `emq migrate`); the report as a dict.
    #[pyo3(signature = (source_queue, from_prefix, dry_run=false, completed=false, delete_source=false, batch=500, blocking=false))]
    #[allow(clippy::too_many_arguments)]
    fn migrate_from_bullmq(
        &self,
        py: Python<'_>,
        source_queue: String,
        from_prefix: String,
        dry_run: bool,
        completed: bool,
        delete_source: bool,
        batch: usize,
        blocking: bool,
    ) -> PyResult<Py<PyAny>> {
        let mut o = emq::migrate::MigrateOptions::new(from_prefix, source_queue);
        o.dry_run = dry_run;
        o.completed = completed;
        o.delete_source = delete_source;
        o.batch = batch;
        run(py, self.migrate_future(py, o)?, blocking)
    }

    /// The queue's live workers (the core's worker registry), as JSON objects.
    #[pyo3(signature = (blocking=false))]
    fn workers(&self, py: Python<'_>, blocking: bool) -> PyResult<Py<PyAny>> {
        let q = self.core(py)?;
        run(
            py,
            Box::pin(async move { Ok(Out::Json(serde_json::to_string(&q.workers().await?)?)) }),
            blocking,
        )
    }

    #[pyo3(signature = (limit=100, blocking=false))]
    fn recent_events(&self, py: Python<'_>, limit: usize, blocking: bool) -> PyResult<Py<PyAny>> {
        run(py, self.recent_events_future(py, limit)?, blocking)
    }

    /// Follows the queue's events from now on (or after a stream id): an `EventStream`.
    #[pyo3(signature = (after=None, blocking=false))]
    fn events(&self, py: Python<'_>, after: Option<String>, blocking: bool) -> PyResult<Py<PyAny>> {
        run(py, self.events_future(py, after)?, blocking)
    }
}
