//! [`Worker::builder`] and [`WorkerBuilder`]: configures a worker, validates its options and starts its tasks.

use super::*;

/// Builds and starts workers.
pub struct Worker;

impl Worker {
    /// A builder for a worker on `queue`.
    pub fn builder(queue: Queue) -> WorkerBuilder {
        Worker::builder_many(vec![queue])
    }

    /// A builder for one worker on several queues: one handler, one `concurrency` and one prefetch
    /// shared by them, in the order [`WorkerOptions::queue_order`] says (strict, or by weight).
    /// Each queue is served in its own slot (its claims, completions, renewals and sweep); see
    /// `pool.rs` for how starts are shared. [`WorkerBuilder::run`] refuses an empty list and a
    /// queue named twice (`invalid_option`).
    pub fn builder_many(queues: Vec<Queue>) -> WorkerBuilder {
        WorkerBuilder {
            queues,
            opts: WorkerOptions::default(),
            handler: None,
            events: None,
        }
    }
}

/// Configures a worker.
pub struct WorkerBuilder {
    pub(super) queues: Vec<Queue>,
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

    /// The order between the queues of a worker on several ([`QueueOrder`]).
    pub fn queue_order(mut self, order: QueueOrder) -> Self {
        self.opts.queue_order = order;
        self
    }

    /// Starts the worker on the current tokio runtime.
    pub fn run(self) -> Result<WorkerHandle> {
        let handler = self.handler.ok_or_else(|| {
            crate::Error::new(ErrorCode::InvalidOption, "a worker needs a handler")
        })?;
        self.opts.validate()?;
        let names: Vec<String> = self
            .queues
            .iter()
            .map(|q| q.name().as_str().to_string())
            .collect();
        if names.is_empty() {
            return Err(crate::Error::new(
                ErrorCode::InvalidOption,
                "a worker needs at least one queue",
            ));
        }
        for (i, n) in names.iter().enumerate() {
            if names[..i].contains(n) {
                return Err(crate::Error::new(
                    ErrorCode::InvalidOption,
                    format!("queue {n:?} is named twice in the worker's queues"),
                ));
            }
        }
        // One id for the whole worker: each member registers under it in its own queue's slot
        // (waiters, the worker registry), so a partitioned queue's listing of its partitions'
        // workers names each worker once. A restart keeps it.
        let waiter = format!(
            "{:016x}|{}",
            rand::random::<u64>(),
            self.opts.lease.as_millis()
        );
        let restart = Arc::new(super::regrow::Restart {
            queues: self.queues,
            opts: self.opts,
            handler,
            events: self.events,
            waiter,
        });
        let running = start(&restart)?;
        let partitioned = restart.queues.iter().any(|q| q.partitions().is_some());
        Ok(WorkerHandle::new(running, partitioned.then_some(restart)))
    }
}

/// Starts the worker `r` describes over its queues as their handles know them now (a
/// partitioned queue's partitions as last read).
pub(super) fn start(r: &super::regrow::Restart) -> Result<Running> {
    let names: Vec<String> = r
        .queues
        .iter()
        .map(|q| q.name().as_str().to_string())
        .collect();
    let pool = Pool::new(r.opts.concurrency, &names, &r.opts.queue_order)?;
    let partitioned: Vec<Queue> = r
        .queues
        .iter()
        .filter(|q| q.partitions().is_some())
        .cloned()
        .collect();
    let (queues, pool) = spread_partitions(r.queues.clone(), pool, &r.opts.queue_order)?;
    let pool = Arc::new(pool);
    let members: Vec<Arc<Shared>> = queues
        .into_iter()
        .enumerate()
        .map(|(member, queue)| {
            new_member(
                queue,
                member,
                pool.clone(),
                r.handler.clone(),
                r.opts.clone(),
                r.events.clone(),
                r.waiter.clone(),
            )
        })
        .collect();
    // The pool knows every member before any task claims.
    pool.set_members(&members);
    let mut handles = members.into_iter().map(|s| {
        let tasks = start_tasks(&s);
        (s, tasks)
    });
    let (shared, mut tasks) = handles.next().expect("one queue at least");
    // A partitioned queue's global concurrency and rate limit move to where its jobs are
    // (`shares.rs`): every worker on it takes part in the rounds (one holds them at a time).
    for q in partitioned {
        tasks.push(TaskHandle::spawn(crate::shares::lend_loop(
            q,
            r.waiter.clone(),
        )));
    }
    let siblings = handles
        .map(|(shared, tasks)| Running {
            shared,
            tasks,
            siblings: Vec::new(),
            runtime: tokio::runtime::Handle::current(),
            pid: std::process::id(),
        })
        .collect();
    Ok(Running {
        shared,
        tasks,
        siblings,
        runtime: tokio::runtime::Handle::current(),
        pid: std::process::id(),
    })
}

/// A partitioned queue among the worker's queues becomes one member per partition (`partitions.rs`),
/// the partitions sharing their queue's weight equally: with queues of N₁, N₂, … partitions and
/// L their least common multiple, each partition of a queue of weight w and N partitions weighs
/// w·L/N, so every partition of a queue gets the same share and the queues keep their weights.
/// Strict order is refused with a partitioned queue (it would serve its first partition before
/// the others, starving them).
fn spread_partitions(
    queues: Vec<Queue>,
    pool: Pool,
    order: &QueueOrder,
) -> crate::Result<(Vec<Queue>, Pool)> {
    if queues.iter().all(|q| q.partitions().is_none()) {
        return Ok((queues, pool));
    }
    if matches!(order, QueueOrder::Strict) {
        return Err(crate::Error::new(
            ErrorCode::InvalidOption,
            "strict queue order is not supported with a partitioned queue (it would starve all but its first partition); use weights",
        ));
    }
    let count = |q: &Queue| q.partitions().map_or(1, |p| p.len() as u64);
    let lcm = queues
        .iter()
        .map(count)
        .fold(1u64, |a, n| a / gcd(a, n) * n);
    let mut members = Vec::new();
    let mut weights = Vec::new();
    for (q, w) in queues.iter().zip(pool.weights()) {
        let share = w * lcm / count(q);
        members.extend(q.slot_queues());
        weights.extend(std::iter::repeat(share).take(count(q) as usize));
    }
    Ok((members, Pool::weighted(pool.concurrency, weights)))
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// One queue's part of a worker: its shared state (its tasks start in [`start_tasks`]).
fn new_member(
    queue: Queue,
    member: usize,
    pool: Arc<Pool>,
    handler: Arc<dyn Handler>,
    opts: WorkerOptions,
    events: Option<WorkerEventHook>,
    waiter: String,
) -> Arc<Shared> {
    let (completions, completed_rx) = tokio::sync::mpsc::unbounded_channel();
    Arc::new(Shared {
        completions,
        queue,
        handler,
        opts,
        flights: Mutex::new(HashMap::new()),
        pool,
        member,
        order: Mutex::new(ClaimOrder::default()),
        unrecorded: AtomicUsize::new(0),
        job_us: AtomicU64::new(u64::MAX),
        stopping: AtomicBool::new(false),
        aborted: AtomicBool::new(false),
        released: AtomicU64::new(0),
        early_cancels: Mutex::new(HashMap::new()),
        cancels_followed: tokio::sync::watch::channel(false).0,
        wake: Notify::new(),
        stop: Notify::new(),
        idle: Notify::new(),
        completed: AtomicU64::new(0),
        failed: AtomicU64::new(0),
        retried: AtomicU64::new(0),
        lease_lost: AtomicU64::new(0),
        recovered: AtomicU64::new(0),
        waiter,
        events,
        job_retention: JobRetention::default(),
        defaults: Default::default(),
        completed_rx: Mutex::new(Some(completed_rx)),
    })
}

/// Starts a member's tasks.
fn start_tasks(shared: &Arc<Shared>) -> Vec<TaskHandle> {
    let completed_rx = shared
        .completed_rx
        .lock()
        .expect("completions")
        .take()
        .expect("tasks start once");
    vec![
        TaskHandle::spawn(fetch_loop(shared.clone())),
        TaskHandle::spawn(complete_loop(shared.clone(), completed_rx)),
        TaskHandle::spawn(renew_loop(shared.clone())),
        TaskHandle::spawn(sweep_loop(shared.clone())),
        TaskHandle::spawn(trim_loop(shared.clone())),
        TaskHandle::spawn(defaults_loop(shared.clone())),
        TaskHandle::spawn(scheduler_loop(shared.clone())),
        TaskHandle::spawn(cancel_loop(shared.clone())),
        crate::worker_registry::heartbeat(
            shared.queue.clone(),
            &shared.waiter,
            shared.pool.concurrency,
            {
                let s = shared.clone();
                move || s.pool.running.load(Ordering::Relaxed)
            },
        ),
    ]
}
