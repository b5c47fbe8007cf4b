//! emq-server-process: running a `redis-server` as a child process on 127.0.0.1.
//!
//! The one place in the workspace that starts datastore processes (the library crate `emq` starts
//! none). Used by the CLI (`emq dev`, and `emq demo` when no URL is given) and by the test harness
//! (`tests/harness`, which adds clusters, TLS and a pid registry on top):
//!
//! - [`process`]: the shared pieces: a free loopback port, signals by pid, a bounded stop
//!   (SIGTERM, a wait, SIGKILL), the tail of a server's log;
//! - [`resp`]: a tiny blocking RESP2 client for readiness probes and polls;
//! - [`embedded`]: [`EmbeddedServer`], a private standalone server in a temp dir, stopped on drop.
//!
//! Everything here blocks (it sleeps while it polls); from async code call it through
//! `tokio::task::spawn_blocking`. Errors are `std::io::Error`s with a message fit for a person.

pub mod embedded;
pub mod process;
pub mod resp;

pub use embedded::EmbeddedServer;
