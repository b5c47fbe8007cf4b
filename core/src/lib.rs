//! emq — EchoMQ 2.0: a background-job queue on Redis-protocol datastores.
//!
//! This crate is the one core every binding wraps. It owns:
//! - [`keyspace`]: queue names and the only builders of keys (`emq:{q}:<type>`, `{emq}:…`);
//! - [`job_id`]: JOB snowflake ids and the one gate that parses them; [`minter`] mints them under a
//!   node-id lease on the server's clock;
//! - [`script`]: the Lua scripts of `lua/`, their headers, the undeclared-key guard, EVALSHA;
//! - [`store`]: the connection (standalone or cluster), TLS/ACL, the wire-version check;
//! - [`queue`] and [`worker`]: the job lifecycle; [`handler`]: the trait bindings implement;
//! - [`events`]: the events stream; [`waiters`]: `Queue::wait` (one follower per queue handle); [`audit`]: the invariant check; [`metrics`]: counts and the
//!   Prometheus text; [`limits`]: global concurrency and rate limits; [`scheduler`]: job schedulers;
//! - [`registry`]: the queues in use; [`worker_registry`]: the live workers, on the server's clock;
//! - [`error`]: one error type with stable codes; [`options`] and [`spec`]: the options a caller
//!   passes in, and their one conversion and validation (every binding fills a spec).

pub mod audit;
mod clock;
mod connect;
pub mod durable;
pub mod durable_pool;
pub mod error;
pub mod events;
pub mod flow;
pub mod handler;
mod handoff;
pub mod job;
pub mod job_id;
pub mod keyspace;
pub mod limits;
pub mod lookup;
pub mod metrics;
pub mod migrate;
pub mod minter;
pub mod options;
pub mod outcome;
pub mod queue;
pub mod registry;
pub mod scheduler;
pub mod script;
pub mod slot;
pub mod spec;
pub mod store;
pub mod task;
pub mod waiters;
pub mod worker;
pub mod worker_registry;

pub use durable_pool::Durability;
pub use error::{Error, ErrorCode, Result};
pub use flow::{FlowIds, FlowJob};
pub use handler::{Handler, HandlerError, HandlerResult, Interrupt, JobContext};
pub use job::{Counts, Failure, Job, JobState};
pub use job_id::JobId;
pub use keyspace::{CoreKey, Family, JobPart, Key, QueueName};
pub use limits::{GroupRateLimit, RateLimit};
pub use metrics::{prometheus_text, QueueMetrics};
pub use minter::IdMinter;
pub use options::{Backoff, JobOptions, ParentPolicy, Removal, Retention};
pub use outcome::Moved;
pub use queue::{CancelOutcome, NewJob, Queue};
pub use scheduler::{CronSchedule, Repeat, Schedule, SchedulerInfo};
pub use store::{ConnectOptions, Pem, Store, TlsConfig, Topology};
pub use worker::{
    CloseReport, Worker, WorkerAborter, WorkerEvent, WorkerEventHook, WorkerHandle, WorkerOptions,
    WorkerStats,
};
pub use worker_registry::WorkerInfo;

// The uniffi derives on the core's own types (feature `uniffi`, for bindings/uniffi).
#[cfg(feature = "uniffi")]
uniffi::setup_scaffolding!();

/// Entry points for the fuzz targets in `fuzz/` (not part of the API): parsers of outside bytes
/// that are private to the core.
#[doc(hidden)]
pub mod fuzzing {
    /// Parses a `handoff` entry (the netstrings a claim script pushes); `Ok` holds the job's id.
    pub fn handoff_entry(entry: &[u8]) -> crate::Result<crate::JobId> {
        crate::handoff::parse(entry).map(|h| h.job.id)
    }
}
