//! emq — EchoMQ 2.0: a background-job queue on Redis-protocol datastores.
//!
//! This crate is the one core every binding wraps. Its public modules are what a user calls:
//! - [`queue`] and [`worker`]: the job lifecycle; [`handler`]: the trait bindings implement;
//! - [`keyspace`]: queue names and the only builders of keys (`emq:{q}:<type>`, `{emq}:…`), and
//!   [`key_slot`] / [`hash_tag`] (the slot a key hashes to); [`job_id`]: JOB snowflake ids and the
//!   one gate that parses them;
//! - [`events`]: the events stream; [`waiters`]: `Queue::wait` (one follower per queue handle);
//!   [`audit`]: the invariant check; [`metrics`]: counts and the Prometheus text; [`limits`]:
//!   global concurrency and rate limits; [`groups`]: fair groups (turns, weights, per-group
//!   caps, pause); [`scheduler`]: job schedulers; [`flow`]: flows;
//!   [`lookup`]: read-only look-ups for views; [`migrate`]: `emq migrate`;
//! - [`registry`]: the queues in use; [`worker_registry`]: the live workers, on the server's clock;
//! - [`error`]: one error type with stable codes; [`options`] and [`spec`]: the options a caller
//!   passes in, and their one conversion and validation (every binding fills a spec).
//!
//! The plumbing is private to the crate: `script/` (the Lua scripts of `lua/`, their headers, the
//! undeclared-key guard, EVALSHA), `store` (the connection, standalone or cluster, TLS/ACL; its
//! types [`Store`], [`ConnectOptions`], … are re-exported here) and `connect` (its wire-version
//! check), `minter` (ids minted under a node-id lease; [`IdMinter`] re-exported), `durable` and
//! `durable_pool` (the opt-in replicated add), `handoff`, `clock`, `hash_slot`, `task` ([`TaskHandle`]
//! re-exported). `core/tests` reach the script registry through `emq::testing` (feature
//! `testing`, on for those tests only).

pub mod audit;
pub mod batch;
mod batch_list;
mod clock;
mod connect;
pub mod dead_letter;
mod durable;
mod durable_pool;
pub mod error;
pub mod events;
pub mod flow;
pub mod groups;
pub mod handler;
mod handoff;
mod hash_slot;
pub mod job;
pub mod job_defaults;
pub mod job_id;
pub mod keyspace;
pub mod latency;
pub mod limits;
pub mod lookup;
pub mod metrics;
pub mod metrics_history;
pub mod migrate;
mod minter;
pub mod options;
#[cfg(feature = "otel")]
pub mod otel;
pub mod outcome;
pub mod partitions;
pub mod queue;
pub mod registry;
mod retention;
pub mod scheduler;
#[cfg(feature = "testing")]
pub mod script;
#[cfg(not(feature = "testing"))]
mod script;
mod shares;
pub mod spec;
mod store;
mod task;
mod trace;
pub mod waiters;
pub mod worker;
pub mod worker_options;
pub mod worker_registry;

pub use batch::{Batch, BatchCallback, BatchDone, BatchJob, BatchOptions, BatchRef, BatchStatus};
pub use batch_list::{BatchListed, BatchPage, MAX_BATCH_PAGE};
pub use dead_letter::Replayed;
pub use durable_pool::Durability;
pub use error::{Error, ErrorCode, Result};
pub use flow::{FlowIds, FlowJob};
pub use groups::GroupInfo;
pub use handler::{Handler, HandlerError, HandlerResult, Interrupt, JobContext};
pub use hash_slot::{hash_tag, key_slot};
pub use job::{Counts, Failure, Job, JobState};
pub use job_defaults::JobDefaults;
pub use job_id::JobId;
pub use keyspace::{BatchPart, CoreKey, Family, JobPart, Key, QueueName};
pub use limits::{GroupRateLimit, RateLimit};
pub use metrics::{prometheus_text, QueueMetrics};
pub use minter::IdMinter;
pub use options::{Backoff, DeadLetterOrigin, JobOptions, ParentPolicy, Removal, Retention};
pub use outcome::Moved;
pub use queue::direct::{direct_reply_len, direct_settle, DirectAdd, DirectOutcome};
pub use queue::{CancelOutcome, NewJob, Queue, QueueOptions};
pub use scheduler::{CronSchedule, Repeat, Schedule, SchedulerInfo, SchedulerView};
pub use store::{ConnectOptions, Pem, Store, TlsConfig, Topology, WIRE_VERSION};
pub use task::TaskHandle;
pub use trace::{TraceContext, MAX_TRACESTATE};
pub use worker::{
    CloseReport, QueueOrder, Worker, WorkerAborter, WorkerEvent, WorkerEventHook, WorkerHandle,
    WorkerOptions, WorkerStats, MAX_QUEUE_WEIGHT,
};
pub use worker_registry::WorkerInfo;

// The uniffi derives on the core's own types (feature `uniffi`, for bindings/uniffi).
#[cfg(feature = "uniffi")]
uniffi::setup_scaffolding!();

/// What the core's own integration tests (`core/tests`) reach inside the crate: the script registry
/// (to call one script directly, as a worker or producer would) and the durable pool's bound. Only
/// with the `testing` feature, which `core/Cargo.toml` turns on for its tests alone; not API.
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod testing {
    pub use crate::batch::stop_batch_steps_after;
    pub use crate::dead_letter::stop_moves_after;
    pub use crate::durable_pool::CONNECTIONS_PER_MASTER;
    pub use crate::script;
    pub use crate::worker::delay_cancel_follow;
}

/// Entry points for the fuzz targets in `fuzz/` (not part of the API): parsers of outside bytes
/// that are private to the core.
#[doc(hidden)]
pub mod fuzzing {
    /// Parses a `handoff` entry (the netstrings a claim script pushes); `Ok` holds the job's id.
    pub fn handoff_entry(entry: &[u8]) -> crate::Result<crate::JobId> {
        crate::handoff::parse(entry).map(|h| h.job.id)
    }
}
