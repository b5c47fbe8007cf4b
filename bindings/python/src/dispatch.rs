//! The handler: the core's [`emq::Handler`] around a Python callable, and how jobs cross to it.
//!
//! Two ways, chosen by the Python `Worker` when it builds the native one:
//!
//! - **Batched (async handlers on an event loop).** `handle` pushes the job and a oneshot sender
//!   onto the worker's [`Dispatch`] and, only when no wake-up is pending yet, writes one byte to a
//!   non-blocking pipe. The loop watches the pipe's read end (`loop.add_reader`); its callback calls
//!   [`Worker::take`](crate::Worker) to get every queued job at once and starts a task per job. The
//!   task reports through [`Call::finish`] / [`Call::fail`], a plain oneshot send. So the tokio
//!   threads never take the GIL for a job, and a busy loop pays one wake-up per batch of jobs.
//!   When the core drops a job's future (a timeout, or `close` aborting it), the job's id is
//!   queued as abandoned and the loop cancels its task on the next drain.
//! - **Threaded (plain `def` handlers, or no loop).** Each job runs on a tokio blocking thread that
//!   takes the GIL only while Python runs; a coroutine returned there is handed to the loop with
//!   `asyncio.run_coroutine_threadsafe`.
//!
//! Either way the handler receives an `emq.Job` (the job's fields as attributes, plus `progress`,
//! `log`, `children_results` backed by its [`Call`]). An exception becomes the run's failure with its
//! formatted traceback; an `emq.Unrecoverable` skips the remaining attempts.

use crate::convert::{py_to_value, value_to_py};
use crate::loop_bridge::WakePipe;
use crate::runtime::awaitable_methods;
use crate::{code_err, runtime, Out};
use emq::{ErrorCode, HandlerError, HandlerResult, JobContext};
use futures::future::BoxFuture;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

// ---------------------------------------------------------------------------------------------
// Failures and results.

/// A Python exception as a job failure: its message, its formatted traceback, and whether it is
/// an `emq.Unrecoverable`.
pub fn handler_error(py: Python<'_>, value: &Bound<'_, PyAny>) -> HandlerError {
    let cancelled = py
        .import("asyncio")
        .and_then(|m| m.getattr("CancelledError"))
        .and_then(|cls| value.is_instance(&cls))
        .unwrap_or(false);
    if cancelled {
        // Cancelled by the worker (a cancel, a timeout, shutdown: the core knows which and records
        // that), or by asyncio itself (the loop is shutting down): never the job's failure.
        return HandlerError::interrupted("the handler's task was cancelled");
    }
    let delay = py
        .import("emq.errors")
        .and_then(|m| m.getattr("Delay"))
        .and_then(|cls| value.is_instance(&cls))
        .unwrap_or(false);
    if delay {
        // `raise emq.Delay(seconds)`: back to delayed, validated by the core.
        let count = value
            .getattr("count_attempt")
            .and_then(|c| c.extract::<bool>())
            .unwrap_or(false);
        return match value.getattr("seconds").and_then(|s| s.extract::<f64>()) {
            Ok(secs) => HandlerError::delay_millis(secs * 1000.0).counting_attempt(count),
            Err(_) => HandlerError::new("emq.Delay takes a number of seconds or a timedelta")
                .with_code(ErrorCode::InvalidOption.as_str()),
        };
    }
    let message = value.str().map(|s| s.to_string()).unwrap_or_default();
    let type_name = value
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "Exception".into());
    let message = if message.is_empty() {
        type_name
    } else {
        message
    };
    let stack = py
        .import("traceback")
        .and_then(|tb| {
            tb.call_method1(
                "format_exception",
                (value.get_type(), value, value.getattr("__traceback__")?),
            )
        })
        .and_then(|lines| {
            let sep = PyString::new(py, "");
            sep.call_method1("join", (lines,))?.extract::<String>()
        })
        .ok();
    let unrecoverable = py
        .import("emq.errors")
        .and_then(|m| m.getattr("Unrecoverable"))
        .and_then(|cls| value.is_instance(&cls))
        .unwrap_or(false);
    let mut e = if unrecoverable {
        HandlerError::unrecoverable(message)
    } else {
        HandlerError::new(message)
    };
    e.stack = stack;
    e
}

/// A handler's return value as the job's result (`invalid_payload` when it is not JSON).
pub fn handler_value(py: Python<'_>, value: &Bound<'_, PyAny>) -> HandlerResult {
    py_to_value(py, value).map_err(|e| {
        HandlerError::new(format!(
            "the handler's return value is not JSON-serialisable: {}",
            e.value(py)
        ))
        .with_code(ErrorCode::InvalidPayload.as_str())
    })
}

// ---------------------------------------------------------------------------------------------
// One job's call.

/// One run of the handler: the job, its context, and where its outcome goes (native half of
/// `emq.Job`).
#[pyclass(module = "emq._emq", frozen)]
pub struct Call {
    ctx: JobContext,
    tx: Mutex<Option<oneshot::Sender<HandlerResult>>>,
}

impl Call {
    fn new(ctx: JobContext, tx: Option<oneshot::Sender<HandlerResult>>) -> Call {
        Call {
            ctx,
            tx: Mutex::new(tx),
        }
    }

    fn send(&self, r: HandlerResult) {
        if let Some(tx) = self.tx.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = tx.send(r);
        }
    }
}

awaitable_methods! {
    impl Call {
        /// The job as a dict (a new one each call).
        fn job(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
            value_to_py(py, &self.ctx.job().to_json())
        }

        /// The handler returned `value`.
        fn finish(&self, py: Python<'_>, value: &Bound<'_, PyAny>) {
            self.send(handler_value(py, value));
        }

        /// The handler raised `exc`.
        fn fail(&self, py: Python<'_>, exc: &Bound<'_, PyAny>) {
            self.send(Err(handler_error(py, exc)));
        }

        /// The queue this run's job is in (for a multi-queue worker's spans).
        #[getter]
        fn queue(&self) -> String {
            self.ctx.queue().name().to_string()
        }

        /// This run's fencing token (`JobContext::fence`): it only grows across the job's runs.
        #[getter]
        fn fence(&self) -> u64 {
            self.ctx.fence()
        }

        /// True once the worker learned that its lease on this job is gone.
        #[getter]
        fn lease_lost(&self) -> bool {
            self.ctx.lease_lost()
        }

        /// True once the worker asked this run to stop (cancelled, timed out, or shut down).
        #[getter]
        fn cancelled(&self) -> bool {
            self.ctx.is_cancelled()
        }

        /// Why the worker asked this run to stop: None, `"cancelled"`, `"timeout"` or `"shutdown"`.
        #[getter]
        fn interrupt(&self) -> Option<&'static str> {
            self.ctx.interrupt().map(|i| i.as_str())
        }

        /// The batch this job belongs to (None when it was not added through one).
        fn batch(&self, py: Python<'_>) -> PyResult<Option<crate::batch::Batch>> {
            let b = self.ctx.batch().map_err(|e| crate::core_err(py, &e))?;
            Ok(b.map(|inner| crate::batch::Batch { inner }))
        }

        /// The reason given to `Queue.cancel`, once the job was cancelled.
        #[getter]
        fn cancel_reason(&self) -> Option<String> {
            match self.ctx.interrupt() {
                Some(emq::Interrupt::Cancelled(r)) => Some(r),
                _ => None,
            }
        }
    }
    awaitable {
        /// Records progress (any JSON value).
        #[pyo3(signature = (value, blocking=false))]
        fn progress(&self, py, value: &Bound<'_, PyAny>) {
            let v = py_to_value(py, value).map_err(|e| {
                code_err(
                    py,
                    ErrorCode::InvalidPayload,
                    format!("progress is not JSON-serialisable: {}", e.value(py)),
                )
            })?;
            let ctx = self.ctx.clone();
            Ok(Box::pin(async move {
                ctx.progress(v).await?;
                Ok(Out::None)
            }))
        }

        /// Appends a line to the job's log; the number of lines kept.
        #[pyo3(signature = (line, blocking=false))]
        fn log(&self, py, line: String) {
            let ctx = self.ctx.clone();
            Ok(Box::pin(async move { Ok(Out::Int(ctx.log(&line).await?)) }))
        }

        /// Adds a child job to `queue` that this job waits for (`JobContext::add_child`); its id.
        #[pyo3(signature = (queue, name, data, options=None, blocking=false))]
        fn add_child(
            &self, py, queue: String, name: &Bound<'_, PyAny>, data: &Bound<'_, PyAny>,
            options: Option<&Bound<'_, PyDict>>
        ) {
            let a = crate::queue::add_args(py, name, data, options)?;
            let data: serde_json::Value = serde_json::from_str(&a.data)
                .map_err(|e| crate::core_err(py, &emq::Error::from(e)))?;
            let ctx = self.ctx.clone();
            Ok(Box::pin(async move {
                Ok(Out::Str(ctx.add_child(&queue, &a.name, data, a.options).await?.to_string()))
            }))
        }

        /// In a flow, the children's results by `<queue>:<id>`.
        #[pyo3(signature = (blocking=false))]
        fn children_results(&self, py) {
            let ctx = self.ctx.clone();
            Ok(Box::pin(async move {
                let r = ctx.children_results().await?;
                Ok(Out::Json(serde_json::to_string(&r)?))
            }))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The batched hand-off.

/// Jobs waiting for the event loop, and the pipe that wakes it.
pub struct Dispatch {
    queued: Mutex<Queued>,
    pipe: WakePipe,
}

#[derive(Default)]
struct Queued {
    jobs: Vec<(JobContext, oneshot::Sender<HandlerResult>)>,
    /// Jobs whose outcome the core no longer waits for (their tasks are to be cancelled).
    abandoned: Vec<emq::JobId>,
}

impl Dispatch {
    /// A dispatcher with its wake-up pipe.
    pub fn new(py: Python<'_>) -> PyResult<Arc<Dispatch>> {
        let pipe = WakePipe::new().map_err(|e| {
            code_err(
                py,
                ErrorCode::Internal,
                format!("cannot create the worker's wake-up pipe: {e}"),
            )
        })?;
        Ok(Arc::new(Dispatch {
            queued: Mutex::new(Queued::default()),
            pipe,
        }))
    }

    /// The fd the event loop watches.
    pub fn wake_fd(&self) -> i32 {
        self.pipe.fd()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queued> {
        self.queued.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `(calls, abandoned)`: every queued job as a new [`Call`], and the ids of jobs the core
    /// stopped waiting for (a timeout, an abort) since the last call, whose tasks the loop cancels.
    pub fn take<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        self.pipe.clear();
        let Queued { jobs, abandoned } = std::mem::take(&mut *self.lock());
        let calls = PyList::empty(py);
        for (ctx, tx) in jobs {
            calls.append(Py::new(py, Call::new(ctx, Some(tx)))?)?;
        }
        let gone = PyList::empty(py);
        for id in abandoned {
            gone.append(id.to_string())?;
        }
        PyTuple::new(py, [calls.into_any(), gone.into_any()])
    }
}

/// The wait for one batched job's outcome; dropping it early (a timeout, an abort) marks the job
/// abandoned so the loop cancels its task.
struct Waiter {
    dispatch: Arc<Dispatch>,
    id: emq::JobId,
    done: bool,
}

impl Waiter {
    /// The outcome arrived: nothing to cancel.
    fn disarm(&mut self) {
        self.done = true;
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        if !self.done {
            self.dispatch.lock().abandoned.push(self.id);
            self.dispatch.pipe.wake();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The handler.

/// The core's `Handler` around a Python callable.
pub enum PyHandler {
    /// Async handler on an event loop: jobs go through the dispatcher.
    Batched(Arc<Dispatch>),
    /// `entry(call)` runs on a blocking thread; a coroutine it returns goes to `event_loop`.
    Threaded {
        entry: Arc<Py<PyAny>>,
        event_loop: Option<Arc<Py<PyAny>>>,
    },
}

/// Called on the event loop when a coroutine handed over by a blocking thread finished.
#[pyclass(module = "emq._emq")]
pub struct Done {
    call: Py<Call>,
}

#[pymethods]
impl Done {
    fn __call__(&self, py: Python<'_>, cf: &Bound<'_, PyAny>) -> PyResult<()> {
        let call = self.call.get();
        if cf.call_method0("cancelled")?.is_truthy()? {
            call.send(Err(HandlerError::interrupted(
                "the handler's coroutine was cancelled",
            )));
        } else {
            let exc = cf.call_method0("exception")?;
            if exc.is_none() {
                call.finish(py, &cf.call_method0("result")?);
            } else {
                call.fail(py, &exc);
            }
        }
        Ok(())
    }
}

/// Runs `entry(call)` with the GIL (on a blocking thread); a returned coroutine goes to the loop.
fn run_threaded(py: Python<'_>, entry: &Py<PyAny>, event_loop: Option<&Py<PyAny>>, call: Py<Call>) {
    let c = call.get();
    let ret = match entry.bind(py).call1((call.clone_ref(py),)) {
        Ok(r) => r,
        Err(e) => return c.fail(py, e.value(py)),
    };
    let is_coro = py
        .import("inspect")
        .and_then(|m| m.call_method1("iscoroutine", (&ret,)))
        .and_then(|b| b.is_truthy())
        .unwrap_or(false);
    if !is_coro {
        return c.finish(py, &ret);
    }
    let Some(event_loop) = event_loop else {
        let _ = ret.call_method0("close");
        return c.send(Err(HandlerError::unrecoverable(
            "the handler returned a coroutine but the worker has no event loop; create the Worker inside a running asyncio loop",
        )));
    };
    let submitted = py.import("asyncio").and_then(|a| {
        let cf = a.call_method1("run_coroutine_threadsafe", (&ret, event_loop.bind(py)))?;
        let done = Py::new(
            py,
            Done {
                call: call.clone_ref(py),
            },
        )?;
        cf.call_method1("add_done_callback", (done,))
    });
    if let Err(e) = submitted {
        let _ = ret.call_method0("close");
        c.fail(py, e.value(py));
    }
}

/// The job never reached its handler or its outcome never came back: the event loop went away.
/// Not the job's failure: it goes back to waiting.
fn dropped() -> HandlerError {
    HandlerError::interrupted("the event loop dropped the handler's job (was it closed?)")
}

async fn ctx_cancelled(ctx: &JobContext) {
    ctx.cancelled().await;
}

impl emq::Handler for PyHandler {
    /// Python handlers are cancelled in Python (the task, or `job.cancelled` for a `def`), and
    /// their future ends once they stopped.
    fn cooperative_cancel(&self) -> bool {
        true
    }

    fn handle(&self, ctx: JobContext) -> BoxFuture<'static, HandlerResult> {
        let (tx, rx) = oneshot::channel();
        match self {
            PyHandler::Batched(dispatch) => {
                let id = ctx.id();
                let cancel = ctx.clone();
                dispatch.lock().jobs.push((ctx, tx));
                dispatch.pipe.wake();
                let waiter = Waiter {
                    dispatch: dispatch.clone(),
                    id,
                    done: false,
                };
                let dispatch = dispatch.clone();
                Box::pin(async move {
                    let mut waiter = waiter;
                    let mut rx = rx;
                    let r = tokio::select! {
                        r = &mut rx => r,
                        _ = ctx_cancelled(&cancel) => {
                            // The worker asks the run to stop: the loop cancels its task on the
                            // next drain, and the task's end (CancelledError, or whatever the
                            // handler made of it) comes back here.
                            dispatch.lock().abandoned.push(id);
                            dispatch.pipe.wake();
                            rx.await
                        }
                    };
                    waiter.disarm();
                    r.unwrap_or_else(|_| Err(dropped()))
                })
            }
            PyHandler::Threaded { entry, event_loop } => {
                let entry = entry.clone();
                let event_loop = event_loop.clone();
                Box::pin(async move {
                    let ran = tokio::task::spawn_blocking(move || {
                        Python::attach(|py| {
                            // Should Py::new fail, the sender is dropped and the wait says so.
                            if let Ok(call) = Py::new(py, Call::new(ctx, Some(tx))) {
                                run_threaded(py, &entry, event_loop.as_deref(), call)
                            }
                        })
                    })
                    .await;
                    if let Err(e) = ran {
                        return Err(HandlerError::new(format!("the handler thread failed: {e}")));
                    }
                    rx.await.unwrap_or_else(|_| Err(dropped()))
                })
            }
        }
    }
}

/// Builds the handler a new worker runs.
pub fn new_handler(
    py: Python<'_>,
    entry: Py<PyAny>,
    event_loop: Option<Py<PyAny>>,
    batched: bool,
) -> PyResult<(PyHandler, Option<Arc<Dispatch>>)> {
    let _ = runtime()?;
    if batched {
        if event_loop.is_none() {
            return Err(code_err(
                py,
                ErrorCode::InvalidOption,
                "a batched (async) handler needs an event loop",
            ));
        }
        let d = Dispatch::new(py)?;
        return Ok((PyHandler::Batched(d.clone()), Some(d)));
    }
    Ok((
        PyHandler::Threaded {
            entry: Arc::new(entry),
            event_loop: event_loop.map(Arc::new),
        },
        None,
    ))
}
