//! The sync API's blocking add without a thread hop: each Python thread that adds through
//! `emq.sync` gets a current-thread tokio runtime of its own and, per queue, a connection of its
//! own on it (`emq::Queue::on_own_connection`, sharing the queue's id minter), so the add runs,
//! writes, waits for the reply and reads it on the calling thread: two crossings (into Rust and
//! back) where the shared runtime's path has four (to a tokio worker and back, each way). Held per
//! thread until the thread ends (its connections close with it); rebuilt in a forked child. A
//! thread that is itself inside a tokio runtime takes the shared runtime's path instead.

use crate::errors::core_err;
use crate::runtime::{block, CoreFuture};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::cell::RefCell;
use std::collections::HashMap;

/// One thread's runtime and its queues' own handles, by the native queue's id.
struct Local {
    pid: u32,
    rt: tokio::runtime::Runtime,
    queues: HashMap<u64, emq::Queue>,
}

thread_local! {
    static LOCAL: RefCell<Option<Local>> = const { RefCell::new(None) };
}

/// Runs `call` on this thread's own handle of `queue` (native id `id`), with the GIL released.
pub(crate) fn block_here(
    py: Python<'_>,
    id: u64,
    queue: &emq::Queue,
    call: impl FnOnce(emq::Queue) -> CoreFuture + Send,
) -> PyResult<Py<PyAny>> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return block(py, call(queue.clone()));
    }
    let outcome: Result<emq::Result<crate::runtime::Out>, String> = py.detach(|| {
        LOCAL.with(|cell| {
            let mut slot = cell.borrow_mut();
            let pid = std::process::id();
            if slot.as_ref().is_some_and(|l| l.pid != pid) {
                // A forked child: the parent's runtime and connections are not ours to close.
                std::mem::forget(slot.take());
            }
            if slot.is_none() {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| format!("emq: cannot start this thread's runtime: {e}"))?;
                *slot = Some(Local {
                    pid,
                    rt,
                    queues: HashMap::new(),
                });
            }
            let local = slot.as_mut().expect("set above");
            let q = match local.queues.get(&id) {
                Some(q) => q.clone(),
                None => match local.rt.block_on(queue.on_own_connection()) {
                    Ok(q) => {
                        local.queues.insert(id, q.clone());
                        q
                    }
                    Err(e) => return Ok(Err(e)),
                },
            };
            Ok(local.rt.block_on(call(q)))
        })
    });
    match outcome {
        Ok(Ok(out)) => out.into_py(py),
        Ok(Err(e)) => Err(core_err(py, &e)),
        Err(message) => Err(PyRuntimeError::new_err(message)),
    }
}
