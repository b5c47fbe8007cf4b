//! A worker's options ([`WorkerOptions`]), their bounds ([`worker_bounds`]) and the order between
//! a worker's queues ([`QueueOrder`]): what every binding's and the CLI's worker arguments become,
//! checked once when the worker starts. Re-exported by `options.rs`, the job options' file.

use crate::error::{Error, ErrorCode, Result};
use crate::retention::Retention;
use std::time::Duration;

fn invalid(msg: String) -> Error {
    Error::new(ErrorCode::InvalidOption, msg)
}

/// The bounds of a worker's options, checked by [`WorkerOptions::validate`] when the worker starts
/// (every binding's and the CLI's options arrive there): each keeps a worker from becoming a busy
/// loop or from holding jobs it cannot run.
pub mod worker_bounds {
    use std::time::Duration;
    /// Most jobs one worker runs at once.
    pub const MAX_CONCURRENCY: usize = 10_000;
    /// Shortest lease (renewed every third of it).
    pub const MIN_LEASE: Duration = Duration::from_millis(300);
    /// Longest lease.
    pub const MAX_LEASE: Duration = Duration::from_secs(24 * 3600);
    /// Shortest interval of the stalled sweep, and of retention trimming.
    pub const MIN_INTERVAL: Duration = Duration::from_millis(100);
    /// Longest interval of the stalled sweep, and of retention trimming.
    pub const MAX_INTERVAL: Duration = Duration::from_secs(3600);
    /// Shortest single wait for work (a shorter one polls the server).
    pub const MIN_BLOCK: Duration = Duration::from_millis(50);
    /// Longest single wait for work.
    pub const MAX_BLOCK: Duration = Duration::from_secs(300);
    /// Longest wait of `close` for running jobs.
    pub const MAX_SHUTDOWN: Duration = Duration::from_secs(3600);
    /// Most stalls allowed before a job fails.
    pub const MAX_STALLS: u32 = 1_000;
    /// Most jobs leased ahead of the handlers.
    pub const MAX_PREFETCH: usize = 10_000;
}

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
    /// Jobs leased ahead of the handlers (None: twice `concurrency`, clamped to 16..=256, the floor
    /// of 16 raised to up to 64 for jobs short enough that those hold at most 50 ms of work;
    /// `Some(0)`: none).
    /// Used only after a first job ended, while recent jobs take under [`PREFETCH_MAX_JOB`] on
    /// average.
    pub prefetch: Option<usize>,
    /// A worker on several queues ([`crate::Worker::builder_many`]): which queue's job starts
    /// next, and which may lease (default: equal weights; see [`QueueOrder`]). One queue: unused.
    pub queue_order: QueueOrder,
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
            queue_order: QueueOrder::default(),
        }
    }
}

impl WorkerOptions {
    /// Checks every option against [`worker_bounds`]; `invalid_option` names the option and its
    /// bound.
    pub fn validate(&self) -> Result<()> {
        use worker_bounds::*;
        let ms = |d: Duration| d.as_millis();
        let range = |what: &str, d: Duration, lo: Duration, hi: Duration| {
            if d < lo || d > hi {
                Err(invalid(format!(
                    "{what} must be between {} ms and {} ms, got {} ms",
                    ms(lo),
                    ms(hi),
                    ms(d)
                )))
            } else {
                Ok(())
            }
        };
        if self.concurrency == 0 || self.concurrency > MAX_CONCURRENCY {
            return Err(invalid(format!(
                "concurrency must be between 1 and {MAX_CONCURRENCY}, got {}",
                self.concurrency
            )));
        }
        range("lease", self.lease, MIN_LEASE, MAX_LEASE)?;
        range(
            "stalled_interval",
            self.stalled_interval,
            MIN_INTERVAL,
            MAX_INTERVAL,
        )?;
        range(
            "trim_interval",
            self.trim_interval,
            MIN_INTERVAL,
            MAX_INTERVAL,
        )?;
        range("block_timeout", self.block_timeout, MIN_BLOCK, MAX_BLOCK)?;
        range(
            "shutdown_deadline",
            self.shutdown_deadline,
            Duration::ZERO,
            MAX_SHUTDOWN,
        )?;
        if self.max_stalls > MAX_STALLS {
            return Err(invalid(format!(
                "max_stalls must be at most {MAX_STALLS}, got {}",
                self.max_stalls
            )));
        }
        if let Some(p) = self.prefetch {
            if p > MAX_PREFETCH {
                return Err(invalid(format!(
                    "prefetch must be at most {MAX_PREFETCH}, got {p}"
                )));
            }
        }
        Ok(())
    }
}

/// The order between a worker's queues; see `worker/pool.rs`. Keys of `Weighted` are queue names
/// (a queue not named has weight 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QueueOrder {
    /// No job of a later queue starts while an earlier one has a ready job.
    Strict,
    /// Starts shared by weight (1 to [`MAX_QUEUE_WEIGHT`]) while the queues have work.
    Weighted(std::collections::BTreeMap<String, u32>),
}

impl Default for QueueOrder {
    fn default() -> Self {
        QueueOrder::Weighted(Default::default())
    }
}

/// The largest weight of a queue in [`QueueOrder::Weighted`].
pub const MAX_QUEUE_WEIGHT: u32 = 1_000;
