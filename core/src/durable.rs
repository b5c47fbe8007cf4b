//! The durable add (opt-in, [`ConnectOptions::durable`](crate::ConnectOptions::durable)): after
//! the add script, `WAIT numreplicas timeout` on the connection that carried it, to the master that
//! owns the queue's slot. Replication is asynchronous, so a master that acknowledged an add and died
//! before its replica had it loses the job in a failover; an add that returned from a durable
//! connection was acknowledged by `replicas` replicas too, and survives the promotion of one of
//! them. When fewer replicas acknowledged within `timeout`, the add fails with `timeout`, naming
//! the job ids: the job *is* written on the master (and may survive), and adding again with the same
//! id (`JobOptions::id`) is idempotent.
//!
//! The `WAIT` holds the shared connection for its duration (at most `timeout`, normally about one
//! round trip to the replica): connect a durable producer apart from the workers.

use crate::error::{Error, ErrorCode, Result};
use crate::job_id::JobId;
use crate::keyspace::Key;
use crate::store::{Conn, Store};
use std::time::Duration;

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

/// Waits until `d.replicas` replicas have every write this connection sent to the master owning
/// `key`'s slot (so the adds of `ids`, sent before); `timeout` naming the ids when they did not in
/// time.
pub(crate) async fn wait_for_replicas(
    store: &Store,
    key: &Key,
    d: &Durability,
    ids: &[JobId],
) -> Result<()> {
    let mut cmd = redis::cmd("WAIT");
    cmd.arg(d.replicas).arg(d.timeout.as_millis() as u64);
    let acked: i64 = match store.conn() {
        Conn::Single(mut c) => cmd.query_async(&mut c).await?,
        Conn::Cluster(mut c) => {
            use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
            // Left to itself the cluster client sends WAIT to every master (the minimum wins):
            // only the master that took the add counts.
            let route = Route::new(key.slot(), SlotAddr::Master);
            let v = c
                .route_command(
                    cmd,
                    RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(route)),
                )
                .await?;
            redis::from_redis_value(v).map_err(|e| {
                Error::new(ErrorCode::Internal, format!("unexpected WAIT reply: {e}"))
            })?
        }
    };
    if acked >= i64::from(d.replicas) {
        return Ok(());
    }
    let shown: Vec<String> = ids.iter().take(5).map(|i| i.to_string()).collect();
    let more = ids.len().saturating_sub(shown.len());
    Err(Error::new(
        ErrorCode::Timeout,
        format!(
            "not durable: {acked} of {} replicas acknowledged the add within {} ms; the job{} {}{} \
             written on the master but can be lost in a failover; add again with the same id \
             (idempotent) to retry",
            d.replicas,
            d.timeout.as_millis(),
            if ids.len() == 1 { " is" } else { "s are" },
            shown.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            },
        ),
    ))
}
