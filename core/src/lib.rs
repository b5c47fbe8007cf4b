//! emq — EchoMQ 2.0: a background-job queue on Redis-protocol datastores.
//!
//! This crate is the one core every binding wraps. It owns:
//! - [`keyspace`]: queue names and the only builders of keys (`emq:{q}:<type>`, `{emq}:…`);
//! - [`job_id`]: JOB snowflake ids and the one gate that parses them; [`minter`] mints them under a
//!   node-id lease on the server's clock;
//! - [`script`]: the Lua scripts of `lua/`, their headers, the undeclared-key guard, EVALSHA;
//! - [`store`]: the connection (standalone or cluster), TLS/ACL, the wire-version check;
//! - [`error`]: one error type with stable codes.

pub mod embedded;
pub mod error;
pub mod job_id;
pub mod keyspace;
pub mod minter;
pub mod script;
pub mod slot;
pub mod store;
pub mod task;

pub use error::{Error, ErrorCode, Result};
pub use job_id::JobId;
pub use keyspace::{CoreKey, Family, JobPart, Key, QueueName};
pub use minter::IdMinter;
pub use store::{ConnectOptions, Store, Topology};
