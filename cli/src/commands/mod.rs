//! One module per subcommand. Each has its clap `Args` (if it takes any) and a `run`.

pub mod add;
pub mod admin;
pub mod audit;
pub mod batches;
pub mod defaults;
pub mod demo;
pub mod dev;
pub mod dlq;
pub mod events;
pub mod groups;
pub mod job;
pub mod jobs;
pub mod keyspace;
pub mod metrics;
pub mod migrate;
pub mod queues;
pub mod schedule;
pub mod stats;
pub mod ui;
pub mod work;

/// Pretty JSON text of a value, or an `internal` error.
pub fn to_json<T: serde::Serialize + ?Sized>(value: &T) -> emq::Result<String> {
    serde_json::to_string_pretty(value)
        .map_err(|e| emq::Error::new(emq::ErrorCode::Internal, format!("cannot write JSON: {e}")))
}
