//! A partitioned queue's global concurrency, lent to the partitions that have work: the queue's
//! limit `G` ([`Queue::set_global_concurrency`]) is kept as one share per partition (each
//! partition's own `concurrency`, which its claims honour as a plain queue's, `lib/claim.lua`),
//! and the workers move the shares to where the jobs are, so an uneven load still gets `G` jobs
//! running at once, never more.
//!
//! What this file owns:
//! - **The total**, stored in the logical queue's own meta hash (`share_total`, no job key), with
//!   a version (`share_v`) that every share write carries (`share_total.lua`). Setting it writes
//!   an even split (some partitions 0 when `G` is below the partition count).
//! - **Rounds**: every worker on a partitioned queue tries, every [`ROUND_EVERY`], to take the
//!   round's lease (`share_lease.lua`, on the server's clock, [`ROUND_LEASE`]; the holder renews it
//!   each round) with a fresh version. The holder reads every partition (its jobs in `active` and
//!   its ready jobs) and stamps the version on it (`share_set.lua`, which refuses a lower version
//!   than it has seen: a round whose lease lapsed, or one older than the last total, changes
//!   nothing), computes the targets ([`targets`]: max-min fair over the partitions' work, the rest
//!   spread evenly), **shrinks** first, then **grows** only into what is free: `G` minus, for each
//!   partition, the larger of its share and its jobs in `active` (read after its shrink; a
//!   partition never leases past its share, so that bound only falls). So the shares' claims never
//!   have more than `G` jobs active together, at any moment, even while shares move.
//!
//! A share raised wakes a worker of that partition. A partition that gets work while every slot
//! is busy elsewhere waits for the next round and for one of those jobs to end (about
//! [`ROUND_EVERY`] plus a job's run); while slots are free, the spread rest gives each partition
//! some at once. Without any worker the shares stay as last written.

use crate::error::{Error, ErrorCode, Result};
use crate::queue::partition_set::Partitions;
use crate::queue::Queue;
use crate::script;
use futures::future::try_join_all;
use std::time::Duration;

/// How often the round's holder moves the shares (and how often the others try to take over).
pub(crate) const ROUND_EVERY: Duration = Duration::from_millis(100);

/// How long a round's lease lasts without renewal: another worker takes over this long after the
/// holder stops.
pub(crate) const ROUND_LEASE: Duration = Duration::from_secs(1);

/// A worker that did not get the lease (or whose queue has no global concurrency) tries again
/// after this long.
const TRY_AGAIN: Duration = Duration::from_millis(500);

/// Sets (or with None lifts) the global concurrency of the partitioned queue `q`: the total and
/// a new version in its own slot, then an even split of shares over its partitions.
pub(crate) async fn set_total(q: &Queue, parts: &Partitions, total: Option<u32>) -> Result<()> {
    if total == Some(0) {
        return Err(Error::new(
            ErrorCode::InvalidOption,
            "global concurrency must be at least 1 (pause the queue to stop it)",
        ));
    }
    let v: i64 = script::SHARE_TOTAL
        .on(q.name(), None)?
        .arg(total.map(|t| t.to_string()).unwrap_or_default())
        .invoke(q.store())
        .await?;
    let n = parts.members.len();
    let each: Vec<String> = match total {
        None => vec!["-".to_string(); n],
        Some(t) => even(u64::from(t), n, 0)
            .into_iter()
            .map(|s| s.to_string())
            .collect(),
    };
    // A stale reply means a newer total came meanwhile: its shares stand.
    try_join_all(
        parts
            .members
            .iter()
            .zip(&each)
            .map(|(m, s)| share_set(m, v, s.clone())),
    )
    .await?;
    Ok(())
}

/// Forgets the total, version and lease of an obliterated partitioned queue.
pub(crate) async fn forget(q: &Queue) -> Result<()> {
    let _: i64 = redis::cmd("HDEL")
        .arg(&q.keys().meta)
        .arg("share_total")
        .arg("share_v")
        .arg("share_holder")
        .arg("share_until")
        .query_async(&mut q.store().conn())
        .await?;
    Ok(())
}

/// What `share_set.lua` saw on one partition.
#[derive(Clone, Copy, Debug)]
struct Seen {
    active: u64,
    ready: u64,
    /// The share before the call; None when it had none.
    share: Option<u64>,
}

/// One `share_set.lua` call; None when the version was stale.
async fn share_set(m: &Queue, version: i64, share: String) -> Result<Option<Seen>> {
    let r: Vec<i64> = script::SHARE_SET
        .on(m.name(), None)?
        .arg(version)
        .arg(share)
        .invoke(m.store())
        .await?;
    match r.as_slice() {
        [-1] => Ok(None),
        [active, ready, before] => Ok(Some(Seen {
            active: *active as u64,
            ready: *ready as u64,
            share: u64::try_from(*before).ok(),
        })),
        _ => Err(Error::new(
            ErrorCode::Internal,
            format!("share_set.lua answered {r:?}"),
        )),
    }
}

/// One round of moving the shares of the partitioned queue `q` (its partitions `parts`) as
/// `holder`; false when another holder has the lease or the queue has no global concurrency.
pub(crate) async fn round(q: &Queue, parts: &Partitions, holder: &str) -> Result<bool> {
    let r: Vec<i64> = script::SHARE_LEASE
        .on(q.name(), None)?
        .arg(holder)
        .arg(ROUND_LEASE.as_millis() as u64)
        .invoke(q.store())
        .await?;
    let (version, total) = match r.as_slice() {
        [v, t] if *v > 0 => (*v, (*t).max(0) as u64),
        _ => return Ok(false),
    };
    let members = &parts.members;
    let read = try_join_all(members.iter().map(|m| share_set(m, version, String::new()))).await?;
    let Some(seen) = read.into_iter().collect::<Option<Vec<Seen>>>() else {
        return Ok(true);
    };
    let demand: Vec<u64> = seen.iter().map(|s| s.active + s.ready).collect();
    let target = targets(total, &demand, version as usize);
    // What each partition may have in `active` from now on, whatever it is told next.
    let mut reserved: Vec<u64> = seen
        .iter()
        .map(|s| s.share.unwrap_or(u64::MAX).max(s.active))
        .collect();
    // Shrink first: a share with none (lifted meanwhile) counts as unbounded.
    let shrink: Vec<usize> = (0..members.len())
        .filter(|&i| seen[i].share.map_or(true, |s| target[i] < s))
        .collect();
    let shrunk = try_join_all(
        shrink
            .iter()
            .map(|&i| share_set(&members[i], version, target[i].to_string())),
    )
    .await?;
    for (&i, after) in shrink.iter().zip(&shrunk) {
        let Some(after) = after else {
            return Ok(true);
        };
        reserved[i] = target[i].max(after.active);
    }
    // Then grow, into what is free.
    let mut free = total.saturating_sub(reserved.iter().fold(0u64, |a, r| a.saturating_add(*r)));
    for i in 0..members.len() {
        let Some(share) = seen[i].share else { continue };
        if target[i] <= share || free == 0 || shrink.contains(&i) {
            continue;
        }
        let grow = (target[i] - share).min(free);
        match share_set(&members[i], version, (share + grow).to_string()).await? {
            Some(_) => free -= grow,
            None => return Ok(true),
        }
    }
    Ok(true)
}

/// The round loop of a worker on the partitioned queue `q` (its lend task; it ends when the
/// worker's tasks are stopped).
pub(crate) async fn lend_loop(q: Queue, holder: String) {
    let Some(parts) = q.spread().cloned() else {
        return;
    };
    loop {
        let pause = match round(&q, &parts, &holder).await {
            Ok(true) => ROUND_EVERY,
            Ok(false) | Err(_) => TRY_AGAIN,
        };
        tokio::time::sleep(pause).await;
    }
}

/// The shares `total` is split into over partitions whose work (jobs active and ready) is
/// `demand`: max-min fair (every partition with work gets the same, or all it has, level by level),
/// and what no partition's work needs spread evenly over all, so a burst anywhere starts at once.
/// `turn` rotates which partitions get the units that do not divide evenly.
pub(crate) fn targets(total: u64, demand: &[u64], turn: usize) -> Vec<u64> {
    let n = demand.len();
    let mut t = vec![0u64; n];
    if n == 0 {
        return t;
    }
    let order: Vec<usize> = (0..n).map(|k| (k + turn) % n).collect();
    let mut left = total;
    loop {
        let wanting: Vec<usize> = order
            .iter()
            .copied()
            .filter(|&i| t[i] < demand[i])
            .collect();
        if wanting.is_empty() || left == 0 {
            break;
        }
        let each = (left / wanting.len() as u64).max(1);
        for i in wanting {
            if left == 0 {
                break;
            }
            let g = each.min(demand[i] - t[i]).min(left);
            t[i] += g;
            left -= g;
        }
    }
    for (i, e) in order.iter().zip(even(left, n, 0)) {
        t[*i] += e;
    }
    t
}

/// `total` split over `n` as evenly as whole numbers allow, the first `total % n` (from `turn`)
/// one more.
fn even(total: u64, n: usize, turn: usize) -> Vec<u64> {
    let n64 = n as u64;
    (0..n)
        .map(|i| {
            let k = ((i + n - turn % n.max(1)) % n.max(1)) as u64;
            total / n64 + u64::from(k < total % n64)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_follow_the_work_and_never_pass_the_total() {
        // All the work in one partition: it gets everything.
        assert_eq!(targets(8, &[100, 0, 0, 0], 0), vec![8, 0, 0, 0]);
        // Two busy partitions share evenly; an idle one gets nothing while slots are short.
        assert_eq!(targets(8, &[100, 0, 100, 0], 0), vec![4, 0, 4, 0]);
        // One needs little: it gets what it needs, the other the rest.
        assert_eq!(targets(8, &[1, 100, 0], 0), vec![1, 7, 0]);
        // Less work than slots: the rest spread evenly over all.
        assert_eq!(targets(8, &[2, 0, 0, 1], 0), vec![4, 1, 1, 2]);
        // Fewer slots than busy partitions: the odd ones rotate with the turn.
        assert_eq!(targets(2, &[5, 5, 5], 0), vec![1, 1, 0]);
        assert_eq!(targets(2, &[5, 5, 5], 1), vec![0, 1, 1]);
        assert_eq!(targets(1, &[0, 0, 0], 2), vec![0, 0, 1]);
        for total in [1u64, 3, 7, 64] {
            for demand in [
                vec![0, 0],
                vec![3, 9, 0, 1],
                vec![50; 6],
                vec![1, 0, 0, 0, 0],
            ] {
                for turn in 0..4 {
                    let t = targets(total, &demand, turn);
                    assert_eq!(t.iter().sum::<u64>(), total, "{total} {demand:?}");
                }
            }
        }
        assert_eq!(even(7, 3, 0), vec![3, 2, 2]);
        assert_eq!(even(7, 3, 1), vec![2, 3, 2]);
    }
}
