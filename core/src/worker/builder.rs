//! [`Worker::builder`] and [`WorkerBuilder`]: configures a worker, validates its options and starts its tasks.

use super::*;

/// Builds and starts workers.
pub struct Worker;

impl Worker {
    /// A builder for a worker on `queue`.
    pub fn builder(queue: Queue) -> WorkerBuilder {
        WorkerBuilder {
            queue,
            opts: WorkerOptions::default(),
            handler: None,
            events: None,
        }
    }
}

/// Configures a worker.
pub struct WorkerBuilder {
    pub(super) queue: Queue,
    pub(super) opts: WorkerOptions,
    pub(super) handler: Option<Arc<dyn Handler>>,
    pub(super) events: Option<WorkerEventHook>,
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

    /// Calls `hook` with each of the worker's events ([`WorkerEvent`]): recorded outcomes,
    /// progress, stalled jobs its sweep recovered, its own errors. The hook runs on the worker's
    /// tasks: it must return quickly.
    pub fn on_event(mut self, hook: WorkerEventHook) -> Self {
        self.events = Some(hook);
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
            order: Mutex::new(ClaimOrder::default()),
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
            retried: AtomicU64::new(0),
            lease_lost: AtomicU64::new(0),
            recovered: AtomicU64::new(0),
            waiter,
            events: self.events,
            job_retention: JobRetention::default(),
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
