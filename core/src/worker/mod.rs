//! [`Worker`]: leases jobs from one queue and runs a [`Handler`] on them, N at a time.
//!
//! - **Fetch** is select-then-claim: `claim.lua` leases ready ids from the queue's containers; the
//!   worker then reads each job's record with one pipelined HMGET. Completing jobs leases the
//!   worker's next ones in the same script (`complete.lua`).
//! - **Prefetch**: a worker holds up to `concurrency + prefetch` leased jobs; the extra ones wait in a
//!   local buffer (their leases renewed like running ones), so a slot whose job ends starts the next
//!   at once while the completion travels, and one `complete.lua` call records and refills a batch.
//!   The buffer is used only once the worker's jobs have shown to be short (see
//!   [`PREFETCH_MAX_JOB`]), so long jobs are never held back from other workers.
//! - **Waiting** for work blocks (BRPOP on the queue's `handoff` and marker lists) on a dedicated
//!   connection, never on the shared one, for at most the time until the next delayed job is due.
//!   The worker registers in `waiters` in the same pipeline, so an add that finds the queue empty
//!   leases its job to it and hands it over whole (see [`crate::handoff`]): the job starts after one
//!   round trip, the add's own. A marker that names a job is claimed and read in one call.
//! - **Leases** are renewed in the background (`renew.lua`, all in-flight jobs in one call); a job
//!   whose lease is lost is flagged to its handler and its completion is refused.
//! - **Failures** (an error, a panic, a timeout) fail the job, never the worker: retry with backoff
//!   while attempts remain, unless the error is unrecoverable.
//! - **Stalled sweep**: one worker at a time (the sweep lock) moves expired leases to stalled and
//!   recovers each job (`sweep.lua`, then `recover.lua` per id). A recovered job is charged a stall
//!   and an attempt only if its run had started: a job leased ahead (buffered; the claim that
//!   leased it knew it would not start at once, or an add handed it over) carries an "ahead" lease
//!   (`<token>|<ms>|a`) until the worker reports its start, and comes back uncounted if the worker
//!   dies first. The start is reported in the `complete.lua` call of the job the slot ran before
//!   it (no call of its own on the hot path), else by a `started.lua` call sent beside the run
//!   (one call for all the slots a batch of leased jobs starts at once, see `dispatch`).
//!   The bound, honestly: a job whose start report had not reached the server when its worker
//!   died (at most that one call's round trip after its handler began, longer only if the call
//!   failed) comes back uncounted although it ran. So that a job that kills its worker cannot loop
//!   that way, its record counts such returns (`strands`) and the worker reports the start of a
//!   job that has one *before* running its handler: it is returned uncounted at most once, and
//!   charged (up to `max_stalls`, then failed) from then on.
//! - **Retention**: finished jobs are trimmed by count and age in the background, queue-wide every
//!   `trim_interval`, and to a job's own retention (`remove_on_complete: {count, age}`) soon after
//!   that job finishes (`maintenance.rs`).
//! - **Shutdown**: [`WorkerHandle::close`] stops fetching, lets in-flight jobs finish within the
//!   grace period (`shutdown_deadline`), then tells the handlers still running to stop
//!   ([`Interrupt::Shutdown`]) and releases their jobs to the front of wait, attempts not counted.
//!   [`WorkerAborter::abort`] (a second Ctrl-C) and dropping the handle stop at once; the leases
//!   then expire and the sweep recovers the jobs.
//! - **Interrupts**: a cancel ([`Queue::cancel`], learned from the queue's `cancels` stream, which
//!   a task follows with a blocking XREAD), a job's timeout, or the end of the grace period tells
//!   the run through its [`JobContext`]; the run is stopped (dropped, or awaited for a cooperative
//!   binding handler) before its outcome is recorded, so a retry never overlaps it.
//!
//! Files, one concern each: `builder.rs` (options validated, tasks started), `handle.rs` (stats,
//! close, abort), `regrow.rs` (a restart over a partitioned queue that grew), `fetch.rs` (claim, block, hand-off), `capacity.rs` (capacity and dispatch), `order.rs` (jobs buffered in the order claimed), `run.rs`
//! (a handler's run, its interrupts, releases), `record.rs` (completions and failures recorded),
//! `hooks.rs` (what a worker reports to its host: [`WorkerEvent`]),
//! `lease.rs` (renewal), `cancel.rs` (the `cancels` stream), `maintenance.rs` (sweep, schedulers,
//! retention). This file holds the options, the stats and the state the tasks share.

use crate::error::{ErrorCode, Result};
use crate::handler::{
    interrupt, interrupt_channel, Handler, HandlerError, HandlerResult, Interrupt, InterruptTx,
    JobContext,
};
use crate::handoff;
use crate::job::{Job, JobState};
use crate::job_id::JobId;
use crate::keyspace::JobPart;
use crate::options::Retention;
use crate::queue::Queue;
use crate::script::{self, Invocation};
use crate::task::TaskHandle;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

mod builder;
mod cancel;
mod capacity;
mod fetch;
mod handle;
pub mod hooks;
mod lease;
mod maintenance;
mod order;
mod pool;
mod record;
mod regrow;
mod run;
#[cfg(feature = "otel")]
mod span;

pub use crate::options::{QueueOrder, MAX_QUEUE_WEIGHT};
pub use crate::options::{WorkerOptions, PREFETCH_MAX_JOB};
pub use builder::{Worker, WorkerBuilder};
#[cfg(feature = "testing")]
pub use cancel::delay_cancel_follow;
use cancel::*;
use capacity::*;
use fetch::*;
use handle::{withdraw, Running};
pub use handle::{CloseReport, WorkerAborter, WorkerHandle, SHUTDOWN_STOP_WAIT};
use hooks::emit;
pub use hooks::{WorkerEvent, WorkerEventHook};
use lease::*;
use maintenance::*;
use order::{ClaimOrder, Ticket};
use pool::Pool;
use record::*;
use run::*;
pub use run::{CANCELLED, INTERRUPT_DROP_AFTER};

/// Counters of one worker.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct WorkerStats {
    /// Jobs completed.
    pub completed: u64,
    /// Jobs failed for good: their last attempt failed, or an unrecoverable error, a cancel or
    /// a timeout with no attempt left ended them (a job given back at shutdown is not counted).
    pub failed: u64,
    /// Runs that failed and were scheduled for another attempt (the job went back to wait or to
    /// delayed for its backoff). A job with `attempts = 3` that always fails counts `retried` 2
    /// and `failed` 1.
    pub retried: u64,
    /// Completions or failures refused because the lease was lost.
    pub lease_lost: u64,
    /// Stalled jobs this worker recovered.
    pub recovered: u64,
}

impl WorkerStats {
    /// The sum of two workers' (or two queues') counters.
    pub fn plus(self, o: WorkerStats) -> WorkerStats {
        WorkerStats {
            completed: self.completed + o.completed,
            failed: self.failed + o.failed,
            retried: self.retried + o.retried,
            lease_lost: self.lease_lost + o.lease_lost,
            recovered: self.recovered + o.recovered,
        }
    }
}

struct Flight {
    token: String,
    lease_ms: u64,
    lost: Arc<AtomicBool>,
    /// Until when its lease surely holds, by this worker's clock: the send time of the last call
    /// that took or renewed it, plus that call's lease (`span`; see [`lapsed`]).
    until: Instant,
    span: Duration,
    abort: Option<tokio::task::AbortHandle>,
    /// The running handler's interrupt (None while the job waits in the buffer).
    interrupt: Option<InterruptTx>,
    /// A cancel that arrived while the job waited in the buffer (its reason).
    cancel: Option<String>,
    /// Its lease is marked started on the server, or the report is on its way (false: leased
    /// ahead, see `lib/claim.lua`; if the worker dies now, the sweep gives it back uncounted).
    started: bool,
}

/// A successful run waiting for the completer to record it.
struct Completion {
    id: JobId,
    token: String,
    result: String,
    /// The job's `remove_on_complete`: `Now` deletes the record; `Within` trims once recorded.
    removal: crate::options::Removal,
    dedup: String,
    /// The batch of a batched job (`core/src/batch/`): its outcome is recorded there once
    /// completed.
    batch: Option<crate::batch::BatchRef>,
    /// The job and its result for the host's `completed` event (None without a hook).
    event: Option<(Arc<Job>, serde_json::Value)>,
    /// A leased-ahead job whose run the slot started right after this one: its start is reported
    /// in the same call (no call of its own).
    started: Option<(JobId, String)>,
    /// The run's length in ms and, for a first run, its wait (`core/src/latency.rs`); None: not
    /// counted.
    latency: Option<(u64, Option<u64>)>,
}

/// Most completions recorded in one call of `complete.lua`.
const COMPLETE_BATCH: usize = 128;

/// Longest a completion waits for others to share its call, and only while the worker's slots all
/// have buffered jobs to go on with.
const COMPLETE_LINGER: Duration = Duration::from_millis(2);

struct Shared {
    completions: tokio::sync::mpsc::UnboundedSender<Completion>,
    /// The completer's end of `completions`, until its task starts.
    completed_rx: Mutex<Option<tokio::sync::mpsc::UnboundedReceiver<Completion>>>,
    queue: Queue,
    handler: Arc<dyn Handler>,
    opts: WorkerOptions,
    flights: Mutex<HashMap<JobId, Flight>>,
    /// The slots and buffers this worker's queues share (one member per queue).
    pool: Arc<Pool>,
    /// This queue's place in `pool`.
    member: usize,
    /// Claims in flight, so their jobs reach `ready` in the order they were leased.
    order: Mutex<ClaimOrder>,
    /// Completions sent to the completer and not yet recorded.
    unrecorded: AtomicUsize,
    /// Recent handler run time, µs (moving average; `u64::MAX` until the first job ends).
    job_us: AtomicU64,
    stopping: AtomicBool,
    /// Set by [`WorkerAborter::abort`]: close stops waiting and releases nothing.
    aborted: AtomicBool,
    /// Jobs given back to wait (uncounted) so far.
    released: AtomicU64,
    /// Cancel requests read from the `cancels` stream for jobs not (yet) registered here: a job
    /// leased by a claim still on its way is cancelled as it registers. Locked after `flights`.
    early_cancels: Mutex<HashMap<JobId, (String, Instant)>>,
    /// Becomes true once [`cancel_loop`] has pinned its place in the `cancels` stream; the first
    /// claim waits for it, so a cancel asked after a job started here is never read past.
    cancels_followed: tokio::sync::watch::Sender<bool>,
    wake: Notify,
    stop: Notify,
    idle: Notify,
    completed: AtomicU64,
    failed: AtomicU64,
    retried: AtomicU64,
    lease_lost: AtomicU64,
    recovered: AtomicU64,
    /// This worker's entry in the queue's `waiters` set: "<random id>|<lease ms>".
    waiter: String,
    /// The latest per-job retentions of jobs this worker finished (see [`JobRetention`]).
    job_retention: JobRetention,
    /// The host's hook for this worker's events ([`WorkerBuilder::on_event`]).
    events: Option<WorkerEventHook>,
    /// The queue's job defaults (`core/src/job_defaults.rs`): read before the first claim, then
    /// every [`crate::job_defaults::DEFAULTS_REFRESH`]; filled into each job as it starts.
    defaults: std::sync::RwLock<Arc<crate::job_defaults::JobFill>>,
}

impl Shared {
    /// The queue's job defaults as last read.
    fn defaults(&self) -> Arc<crate::job_defaults::JobFill> {
        self.defaults
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Reads the queue's job defaults again.
    async fn refresh_defaults(&self) -> crate::Result<()> {
        let d = self.queue.job_defaults().await?;
        *self.defaults.write().unwrap_or_else(|p| p.into_inner()) = Arc::new((&d).into());
        Ok(())
    }

    /// Logs a fault of the worker itself (it keeps trying) and reports it to the host's hook.
    fn trouble(&self, what: &str, e: &crate::Error) {
        tracing::warn!(error = %e, "{what}");
        emit(&self.events, || WorkerEvent::Error {
            error: crate::Error::new(e.code(), format!("{what}: {}", e.message())),
        });
    }
}

/// The dedicated connection a worker blocks on, and its server-side client id (for CLIENT UNBLOCK
/// at close, so a popped entry is never dropped with the connection).
struct Blocking {
    conn: redis::aio::MultiplexedConnection,
    client_id: Option<i64>,
}

/// A leased job: id, token, and its record once read.
type Leased = (JobId, String);
