//! The per-process runtime and the way a core future's outcome gets back to Python.
//!
//! Runtime: one tokio runtime per process, created lazily and keyed by the process id, so a child
//! of `os.fork()` builds its own and never touches the (thread-less) copy of its parent's.
//!
//! Asyncio bridge: an async method creates a future on the caller's running loop, runs the core's
//! future on the tokio runtime, and hands the outcome to the loop's bridge (`loop_bridge.rs`),
//! which resolves the asyncio future on the loop; tokio threads never take the GIL for it.
//! Blocking methods (the sync facade) release the GIL while they wait.
//!
//! Both from one method: [`awaitable_methods!`] writes a class's `#[pymethods]` block, each of its
//! methods that talk to the core written once (the code that builds the core's future) and given
//! the `blocking` switch that [`run`] reads.

use crate::convert::json_loads;
use crate::errors::core_err;
use crate::extras;
use crate::loop_bridge;
use crate::queue::Queue;
use futures::future::BoxFuture;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};
use std::sync::Mutex;
use tokio::runtime::Runtime;

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
    Batch(emq::Batch),
    Events(extras::EventStream),
}

impl Out {
    pub(crate) fn into_py(self, py: Python<'_>) -> PyResult<Py<PyAny>> {
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
                    id: crate::queue::next_queue_id(),
                },
            )?
            .into_any(),
            Out::Batch(inner) => Py::new(py, crate::batch::Batch { inner })?.into_any(),
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
pub(crate) fn block(py: Python<'_>, fut: CoreFuture) -> PyResult<Py<PyAny>> {
    let rt = runtime()?;
    let outcome = py.detach(|| rt.block_on(fut));
    outcome.map_err(|e| core_err(py, &e))?.into_py(py)
}

/// A class's `#[pymethods]` block (pyo3 takes one per class), its methods that talk to the core
/// each written once:
///
/// ```ignore
/// awaitable_methods! {
///     impl Queue {
///         // the other methods, as in any #[pymethods] block
///     }
///     awaitable {
///         /// Removes every waiting job; how many.
///         #[pyo3(signature = (delayed=false, blocking=false))]
///         fn drain(&self, py, delayed: bool) {
///             let q = self.core(py)?;
///             Ok(Box::pin(async move { Ok(Out::Int(q.drain(delayed).await?)) }))
///         }
///     }
/// }
/// ```
///
/// The body converts the arguments (a `?` raises at once, nothing sent) and gives the core's
/// future (`PyResult<CoreFuture>`). The method made of it takes `blocking` last (its signature,
/// written out, names it) and returns an awaitable of the running loop or, with `blocking=True`,
/// the outcome itself with the GIL released ([`run`]).
macro_rules! awaitable_methods {
    (
        impl $class:ident { $($plain:tt)* }
        awaitable {
            $(
                $(#[$attr:meta])*
                fn $name:ident(&$self:ident, $py:ident $(, $arg:ident: $ty:ty)*) $body:block
            )*
        }
    ) => {
        #[::pyo3::pymethods]
        impl $class {
            $($plain)*
            $(
                $(#[$attr])*
                fn $name(
                    &$self,
                    $py: ::pyo3::Python<'_>,
                    $($arg: $ty,)*
                    blocking: bool,
                ) -> ::pyo3::PyResult<::pyo3::Py<::pyo3::PyAny>> {
                    let future: ::pyo3::PyResult<$crate::runtime::CoreFuture> = $body;
                    $crate::runtime::run($py, future?, blocking)
                }
            )*
        }
    };
}
pub(crate) use awaitable_methods;
