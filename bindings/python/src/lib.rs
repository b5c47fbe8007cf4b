//! `emq._emq`: the native module of the Python package `emq`.
//!
//! A thin layer over the Rust core: it adapts types (Python objects <-> JSON text, seconds <->
//! milliseconds, ids as text), errors (`emq::Error` -> the `emq.errors` class of its code) and the
//! handler (a Python callable behind the core's [`emq::Handler`] trait). There is no queue logic
//! here.
//!
//! One file per exported class (`queue.rs` with `extras.rs`, `batch.rs`, `worker.rs`, `dispatch.rs` for
//! `Call` and `Done`, `extras.rs` for `EventStream`, `loop_bridge.rs`; `direct.rs` the reply side
//! of a direct add); the runtime, the asyncio
//! bridge and `awaitable_methods!` (each method that talks to the core written once, awaitable or
//! blocking) in `runtime.rs`, errors in `errors.rs`, values in `convert.rs` and `options.rs`. This
//! file only registers them.

mod batch;
mod convert;
mod direct;
mod dispatch;
mod errors;
mod extras;
mod local;
mod loop_bridge;
mod options;
mod queue;
mod runtime;
mod worker;
mod worker_events;

pub(crate) use convert::name_text;
pub(crate) use errors::{code_err, core_err};
pub(crate) use options::seconds_ms;
pub(crate) use queue::Queue;
pub(crate) use runtime::{_resolve, run, runtime, Out};

use dispatch::Call;
use pyo3::prelude::*;
use worker::Worker;

#[pymodule]
fn _emq(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Queue>()?;
    m.add_class::<batch::Batch>()?;
    m.add_class::<Worker>()?;
    m.add_class::<Call>()?;
    m.add_class::<dispatch::Done>()?;
    m.add_class::<extras::EventStream>()?;
    m.add_class::<loop_bridge::LoopBridge>()?;
    m.add_function(wrap_pyfunction!(_resolve, m)?)?;
    m.add_function(wrap_pyfunction!(errors::error_codes, m)?)?;
    m.add_function(wrap_pyfunction!(direct::direct_reply_len, m)?)?;
    m.add_function(wrap_pyfunction!(direct::direct_settle, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
