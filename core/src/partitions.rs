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
//! The count's settling and the routing live with the queue handle, in `queue/partition_set.rs`
//! (this file knows no `Queue`); how each of the queue's calls spans the partitions is in
//! `queue/partitioned.rs`; how a worker serves them (one member per partition, equal shares) in
//! `worker/builder.rs`.

use crate::error::{Error, ErrorCode, Result};
use crate::hash_slot::SLOTS;
use crate::keyspace::QueueName;

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
