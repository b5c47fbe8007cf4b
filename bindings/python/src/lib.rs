//! `emq._emq`: the native module of the Python package `emq`.
//!
//! A thin layer over the Rust core: it adapts types (Python objects <-> JSON text, seconds <->
//! milliseconds, ids as text), errors (`emq::Error` -> the `emq.errors` class of its code) and the
//! handler (a Python callable behind the core's [`emq::Handler`] trait). There is no queue logic
//! here.
//!
//! Runtime: one tokio runtime per process, created lazily and keyed by the process id, so a child
//! of `os.fork()` builds its own and never touches the (thread-less) copy of its parent's.
//!
//! Asyncio bridge: an async method creates a future on the caller's running loop, runs the core's
//! future on the tokio runtime, and hands the outcome to the loop's bridge (`loop_bridge.rs`),
//! which resolves the asyncio future on the loop; tokio threads never take the GIL for it.
//! Blocking methods (the sync facade) release the GIL while they wait.

mod control;
mod convert;
mod dispatch;
mod extras;
mod loop_bridge;
mod options;
mod worker_events;

use emq::{ErrorCode, JobOptions};
use futures::future::BoxFuture;
pub(crate) use options::{job_options, seconds_ms};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use std::sync::{Arc, Mutex};

use dispatch::{Call, Dispatch};
use tokio::runtime::Runtime;

// ---------------------------------------------------------------------------------------------
// The per-process runtime.

static RUNTIME: Mutex<Option<(u32, &'static Runtime)>> = Mutex::new(None);

/// The runtime of this process: built on first use, and built again in a forked child (the
/// parent's copy is leaked, never dropped: its threads do not exist in the child).
pub(crate) fn runtime() -> PyResult<&'static Runtime> {
    let pid = std::process::id();
    let mut slot = RUNTIME.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((owner, rt)) = *slot {
        if owner == pid {
            return Ok(rt);
        }
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("emq-tokio")
        .build()
        .map_err(|e| {
            PyRuntimeError::new_err(format!("emq: cannot start the tokio runtime: {e}"))
        })?;
    let rt: &'static Runtime = Box::leak(Box::new(rt));
    *slot = Some((pid, rt));
    Ok(rt)
}

// ---------------------------------------------------------------------------------------------
// Errors.

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

// ---------------------------------------------------------------------------------------------
// Values crossing back to Python.

/// What a core call produced, converted to Python once the GIL is held.
pub(crate) enum Out {
    None,
    Str(String),
    Int(u64),
    Bool(bool),
    Strs(Vec<String>),
    /// JSON text, given to Python as `json.loads(text)`.
    Json(String),
    OptJson(Option<String>),
    Queue(emq::Queue),
    Events(extras::EventStream),
}

pub(crate) fn json_loads<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("json")?.call_method1("loads", (text,))
}

impl Out {
    fn into_py(self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(match self {
            Out::None => py.None(),
            Out::Str(s) => PyString::new(py, &s).into_any().unbind(),
            Out::Int(n) => n.into_pyobject(py)?.into_any().unbind(),
            Out::Bool(b) => pyo3::types::PyBool::new(py, b)
                .to_owned()
                .into_any()
                .unbind(),
            Out::Strs(v) => PyList::new(py, v)?.into_any().unbind(),
            Out::Json(t) => json_loads(py, &t)?.unbind(),
            Out::OptJson(None) => py.None(),
            Out::OptJson(Some(t)) => json_loads(py, &t)?.unbind(),
            Out::Queue(q) => Py::new(
                py,
                Queue {
                    inner: q,
                    pid: std::process::id(),
                },
            )?
            .into_any(),
            Out::Events(e) => Py::new(py, e)?.into_any(),
        })
    }
}

pub(crate) type CoreFuture = BoxFuture<'static, emq::Result<Out>>;

/// Runs `fut` on the runtime and returns an asyncio future (of the running loop) for its outcome,
/// delivered through the loop's bridge (`loop_bridge.rs`).
pub(crate) fn spawn_py<'py>(py: Python<'py>, fut: CoreFuture) -> PyResult<Bound<'py, PyAny>> {
    let rt = runtime()?;
    let event_loop = py.import("asyncio")?.call_method0("get_running_loop")?;
    let sink = loop_bridge::sink_for(py, &event_loop)?;
    let py_fut = event_loop.call_method0("create_future")?;
    let fut_ref = py_fut.clone().unbind();
    rt.spawn(async move {
        let outcome = fut.await;
        sink.deliver(fut_ref, outcome);
    });
    Ok(py_fut)
}

/// Sets an asyncio future's result or exception unless it was cancelled meanwhile.
#[pyfunction]
pub(crate) fn _resolve(fut: &Bound<'_, PyAny>, ok: bool, value: &Bound<'_, PyAny>) -> PyResult<()> {
    if fut.call_method0("done")?.is_truthy()? {
        return Ok(());
    }
    if ok {
        fut.call_method1("set_result", (value,))?;
    } else {
        fut.call_method1("set_exception", (value,))?;
    }
    Ok(())
}

/// An awaitable of `fut` (on the running loop), or with `blocking` its outcome (GIL released).
pub(crate) fn run(py: Python<'_>, fut: CoreFuture, blocking: bool) -> PyResult<Py<PyAny>> {
    if blocking {
        block(py, fut)
    } else {
        Ok(spawn_py(py, fut)?.unbind())
    }
}

/// Runs `fut` to completion on the runtime with the GIL released.
fn block(py: Python<'_>, fut: CoreFuture) -> PyResult<Py<PyAny>> {
    let rt = runtime()?;
    let outcome = py.detach(|| rt.block_on(fut));
    outcome.map_err(|e| core_err(py, &e))?.into_py(py)
}

// ---------------------------------------------------------------------------------------------
// Inputs.

/// `json.dumps(value, allow_nan=False)`, or an `InvalidPayload` error naming `what`.
pub(crate) fn json_dumps(py: Python<'_>, value: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    let kw = PyDict::new(py);
    kw.set_item("allow_nan", false)?;
    match py
        .import("json")?
        .call_method("dumps", (value,), Some(&kw))
        .and_then(|s| s.extract::<String>())
    {
        Ok(s) => Ok(s),
        Err(e) => Err(code_err(
            py,
            ErrorCode::InvalidPayload,
            format!("{what} is not JSON-serialisable: {}", e.value(py)),
        )),
    }
}

pub(crate) fn name_text(py: Python<'_>, v: &Bound<'_, PyAny>) -> PyResult<String> {
    v.extract()
        .map_err(|_| code_err(py, ErrorCode::InvalidOption, "a job name must be a str"))
}

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

// ---------------------------------------------------------------------------------------------
// Queue.

/// A handle on one queue (native half of `emq.Queue`).
#[pyclass(module = "emq._emq", frozen)]
struct Queue {
    inner: emq::Queue,
    pid: u32,
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
    fn core(&self, py: Python<'_>) -> PyResult<emq::Queue> {
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

// ---------------------------------------------------------------------------------------------
// Worker.

/// A running worker (native half of `emq.Worker`).
#[pyclass(module = "emq._emq", frozen)]
struct Worker {
    handle: Mutex<Option<emq::WorkerHandle>>,
    aborter: emq::WorkerAborter,
    dispatch: Option<Arc<Dispatch>>,
    events: Arc<worker_events::EventQueue>,
}

impl Worker {
    /// Closes the core worker, then ends the events (the last ones are still handed out).
    fn close_future(&self) -> CoreFuture {
        let handle = self.handle.lock().unwrap_or_else(|p| p.into_inner()).take();
        let events = self.events.clone();
        Box::pin(async move {
            let r = match handle {
                Some(h) => h.close().await.map(|_| ()),
                None => Ok(()),
            };
            events.close();
            r.map(|_| Out::None)
        })
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.events.close();
    }
}

#[pymethods]
impl Worker {
    /// `entry(call)` is called per job with an `emq._emq.Call` (threaded mode). With `batched`,
    /// jobs are queued for the event loop instead: it watches `wake_fd` and calls `take`.
    #[new]
    #[pyo3(signature = (queue, entry, event_loop=None, concurrency=None, lease=None, batched=false, shutdown_timeout=None, stalled_interval=None, max_stalls=None, remove_on_complete=None, remove_on_fail=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        queue: &Queue,
        entry: Py<PyAny>,
        event_loop: Option<Py<PyAny>>,
        concurrency: Option<&Bound<'_, PyAny>>,
        lease: Option<&Bound<'_, PyAny>>,
        batched: bool,
        shutdown_timeout: Option<&Bound<'_, PyAny>>,
        stalled_interval: Option<&Bound<'_, PyAny>>,
        max_stalls: Option<&Bound<'_, PyAny>>,
        remove_on_complete: Option<&Bound<'_, PyAny>>,
        remove_on_fail: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Worker> {
        let q = queue.core(py)?;
        let opts = options::worker_options(
            py,
            options::WorkerArgs {
                concurrency,
                lease,
                shutdown_timeout,
                stalled_interval,
                max_stalls,
                remove_on_complete,
                remove_on_fail,
            },
        )?;
        let (handler, dispatch) = dispatch::new_handler(py, entry, event_loop, batched)?;
        let rt = runtime()?;
        let _guard = rt.enter();
        emq::worker_registry::set_language("python");
        let events = worker_events::EventQueue::new();
        let handle = emq::Worker::builder(q)
            .options(opts)
            .handler(handler)
            .on_event(events.hook())
            .run()
            .map_err(|e| core_err(py, &e))?;
        Ok(Worker {
            aborter: handle.aborter(),
            handle: Mutex::new(Some(handle)),
            dispatch,
            events,
        })
    }

    /// The fd the event loop watches for queued jobs (batched mode; None otherwise).
    #[getter]
    fn wake_fd(&self) -> Option<i32> {
        self.dispatch.as_ref().map(|d| d.wake_fd())
    }

    /// `(calls, abandoned ids)` queued for the loop since the last call (batched mode).
    fn take<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        match &self.dispatch {
            Some(d) => d.take(py),
            None => PyTuple::new(py, [PyList::empty(py), PyList::empty(py)]),
        }
    }

    /// Stops fetching, lets in-flight jobs finish (within the shutdown deadline), releases the
    /// rest: an awaitable, or with `blocking` done at once (GIL released).
    #[pyo3(signature = (blocking=false))]
    fn close(&self, py: Python<'_>, blocking: bool) -> PyResult<Py<PyAny>> {
        run(py, self.close_future(), blocking)
    }

    /// Keeps the worker's events for `events` from now on.
    fn listen(&self) {
        self.events.listen();
    }

    /// The worker's next events (a list of dicts), waiting up to `wait` seconds for the first;
    /// `[]` when none came; None once the worker is closed and every event was taken.
    #[pyo3(signature = (wait, blocking=false))]
    fn events(
        &self,
        py: Python<'_>,
        wait: &Bound<'_, PyAny>,
        blocking: bool,
    ) -> PyResult<Py<PyAny>> {
        let wait = std::time::Duration::from_millis(seconds_ms(py, "wait", wait)?.max(1));
        let events = self.events.clone();
        run(
            py,
            Box::pin(async move { Ok(Out::OptJson(events.next(wait).await)) }),
            blocking,
        )
    }

    /// Stops at once (a second Ctrl-C): a close in progress stops waiting and releases nothing;
    /// the jobs come back through their leases.
    fn abort(&self) {
        self.aborter.abort();
    }

    /// Jobs completed, jobs failed for good, runs retried, outcomes refused for a lost lease,
    /// stalled jobs recovered. Also after `close`: the final figures.
    fn stats(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let stats = self.aborter.stats();
        let text = serde_json::to_string(&stats).unwrap_or_else(|_| "{}".into());
        Ok(json_loads(py, &text)?.unbind())
    }
}

// ---------------------------------------------------------------------------------------------

/// Every error code of the core, for `emq.errors` to check itself against.
#[pyfunction]
fn error_codes() -> Vec<&'static str> {
    ErrorCode::ALL.iter().map(|c| c.as_str()).collect()
}

#[pymodule]
fn _emq(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Queue>()?;
    m.add_class::<Worker>()?;
    m.add_class::<Call>()?;
    m.add_class::<dispatch::Done>()?;
    m.add_class::<extras::EventStream>()?;
    m.add_class::<loop_bridge::LoopBridge>()?;
    m.add_function(wrap_pyfunction!(_resolve, m)?)?;
    m.add_function(wrap_pyfunction!(error_codes, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
