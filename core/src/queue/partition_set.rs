//! A partitioned queue's handle side (`partitions.rs` holds the names and the bounds): the count
//! stored in `{emq}:partitions`, settled when a handle opens (the stored one wins; a plain queue
//! holding jobs is not turned into a partitioned one) and forgotten when it is obliterated; and
//! [`Partitions`], the members in index order with the routing of a job to one of them.

use super::Queue;
use crate::error::{Error, ErrorCode, Result};
use crate::hash_slot::crc16;
use crate::job_id::JobId;
use crate::keyspace::CoreKey;
use crate::options::JobOptions;
use crate::partitions::check_count;

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
