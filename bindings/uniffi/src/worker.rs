//! A running worker (`WorkerHandle`) and its counters.

use crate::error::EmqException;
use crate::runtime::{on_runtime, runtime};
use std::sync::Mutex;

/// Counters of one worker.
#[derive(Debug, Clone, Default, PartialEq, Eq, uniffi::Record)]
pub struct WorkerStats {
    pub completed: u64,
    pub failed: u64,
    pub lease_lost: u64,
    pub recovered: u64,
    /// Jobs running now.
    pub running: u64,
}

/// A running worker. Dropping it (Swift: the last reference going away; Kotlin: `close()`,
/// `destroy()` or garbage collection) aborts the worker at once, and the jobs it held are recovered
/// when their leases expire. `close()` (Kotlin: `shutdown()`) stops it gracefully.
#[derive(uniffi::Object)]
pub struct WorkerHandle {
    pub(crate) inner: Mutex<Option<emq::WorkerHandle>>,
}

#[uniffi::export(async_runtime = "tokio")]
impl WorkerHandle {
    /// Stops the worker gracefully: no new jobs; in-flight jobs finish within the shutdown
    /// deadline (10 s), the rest are given back to wait. Returns how many were given back. A second
    /// call does nothing. Kotlin names it `shutdown()`: its objects are `AutoCloseable`, whose
    /// `close()` destroys the handle (aborting the worker, see [`WorkerHandle`]).
    pub async fn close(&self) -> Result<u64, EmqException> {
        let handle = self.inner.lock().expect("worker handle").take();
        match handle {
            Some(h) => Ok(on_runtime(async move { h.close().await }).await?.released),
            None => Ok(0),
        }
    }

    /// True until the graceful close was called.
    pub fn is_running(&self) -> bool {
        self.inner.lock().expect("worker handle").is_some()
    }

    /// The worker's counters (zeros once shut down).
    pub fn stats(&self) -> WorkerStats {
        match self.inner.lock().expect("worker handle").as_ref() {
            Some(h) => {
                let s = h.stats();
                WorkerStats {
                    completed: s.completed,
                    failed: s.failed,
                    lease_lost: s.lease_lost,
                    recovered: s.recovered,
                    running: h.running() as u64,
                }
            }
            None => WorkerStats::default(),
        }
    }
}

impl Drop for WorkerHandle {
    fn drop(&mut self) {
        // Dropping the core handle aborts its tasks; aborting needs no runtime context, but enter
        // one anyway so that anything dropped with it that touches tokio finds a runtime.
        let _guard = runtime().enter();
        if let Ok(mut inner) = self.inner.lock() {
            inner.take();
        }
    }
}
