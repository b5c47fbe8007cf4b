//! The durable add (opt-in, [`ConnectOptions::durable`](crate::ConnectOptions::durable)): after
//! the add script, `WAIT numreplicas timeout` on the connection that carried it, to the master that
//! owns the queue's slot. Replication is asynchronous, so a master that acknowledged an add and died
//! before its replica had it loses the job in a failover; an add that returned from a durable
//! connection was acknowledged by `replicas` replicas too, and survives the promotion of one of
//! them. When fewer replicas acknowledged within `timeout`, the add fails with `timeout`, naming
//! the job ids: the job may be written on the master (and may survive), and adding again with the
//! same id (`JobOptions::id`) is idempotent. Each durable add call opens a dedicated connection to
//! the queue's master (see [`add_durably`]): a durable add costs a connection set-up and a few round
//! trips more than a plain one.

use crate::error::{Error, ErrorCode, Result};
use crate::job_id::JobId;
use crate::keyspace::Key;
use crate::script::Invocation;
use crate::store::Store;
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

/// Sends one add call and its WAIT on a dedicated connection to the master that owns `meta`'s
/// slot (no reconnect, no fallback to another node: a WAIT that the cluster client retried on
/// another node, or that a reconnected connection sent, would answer for nobody's writes and
/// acknowledge an add no replica has; the suite saw exactly that). Between the two, one replicated
/// write of the queue's (`meta` field `durable_probes`): replication is one ordered stream per
/// master, so the replicas that have it have every job record the master held before it, including
/// a job an earlier attempt wrote (a resend with the same id writes nothing). A broken connection
/// is `server_unavailable` (the caller resends, same ids); too few replicas in time, `timeout`.
pub(crate) async fn add_durably<T: redis::FromRedisValue>(
    store: &Store,
    meta: &Key,
    inv: Invocation,
    d: &Durability,
    batch: &[(JobId, &crate::queue::NewJob, String)],
) -> Result<T> {
    let ids: Vec<JobId> = batch.iter().map(|(id, _, _)| *id).collect();
    let limit = store.options().response_timeout + d.timeout;
    let run = async {
        let mut conn = store.blocking_connection(meta).await?;
        let reply: T = inv.invoke_on(store, &mut conn).await?;
        let _: i64 = redis::cmd("HINCRBY")
            .arg(meta)
            .arg("durable_probes")
            .arg(1)
            .query_async(&mut conn)
            .await?;
        let acked: i64 = redis::cmd("WAIT")
            .arg(d.replicas)
            .arg(d.timeout.as_millis() as u64)
            .query_async(&mut conn)
            .await?;
        check(acked, d, &ids)?;
        Ok(reply)
    };
    match tokio::time::timeout(limit, run).await {
        Ok(r) => r,
        Err(_) => Err(not_durable(
            &format!(
                "no answer in {} ms (response timeout + durable timeout)",
                limit.as_millis()
            ),
            d,
            &ids,
        )),
    }
}

fn check(acked: i64, d: &Durability, ids: &[JobId]) -> Result<()> {
    if acked >= i64::from(d.replicas) {
        return Ok(());
    }
    Err(not_durable(
        &format!("{acked} of {} replicas acknowledged the add", d.replicas),
        d,
        ids,
    ))
}

fn not_durable(what: &str, d: &Durability, ids: &[JobId]) -> Error {
    let shown: Vec<String> = ids.iter().take(5).map(|i| i.to_string()).collect();
    let more = ids.len().saturating_sub(shown.len());
    Error::new(
        ErrorCode::Timeout,
        format!(
            "not durable: {what} within {} ms; the job{} {}{} may be written on the master but \
             can be lost in a failover; add again with the same id (idempotent) to retry",
            d.timeout.as_millis(),
            if ids.len() == 1 { " is" } else { "s are" },
            shown.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            },
        ),
    )
}
