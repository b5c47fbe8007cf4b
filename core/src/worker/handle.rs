//! [`WorkerHandle`]: stats, graceful close (grace period, then interrupt and release), abort on
//! drop; [`WorkerAborter`]. A handle holds the worker as started ([`Running`]), which a worker on
//! a partitioned queue that grows replaces by one started over the grown queue (`regrow.rs`).

use super::*;

/// A running worker. Dropping it aborts the worker at once (leases then expire and the jobs are
/// recovered by a sweep); [`WorkerHandle::close`] shuts it down gracefully.
pub struct WorkerHandle {
    pub(super) live: Arc<Live>,
    /// A worker on a partitioned queue: the task that restarts it over the queue once it grows.
    pub(super) regrow: Option<TaskHandle>,
}

/// What a handle and its aborters share: the worker as started now, and what the ones before it
/// (a grown partitioned queue's restarts) did.
pub(super) struct Live {
    pub(super) state: Mutex<LiveState>,
    /// Held by a restart from closing the worker to starting it again; a close waits for it.
    pub(super) swap: tokio::sync::Mutex<()>,
    /// A close, an abort or the drop began: no restart from now on.
    pub(super) ended: AtomicBool,
}

pub(super) struct LiveState {
    /// The worker as started now (None while a restart closes it, and once closed).
    pub(super) now: Option<Running>,
    /// The one being closed (by a restart or a close), or closed last: its counters and abort.
    pub(super) closing: Option<RunningAborter>,
    /// The counters of the ones closed by restarts.
    pub(super) before: WorkerStats,
}

impl Live {
    pub(super) fn new(now: Running) -> Arc<Live> {
        Arc::new(Live {
            state: Mutex::new(LiveState {
                now: Some(now),
                closing: None,
                before: WorkerStats::default(),
            }),
            swap: tokio::sync::Mutex::new(()),
            ended: AtomicBool::new(false),
        })
    }

    fn stats(&self) -> WorkerStats {
        let st = self.state.lock().expect("worker state");
        let now = match (&st.now, &st.closing) {
            (Some(r), _) => r.stats(),
            (None, Some(c)) => c.stats(),
            (None, None) => WorkerStats::default(),
        };
        st.before.plus(now)
    }

    fn with_now<T>(&self, f: impl FnOnce(&RunningAborter) -> T) -> Option<T> {
        let st = self.state.lock().expect("worker state");
        match (&st.now, &st.closing) {
            (Some(r), _) => Some(f(&r.aborter())),
            (None, Some(c)) => Some(f(c)),
            (None, None) => None,
        }
    }
}

impl Drop for WorkerHandle {
    /// Aborts the worker (see [`Running`]'s drop); a restart under way stops with it.
    fn drop(&mut self) {
        self.live.ended.store(true, Ordering::SeqCst);
        drop(self.regrow.take());
        let now = self.live.state.lock().expect("worker state").now.take();
        drop(now);
    }
}

impl WorkerHandle {
    pub(super) fn new(now: Running, regrow: Option<Arc<super::regrow::Restart>>) -> WorkerHandle {
        let live = Live::new(now);
        let regrow = regrow.map(|r| TaskHandle::spawn(super::regrow::regrow_loop(live.clone(), r)));
        WorkerHandle { live, regrow }
    }

    /// Its counters (over all its queues, and over its restarts).
    pub fn stats(&self) -> WorkerStats {
        self.live.stats()
    }

    /// The counters of each of its queues (each partition of a partitioned one), in the order the
    /// worker was given them, since it last started (a grown queue restarts it).
    pub fn stats_by_queue(&self) -> Vec<(String, WorkerStats)> {
        self.live.with_now(|a| a.by_queue()).unwrap_or_default()
    }

    /// The names of the queues it serves, in order.
    pub fn queues(&self) -> Vec<String> {
        self.stats_by_queue().into_iter().map(|(q, _)| q).collect()
    }

    /// Jobs running now.
    pub fn running(&self) -> usize {
        self.live
            .with_now(|a| a.shared.pool.running.load(Ordering::Relaxed))
            .unwrap_or(0)
    }

    /// A switch that makes a close in progress (or the next one) stop at once: see
    /// [`WorkerAborter`]. Take it before calling `close`, which consumes the handle.
    pub fn aborter(&self) -> WorkerAborter {
        WorkerAborter {
            live: self.live.clone(),
        }
    }

    /// Graceful shutdown with the worker's `shutdown_deadline` as the grace period; see
    /// [`WorkerHandle::close_within`].
    pub async fn close(self) -> Result<CloseReport> {
        let deadline = self
            .live
            .with_now(|a| a.shared.opts.shutdown_deadline)
            .unwrap_or_default();
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
    /// A restart under way (a grown partitioned queue) is let finish its close first; no new one
    /// starts. [`WorkerAborter::abort`] cuts this short at any point: nothing more is waited for or
    /// released (the leases expire and the sweep recovers the jobs, as after a crash).
    pub async fn close_within(mut self, grace: Duration) -> Result<CloseReport> {
        self.live.ended.store(true, Ordering::SeqCst);
        let _swap = self.live.swap.lock().await;
        drop(self.regrow.take());
        let now = {
            let mut st = self.live.state.lock().expect("worker state");
            let now = st.now.take();
            if let Some(r) = &now {
                st.closing = Some(r.aborter());
            }
            now
        };
        match now {
            Some(r) => r.close_within(grace).await,
            None => Ok(CloseReport::default()),
        }
    }
}

/// A worker as started once, on its queues as they were then: the part of each queue (its
/// tasks), closed, aborted and dropped together.
pub(super) struct Running {
    pub(super) shared: Arc<Shared>,
    pub(super) tasks: Vec<TaskHandle>,
    /// A worker on several queues: the parts of its other queues (closed, aborted and dropped
    /// with this one).
    pub(super) siblings: Vec<Running>,
    /// The runtime the worker runs on, to withdraw its registration when dropped.
    pub(super) runtime: tokio::runtime::Handle,
    /// The process that started it.
    pub(super) pid: u32,
}

/// Removes a worker's entry from the queue's `waiters` set, so no add hands it a job any more.
pub(super) async fn withdraw(s: &Shared) {
    let _: std::result::Result<i64, _> = redis::cmd("ZREM")
        .arg(&s.queue.keys().waiters)
        .arg(&s.waiter)
        .query_async(&mut s.queue.store().conn())
        .await;
}

impl Drop for Running {
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
        // Abort the tasks first: a fetch loop still running could register in `waiters` again
        // after the withdrawal below (its handle would only drop after this body), and an add
        // would then hand a job to the gone worker (Kotlin's QueueTest saw it ACTIVE now and then).
        drop(std::mem::take(&mut self.tasks));
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

impl Running {
    /// Its counters (over all its queues).
    pub(super) fn stats(&self) -> WorkerStats {
        self.siblings
            .iter()
            .fold(stats_of(&self.shared), |a, w| a.plus(w.stats()))
    }

    pub(super) fn aborter(&self) -> RunningAborter {
        RunningAborter {
            shared: self.shared.clone(),
            siblings: self.siblings.iter().map(|w| w.aborter()).collect(),
        }
    }

    pub(super) async fn close(self) -> Result<CloseReport> {
        let deadline = self.shared.opts.shutdown_deadline;
        self.close_within(deadline).await
    }

    /// [`Running::close_within`] of every queue's part at once (they share slots).
    async fn close_all(mut self, grace: Duration) -> Result<CloseReport> {
        let siblings = std::mem::take(&mut self.siblings);
        let all = std::iter::once(self)
            .chain(siblings)
            .map(|w| w.close_one(grace));
        let mut report = CloseReport::default();
        for r in futures::future::join_all(all).await {
            report.released += r?.released;
        }
        Ok(report)
    }

    /// [`WorkerHandle::close_within`] of this worker as started.
    pub(super) async fn close_within(self, grace: Duration) -> Result<CloseReport> {
        if !self.siblings.is_empty() {
            return self.close_all(grace).await;
        }
        self.close_one(grace).await
    }

    async fn close_one(mut self, grace: Duration) -> Result<CloseReport> {
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
        // Once more now that the fetch loop has ended: a registration it sent while the first
        // withdrawal ran lands after it, and an add would hand a job to this closed worker (the
        // job then waits in active for its lease to expire; CI saw a replayed job there).
        withdraw(&s).await;
        wait_idle(&s, until).await;
        if !s.aborted.load(Ordering::SeqCst) && s.pool.running.load(Ordering::SeqCst) > 0 {
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
pub(super) async fn wait_idle(s: &Shared, until: Instant) {
    while (s.pool.running.load(Ordering::SeqCst) > 0 || s.unrecorded.load(Ordering::SeqCst) > 0)
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
    live: Arc<Live>,
}

impl WorkerAborter {
    /// The worker's counters, also after its handle was closed (its final figures): for a host
    /// that hands the handle to `close` and still reports them.
    pub fn stats(&self) -> WorkerStats {
        self.live.stats()
    }

    /// Aborts the worker (idempotent), and any restart of it.
    pub fn abort(&self) {
        self.live.ended.store(true, Ordering::SeqCst);
        self.live.with_now(|a| a.abort());
    }
}

/// [`WorkerAborter`] of a worker as started once ([`Running`]).
#[derive(Clone)]
pub(super) struct RunningAborter {
    pub(super) shared: Arc<Shared>,
    pub(super) siblings: Vec<RunningAborter>,
}

fn stats_of(s: &Shared) -> WorkerStats {
    WorkerStats {
        completed: s.completed.load(Ordering::Relaxed),
        failed: s.failed.load(Ordering::Relaxed),
        retried: s.retried.load(Ordering::Relaxed),
        lease_lost: s.lease_lost.load(Ordering::Relaxed),
        recovered: s.recovered.load(Ordering::Relaxed),
    }
}

impl RunningAborter {
    pub(super) fn stats(&self) -> WorkerStats {
        self.siblings
            .iter()
            .fold(stats_of(&self.shared), |a, w| a.plus(w.stats()))
    }

    /// The counters of each of its queues' parts, in order.
    pub(super) fn by_queue(&self) -> Vec<(String, WorkerStats)> {
        std::iter::once(self)
            .chain(self.siblings.iter())
            .map(|w| {
                (
                    w.shared.queue.name().as_str().to_string(),
                    stats_of(&w.shared),
                )
            })
            .collect()
    }

    pub(super) fn abort(&self) {
        for w in &self.siblings {
            w.abort();
        }
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
