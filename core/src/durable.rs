//! The durable add (opt-in, [`ConnectOptions::durable`](crate::ConnectOptions::durable)): after
//! the add script, `WAIT numreplicas timeout` on the connection that carried it, to the master that
//! owns the queue's slot. Replication is asynchronous, so a master that acknowledged an add and died
//! before its replica had it loses the job in a failover; an add that returned from a durable
//! connection was acknowledged by `replicas` replicas too, and survives the promotion of one of
//! them. When fewer replicas acknowledged within `timeout`, the add fails with `not_replicated`,
//! naming the job ids: the job is written on the master (and may survive), and adding again with
//! the same id (`JobOptions::id`) is idempotent. When the master does not answer at all within
//! the response timeout plus `timeout`, it fails with `timeout` (the job may or may not be written).
//!
//! The connections: a store keeps a few dedicated connections per master for durable adds
//! ([`CONNECTIONS_PER_MASTER`], opened on demand and reused from call to call). One
//! call has one connection to itself from the add script to its `WAIT`; a further call waits for
//! one to come free. A connection that failed in any way (a broken link, an error reply, a `WAIT`
//! that fell short, a call cut off by its deadline) is dropped, never handed to the next call: a
//! `WAIT` answers for the writes its own connection made, so it must go on the connection that
//! carried the write, and a resent or reconnected one would answer for nobody's writes (see
//! [`add_durably`]). After a broken link the master's idle connections are dropped too (they most
//! likely broke with it: a restart, a failover).

use crate::durable_pool::{Durability, CONNECTIONS_PER_MASTER};
use crate::error::{Error, ErrorCode, Result};
use crate::job_id::JobId;
use crate::keyspace::Key;
use crate::script::Invocation;
use crate::store::Store;

/// Sends one add call and its WAIT on a dedicated connection to the master that owns `meta`'s
/// slot (from the store's pool; no reconnect, no fallback to another node: a WAIT that the
/// cluster client retried on another node, or that a reconnected connection sent, would answer
/// for nobody's writes and acknowledge an add no replica has; the suite saw exactly that). Between
/// the two, one replicated write of the queue's (`meta` field `durable_probes`): replication is one
/// ordered stream per master, so the replicas that have it have every job record the master held
/// before it, including a job an earlier attempt wrote (a resend with the same id writes nothing).
/// A broken connection is `server_unavailable` (the caller resends, same ids); too few replicas in
/// time, `not_replicated`; no answer at all, `timeout`. Only a connection whose call went through
/// to a sufficient `WAIT` goes back to the pool.
pub(crate) async fn add_durably<T: redis::FromRedisValue>(
    store: &Store,
    meta: &Key,
    inv: Invocation,
    d: &Durability,
    ids: Vec<JobId>,
) -> Result<T> {
    let limit = store.options().response_timeout + d.timeout;
    let url = store.master_url_for(meta).await?;
    let master = store.durable_pool().master(&url);
    let _permit = match tokio::time::timeout(limit, master.permits.acquire()).await {
        Ok(Ok(permit)) => permit,
        Ok(Err(_)) => return Err(Error::new(ErrorCode::Internal, "durable pool closed")),
        Err(_) => {
            return Err(Error::new(
                ErrorCode::Timeout,
                format!(
                    "no durable connection to {url} came free in {} ms ({CONNECTIONS_PER_MASTER} \
                     durable add calls in flight to it); nothing was sent",
                    limit.as_millis()
                ),
            ))
        }
    };
    let run = async {
        let pooled = master.idle().pop();
        let mut conn = match pooled {
            Some(c) => c,
            None => store.dedicated_connection_to(&url).await?,
        };
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
        // Only now is the connection known good: back to the pool for the next call.
        master.idle().push(conn);
        Ok(reply)
    };
    let outcome = match tokio::time::timeout(limit, run).await {
        Ok(r) => r,
        Err(_) => Err(Error::new(
            ErrorCode::Timeout,
            format!(
                "no answer in {} ms (response timeout + durable timeout); {}",
                limit.as_millis(),
                may_be_written(&ids)
            ),
        )),
    };
    if let Err(e) = &outcome {
        if e.code() == ErrorCode::ServerUnavailable {
            // The link to this master broke: its idle connections most likely broke with it.
            master.idle().clear();
        }
    }
    outcome
}

fn check(acked: i64, d: &Durability, ids: &[JobId]) -> Result<()> {
    if acked >= i64::from(d.replicas) {
        return Ok(());
    }
    Err(Error::new(
        ErrorCode::NotReplicated,
        format!(
            "{acked} of {} replicas acknowledged the add within {} ms; {} written on the master \
             but can be lost in a failover; add again with the same id (idempotent) to wait again",
            d.replicas,
            d.timeout.as_millis(),
            shown(ids, "is", "are"),
        ),
    ))
}

/// `the job <id> is` / `the jobs <a>, <b> and 3 more are`.
fn shown(ids: &[JobId], one: &str, many: &str) -> String {
    let listed: Vec<String> = ids.iter().take(5).map(|i| i.to_string()).collect();
    let more = ids.len().saturating_sub(listed.len());
    format!(
        "the job{} {}{} {}",
        if ids.len() == 1 { "" } else { "s" },
        listed.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        },
        if ids.len() == 1 { one } else { many },
    )
}

fn may_be_written(ids: &[JobId]) -> String {
    format!(
        "{} may be written on the master (and then can be lost in a failover); add again with the \
         same id (idempotent) to retry",
        shown(ids, "", "").trim_end()
    )
}
