//! A running worker (`WorkerHandle`) and its counters.

use crate::error::EmqException;
use crate::handler::{ForeignHandler, JobHandler};
use crate::options::Retention;
use crate::runtime::{on_runtime, runtime};
use crate::worker_events::{Hub, WorkerEvents};
use emq::spec::Millis;
use std::sync::{Arc, Mutex};

/// Counters of one worker.
#[derive(Debug, Clone, Default, PartialEq, Eq, uniffi::Record)]
pub struct WorkerStats {
    /// Jobs completed.
    pub completed: u64,
    /// Jobs failed for good: their last attempt failed, or an unrecoverable error, a cancel or a
    /// timeout with no attempt left ended them.
    pub failed: u64,
    /// Runs that failed and went back for another attempt: a job with `attempts = 3` that always
    /// fails counts `failed` 1 and `retried` 2.
    pub retried: u64,
    /// Completions or failures refused because the lease was lost.
    pub lease_lost: u64,
    /// Stalled jobs this worker's sweep recovered.
    pub recovered: u64,
    /// Jobs running now.
    pub running: u64,
}

/// Counters of one of a worker's queues (`WorkerHandle.statsByQueue()`).
#[derive(Debug, Clone, Default, PartialEq, Eq, uniffi::Record)]
pub struct QueueStats {
    /// The queue's name.
    pub queue: String,
    /// Jobs of this queue completed.
    pub completed: u64,
    /// Jobs of this queue failed for good.
    pub failed: u64,
    /// Runs of this queue's jobs that went back for another attempt.
    pub retried: u64,
    /// Outcomes refused because the lease was lost.
    pub lease_lost: u64,
    /// Stalled jobs of this queue the worker's sweep recovered.
    pub recovered: u64,
}

/// Starts a worker on `queues` (the core refuses none and a queue twice) with `handler`.
pub(crate) fn start(
    queues: Vec<emq::Queue>,
    handler: Arc<dyn JobHandler>,
    opts: emq::WorkerOptions,
) -> Result<Arc<WorkerHandle>, EmqException> {
    emq::worker_registry::set_language(if crate::jvm::in_jvm() {
        "kotlin"
    } else {
        "swift"
    });
    let _guard = runtime().enter();
    let events = Arc::new(Hub::default());
    let handle = emq::Worker::builder_many(queues.clone())
        .options(opts)
        .handler(ForeignHandler(handler))
        .on_event(events.hook())
        .run()?;
    let aborter = handle.aborter();
    Ok(Arc::new(WorkerHandle {
        inner: Mutex::new(Some(handle)),
        aborter,
        queues,
        events,
    }))
}

/// The spec of `Queue.startWorker`'s and `startWorkerMany`'s shared options (milliseconds as the
/// Kotlin and Swift callers give them).
#[allow(clippy::too_many_arguments)]
pub(crate) fn worker_spec(
    concurrency: i32,
    lease_ms: f64,
    shutdown_timeout_ms: f64,
    stalled_interval_ms: f64,
    max_stalls: u32,
    block_timeout_ms: f64,
    completed: Option<Retention>,
    failed: Option<Retention>,
) -> emq::spec::WorkerSpec {
    emq::spec::WorkerSpec {
        concurrency: Some(concurrency as f64),
        lease: Some(Millis(lease_ms)),
        shutdown_timeout: Some(Millis(shutdown_timeout_ms)),
        stalled_interval: Some(Millis(stalled_interval_ms)),
        max_stalls: Some(max_stalls as f64),
        block_timeout: Some(Millis(block_timeout_ms)),
        remove_on_complete: completed.map(Retention::to_spec),
        remove_on_fail: failed.map(Retention::to_spec),
        ..Default::default()
    }
}

/// Starts one worker on several queues (in this order), sharing `concurrency`: `strict` starts no
/// job of a later queue while an earlier one has a ready job; `weights` (queue name to 1..=1000;
/// a queue not named has 1) shares starts by weight while the queues have work (they exclude
/// each other; neither: equal weights). The other options are `Queue.startWorker`'s. Refused
/// with `InvalidOption`: no queue, a queue twice, strict with weights, a weight out of bounds or
/// naming another queue.
#[uniffi::export(default(
    strict = false,
    weights = None,
    concurrency = 1,
    lease_ms = 30000.0,
    shutdown_timeout_ms = 10000.0,
    stalled_interval_ms = 15000.0,
    max_stalls = 1,
    block_timeout_ms = 5000.0,
    completed = None,
    failed = None
))]
#[allow(clippy::too_many_arguments)]
pub fn start_worker_many(
    queues: Vec<Arc<crate::queue::Queue>>,
    handler: Arc<dyn JobHandler>,
    strict: bool,
    weights: Option<std::collections::HashMap<String, u32>>,
    concurrency: i32,
    lease_ms: f64,
    shutdown_timeout_ms: f64,
    stalled_interval_ms: f64,
    max_stalls: u32,
    block_timeout_ms: f64,
    completed: Option<Retention>,
    failed: Option<Retention>,
) -> Result<Arc<WorkerHandle>, EmqException> {
    let opts = emq::WorkerOptions::try_from(emq::spec::WorkerSpec {
        strict: Some(strict),
        weights: weights.map(|w| w.into_iter().map(|(q, n)| (q, f64::from(n))).collect()),
        ..worker_spec(
            concurrency,
            lease_ms,
            shutdown_timeout_ms,
            stalled_interval_ms,
            max_stalls,
            block_timeout_ms,
            completed,
            failed,
        )
    })?;
    start(
        queues.iter().map(|q| q.inner.clone()).collect(),
        handler,
        opts,
    )
}

/// A live worker of a queue, as registered (`Queue.workers()`; the core's `WorkerInfo`). Instants
/// are the server's clock, milliseconds since the epoch.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct WorkerInfo {
    /// Its id (unique per worker).
    pub id: String,
    /// The queue it serves.
    pub queue: String,
    /// The host it runs on.
    pub host: String,
    /// Its process id.
    pub pid: u32,
    /// The language driving it (`kotlin`, `swift`, `python`, `node`, `rust`).
    pub language: String,
    /// Its concurrency.
    pub concurrency: u64,
    /// Jobs it was running at its last heartbeat.
    pub running: u64,
    /// The emq version it runs.
    pub version: String,
    /// Its first heartbeat.
    pub started_ms: u64,
    /// Its last heartbeat.
    pub beat_ms: u64,
    /// When its registration lapses without another heartbeat.
    pub lapse_ms: u64,
}

impl From<emq::worker_registry::WorkerInfo> for WorkerInfo {
    fn from(w: emq::worker_registry::WorkerInfo) -> WorkerInfo {
        WorkerInfo {
            id: w.id,
            queue: w.queue,
            host: w.host,
            pid: w.pid,
            language: w.language,
            concurrency: w.concurrency as u64,
            running: w.running as u64,
            version: w.version,
            started_ms: w.started_ms,
            beat_ms: w.beat_ms,
            lapse_ms: w.lapse_ms,
        }
    }
}

/// A running worker. Dropping it (Swift: the last reference going away; Kotlin: `close()`,
/// `destroy()` or garbage collection) aborts the worker at once, and the jobs it held are recovered
/// when their leases expire. `close()` (Kotlin: `shutdown()`) stops it gracefully; `abort()` stops
/// it at once, also while a graceful close is under way. Kotlin: `closeOnShutdown()` (dev/emq/
/// Shutdown.kt) closes it gracefully when the JVM shuts down (SIGTERM, Ctrl-C, `System.exit`).
#[derive(uniffi::Object)]
pub struct WorkerHandle {
    pub(crate) inner: Mutex<Option<emq::WorkerHandle>>,
    pub(crate) aborter: emq::WorkerAborter,
    /// Its queues, in order .
    pub(crate) queues: Vec<emq::Queue>,
    /// Its events' subscriptions, fed by the core's hook.
    pub(crate) events: Arc<Hub>,
}

#[uniffi::export(async_runtime = "tokio")]
impl WorkerHandle {
    /// Stops the worker gracefully: no new jobs; running handlers get the worker's
    /// `shutdown_timeout_ms` (default 10 s) to finish, then their coroutines are cancelled and
    /// their jobs go back to waiting, the attempt not counted (neither failed nor stalled).
    /// Returns how many jobs were given back. A second call does nothing. Kotlin names it `shutdown()`: its objects are `AutoCloseable`, whose
    /// `close()` destroys the handle (aborting the worker, see [`WorkerHandle`]).
    pub async fn close(&self) -> Result<u64, EmqException> {
        let handle = self.inner.lock().expect("worker handle").take();
        match handle {
            Some(h) => Ok(on_runtime(async move { h.close().await }).await?.released),
            None => Ok(0),
        }
    }

    /// Stops the worker at once, from any thread, also while `close()` waits (a second Ctrl-C):
    /// running handlers are cancelled, nothing more is waited for or given back, and the jobs it
    /// held come back through their leases, as after a crash. Idempotent.
    pub fn abort(&self) {
        let _guard = runtime().enter();
        self.aborter.abort();
    }

    /// Subscribes to this worker's events from now on ([`WorkerEvents`]: completed, failed and
    /// progress of the jobs it runs, the queue's stalled jobs, and read errors; a worker on
    /// several queues: those of its first queue). Kotlin:
    /// `eventsFlow()` wraps it in a `Flow`.
    pub async fn events(&self) -> Result<Arc<WorkerEvents>, EmqException> {
        Ok(Arc::new(WorkerEvents::subscribe(self.events.clone())))
    }

    /// The names of the queues it serves, in the order it was given them (a partitioned queue's
    /// partitions, as the core's handle names them).
    pub fn queues(&self) -> Vec<String> {
        self.queues
            .iter()
            .flat_map(emq::Queue::slot_queues)
            .map(|q| q.name().as_str().to_string())
            .collect()
    }

    /// Its counters per queue, in order, while it runs (empty once shut down: `stats()` keeps
    /// the final sums; `running` is the worker's, shared by its queues).
    pub fn stats_by_queue(&self) -> Vec<QueueStats> {
        let guard = self.inner.lock().expect("worker handle");
        let Some(h) = guard.as_ref() else {
            return Vec::new();
        };
        h.stats_by_queue()
            .into_iter()
            .map(|(queue, s)| QueueStats {
                queue,
                completed: s.completed,
                failed: s.failed,
                retried: s.retried,
                lease_lost: s.lease_lost,
                recovered: s.recovered,
            })
            .collect()
    }

    /// True until the graceful close was called.
    pub fn is_running(&self) -> bool {
        self.inner.lock().expect("worker handle").is_some()
    }

    /// The worker's counters; once shut down, its final figures (`running` 0).
    pub fn stats(&self) -> WorkerStats {
        let (s, running) = match self.inner.lock().expect("worker handle").as_ref() {
            Some(h) => (h.stats(), h.running() as u64),
            None => (self.aborter.stats(), 0),
        };
        WorkerStats {
            completed: s.completed,
            failed: s.failed,
            retried: s.retried,
            lease_lost: s.lease_lost,
            recovered: s.recovered,
            running,
        }
    }
}

impl Drop for WorkerHandle {
    fn drop(&mut self) {
        // Dropped outside any runtime context (a Kotlin close or finaliser), the core handle
        // aborts its tasks and withdraws the worker's waiters registration before returning
        // (bounded, on its own runtime). Entering the runtime here made it withdraw in a spawned
        // task instead, so an add right after the drop could still hand a job to the gone
        // worker (QueueTest's "destroying the worker handle" saw it ACTIVE, now and then).
        // (On a runtime thread, when an async caller drops the last reference, the core spawns
        // the withdrawal: all it can do there.)
        let inner = self.inner.lock().ok().and_then(|mut inner| inner.take());
        drop(inner);
    }
}
