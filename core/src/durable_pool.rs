//! The durability option ([`ConnectOptions::durable`](crate::ConnectOptions::durable): how many
//! replicas must acknowledge an add, and for how long to wait) and the store's pool of dedicated
//! connections for durable adds: [`CONNECTIONS_PER_MASTER`] per master, opened on demand and reused.
//! The add that uses them is `durable.rs`; this file is the part the store holds.

use crate::error::{Error, ErrorCode, Result};
use redis::aio::MultiplexedConnection;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Most dedicated connections a store keeps to one master for durable adds, and so the most
/// durable add calls in flight to one master at a time (a further call waits for one to come free,
/// within its deadline).
pub const CONNECTIONS_PER_MASTER: usize = 4;

/// The dedicated connections of one store for durable adds, by master URL.
#[derive(Default)]
pub(crate) struct Pool {
    pub(crate) masters: Mutex<HashMap<String, Arc<Master>>>,
}

/// One master's connections: `permits` bounds the calls in flight (each holds one connection:
/// taken from `idle`, or opened when none is idle), so idle + in use never exceeds
/// [`CONNECTIONS_PER_MASTER`].
pub(crate) struct Master {
    pub(crate) permits: tokio::sync::Semaphore,
    pub(crate) idle: Mutex<Vec<MultiplexedConnection>>,
}

impl Pool {
    pub(crate) fn master(&self, url: &str) -> Arc<Master> {
        let mut masters = self.masters.lock().unwrap_or_else(|e| e.into_inner());
        masters
            .entry(url.to_string())
            .or_insert_with(|| {
                Arc::new(Master {
                    permits: tokio::sync::Semaphore::new(CONNECTIONS_PER_MASTER),
                    idle: Mutex::new(Vec::new()),
                })
            })
            .clone()
    }
}

impl Master {
    pub(crate) fn idle(&self) -> std::sync::MutexGuard<'_, Vec<MultiplexedConnection>> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// How many replicas must acknowledge an add, and for how long to wait for them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Durability {
    /// Replicas that must have the write (1..=[`Durability::MAX_REPLICAS`]).
    pub replicas: u32,
    /// Longest wait for them (1 ms..=[`Durability::MAX_TIMEOUT`]; `WAIT 0` would block forever).
    pub timeout: Duration,
}

impl Durability {
    /// Most replicas an add can wait for.
    pub const MAX_REPLICAS: u32 = 64;
    /// Longest wait.
    pub const MAX_TIMEOUT: Duration = Duration::from_secs(60);

    /// A checked durability: `invalid_option` naming the bound when out of range.
    pub fn new(replicas: u32, timeout: Duration) -> Result<Durability> {
        let d = Durability { replicas, timeout };
        d.validate()?;
        Ok(d)
    }

    /// Checks the bounds.
    pub fn validate(&self) -> Result<()> {
        if self.replicas == 0 || self.replicas > Self::MAX_REPLICAS {
            return Err(Error::new(
                ErrorCode::InvalidOption,
                format!(
                    "durable replicas must be 1..={} (got {})",
                    Self::MAX_REPLICAS,
                    self.replicas
                ),
            ));
        }
        if self.timeout.is_zero() || self.timeout > Self::MAX_TIMEOUT {
            return Err(Error::new(
                ErrorCode::InvalidOption,
                format!(
                    "durable timeout must be 1..={} ms (got {} ms)",
                    Self::MAX_TIMEOUT.as_millis(),
                    self.timeout.as_millis()
                ),
            ));
        }
        Ok(())
    }
}
