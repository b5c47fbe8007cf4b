//! How results cross from tokio threads to an asyncio event loop without those threads ever
//! taking the GIL.
//!
//! [`WakePipe`]: a non-blocking pipe whose read end the loop watches (`loop.add_reader`); a tokio
//! thread writes one byte only when no wake-up is pending, so a busy loop is woken once per batch.
//!
//! [`LoopBridge`]: one per event loop (kept in a weak-keyed registry), used by every async method
//! of the package. A finished core future queues `(asyncio future, outcome)` and wakes the loop;
//! the loop's reader callback converts each outcome to Python and resolves the future. Compared to
//! `loop.call_soon_threadsafe` from a tokio thread, this takes no GIL off the loop, and it cannot
//! race with interpreter shutdown (a thread that released the GIL inside a Python call and tries
//! to take it back during finalisation is terminated, which aborts the process from Rust frames).
//! A loop without `add_reader` (Windows' proactor loop) falls back to `call_soon_threadsafe`.

use crate::Out;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A self-pipe that wakes an event loop.
pub struct WakePipe {
    read_fd: i32,
    write_fd: i32,
    /// A wake-up byte is in the pipe and the loop has not cleared it yet.
    woken: AtomicBool,
}

impl WakePipe {
    /// A new pipe, both ends non-blocking and close-on-exec.
    pub fn new() -> std::io::Result<WakePipe> {
        let mut fds = [0i32; 2];
        // SAFETY: `fds` is a valid array of two ints for pipe(2) to fill.
        if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        for fd in fds {
            // SAFETY: fd was just returned by pipe(2) and is owned here.
            unsafe {
                let fl = libc::fcntl(fd, libc::F_GETFL);
                libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK);
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            }
        }
        Ok(WakePipe {
            read_fd: fds[0],
            write_fd: fds[1],
            woken: AtomicBool::new(false),
        })
    }

    /// The fd the loop watches.
    pub fn fd(&self) -> i32 {
        self.read_fd
    }

    /// Wakes the loop unless a wake-up is already pending. No GIL, no Python.
    pub fn wake(&self) {
        if !self.woken.swap(true, Ordering::AcqRel) {
            let b = [1u8];
            // SAFETY: one byte from a valid buffer to our own pipe; a full pipe (EAGAIN) already
            // means the loop will wake.
            unsafe {
                libc::write(self.write_fd, b.as_ptr().cast(), 1);
            }
        }
    }

    /// Empties the pipe and re-arms `wake`; call before taking the queued work.
    pub fn clear(&self) {
        let mut buf = [0u8; 256];
        // SAFETY: reading into a valid buffer from our own non-blocking pipe until it is empty.
        while unsafe { libc::read(self.read_fd, buf.as_mut_ptr().cast(), buf.len()) } > 0 {}
        self.woken.store(false, Ordering::Release);
    }
}

impl Drop for WakePipe {
    fn drop(&mut self) {
        // SAFETY: both fds are owned by this pipe and closed once.
        unsafe {
            libc::close(self.read_fd);
            libc::close(self.write_fd);
        }
    }
}

type Outcome = emq::Result<Out>;

pub struct BridgeInner {
    pipe: WakePipe,
    done: Mutex<Vec<(Py<PyAny>, Outcome)>>,
}

/// Delivers core outcomes to the futures of one event loop (see the module doc).
#[pyclass(module = "emq._emq", frozen)]
pub struct LoopBridge {
    inner: Arc<BridgeInner>,
}

#[pymethods]
impl LoopBridge {
    /// The loop's reader callback: resolves every future whose outcome arrived.
    fn drain(&self, py: Python<'_>) -> PyResult<()> {
        self.inner.pipe.clear();
        let done = std::mem::take(&mut *self.inner.done.lock().unwrap_or_else(|p| p.into_inner()));
        for (fut, outcome) in done {
            let (ok, value) = match outcome
                .map_err(|e| crate::core_err(py, &e))
                .and_then(|o| o.into_py(py))
            {
                Ok(v) => (true, v),
                Err(e) => (false, e.into_value(py).into_any()),
            };
            crate::_resolve(fut.bind(py), ok, value.bind(py))?;
        }
        Ok(())
    }
}

/// Where a finished core future sends its outcome.
pub enum Sink {
    /// The loop's bridge (the usual case).
    Bridge(Arc<BridgeInner>),
    /// `loop.call_soon_threadsafe` (a loop without `add_reader`).
    Threadsafe(Py<PyAny>),
}

static REGISTRY: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The sink of `event_loop`: its bridge, created and registered with the loop on first use.
pub fn sink_for(py: Python<'_>, event_loop: &Bound<'_, PyAny>) -> PyResult<Sink> {
    let registry = REGISTRY
        .get_or_try_init(py, || -> PyResult<Py<PyAny>> {
            Ok(py
                .import("weakref")?
                .getattr("WeakKeyDictionary")?
                .call0()?
                .unbind())
        })?
        .bind(py);
    let known = registry.call_method1("get", (event_loop,))?;
    if let Ok(b) = known.cast::<LoopBridge>() {
        return Ok(Sink::Bridge(b.get().inner.clone()));
    }
    let pipe = match WakePipe::new() {
        Ok(p) => p,
        Err(_) => return Ok(Sink::Threadsafe(event_loop.clone().unbind())),
    };
    let fd = pipe.fd();
    let bridge = Bound::new(
        py,
        LoopBridge {
            inner: Arc::new(BridgeInner {
                pipe,
                done: Mutex::new(Vec::new()),
            }),
        },
    )?;
    if event_loop
        .call_method1("add_reader", (fd, bridge.getattr("drain")?))
        .is_err()
    {
        return Ok(Sink::Threadsafe(event_loop.clone().unbind()));
    }
    registry.set_item(event_loop, &bridge)?;
    Ok(Sink::Bridge(bridge.get().inner.clone()))
}

impl Sink {
    /// Hands `fut`'s outcome over (called on a tokio thread).
    pub fn deliver(self, fut: Py<PyAny>, outcome: Outcome) {
        match self {
            Sink::Bridge(inner) => {
                inner
                    .done
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push((fut, outcome));
                inner.pipe.wake();
            }
            Sink::Threadsafe(event_loop) => Python::attach(|py| {
                let (ok, value) = match outcome
                    .map_err(|e| crate::core_err(py, &e))
                    .and_then(|o| o.into_py(py))
                {
                    Ok(v) => (true, v),
                    Err(e) => (false, e.into_value(py).into_any()),
                };
                let sent = py
                    .import("emq._emq")
                    .and_then(|m| m.getattr("_resolve"))
                    .and_then(|resolve| {
                        event_loop
                            .bind(py)
                            .call_method1("call_soon_threadsafe", (resolve, fut, ok, value))
                    });
                // A closed loop cannot take the result any more; nobody is waiting for it.
                drop(sent);
            }),
        }
    }
}
