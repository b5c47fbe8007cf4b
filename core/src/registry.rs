//! The queue registry: the names of the queues in use, in the SET `{emq}:queues`, so a dashboard or
//! `emq queues` lists them without scanning the datastore.
//!
//! A queue is registered with a plain `SADD` (never inside a queue's script: the registry lives in
//! the core's `{emq}` slot, a queue's scripts touch only its own slot): by a queue handle's first
//! add (once per handle), by each flow node's queue, and by every worker heartbeat (see
//! [`crate::worker_registry`]). [`repair`] finds the queues created before the registry existed
//! (or by a foreign writer) with a bounded `SCAN` of every node (every master of a cluster) for
//! their `emq:{q}:meta` hash, and registers them. [`Queue::obliterate`] takes the queue out.

use crate::error::{Error, ErrorCode, Result};
use crate::keyspace::{CoreKey, QueueName, PREFIX};
use crate::queue::Queue;
use crate::store::{Conn, Store, Topology};
use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Keys asked for per `SCAN` call of a repair.
const SCAN_COUNT: u64 = 1_000;
/// Most `SCAN` calls per node in one repair.
const SCAN_MAX_CALLS: usize = 100_000;
/// Longest one repair runs.
const REPAIR_DEADLINE: Duration = Duration::from_secs(120);

impl Queue {
    /// Writes this queue's name into the registry (idempotent).
    pub async fn register(&self) -> Result<()> {
        let _: i64 = redis::cmd("SADD")
            .arg(CoreKey::Queues.key())
            .arg(self.name().as_str())
            .query_async(&mut self.store().conn())
            .await?;
        self.registered.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// Registers the queue unless this handle already did.
    pub(crate) async fn register_once(&self) -> Result<()> {
        if self.registered.load(Ordering::Relaxed) {
            return Ok(());
        }
        // Boxed: once per handle, kept out of every add's future (issue 29's profile).
        Box::pin(self.register()).await
    }

    /// After an add has landed: registers the queue once, best effort. An add that landed must not
    /// report a failure because the registry write did not (its caller would add again); the next
    /// add tries again, a worker's heartbeat registers the queue too, and `repair` finds any queue
    /// that was missed.
    pub(crate) async fn register_after_add(&self) {
        if let Err(e) = self.register_once().await {
            tracing::warn!(queue = %self.name(), error = %e, "emq: could not register the queue");
        }
    }

    /// Takes this queue out of the registry (a live worker's heartbeat writes it back).
    pub async fn unregister(&self) -> Result<()> {
        let _: i64 = redis::cmd("SREM")
            .arg(CoreKey::Queues.key())
            .arg(self.name().as_str())
            .query_async(&mut self.store().conn())
            .await?;
        self.registered.store(false, Ordering::Relaxed);
        Ok(())
    }
}

/// The registered queues, by name. Entries that are not valid queue names are skipped.
pub async fn queues(store: &Store) -> Result<Vec<QueueName>> {
    let names: Vec<String> = redis::cmd("SMEMBERS")
        .arg(CoreKey::Queues.key())
        .query_async(&mut store.conn())
        .await?;
    let mut out: Vec<QueueName> = names
        .iter()
        .filter_map(|n| QueueName::new(n).ok())
        .collect();
    out.sort();
    Ok(out)
}

/// The registered queues as their users name them, by name: each partition of a partitioned
/// queue (`orders:p0.<salt>`, registered by its workers) folded into its queue (`orders`), which
/// a handle opened with [`Queue::open`] then spans.
pub async fn logical_queues(store: &Store) -> Result<Vec<QueueName>> {
    Ok(fold_partitions(queues(store).await?))
}

fn fold_partitions(names: Vec<QueueName>) -> Vec<QueueName> {
    let mut out: Vec<QueueName> = names
        .into_iter()
        .map(|n| n.partition_of().map_or(n, |(base, _)| base))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// What a [`repair`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Repair {
    /// Nodes scanned (1 standalone; every master of a cluster).
    pub nodes: usize,
    /// Queues found by the scan.
    pub found: usize,
    /// Of those, the ones the registry did not hold.
    pub added: usize,
    /// False when a bound (calls per node, deadline) stopped the scan early.
    pub complete: bool,
}

/// The queue of a key `emq:{q}:meta`, if it is one.
fn queue_of_meta_key(key: &str) -> Option<QueueName> {
    let tag = key
        .strip_prefix(&format!("{PREFIX}:{{"))?
        .strip_suffix("}:meta")?;
    QueueName::new(tag).ok()
}

/// Scans one node for queue meta hashes; false when a bound stopped it.
async fn scan_node<C: redis::aio::ConnectionLike>(
    conn: &mut C,
    found: &mut BTreeSet<QueueName>,
    until: Instant,
) -> Result<bool> {
    let mut cursor: u64 = 0;
    for _ in 0..SCAN_MAX_CALLS {
        if Instant::now() >= until {
            return Ok(false);
        }
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{PREFIX}:{{*}}:meta"))
            .arg("COUNT")
            .arg(SCAN_COUNT)
            .arg("TYPE")
            .arg("hash")
            .query_async(conn)
            .await?;
        found.extend(keys.iter().filter_map(|k| queue_of_meta_key(k)));
        if next == 0 {
            return Ok(true);
        }
        cursor = next;
    }
    Ok(false)
}

/// Registers every queue found by a bounded `SCAN` of the datastore (every master of a cluster).
pub async fn repair(store: &Store) -> Result<Repair> {
    let until = Instant::now() + REPAIR_DEADLINE;
    let mut found = BTreeSet::new();
    let mut report = Repair {
        complete: true,
        ..Repair::default()
    };
    match (store.topology(), store.conn()) {
        (Topology::Standalone, mut conn) => {
            report.nodes = 1;
            report.complete = scan_node(&mut conn, &mut found, until).await?;
        }
        (Topology::Cluster, conn) => {
            for url in master_urls(store, conn).await? {
                let client = crate::store::client_for(&url, store.options())?;
                let mut node = client.get_multiplexed_async_connection().await?;
                report.nodes += 1;
                report.complete &= scan_node(&mut node, &mut found, until).await?;
            }
        }
    }
    report.found = found.len();
    if !found.is_empty() {
        let mut cmd = redis::cmd("SADD");
        cmd.arg(CoreKey::Queues.key());
        for q in &found {
            cmd.arg(q.as_str());
        }
        let added: usize = cmd.query_async(&mut store.conn()).await?;
        report.added = added;
    }
    Ok(report)
}

/// The URL of every cluster master (from `CLUSTER SLOTS`), with the seed URL's scheme and
/// credentials.
async fn master_urls(store: &Store, mut conn: Conn) -> Result<Vec<String>> {
    let slots: Vec<redis::Value> = redis::cmd("CLUSTER")
        .arg("SLOTS")
        .query_async(&mut conn)
        .await?;
    let seed = store
        .options()
        .urls
        .first()
        .ok_or_else(|| Error::new(ErrorCode::InvalidOption, "no datastore URL was given"))?;
    let (scheme, rest) = seed.split_once("://").unwrap_or(("redis", seed));
    let creds = rest
        .split_once('@')
        .map(|(c, _)| format!("{c}@"))
        .unwrap_or_default();
    let mut masters = BTreeSet::new();
    for range in slots {
        let redis::Value::Array(parts) = range else {
            continue;
        };
        let Some(redis::Value::Array(master)) = parts.get(2) else {
            continue;
        };
        let host = match master.first() {
            Some(redis::Value::BulkString(b)) => String::from_utf8_lossy(b).to_string(),
            Some(redis::Value::SimpleString(s)) => s.clone(),
            _ => continue,
        };
        if let Some(redis::Value::Int(port)) = master.get(1) {
            masters.insert(format!("{scheme}://{creds}{host}:{port}"));
        }
    }
    if masters.is_empty() {
        return Err(Error::new(
            ErrorCode::ServerUnavailable,
            "CLUSTER SLOTS named no master; is the cluster healthy?",
        ));
    }
    Ok(masters.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_keys_name_their_queue() {
        let q = QueueName::new("orders").unwrap();
        let meta = q.key(crate::Family::Meta);
        assert_eq!(queue_of_meta_key(meta.as_str()), Some(q));
        assert_eq!(queue_of_meta_key("emq:{orders}:wait"), None);
        assert_eq!(queue_of_meta_key("emq:{emq}:meta"), None);
        assert_eq!(queue_of_meta_key("other:{x}:meta"), None);
    }

    #[test]
    fn partitions_fold_into_their_queue() {
        let orders = QueueName::new("orders").unwrap();
        let mut names = crate::partitions::partition_names(&orders, 3);
        names.push(QueueName::new("plain").unwrap());
        names.push(QueueName::new("a").unwrap());
        let folded: Vec<String> = fold_partitions(names)
            .iter()
            .map(|n| n.as_str().to_string())
            .collect();
        assert_eq!(folded, ["a", "orders", "plain"]);
    }
}
