//! Partitioned queues: one logical queue whose jobs live in N slots, so one hot queue can spread
//! over a cluster's masters (or a Dragonfly's threads) instead of living on one.
//!
//! What this file owns:
//! - **Names.** Partition `i` of queue `orders` is the queue `orders:p<i>.<salt>` (the one form of
//!   tag with a `:`, which no plain name may contain: `keyspace/name.rs`), a queue like any other, with
//!   every key in its own slot. `salt` is the smallest number that puts the tag's slot in the `i`-th
//!   of N equal slot ranges, so the partitions spread evenly over the cluster's slot ranges (and so
//!   over masters that own equal ranges), not by the luck of CRC16.
//! - **The layout**, the queue's and not the handle's ([`Layout`]): stored once in the core's
//!   `{emq}:partitions` hash (name → `N`, `HSETNX`; after growing, the counts of every generation,
//!   `N0,N1,…`), so a handle opened without a count finds it and one opened with another count is
//!   refused (`invalid_option`). A plain queue that already holds jobs is not turned into a
//!   partitioned one (its jobs would be stranded). Growing (`Queue::grow_partitions`,
//!   `queue/grow.rs`) appends partitions: the first `N0` are named as above, and each later one
//!   is put in the middle of the widest gap between the slots of those before it
//!   ([`Layout::names`]), so the partitions stay spread. Shrinking is refused: a partition's jobs
//!   (and its keys' state) live in its slot, and no step could take them out while it is served.
//! - **Routing.** A job with a `group` goes to the partition of its group, and one with a `dedup`
//!   key to the partition of that key (so a group stays in one partition, where its fairness and
//!   limits are kept, and a dedup key is decided in one place); a job with an id of its caller to
//!   the partition of its id (an add retried with the same id lands on the same partition and
//!   stays a no-op). Keys and ids route over the first generation's `N0` partitions, the **home**
//!   partitions, whatever the queue has grown to: a key never moves, so per-key order, a group's
//!   limits and a dedup decision hold across a growth. The jobs with neither (the common add) go
//!   to the emptier of two partitions of all of them (`queue/partition_set.rs`), so the grown
//!   partitions take their share of the work at once.
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

/// A partitioned queue's generations: the count it was made with, then the count after each
/// growth, strictly increasing (stored as `N0,N1,…`; a queue never grown as `N0`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    counts: Vec<u16>,
}

impl Layout {
    /// A queue made with `count` partitions, never grown.
    pub fn new(count: u16) -> Layout {
        Layout {
            counts: vec![count],
        }
    }

    /// The layout as stored (`8`, `8,12`); None when the text is not one.
    pub fn parse(text: &str) -> Option<Layout> {
        let counts: Vec<u16> = text
            .split(',')
            .map(|c| c.parse::<u16>().ok().filter(|n| check_count(*n).is_ok()))
            .collect::<Option<_>>()?;
        counts
            .windows(2)
            .all(|w| w[0] < w[1])
            .then_some(Layout { counts })
    }

    /// As stored.
    pub fn text(&self) -> String {
        let c: Vec<String> = self.counts.iter().map(|c| c.to_string()).collect();
        c.join(",")
    }

    /// The partitions it has now.
    pub fn count(&self) -> u16 {
        *self.counts.last().expect("a layout has a generation")
    }

    /// The first generation's count: the home partitions keys and ids route over.
    pub fn home(&self) -> u16 {
        self.counts[0]
    }

    /// This layout grown to `count` partitions: `invalid_option` unless it is more than it has now
    /// and at most [`MAX_PARTITIONS`].
    pub fn grown(&self, count: u16) -> Result<Layout> {
        check_count(count)?;
        if count <= self.count() {
            return Err(Error::new(
                ErrorCode::InvalidOption,
                format!(
                    "a queue's partitions can only grow: it has {}, asked for {count} (shrinking is not supported: a partition's jobs live in its slot)",
                    self.count()
                ),
            ));
        }
        let mut counts = self.counts.clone();
        counts.push(count);
        Ok(Layout { counts })
    }

    /// The names of its partitions, in index order: the first generation's as
    /// [`partition_names`] gives them, then each later one in the middle of the widest gap
    /// between the slots of those before it (of 64 slots around that middle, the first a salt
    /// hits), so growing keeps the partitions spread over the slot ranges.
    pub fn names(&self, base: &QueueName) -> Vec<QueueName> {
        let mut names = partition_names(base, self.home());
        let mut slots: Vec<u32> = names.iter().map(|p| u32::from(p.slot())).collect();
        let all = u32::from(SLOTS);
        for i in self.home()..self.count() {
            let mut sorted = slots.clone();
            sorted.sort_unstable();
            // The widest gap, going round: from each slot to the next (the last to the first).
            let (from, width) = (0..sorted.len())
                .map(|k| {
                    let a = sorted[k];
                    let b = sorted.get(k + 1).copied().unwrap_or(sorted[0] + all);
                    (a, b - a)
                })
                .max_by_key(|&(a, w)| (w, std::cmp::Reverse(a)))
                .expect("a layout has partitions");
            let mid = from + width / 2;
            let half = (width / 2).clamp(1, 32);
            let name = (0u32..)
                .map(|salt| QueueName::partition(base, i, salt))
                .find(|p| {
                    let s = u32::from(p.slot());
                    // Within `half` of the middle, going round.
                    let d = (s + all - mid % all) % all;
                    d < half || all - d <= half
                })
                .expect("some salt hits every window of slots");
            slots.push(u32::from(name.slot()));
            names.push(name);
        }
        names
    }
}

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

/// A partition count as a binding passed it (any integer): `invalid_option`, naming the value,
/// unless it is 1 to [`MAX_PARTITIONS`].
pub fn count_from(n: i128) -> Result<u16> {
    match u16::try_from(n) {
        Ok(count) if check_count(count).is_ok() => Ok(count),
        _ => Err(Error::new(
            ErrorCode::InvalidOption,
            format!("partitions must be between 1 and {MAX_PARTITIONS}, got {n}"),
        )),
    }
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
            assert_eq!(Layout::new(n).names(&base), names);
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

    #[test]
    fn a_grown_layout_keeps_its_partitions_and_spreads_the_new_ones() {
        let base = QueueName::new("orders").unwrap();
        let four = Layout::new(4);
        let grown = four.grown(6).unwrap().grown(8).unwrap();
        assert_eq!(grown.text(), "4,6,8");
        assert_eq!(Layout::parse("4,6,8"), Some(grown.clone()));
        assert_eq!((grown.home(), grown.count()), (4, 8));
        let names = grown.names(&base);
        assert_eq!(&names[..4], &four.names(&base)[..]);
        assert_eq!(names.len(), 8);
        for (i, p) in names.iter().enumerate() {
            assert_eq!(p.partition_of(), Some((base.clone(), i as u16)));
            assert_eq!(QueueName::new(p.as_str()).unwrap(), *p);
        }
        // Every gap between neighbouring slots is at most about a quarter of the ring.
        let mut slots: Vec<u32> = names.iter().map(|p| u32::from(p.slot())).collect();
        slots.sort_unstable();
        let widest = (0..8)
            .map(|k| slots.get(k + 1).copied().unwrap_or(slots[0] + 16384) - slots[k])
            .max()
            .unwrap();
        assert!(widest <= 16384 / 4 + 64, "{slots:?}");
        // Only growing, within bounds; a stored text is checked.
        assert!(four.grown(4).is_err());
        assert!(four.grown(3).is_err());
        assert!(four.grown(257).is_err());
        for bad in ["", "4,4", "6,4", "0", "4,x", "4,300"] {
            assert_eq!(Layout::parse(bad), None, "{bad:?}");
        }
        assert_eq!(Layout::parse("8"), Some(Layout::new(8)));
    }
}
