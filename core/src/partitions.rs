//! Partitioned queues: one logical queue whose jobs live in N slots, so one hot queue can spread
//! over a cluster's masters (or a Dragonfly's threads) instead of living on one.
//!
//! What this file owns:
//! - **Names.** Partition `i` of queue `orders` is the queue `orders:p<i>.<salt>` (the one form of
//!   tag with a `:`, which no plain name may contain: `keyspace/name.rs`), a queue like any other, with
//!   every key in its own slot. `salt` is the smallest number that puts the tag's slot in the `i`-th
//!   of N equal slot ranges, so the partitions spread evenly over the cluster's slot ranges (and so
//!   over masters that own equal ranges), not by the luck of CRC16.
//! - **The count**, the queue's and not the handle's: stored once in the core's `{emq}:partitions`
//!   hash (name → N, `HSETNX`), so a handle opened without a count finds it and one opened with
//!   another count is refused (`invalid_option`). A plain queue that already holds jobs is not
//!   turned into a partitioned one (its jobs would be stranded); growing N is not built yet.
//! - **Routing.** A job with a `group` goes to the partition of its group, and one with a `dedup`
//!   key to the partition of that key (so a group stays in one partition, where its fairness and
//!   limits are kept, and a dedup key is decided in one place); any other job to the partition of
//!   its id (minted before routing), so an add retried with the same id lands on the same partition
//!   and stays a no-op, and ids spread evenly.
//!
//! How each of the queue's calls spans the partitions is in `queue/partitioned.rs`; how a worker
//! serves them (one member per partition, equal shares) in `worker/builder.rs`.

use crate::error::{Error, ErrorCode, Result};
use crate::hash_slot::{crc16, SLOTS};
use crate::job_id::JobId;
use crate::keyspace::{CoreKey, QueueName};
use crate::options::JobOptions;
use crate::queue::Queue;

/// Most partitions a queue may have.
pub const MAX_PARTITIONS: u16 = 256;

/// The names of the `count` partitions of `base`: partition `i`'s slot lies in the `i`-th of
/// `count` equal ranges of the cluster's slots.
pub fn partition_names(base: &QueueName, count: u16) -> Vec<QueueName> {
    let slots = u32::from(SLOTS);
    let n = u32::from(count.max(1));
    (0..count)
        .map(|i| {
            let lo = u32::from(i) * slots / n;
            let hi = (u32::from(i) + 1) * slots / n;
            (0u32..)
                .map(|salt| QueueName::partition(base, i, salt))
                .find(|p| (lo..hi).contains(&u32::from(p.slot())))
                .expect("every range of at least 64 slots is hit by some salt")
        })
        .collect()
}

/// `invalid_option` unless `count` is 1 to [`MAX_PARTITIONS`].
pub(crate) fn check_count(count: u16) -> Result<()> {
    if (1..=MAX_PARTITIONS).contains(&count) {
        Ok(())
    } else {
        Err(Error::new(
            ErrorCode::InvalidOption,
            format!("partitions must be between 1 and {MAX_PARTITIONS}, got {count}"),
        ))
    }
}

/// The partition count stored for `name`, if it is a partitioned queue.
pub(crate) async fn stored_count(q: &Queue) -> Result<Option<u16>> {
    let v: Option<String> = redis::cmd("HGET")
        .arg(CoreKey::Partitions.key())
        .arg(q.name().as_str())
        .query_async(&mut q.store().conn())
        .await?;
    match v {
        None => Ok(None),
        Some(t) => t.parse::<u16>().map(Some).map_err(|_| {
            Error::new(
                ErrorCode::Internal,
                format!("{{emq}}:partitions holds {t:?} for queue {}", q.name()),
            )
        }),
    }
}

/// Settles the partition count of `plain` (a plain handle on the logical name): the stored one,
/// or `asked` stored now when none is. None: a plain queue.
pub(crate) async fn settle_count(plain: &Queue, asked: Option<u16>) -> Result<Option<u16>> {
    if let Some(n) = asked {
        check_count(n)?;
    }
    if plain.name().partition_of().is_some() {
        return match asked {
            None | Some(1) => Ok(None),
            Some(_) => Err(Error::new(
                ErrorCode::InvalidOption,
                format!(
                    "{} is a partition of a partitioned queue; open the queue itself",
                    plain.name()
                ),
            )),
        };
    }
    let stored = stored_count(plain).await?;
    let mismatch = |stored: u16, asked: u16| {
        Error::new(
            ErrorCode::InvalidOption,
            format!(
                "queue {} has {stored} partitions; it was opened with partitions={asked} (growing or shrinking a queue's partitions is not supported yet)",
                plain.name()
            ),
        )
    };
    match (asked, stored) {
        (None, s) => Ok(s.filter(|&n| n > 1)),
        (Some(a), Some(s)) if a == s => Ok(Some(s).filter(|&n| n > 1)),
        (Some(a), Some(s)) => Err(mismatch(s, a)),
        (Some(1), None) => Ok(None),
        (Some(a), None) => {
            let held = plain.counts().await?.total();
            if held > 0 {
                return Err(Error::new(
                    ErrorCode::InvalidOption,
                    format!(
                        "queue {} holds {held} jobs as a plain queue; it cannot be opened with partitions={a} (moving a plain queue's jobs into partitions is not supported yet)",
                        plain.name()
                    ),
                ));
            }
            let _: i64 = redis::cmd("HSETNX")
                .arg(CoreKey::Partitions.key())
                .arg(plain.name().as_str())
                .arg(a)
                .query_async(&mut plain.store().conn())
                .await?;
            // Another handle may have stored a count first: that one is the queue's.
            match stored_count(plain).await? {
                Some(s) if s == a => Ok(Some(a)),
                Some(s) => Err(mismatch(s, a)),
                None => Ok(Some(a)),
            }
        }
    }
}

/// Forgets the stored count of an obliterated partitioned queue (a later open may choose another).
pub(crate) async fn forget_count(q: &Queue) -> Result<()> {
    let _: i64 = redis::cmd("HDEL")
        .arg(CoreKey::Partitions.key())
        .arg(q.name().as_str())
        .query_async(&mut q.store().conn())
        .await?;
    Ok(())
}

/// The partitions of one partitioned queue, in index order.
pub(crate) struct Partitions {
    pub(crate) members: Vec<Queue>,
}

impl Partitions {
    /// The partition a key (a group, a dedup key) lives in.
    pub(crate) fn for_key(&self, key: &str) -> &Queue {
        &self.members[self.key_index(key)]
    }

    /// The partition of a job without a key, by its id.
    pub(crate) fn for_id(&self, id: JobId) -> &Queue {
        &self.members[self.id_index(id)]
    }

    /// The index of the partition a job with these options (its id settled) goes to.
    pub(crate) fn job_index(&self, id: JobId, options: &JobOptions) -> usize {
        match options.group.as_deref().or(options.dedup.as_deref()) {
            Some(key) => self.key_index(key),
            None => self.id_index(id),
        }
    }

    fn key_index(&self, key: &str) -> usize {
        usize::from(crc16(key.as_bytes())) % self.members.len()
    }

    fn id_index(&self, id: JobId) -> usize {
        // A 64-bit mix, so ids minted in one millisecond (differing in low bits) spread too.
        let mut x = id.as_u64();
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        (x % self.members.len() as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_spread_over_equal_slot_ranges_and_parse_back() {
        let base = QueueName::new("orders").unwrap();
        for n in [2u16, 3, 6, 8, 256] {
            let names = partition_names(&base, n);
            assert_eq!(names.len(), usize::from(n));
            for (i, p) in names.iter().enumerate() {
                let lo = i as u32 * 16384 / u32::from(n);
                let hi = (i as u32 + 1) * 16384 / u32::from(n);
                assert!((lo..hi).contains(&u32::from(p.slot())), "{p} in {lo}..{hi}");
                assert_eq!(QueueName::new(p.as_str()).unwrap(), *p);
                assert_eq!(p.partition_of(), Some((base.clone(), i as u16)));
                assert_ne!(p.as_str(), "emq");
            }
        }
        // Not the partition form: still refused.
        for bad in [
            "orders:p",
            "orders:p1",
            "orders:p01.2",
            "orders:x1.2",
            "emq:p1.2",
            "a:b:p1.2",
        ] {
            assert!(QueueName::new(bad).is_err(), "{bad}");
        }
        assert!(QueueName::new("orders").unwrap().partition_of().is_none());
    }
}
