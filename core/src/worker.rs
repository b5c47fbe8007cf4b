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
//!   recovers each job (`sweep.lua`, then `recover.lua` per id).
//! - **Retention**: finished jobs are trimmed by count and age in the background.
//! - **Shutdown**: [`WorkerHandle::close`] stops fetching, lets in-flight jobs finish within the
//!   grace period (`shutdown_deadline`), then tells the handlers still running to stop
//!   ([`Interrupt::Shutdown`]) and releases their jobs to the front of wait, attempts not counted.
//!   [`WorkerAborter::abort`] (a second Ctrl-C) and dropping the handle stop at once; the leases
//!   then expire and the sweep recovers the jobs.
//! - **Interrupts**: a cancel ([`Queue::cancel`], learned from the queue's `cancels` stream, which
//!   a task follows with a blocking XREAD), a job's timeout, or the end of the grace period tells
//!   the run through its [`JobContext`]; the run is stopped (dropped, or awaited for a cooperative
//!   binding handler) before its outcome is recorded, so a retry never overlaps it.

use crate::error::{ErrorCode, Result};
use crate::handler::{
    interrupt, interrupt_channel, Handler, HandlerError, HandlerResult, Interrupt, InterruptTx,
    JobContext,
};
use crate::handoff;
use crate::job::{Job, JobState};
use crate::job_id::JobId;
use crate::keyspace::JobPart;
use crate::options::{Backoff, Retention};
use crate::queue::Queue;
use crate::script::{self, Invocation};
use crate::task::TaskHandle;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// How a worker runs.
#[derive(Clone, Debug)]
pub struct WorkerOptions {
    /// Jobs run at once.
    pub concurrency: usize,
    /// Lease length (renewed every third of it while the handler runs).
    pub lease: Duration,
    /// How often the stalled sweep runs (one worker at a time).
    pub stalled_interval: Duration,
    /// Stalls allowed before a job fails.
    pub max_stalls: u32,
    /// Longest single wait for work.
    pub block_timeout: Duration,
    /// The shutdown grace period: how long `close` lets running handlers finish before it tells
    /// them to stop and releases their jobs (uncounted). Bindings call it `shutdown_timeout`
    /// (Python: seconds; Node: `shutdownTimeout`, ms).
    pub shutdown_deadline: Duration,
    /// Retention of completed jobs.
    pub completed: Retention,
    /// Retention of failed jobs.
    pub failed: Retention,
    /// How often retention is applied.
    pub trim_interval: Duration,
    /// Jobs leased ahead of the handlers (None: twice `concurrency`, clamped to 16..=256; `Some(0)`:
    /// none).
    /// Used only after a first job ended, while recent jobs take under [`PREFETCH_MAX_JOB`] on
    /// average.
    pub prefetch: Option<usize>,
}

/// Prefetch pauses while the worker's jobs average longer than this: a long job would keep the
/// buffered ones from other workers for its whole run.
pub const PREFETCH_MAX_JOB: Duration = Duration::from_millis(50);

impl Default for WorkerOptions {
    fn default() -> WorkerOptions {
        WorkerOptions {
            concurrency: 1,
            lease: Duration::from_secs(30),
            stalled_interval: Duration::from_secs(15),
            max_stalls: 1,
            block_timeout: Duration::from_secs(5),
            shutdown_deadline: Duration::from_secs(10),
            completed: Retention::COMPLETED,
            failed: Retention::FAILED,
            trim_interval: Duration::from_secs(5),
            prefetch: None,
        }
    }
}

/// Counters of one worker.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct WorkerStats {
    /// Jobs completed.
    pub completed: u64,
    /// Runs that failed (retried or not).
    pub failed: u64,
    /// Completions or failures refused because the lease was lost.
    pub lease_lost: u64,
    /// Stalled jobs this worker recovered.
    pub recovered: u64,
}

struct Flight {
    token: String,
    lease_ms: u64,
    lost: Arc<AtomicBool>,
    abort: Option<tokio::task::AbortHandle>,
    /// The running handler's interrupt (None while the job waits in the buffer).
    interrupt: Option<InterruptTx>,
    /// A cancel that arrived while the job waited in the buffer (its reason).
    cancel: Option<String>,
}

/// A successful run waiting for the completer to record it.
struct Completion {
    id: JobId,
    token: String,
    result: String,
    keep: bool,
    dedup: String,
}

/// Jobs leased and read but not started yet, and the slots running now; one lock, so a job pushed
/// here is always either taken by a running slot or given a new one.
#[derive(Default)]
struct Ready {
    jobs: std::collections::VecDeque<(Job, String)>,
    slots: usize,
}

/// Most completions recorded in one call of `complete.lua`.
const COMPLETE_BATCH: usize = 128;

/// Longest a completion waits for others to share its call, and only while the worker's slots all
/// have buffered jobs to go on with.
const COMPLETE_LINGER: Duration = Duration::from_millis(2);

struct Shared {
    completions: tokio::sync::mpsc::UnboundedSender<Completion>,
    queue: Queue,
    handler: Arc<dyn Handler>,
    opts: WorkerOptions,
    flights: Mutex<HashMap<JobId, Flight>>,
    /// Slots running a job (mirrors `ready.slots` for lock-free reads).
    running: AtomicUsize,
    ready: Mutex<Ready>,
    /// Leased jobs not finished yet, plus claims in flight (their reservations).
    held: AtomicUsize,
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
    wake: Notify,
    stop: Notify,
    idle: Notify,
    completed: AtomicU64,
    failed: AtomicU64,
    lease_lost: AtomicU64,
    recovered: AtomicU64,
    /// This worker's entry in the queue's `waiters` set: "<random id>|<lease ms>".
    waiter: String,
}

/// The dedicated connection a worker blocks on, and its server-side client id (for CLIENT UNBLOCK
/// at close, so a popped entry is never dropped with the connection).
struct Blocking {
    conn: redis::aio::MultiplexedConnection,
    client_id: Option<i64>,
}

/// A leased job: id, token, and its record once read.
type Leased = (JobId, String);

/// Builds and starts workers.
pub struct Worker;

impl Worker {
    /// A builder for a worker on `queue`.
    pub fn builder(queue: Queue) -> WorkerBuilder {
        WorkerBuilder {
            queue,
            opts: WorkerOptions::default(),
            handler: None,
        }
    }
}

/// Configures a worker.
pub struct WorkerBuilder {
    queue: Queue,
    opts: WorkerOptions,
    handler: Option<Arc<dyn Handler>>,
}

impl WorkerBuilder {
    /// Jobs run at once (1 to [`MAX_CONCURRENCY`](crate::options::worker_bounds::MAX_CONCURRENCY),
    /// checked by [`WorkerBuilder::run`]).
    pub fn concurrency(mut self, n: usize) -> Self {
        self.opts.concurrency = n;
        self
    }

    /// Every option at once.
    pub fn options(mut self, opts: WorkerOptions) -> Self {
        self.opts = opts;
        self
    }

    /// The handler.
    pub fn handler<H: Handler>(mut self, h: H) -> Self {
        self.handler = Some(Arc::new(h));
        self
    }

    /// The handler, already shared.
    pub fn handler_arc(mut self, h: Arc<dyn Handler>) -> Self {
        self.handler = Some(h);
        self
    }

    /// Starts the worker on the current tokio runtime.
    pub fn run(self) -> Result<WorkerHandle> {
        let handler = self.handler.ok_or_else(|| {
            crate::Error::new(ErrorCode::InvalidOption, "a worker needs a handler")
        })?;
        self.opts.validate()?;
        let (completions, completed_rx) = tokio::sync::mpsc::unbounded_channel();
        let waiter = format!(
            "{:016x}|{}",
            rand::random::<u64>(),
            self.opts.lease.as_millis()
        );
        let shared = Arc::new(Shared {
            completions,
            queue: self.queue,
            handler,
            opts: self.opts,
            flights: Mutex::new(HashMap::new()),
            running: AtomicUsize::new(0),
            ready: Mutex::new(Ready::default()),
            held: AtomicUsize::new(0),
            unrecorded: AtomicUsize::new(0),
            job_us: AtomicU64::new(u64::MAX),
            stopping: AtomicBool::new(false),
            aborted: AtomicBool::new(false),
            released: AtomicU64::new(0),
            early_cancels: Mutex::new(HashMap::new()),
            wake: Notify::new(),
            stop: Notify::new(),
            idle: Notify::new(),
            completed: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            lease_lost: AtomicU64::new(0),
            recovered: AtomicU64::new(0),
            waiter,
        });
        let tasks = vec![
            TaskHandle::spawn(fetch_loop(shared.clone())),
            TaskHandle::spawn(complete_loop(shared.clone(), completed_rx)),
            TaskHandle::spawn(renew_loop(shared.clone())),
            TaskHandle::spawn(sweep_loop(shared.clone())),
            TaskHandle::spawn(trim_loop(shared.clone())),
            TaskHandle::spawn(scheduler_loop(shared.clone())),
            TaskHandle::spawn(cancel_loop(shared.clone())),
            crate::worker_registry::heartbeat(
                shared.queue.clone(),
                &shared.waiter,
                shared.opts.concurrency,
                {
                    let s = shared.clone();
                    move || s.running.load(Ordering::Relaxed)
                },
            ),
        ];
        Ok(WorkerHandle {
            shared,
            tasks,
            runtime: tokio::runtime::Handle::current(),
            pid: std::process::id(),
        })
    }
}

/// A running worker. Dropping it aborts the worker at once (leases then expire and the jobs are
/// recovered by a sweep); [`WorkerHandle::close`] shuts it down gracefully.
pub struct WorkerHandle {
    shared: Arc<Shared>,
    tasks: Vec<TaskHandle>,
    /// The runtime the worker runs on, to withdraw its registration when dropped.
    runtime: tokio::runtime::Handle,
    /// The process that started it.
    pid: u32,
}

/// Removes a worker's entry from the queue's `waiters` set, so no add hands it a job any more.
async fn withdraw(s: &Shared) {
    let _: std::result::Result<i64, _> = redis::cmd("ZREM")
        .arg(&s.queue.keys().waiters)
        .arg(&s.waiter)
        .query_async(&mut s.queue.store().conn())
        .await;
}

impl Drop for WorkerHandle {
    /// Aborts the worker (its tasks end with their handles) and withdraws its registration: on a
    /// thread outside the runtime (a binding's finaliser) before returning, bounded to 500 ms;
    /// inside it, in a spawned task. Once `close` ran, there is nothing to withdraw.
    fn drop(&mut self) {
        if self.shared.stopping.swap(true, Ordering::SeqCst) {
            return;
        }
        // A forked child holds a copy of its parent's worker whose runtime threads do not exist.
        if std::process::id() != self.pid {
            return;
        }
        let s = self.shared.clone();
        let gone = async move {
            let _ = tokio::time::timeout(Duration::from_millis(500), withdraw(&s)).await;
            crate::worker_registry::leave(&s.queue, &s.waiter).await;
        };
        let outside = tokio::runtime::Handle::try_current().is_err();
        if outside && self.runtime.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread {
            let rt = &self.runtime;
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| rt.block_on(gone)));
        } else {
            self.runtime.spawn(gone);
        }
    }
}

/// What a graceful close did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CloseReport {
    /// Jobs given back to wait, uncounted: those still running at the end of the grace period
    /// and those leased ahead (0 after [`WorkerAborter::abort`]).
    pub released: u64,
}

impl WorkerHandle {
    /// Its counters.
    pub fn stats(&self) -> WorkerStats {
        let s = &self.shared;
        WorkerStats {
            completed: s.completed.load(Ordering::Relaxed),
            failed: s.failed.load(Ordering::Relaxed),
            lease_lost: s.lease_lost.load(Ordering::Relaxed),
            recovered: s.recovered.load(Ordering::Relaxed),
        }
    }

    /// Jobs running now.
    pub fn running(&self) -> usize {
        self.shared.running.load(Ordering::Relaxed)
    }

    /// A switch that makes a close in progress (or the next one) stop at once: see
    /// [`WorkerAborter`]. Take it before calling `close`, which consumes the handle.
    pub fn aborter(&self) -> WorkerAborter {
        WorkerAborter {
            shared: self.shared.clone(),
        }
    }

    /// Graceful shutdown with the worker's `shutdown_deadline` as the grace period; see
    /// [`WorkerHandle::close_within`].
    pub async fn close(self) -> Result<CloseReport> {
        let deadline = self.shared.opts.shutdown_deadline;
        self.close_within(deadline).await
    }

    /// Graceful shutdown with `grace` as the grace period:
    ///
    /// 1. no new jobs are taken (the worker leaves `waiters`, stops claiming);
    /// 2. running handlers get up to `grace` to finish; their outcomes are recorded as usual;
    /// 3. then each handler still running is told ([`Interrupt::Shutdown`]: Rust futures are
    ///    dropped, a binding's handler is cancelled in its language) and given up to
    ///    [`SHUTDOWN_STOP_WAIT`] to stop;
    /// 4. every job still held (running or leased ahead) goes back to the front of wait (or its
    ///    priority) with `release.lua`: its attempt is not counted, and it is neither failed nor
    ///    stalled.
    ///
    /// [`WorkerAborter::abort`] cuts this short at any point: nothing more is waited for or
    /// released (the leases expire and the sweep recovers the jobs, as after a crash).
    pub async fn close_within(mut self, grace: Duration) -> Result<CloseReport> {
        let s = self.shared.clone();
        // No add hands this worker a job from now on (best effort: an entry already pushed is
        // popped by a blocked worker, or undone when its lease expires).
        withdraw(&s).await;
        s.stopping.store(true, Ordering::SeqCst);
        s.wake.notify_waiters();
        s.wake.notify_one();
        s.stop.notify_waiters();
        let until = Instant::now() + grace;
        // Let the fetch loop finish what it is doing (a claim in flight registers its jobs), so no
        // job it leased is left behind; it ends at its next check of `stopping`.
        if !self.tasks.is_empty() {
            let fetch = self.tasks.remove(0);
            fetch
                .join_within(
                    until
                        .saturating_duration_since(Instant::now())
                        .max(Duration::from_millis(100)),
                )
                .await;
        }
        wait_idle(&s, until).await;
        if !s.aborted.load(Ordering::SeqCst) && s.running.load(Ordering::SeqCst) > 0 {
            // The grace period is over: tell the running handlers, and let them stop.
            for f in s.flights.lock().expect("flights").values() {
                if let Some(tx) = &f.interrupt {
                    interrupt(tx, Interrupt::Shutdown);
                }
            }
            wait_idle(&s, Instant::now() + SHUTDOWN_STOP_WAIT).await;
        }
        let mut report = CloseReport::default();
        let held: Vec<(JobId, String)> = {
            let mut flights = s.flights.lock().expect("flights");
            flights
                .drain()
                .map(|(id, mut f)| {
                    if let Some(a) = f.abort.take() {
                        a.abort();
                    }
                    (id, f.token)
                })
                .collect()
        };
        if !s.aborted.load(Ordering::SeqCst) {
            release_jobs(&s, &held).await;
        }
        // Released here, or by their slots when told to stop.
        report.released = s.released.load(Ordering::SeqCst);
        for t in self.tasks.drain(..) {
            t.stop().await;
        }
        crate::worker_registry::leave(&s.queue, &s.waiter).await;
        Ok(report)
    }
}

/// Longest a graceful close waits, after the grace period, for interrupted handlers to stop
/// before it releases their jobs anyway.
pub const SHUTDOWN_STOP_WAIT: Duration = Duration::from_secs(2);

/// Waits until no handler runs and no completion is unrecorded, `until` passes, or the worker is
/// aborted.
async fn wait_idle(s: &Shared, until: Instant) {
    while (s.running.load(Ordering::SeqCst) > 0 || s.unrecorded.load(Ordering::SeqCst) > 0)
        && Instant::now() < until
        && !s.aborted.load(Ordering::SeqCst)
    {
        let left = until.saturating_duration_since(Instant::now());
        let _ = tokio::time::timeout(left.min(Duration::from_millis(50)), s.idle.notified()).await;
    }
}

/// Stops a worker at once, from anywhere (a second Ctrl-C): a close in progress stops waiting
/// and releases nothing, running handlers are dropped (cancelled in a binding), and the jobs come
/// back through their leases, as after a crash.
#[derive(Clone)]
pub struct WorkerAborter {
    shared: Arc<Shared>,
}

impl WorkerAborter {
    /// Aborts the worker (idempotent).
    pub fn abort(&self) {
        let s = &self.shared;
        s.aborted.store(true, Ordering::SeqCst);
        s.stopping.store(true, Ordering::SeqCst);
        s.wake.notify_waiters();
        s.stop.notify_waiters();
        s.idle.notify_waiters();
        for f in s.flights.lock().expect("flights").values_mut() {
            if let Some(a) = f.abort.take() {
                a.abort();
            }
        }
    }
}

fn claim_keys(inv: Invocation, q: &Queue) -> Invocation {
    let k = q.keys();
    inv.key(&k.wait)
        .key(&k.paused)
        .key(&k.delayed)
        .key(&k.prioritized)
        .key(&k.active)
        .key(&k.leases)
        .key(&k.meta)
        .key(&k.events)
        .key(&k.marker)
        .key(&k.limiter)
        .key(&k.groups)
        .key(&k.group_counts)
        .key(&k.group_windows)
        .key(&k.handoff)
        .key(&k.delayed_priority)
}

fn parse_err(e: impl std::fmt::Display) -> crate::Error {
    crate::Error::new(ErrorCode::Internal, format!("unexpected claim reply: {e}"))
}

/// Parses a claim reply: {next due in ms or -1, id, token, …}.
fn parse_claim(reply: Vec<redis::Value>) -> Result<(Option<u64>, Vec<Leased>)> {
    let mut it = reply.into_iter();
    let due: i64 = match it.next() {
        Some(v) => redis::from_redis_value(v).map_err(parse_err)?,
        None => -1,
    };
    let mut jobs = Vec::new();
    while let (Some(id), Some(token)) = (it.next(), it.next()) {
        let id: String = redis::from_redis_value(id).map_err(parse_err)?;
        let token: String = redis::from_redis_value(token).map_err(parse_err)?;
        jobs.push((JobId::parse(&id)?, token));
    }
    Ok(((due >= 0).then_some(due as u64), jobs))
}

const RECORD_FIELDS: [&str; 11] = [
    "name",
    "data",
    "opts",
    "atts",
    "attempts",
    "stalls",
    "created_ms",
    "priority",
    "progress",
    "dedup",
    "parent",
];

/// Reads the records of leased jobs in one pipelined round trip (HGETALL: a leased job's record holds
/// only what a run needs); None for a job removed meanwhile.
async fn read_records(q: &Queue, ids: &[JobId]) -> Result<Vec<Option<Job>>> {
    let mut pipe = redis::pipe();
    for id in ids {
        pipe.cmd("HGETALL")
            .arg(q.name().job_key(*id, JobPart::Record));
    }
    let rows: Vec<HashMap<String, String>> = pipe.query_async(&mut q.store().conn()).await?;
    Ok(ids
        .iter()
        .zip(rows)
        .map(|(id, map)| {
            map.contains_key("name")
                .then(|| Job::from_record(*id, Some(JobState::Active), map))
        })
        .collect())
}

async fn fetch_loop(s: Arc<Shared>) {
    let mut blocking: Option<Blocking> = None;
    let mut backoff = Duration::from_millis(100);
    // When the next delayed job is due, as the last claim said.
    let mut next_due: Option<Instant> = None;
    // After a marker-named claim there is nothing else to claim (`claim_id.lua` pushes a new
    // marker when wait still holds jobs), so the loop goes straight back to waiting.
    let mut just_named = false;
    while !s.stopping.load(Ordering::SeqCst) {
        let room = capacity(&s) > s.held.load(Ordering::SeqCst);
        if std::mem::take(&mut just_named) && room && next_due.map_or(true, |t| t > Instant::now())
        {
            let wait = next_due
                .map(|t| t.saturating_duration_since(Instant::now()))
                .unwrap_or(s.opts.block_timeout)
                .min(s.opts.block_timeout);
            just_named = block_for_marker(&s, &mut blocking, wait, backoff).await;
            continue;
        }
        // While completions are on their way, the completer refills: claiming here too would only
        // add round trips.
        let free = if s.unrecorded.load(Ordering::SeqCst) == 0 {
            reserve(&s, usize::MAX)
        } else {
            0
        };
        if free == 0 {
            s.wake.notified().await;
            continue;
        }
        let claimed = claim_keys(script::CLAIM.prepare(), &s.queue)
            .arg(free)
            .arg(s.opts.lease.as_millis() as u64)
            .arg(s.queue.max_events)
            .invoke::<Vec<redis::Value>>(s.queue.store())
            .await
            .and_then(parse_claim);
        let (due, jobs) = match claimed {
            Ok(c) => {
                backoff = Duration::from_millis(100);
                unreserve(&s, free - c.1.len());
                c
            }
            Err(e) => {
                unreserve(&s, free);
                tracing::warn!(error = %e, "claim failed; retrying");
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => {}
                    _ = s.wake.notified() => {}
                }
                backoff = (backoff * 2).min(Duration::from_secs(5));
                continue;
            }
        };
        next_due = due.map(|d| Instant::now() + Duration::from_millis(d.max(1)));
        if !jobs.is_empty() {
            start(&s, jobs).await;
            continue;
        }
        let wait = due
            .map(|d| Duration::from_millis(d.max(1)))
            .unwrap_or(s.opts.block_timeout)
            .min(s.opts.block_timeout);
        just_named = block_for_marker(&s, &mut blocking, wait, backoff).await;
    }
}

/// Waits up to `wait` on the dedicated connection for a job an add hands over (`handoff`) or the
/// queue's marker, registered in `waiters` meanwhile (one pipeline: `wait_register.lua`, BRPOP).
/// A handed job starts at once; a marker that names a job is claimed and read in one call.
/// Returns true when it started a job that way (the queue had nothing else ready).
async fn block_for_marker(
    s: &Arc<Shared>,
    blocking: &mut Option<Blocking>,
    wait: Duration,
    backoff: Duration,
) -> bool {
    let k = s.queue.keys();
    if blocking.is_none() {
        match connect_blocking(s).await {
            Ok(b) => *blocking = Some(b),
            Err(e) => {
                tracing::warn!(error = %e, "cannot open the blocking connection");
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => {}
                    _ = s.wake.notified() => {}
                }
                return false;
            }
        }
    }
    let b = blocking.as_mut().expect("connected");
    let client_id = b.client_id;
    let register = script::WAIT_REGISTER
        .prepare()
        .key(&k.waiters)
        .arg(&s.waiter)
        .arg(wait.as_millis().max(1) as u64);
    let register = match register.command(s.queue.store().guarded()) {
        Ok(cmd) => cmd,
        Err(e) => {
            // Only a mistake in this file can get here: the tests run every invocation.
            tracing::error!(error = %e, "emq: wait_register refused before sending");
            return false;
        }
    };
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    pipe.add_command(register);
    pipe.cmd("BRPOP")
        .arg(&k.handoff)
        .arg(&k.marker)
        .arg(wait.as_secs_f64().max(0.001));
    let reply = {
        let waiting = pipe.query_async::<Vec<redis::RedisResult<redis::Value>>>(&mut b.conn);
        tokio::pin!(waiting);
        tokio::select! {
            r = &mut waiting => Some(r),
            _ = s.stop.notified() => {
                // close was called: end the wait on the server, so an entry it popped is not lost
                // with the connection (it goes to the buffer, which close releases).
                if unblock(s, client_id).await {
                    tokio::time::timeout(Duration::from_secs(1), &mut waiting).await.ok()
                } else {
                    None
                }
            }
        }
    };
    let replies = match reply {
        Some(Ok(r)) => r,
        Some(Err(e)) => {
            tracing::debug!(error = %e, "blocking wait failed; reconnecting");
            *blocking = None;
            return false;
        }
        None => {
            *blocking = None;
            return false;
        }
    };
    let mut replies = replies.into_iter();
    if let Some(Err(e)) = replies.next() {
        // Not registered this time (NOSCRIPT after a flush, say): load it for the next wait.
        tracing::debug!(error = %e, "wait registration failed");
        let _ = s.queue.store().load_script(&script::WAIT_REGISTER).await;
    }
    let popped = match replies.next() {
        Some(Ok(v)) => redis::from_redis_value::<Option<(String, Vec<u8>)>>(v)
            .ok()
            .flatten(),
        Some(Err(e)) => {
            tracing::debug!(error = %e, "blocking wait failed; reconnecting");
            *blocking = None;
            return false;
        }
        None => None,
    };
    let Some((from, entry)) = popped else {
        return false;
    };
    if from == k.handoff.as_str() {
        match handoff::parse(&entry) {
            Ok(h) => {
                // Leased to this worker already: take it even at capacity (it waits in the buffer).
                if reserve(s, 1) == 0 {
                    s.held.fetch_add(1, Ordering::SeqCst);
                }
                dispatch(s, vec![(h.job, h.token)]);
                tokio::task::yield_now().await;
                return true;
            }
            Err(e) => {
                // Its lease expires and the sweep gives it back to wait.
                tracing::warn!(error = %e, "cannot read a handed-over job");
                return false;
            }
        }
    }
    // A marker that names a job: claim it and read it in one call. At capacity, the job stays
    // in wait for the next claim.
    let Some(id) = std::str::from_utf8(&entry)
        .ok()
        .and_then(|t| JobId::parse(t).ok())
    else {
        return false;
    };
    if reserve(s, 1) == 1 {
        match claim_named(s, id).await {
            Ok(Some(job)) => {
                dispatch(s, vec![job]);
                // Let the new slot start its handler before this loop sends anything more (its
                // next wait would otherwise go first).
                tokio::task::yield_now().await;
                return true;
            }
            Ok(None) => unreserve(s, 1),
            Err(e) => {
                unreserve(s, 1);
                tracing::debug!(error = %e, "claim of a named job failed");
            }
        }
    }
    false
}

/// Opens the dedicated blocking connection, learns its client id and loads the registration
/// script on its node.
async fn connect_blocking(s: &Arc<Shared>) -> Result<Blocking> {
    let store = s.queue.store();
    let mut conn = store.blocking_connection(&s.queue.keys().marker).await?;
    let client_id = redis::cmd("CLIENT")
        .arg("ID")
        .query_async::<i64>(&mut conn)
        .await
        .ok();
    // A failure here only means no registration (each wait then retries the load).
    let _: std::result::Result<String, _> = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(script::WAIT_REGISTER.source(store.guarded()))
        .query_async(&mut conn)
        .await;
    Ok(Blocking { conn, client_id })
}

/// Ends a worker's blocking wait from another connection to the same node; false when it could not.
async fn unblock(s: &Arc<Shared>, client_id: Option<i64>) -> bool {
    let Some(id) = client_id else {
        return false;
    };
    let Ok(mut conn) = s
        .queue
        .store()
        .blocking_connection(&s.queue.keys().marker)
        .await
    else {
        return false;
    };
    redis::cmd("CLIENT")
        .arg("UNBLOCK")
        .arg(id)
        .query_async::<i64>(&mut conn)
        .await
        .is_ok()
}

/// Leases the job a wake-up marker named and reads its record in the same call (`claim_id.lua`);
/// None when the general claim must decide (paused, limits, priorities, or already taken).
async fn claim_named(s: &Arc<Shared>, id: JobId) -> Result<Option<(Job, String)>> {
    let q = &s.queue;
    let reply: Vec<redis::Value> = script::CLAIM_ID
        .on(s.queue.name(), Some(id))?
        .arg(id)
        .arg(s.opts.lease.as_millis() as u64)
        .arg(q.max_events)
        .arg(&RECORD_FIELDS[..])
        .invoke(q.store())
        .await?;
    let mut it = reply.into_iter();
    let claimed: i64 = it
        .next()
        .map(redis::from_redis_value)
        .transpose()
        .map_err(parse_err)?
        .unwrap_or(0);
    if claimed != 1 {
        return Ok(None);
    }
    let token: String = it
        .next()
        .map(redis::from_redis_value)
        .transpose()
        .map_err(parse_err)?
        .unwrap_or_default();
    let values: Vec<Option<String>> = it
        .map(|v| redis::from_redis_value::<Option<String>>(v).map_err(parse_err))
        .collect::<Result<_>>()?;
    if values.first().map(Option::is_none).unwrap_or(true) {
        // Leased but its record is gone (removed meanwhile): the sweep will tidy the lease.
        return Ok(None);
    }
    let map: HashMap<String, String> = RECORD_FIELDS
        .iter()
        .zip(values)
        .filter_map(|(k, v)| Some((k.to_string(), v?)))
        .collect();
    Ok(Some((
        Job::from_record(id, Some(JobState::Active), map),
        token,
    )))
}

async fn start(s: &Arc<Shared>, leased: Vec<Leased>) {
    let ids: Vec<JobId> = leased.iter().map(|(id, _)| *id).collect();
    let records = match read_records(&s.queue, &ids).await {
        Ok(r) => r,
        Err(e) => {
            // The leases stand; if we cannot read the jobs they stall and are recovered.
            tracing::warn!(error = %e, "cannot read leased jobs; they will be recovered when their leases expire");
            unreserve(s, leased.len());
            return;
        }
    };
    let mut jobs = Vec::with_capacity(leased.len());
    for ((_, token), job) in leased.into_iter().zip(records) {
        match job {
            Some(job) => jobs.push((job, token)),
            None => unreserve(s, 1),
        }
    }
    dispatch(s, jobs);
}

/// Capacity: the jobs a worker may hold (running or buffered).
fn capacity(s: &Shared) -> usize {
    let c = s.opts.concurrency;
    let ahead = s.opts.prefetch.unwrap_or_else(|| (2 * c).clamp(16, 256));
    if s.job_us.load(Ordering::Relaxed) > PREFETCH_MAX_JOB.as_micros() as u64 {
        c
    } else {
        c + ahead
    }
}

/// Reserves room for up to `max` more leased jobs; returns how many (0 when full or stopping).
fn reserve(s: &Shared, max: usize) -> usize {
    if s.stopping.load(Ordering::SeqCst) {
        return 0;
    }
    let cap = capacity(s);
    let mut held = s.held.load(Ordering::SeqCst);
    loop {
        let n = max.min(cap.saturating_sub(held));
        if n == 0 {
            return 0;
        }
        match s
            .held
            .compare_exchange(held, held + n, Ordering::SeqCst, Ordering::SeqCst)
        {
            Ok(_) => return n,
            Err(now) => held = now,
        }
    }
}

/// Gives back room: a reservation that leased nothing, or a job that finished.
fn unreserve(s: &Shared, n: usize) {
    if n > 0 {
        s.held.fetch_sub(n, Ordering::SeqCst);
        s.wake.notify_one();
    }
}

/// Takes leased, read jobs: registers their leases (renewed from now on, released by `close`) and
/// starts slots for them while fewer than `concurrency` run; the rest wait in the buffer.
fn dispatch(s: &Arc<Shared>, jobs: Vec<(Job, String)>) {
    if jobs.is_empty() {
        return;
    }
    {
        let mut flights = s.flights.lock().expect("flights");
        let mut early = s.early_cancels.lock().expect("early cancels");
        for (job, token) in &jobs {
            flights.insert(
                job.id,
                Flight {
                    token: token.clone(),
                    lease_ms: job_lease_ms(s, job),
                    lost: Arc::new(AtomicBool::new(false)),
                    abort: None,
                    interrupt: None,
                    cancel: early.remove(&job.id).map(|(reason, _)| reason),
                },
            );
        }
    }
    let mut ready = s.ready.lock().expect("ready");
    ready.jobs.extend(jobs);
    // Once stopping, they wait here for `close` to release them.
    while ready.slots < s.opts.concurrency && !s.stopping.load(Ordering::SeqCst) {
        let Some((job, token)) = ready.jobs.pop_front() else {
            break;
        };
        ready.slots += 1;
        s.running.store(ready.slots, Ordering::SeqCst);
        tokio::spawn(run_slot(s.clone(), job, token));
    }
}

/// The slot's next job from the buffer, or None (the slot then ends).
fn next_or_end(s: &Shared) -> Option<(Job, String)> {
    let mut ready = s.ready.lock().expect("ready");
    if !s.stopping.load(Ordering::SeqCst) {
        if let Some(next) = ready.jobs.pop_front() {
            return Some(next);
        }
    }
    ready.slots -= 1;
    s.running.store(ready.slots, Ordering::SeqCst);
    None
}

fn job_lease_ms(s: &Shared, job: &Job) -> u64 {
    let own = job
        .options
        .get("lease_ms")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    if own > 0 {
        own
    } else {
        s.opts.lease.as_millis() as u64
    }
}

async fn run_slot(s: Arc<Shared>, first: Job, first_token: String) {
    let mut next = Some((first, first_token));
    while let Some((job, token)) = next.take() {
        let id = job.id;
        let job = Arc::new(job);
        let began = Instant::now();
        let (itx, irx) = interrupt_channel();
        let mut run = {
            let mut flights = s.flights.lock().expect("flights");
            // Gone: close released it while it waited in the buffer.
            let Some(flight) = flights.get_mut(&id) else {
                drop(flights);
                unreserve(&s, 1);
                next = next_or_end(&s);
                continue;
            };
            // Cancelled while it waited in the buffer: it does not run.
            if let Some(reason) = flight.cancel.take() {
                flights.remove(&id);
                drop(flights);
                let e = HandlerError::unrecoverable(Interrupt::Cancelled(reason).message())
                    .with_code(CANCELLED);
                let s2 = s.clone();
                let job2 = job.clone();
                // Recorded off the slot's path; the slot goes on with its next job.
                s.unrecorded.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    finish(&s2, &job2, &token, Err(e)).await;
                    recorded(&s2, 1);
                });
                unreserve(&s, 1);
                next = next_or_end(&s);
                continue;
            }
            flight.interrupt = Some(itx.clone());
            let ctx = JobContext {
                job: job.clone(),
                queue: s.queue.clone(),
                lost: flight.lost.clone(),
                interrupt: irx,
            };
            use tracing::Instrument;
            let span = tracing::info_span!("emq.job", queue = %s.queue.name(), job = %id);
            let work = match job.unreadable() {
                // A stored field no reader can parse fails the job with its code; the handler
                // never sees it as null.
                Some(e) => Box::pin(std::future::ready(Err(HandlerError::unrecoverable(
                    e.message(),
                )
                .with_code(e.code().as_str()))))
                    as futures::future::BoxFuture<'static, HandlerResult>,
                None => s.handler.handle(ctx),
            };
            let run = tokio::spawn(work.instrument(span));
            flight.abort = Some(run.abort_handle());
            run
        };
        let lease_ms = job_lease_ms(&s, &job);
        if lease_ms != s.opts.lease.as_millis() as u64 {
            let _ = renew(&s, lease_ms, &[(id, token.clone())]).await;
        }
        let timeout_ms = job
            .options
            .get("timeout_ms")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        // Runs until the handler ends, or until it is interrupted (its timeout, a cancel, the end
        // of the shutdown grace): then the handler is told, and stopped — dropped, or for a
        // cooperative (binding) handler awaited until it has stopped — before anything is
        // recorded, so no retry of this job can overlap this run.
        let (joined, why) = {
            let mut watch = itx.subscribe();
            let timed = async {
                if timeout_ms > 0 {
                    tokio::time::sleep(Duration::from_millis(timeout_ms)).await
                } else {
                    std::future::pending().await
                }
            };
            tokio::select! {
                biased;
                _ = async { let _ = watch.wait_for(Option::is_some).await; } => {
                    (stop_run(&s, &mut run).await, itx.borrow().clone())
                }
                // It ended: its outcome stands, unless it was told to stop meanwhile (a handler
                // that returns when told lands here too).
                j = &mut run => (j, itx.borrow().clone()),
                _ = timed => {
                    interrupt(&itx, Interrupt::TimedOut);
                    (stop_run(&s, &mut run).await, itx.borrow().clone())
                }
            }
        };
        let took = began.elapsed().as_micros() as u64;
        let avg = match s.job_us.load(Ordering::Relaxed) {
            u64::MAX => took,
            avg => avg - avg / 4 + took / 4,
        };
        s.job_us.store(avg, Ordering::Relaxed);
        let outcome = match joined_outcome(joined) {
            Ok(o) => o,
            // Aborted by close (the second, immediate stop): nothing is recorded; close releases
            // the job or its lease expires.
            Err(_cancelled) => break,
        };
        let still_ours = s.flights.lock().expect("flights").remove(&id).is_some();
        if still_ours {
            match (why, outcome) {
                // Once a run is told to stop, the reason decides, whatever the handler returned.
                (Some(Interrupt::Shutdown), _) => {
                    release_jobs(&s, &[(id, token.clone())]).await;
                }
                (None, Err(e)) if e.code == HandlerError::INTERRUPTED => {
                    // The handler's host is going down: give the job back and take no more.
                    tracing::info!(job = %id, "the handler was interrupted by its host; the job goes back to waiting and the worker stops fetching");
                    begin_stop(&s);
                    release_jobs(&s, &[(id, token.clone())]).await;
                }
                (Some(Interrupt::TimedOut), _) => {
                    let e =
                        HandlerError::new(format!("the handler ran longer than {timeout_ms} ms"))
                            .with_code("timeout");
                    finish(&s, &job, &token, Err(e)).await;
                }
                (Some(Interrupt::Cancelled(reason)), _) => {
                    let e = HandlerError::unrecoverable(Interrupt::Cancelled(reason).message())
                        .with_code(CANCELLED);
                    finish(&s, &job, &token, Err(e)).await;
                }
                (None, outcome) => finish(&s, &job, &token, outcome).await,
            }
        }
        unreserve(&s, 1);
        next = next_or_end(&s);
        if next.is_none() {
            s.idle.notify_waiters();
            return;
        }
    }
    // Aborted by close.
    let mut ready = s.ready.lock().expect("ready");
    ready.slots -= 1;
    s.running.store(ready.slots, Ordering::SeqCst);
    drop(ready);
    s.idle.notify_waiters();
}

/// The failure code of a cancelled job (`Queue::cancel`).
pub const CANCELLED: &str = "cancelled";

/// How long a non-cooperative handler (a Rust closure) may go on after it was told to stop
/// ([`JobContext::cancelled`] resolved) before the worker drops its future.
pub const INTERRUPT_DROP_AFTER: Duration = Duration::from_millis(100);

/// Stops an interrupted run: a cooperative handler is awaited (it stops once told), any other is
/// aborted at once.
async fn stop_run(
    s: &Shared,
    run: &mut tokio::task::JoinHandle<HandlerResult>,
) -> std::result::Result<HandlerResult, tokio::task::JoinError> {
    if !s.handler.cooperative_cancel() {
        // A moment to react to `JobContext::cancelled` (clean up, return), then dropped.
        if let Ok(j) = tokio::time::timeout(INTERRUPT_DROP_AFTER, &mut *run).await {
            return j;
        }
        run.abort();
        return match run.await {
            // Aborted as asked: the interrupt decides the outcome.
            Err(e) if e.is_cancelled() => Ok(Err(HandlerError::new("stopped"))),
            other => other,
        };
    }
    run.await
}

/// Stops taking jobs (the start of a close, without waiting for anything).
fn begin_stop(s: &Arc<Shared>) {
    if !s.stopping.swap(true, Ordering::SeqCst) {
        s.wake.notify_waiters();
        s.wake.notify_one();
        s.stop.notify_waiters();
        let s2 = s.clone();
        tokio::spawn(async move { withdraw(&s2).await });
    }
}

/// Gives leased jobs back to the front of wait (or their priority), uncounted (`release.lua`);
/// returns how many were still this worker's.
async fn release_jobs(s: &Shared, held: &[(JobId, String)]) -> u64 {
    if held.is_empty() {
        return 0;
    }
    let k = s.queue.keys();
    let mut inv = script::RELEASE
        .prepare()
        .key(&k.active)
        .key(&k.leases)
        .key(&k.wait)
        .key(&k.paused)
        .key(&k.meta)
        .key(&k.events)
        .key(&k.marker)
        .key(&k.groups)
        .key(&k.prioritized);
    for (id, _) in held {
        inv = inv.key(&s.queue.name().job_key(*id, JobPart::Record));
    }
    inv = inv.arg(s.queue.max_events);
    for (id, token) in held {
        inv = inv.arg(*id).arg(token);
    }
    match inv.invoke::<u64>(s.queue.store()).await {
        Ok(n) => {
            s.released.fetch_add(n, Ordering::SeqCst);
            n
        }
        Err(e) => {
            tracing::warn!(error = %e, "could not release jobs; they come back when their leases expire");
            0
        }
    }
}

fn joined_outcome(
    joined: std::result::Result<HandlerResult, tokio::task::JoinError>,
) -> std::result::Result<HandlerResult, &'static str> {
    match joined {
        Ok(r) => Ok(r),
        Err(e) if e.is_panic() => {
            let payload = e.into_panic();
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "the handler panicked".into());
            Ok(Err(HandlerError::new(msg).with_code("panic")))
        }
        Err(_) => Err("cancelled"),
    }
}

/// Completes a job (handing it to the completer, which records it in a batch) or fails it.
async fn finish(s: &Arc<Shared>, job: &Job, token: &str, outcome: HandlerResult) {
    let q = &s.queue;
    let k = q.keys();
    let opt = |name: &str| {
        job.options
            .get(name)
            .and_then(Value::as_bool)
            .unwrap_or(false)
    };
    match outcome {
        Ok(result) => {
            if let Some(parent) = &job.parent {
                // The second step of a flow child's completion goes first: it is idempotent, so a
                // crash before the child's own completion only re-runs the child.
                if let Err(e) =
                    crate::flow::notify_parent(q, parent, job.id, Ok(&result), job).await
                {
                    tracing::warn!(job = %job.id, error = %e, "cannot reach the parent; the child will be retried when its lease expires");
                    return;
                }
                if std::env::var_os("EMQ_FAULT_AFTER_PARENT_STEP").is_some() {
                    // Chaos hook for tests: die between a child's two completion steps.
                    std::process::abort();
                }
            }
            let c = Completion {
                id: job.id,
                token: token.to_string(),
                result: serde_json::to_string(&result).unwrap_or_else(|_| "null".into()),
                keep: !opt("remove_on_complete"),
                dedup: job.dedup.clone().unwrap_or_default(),
            };
            s.unrecorded.fetch_add(1, Ordering::SeqCst);
            if s.completions.send(c).is_err() {
                s.unrecorded.fetch_sub(1, Ordering::SeqCst);
            }
        }
        Err(err) => {
            s.failed.fetch_add(1, Ordering::Relaxed);
            let backoff: Backoff = job
                .options
                .get("backoff")
                .and_then(|b| serde_json::from_value(b.clone()).ok())
                .unwrap_or(Backoff::None);
            let jitter = job
                .options
                .get("jitter")
                .and_then(Value::as_f64)
                .unwrap_or(0.0);
            let delay = backoff.delay(job.attempts_made + 1, jitter);
            let failure = serde_json::json!({
                "code": err.code, "message": err.message, "stack": err.stack,
            });
            let last = err.unrecoverable || job.attempts_made + 1 >= job.attempts;
            if let (true, Some(parent)) = (last, &job.parent) {
                if let Err(e) =
                    crate::flow::notify_parent(q, parent, job.id, Err(&failure), job).await
                {
                    tracing::warn!(job = %job.id, error = %e, "cannot reach the parent; the child will be retried when its lease expires");
                    return;
                }
            }
            let r = script::FAIL
                .prepare()
                .key(&q.name().job_key(job.id, JobPart::Record))
                .key(&q.name().job_key(job.id, JobPart::Logs))
                .key(&k.active)
                .key(&k.leases)
                .key(&k.wait)
                .key(&k.paused)
                .key(&k.delayed)
                .key(&k.failed)
                .key(&k.dedup)
                .key(&k.meta)
                .key(&k.events)
                .key(&k.marker)
                .key(&k.metrics)
                .key(&k.groups)
                .key(&k.prioritized)
                .key(&k.delayed_priority)
                .arg(job.id)
                .arg(token)
                .arg(failure.to_string())
                .arg(delay.as_millis() as u64)
                .arg(if err.unrecoverable { "0" } else { "1" })
                .arg(if opt("remove_on_fail") { "0" } else { "1" })
                .arg(q.max_events)
                .invoke::<String>(q.store())
                .await;
            if let Err(e) = r {
                note_finish_error(s, job.id, e);
            }
        }
    }
}

/// Records successful runs in batches: one call of `complete.lua` completes every run that finished
/// since the last call and leases as many next jobs as the worker has room for.
async fn complete_loop(s: Arc<Shared>, mut rx: tokio::sync::mpsc::UnboundedReceiver<Completion>) {
    while let Some(first) = rx.recv().await {
        let mut batch = vec![first];
        while batch.len() < COMPLETE_BATCH {
            match rx.try_recv() {
                Ok(c) => batch.push(c),
                Err(_) => break,
            }
        }
        // While every slot has a buffered job to go on with, nobody waits for this call's refill:
        // let a few more completions join it (at most COMPLETE_LINGER), so slow handlers (a
        // foreign language's hop per job) still share one call among several jobs.
        let linger_until = tokio::time::Instant::now() + COMPLETE_LINGER;
        while batch.len() < COMPLETE_BATCH
            && !s.stopping.load(Ordering::SeqCst)
            && s.ready.lock().expect("ready").jobs.len() >= s.opts.concurrency
        {
            match tokio::time::timeout_at(linger_until, rx.recv()).await {
                Ok(Some(c)) => batch.push(c),
                _ => break,
            }
        }
        let want = reserve(&s, usize::MAX);
        let q = &s.queue;
        let k = q.keys();
        let mut inv = script::COMPLETE
            .prepare()
            .key(&k.active)
            .key(&k.leases)
            .key(&k.completed)
            .key(&k.dedup)
            .key(&k.wait)
            .key(&k.paused)
            .key(&k.delayed)
            .key(&k.prioritized)
            .key(&k.meta)
            .key(&k.events)
            .key(&k.marker)
            .key(&k.limiter)
            .key(&k.metrics)
            .key(&k.groups)
            .key(&k.group_counts)
            .key(&k.group_windows)
            .key(&k.handoff)
            .key(&k.delayed_priority);
        for c in &batch {
            inv = inv
                .key(&q.name().job_key(c.id, JobPart::Record))
                .key(&q.name().job_key(c.id, JobPart::Logs));
        }
        inv = inv
            .arg(want)
            .arg(s.opts.lease.as_millis() as u64)
            .arg(q.max_events);
        for c in &batch {
            inv = inv
                .arg(c.id)
                .arg(c.token.as_str())
                .arg(c.result.as_str())
                .arg(if c.keep { "1" } else { "0" })
                .arg(c.dedup.as_str());
        }
        let reply = inv
            .invoke::<(Vec<i64>, Vec<redis::Value>)>(q.store())
            .await
            .and_then(|(status, claim)| Ok((status, parse_claim(claim)?.1)));
        match reply {
            Err(e) => {
                unreserve(&s, want);
                for c in &batch {
                    note_finish_error(&s, c.id, e.clone());
                }
            }
            Ok((status, next)) => {
                for (c, st) in batch.iter().zip(&status) {
                    if *st == 1 {
                        s.completed.fetch_add(1, Ordering::Relaxed);
                    } else {
                        note_finish_error(
                            &s,
                            c.id,
                            crate::Error::new(ErrorCode::LeaseLost, "lease lost"),
                        );
                    }
                }
                unreserve(&s, want - next.len());
                if !next.is_empty() {
                    // Reading the next jobs' records is one more round trip: do it off this loop
                    // so the next batch of completions can go out meanwhile. The batch counts as
                    // unrecorded until its next jobs are registered, so `close` waits for them.
                    let s2 = s.clone();
                    let n = batch.len();
                    tokio::spawn(async move {
                        start(&s2, next).await;
                        recorded(&s2, n);
                    });
                    continue;
                }
            }
        }
        recorded(&s, batch.len());
    }
}

/// `n` completions are recorded (and their next jobs registered).
fn recorded(s: &Shared, n: usize) {
    if s.unrecorded.fetch_sub(n, Ordering::SeqCst) == n {
        // Nothing more on its way: the fetch loop claims (or waits) from here.
        s.wake.notify_one();
        s.idle.notify_waiters();
    }
}

fn note_finish_error(s: &Shared, id: JobId, e: crate::Error) {
    if e.code() == ErrorCode::LeaseLost {
        s.lease_lost.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(job = %id, "lease lost before the job finished; its result was not recorded");
    } else {
        tracing::warn!(job = %id, error = %e, "could not record the job's outcome; it will be recovered when its lease expires");
    }
}

async fn renew(s: &Shared, lease_ms: u64, pairs: &[(JobId, String)]) -> Result<Vec<String>> {
    let mut lost = Vec::new();
    for chunk in pairs.chunks(500) {
        let mut inv = script::RENEW.on(s.queue.name(), None)?.arg(lease_ms);
        for (id, token) in chunk {
            inv = inv.arg(*id).arg(token);
        }
        let l: Vec<String> = inv.invoke(s.queue.store()).await?;
        lost.extend(l);
    }
    Ok(lost)
}

async fn renew_loop(s: Arc<Shared>) {
    loop {
        let (groups, shortest) = {
            let flights = s.flights.lock().expect("flights");
            let mut groups: HashMap<u64, Vec<(JobId, String)>> = HashMap::new();
            let mut shortest = s.opts.lease.as_millis() as u64;
            for (id, f) in flights.iter() {
                groups
                    .entry(f.lease_ms)
                    .or_default()
                    .push((*id, f.token.clone()));
                shortest = shortest.min(f.lease_ms);
            }
            (groups, shortest)
        };
        for (lease_ms, pairs) in groups {
            match renew(&s, lease_ms, &pairs).await {
                Ok(lost) => {
                    let flights = s.flights.lock().expect("flights");
                    for id in lost.iter().filter_map(|t| JobId::parse(t).ok()) {
                        if let Some(f) = flights.get(&id) {
                            f.lost.store(true, Ordering::Relaxed);
                        }
                    }
                }
                Err(e) => tracing::warn!(error = %e, "lease renewal failed; will retry"),
            }
        }
        tokio::time::sleep(Duration::from_millis((shortest / 3).max(50))).await;
    }
}

async fn sweep_loop(s: Arc<Shared>) {
    loop {
        if let Err(e) = sweep_once(&s).await {
            tracing::warn!(error = %e, "stalled sweep failed; will retry");
        }
        tokio::time::sleep(s.opts.stalled_interval).await;
    }
}

async fn sweep_once(s: &Shared) -> Result<()> {
    let q = &s.queue;
    let ids: Vec<String> = script::SWEEP
        .on(s.queue.name(), None)?
        .arg(s.opts.stalled_interval.as_millis() as u64)
        .arg(1_000)
        .arg(q.max_events)
        .invoke(q.store())
        .await?;
    for id in ids.iter().filter_map(|t| JobId::parse(t).ok()) {
        let r: String = script::RECOVER
            .on(s.queue.name(), Some(id))?
            .arg(id)
            .arg(s.opts.max_stalls)
            .arg(
                if s.opts.failed == Retention::KEEP_ALL || s.opts.failed.count != Some(0) {
                    "1"
                } else {
                    "0"
                },
            )
            .arg(q.max_events)
            .invoke(q.store())
            .await?;
        if !r.is_empty() {
            s.recovered.fetch_add(1, Ordering::Relaxed);
        }
    }
    Ok(())
}

/// Follows the queue's `cancels` stream (a blocking XREAD on a dedicated connection, so a
/// request reaches the worker within one round trip) and tells the handler of each cancelled job
/// this worker holds; a request for a job not registered yet is kept for a while, for a claim on
/// its way.
async fn cancel_loop(s: Arc<Shared>) {
    let k = s.queue.keys();
    let mut backoff = Duration::from_millis(100);
    let mut stream = loop {
        match crate::events::EventStream::new(s.queue.store().clone(), k.cancels.clone(), None)
            .await
        {
            Ok(st) => break st,
            Err(e) => {
                tracing::warn!(error = %e, "cannot follow the cancels stream; will retry");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    };
    loop {
        match stream.next_batch(s.opts.block_timeout, 100).await {
            Ok(events) => {
                backoff = Duration::from_millis(100);
                for ev in events {
                    let Some(id) = ev.job_id else { continue };
                    let reason = ev.fields.get("reason").cloned().unwrap_or_default();
                    cancel_held(&s, id, reason);
                }
            }
            Err(e) => {
                tracing::debug!(error = %e, "reading the cancels stream failed; will retry");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    }
}

/// How long a cancel request for a job this worker does not hold (yet) is kept.
const EARLY_CANCEL_TTL: Duration = Duration::from_secs(5);

/// Tells the handler of a held job that it is cancelled (or marks a buffered one), or keeps the
/// request for a job not registered yet.
fn cancel_held(s: &Shared, id: JobId, reason: String) {
    let mut flights = s.flights.lock().expect("flights");
    if let Some(f) = flights.get_mut(&id) {
        match &f.interrupt {
            Some(tx) => {
                interrupt(tx, Interrupt::Cancelled(reason));
            }
            None => f.cancel = Some(reason),
        }
        return;
    }
    let mut early = s.early_cancels.lock().expect("early cancels");
    let now = Instant::now();
    early.retain(|_, (_, at)| now.duration_since(*at) < EARLY_CANCEL_TTL);
    if early.len() < 10_000 {
        early.insert(id, (reason, now));
    }
}

/// Fires due job schedulers (exactly once across workers: the fire script re-checks due-ness).
async fn scheduler_loop(s: Arc<Shared>) {
    loop {
        let wait = match s.queue.fire_due_schedulers().await {
            Ok((_, Some(next_ms))) => Duration::from_millis(next_ms.clamp(20, 1_000)),
            Ok((_, None)) => Duration::from_secs(1),
            Err(e) => {
                tracing::warn!(error = %e, "firing schedulers failed; will retry");
                Duration::from_secs(1)
            }
        };
        tokio::time::sleep(wait).await;
    }
}

async fn trim_loop(s: Arc<Shared>) {
    loop {
        tokio::time::sleep(s.opts.trim_interval).await;
        if let Err(e) = s.queue.trim_metrics().await {
            tracing::warn!(error = %e, "metrics trim failed; will retry");
        }
        if let Err(e) = s.queue.expire_dedup().await {
            tracing::warn!(error = %e, "dedup expiry failed; will retry");
        }
        for (state, keep) in [
            (JobState::Completed, s.opts.completed),
            (JobState::Failed, s.opts.failed),
        ] {
            if let Err(e) = s.queue.trim(state, keep).await {
                tracing::warn!(error = %e, "retention trim failed; will retry");
            }
        }
    }
}
