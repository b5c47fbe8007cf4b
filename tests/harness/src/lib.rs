//! emq-harness: a test kit that starts REAL `redis-server` processes on free
//! 127.0.0.1 ports in temp dirs, and stops them by pid (never by name).
//! No mocks.
//!
//! This file owns the crate layout, the re-exports and the per-process shared
//! servers ([`shared_standalone`], [`shared_cluster`]). The rest lives in:
//! [`server`] (one redis-server child), [`cluster`] (N-master cluster),
//! [`tls`] (certs + TLS/ACL server), [`registry`] (pids to stop at exit),
//! [`resp`] (tiny RESP client for readiness/cluster polls, from the crate
//! `emq-server-process`, whose process helpers `server` uses too) and `cmd`
//! (bounded runs of `redis-cli`/`openssl`; [`builds`]: the Python, Node and Kotlin builds a test
//! needs, and the one rule for a missing one under CI; `EMQ_SERVER_BIN` / `EMQ_CLI_BIN` name
//! another server and client, e.g. Valkey's, for the datastore matrix). `src/main.rs` is the
//! `emq-harness up` binary used by the non-Rust test suites.

pub mod builds;
pub mod cluster;
mod cmd;
pub mod registry;
pub use emq_server_process::resp;
pub mod server;
pub mod tls;

use std::sync::OnceLock;

pub use cluster::{key_slot, RedisCluster, SlotRange};
pub use cmd::{cli_program, server_program, CLI_BIN_ENV, SERVER_BIN_ENV};
pub use server::{RedisServer, ServerOptions};
pub use tls::{AclUser, TlsOptions, TlsServer};

/// A standalone server started lazily once per process and shared by every
/// test in the test binary. It is stopped by the atexit handler.
///
/// Panics (failing the calling test) if the server cannot be started; a later
/// call tries again.
pub fn shared_standalone() -> &'static RedisServer {
    static SERVER: OnceLock<RedisServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        RedisServer::start().unwrap_or_else(|e| panic!("emq-harness: shared standalone: {e}"))
    })
}

/// A 3-master cluster started lazily once per process and shared by every
/// test in the test binary. Stopped by the atexit handler.
pub fn shared_cluster() -> &'static RedisCluster {
    static CLUSTER: OnceLock<RedisCluster> = OnceLock::new();
    CLUSTER.get_or_init(|| {
        RedisCluster::start(3).unwrap_or_else(|e| panic!("emq-harness: shared cluster: {e}"))
    })
}
