//! A partitioned queue's global concurrency and rate limit, lent to the partitions that have
//! work: each limit `L` ([`Queue::set_global_concurrency`], [`Queue::set_rate_limit`]) is kept as
//! one share per partition (each partition's own `concurrency` and `rl_max`, which its claims
//! honour as a plain queue's, `lib/claim.lua`), and the workers move the shares to where the jobs
//! are, so an uneven load still gets the whole limit, never more.
//!
//! What this file owns:
//! - **The totals**, stored in the logical queue's own meta hash (`share_total`, `share_rate`; no
//!   job key), with a version (`share_v`) that every share write carries (`share_total.lua`).
//!   Setting a limit writes an even split (some partitions 0 when `L` is below the partition
//!   count; the rate limit's window the same on each).
//! - **Rounds**: every worker on a partitioned queue tries, every [`ROUND_EVERY`], to take the
//!   round's lease (`share_lease.lua`, on the server's clock, [`ROUND_LEASE`]; the holder renews it
//!   each round) with a fresh version. The holder reads every partition (its jobs in `active`, its
//!   starts in the current rate window, its ready jobs) and stamps the version on it
//!   (`share_set.lua`, which refuses a lower version than it has seen: a round whose lease lapsed,
//!   or one older than the last limit set, changes nothing), computes the targets ([`targets`]:
//!   max-min fair over the partitions' work, the rest spread evenly), **shrinks** first, then
//!   **grows** only into what is free: `L` minus, for each partition, the larger of its share and
//!   its use (jobs in `active`; starts in its window), read after its shrink (a partition never
//!   goes past its share, so that bound only falls). So the partitions together never have more
//!   than `L` jobs active, nor more than `L` starts counted in their current windows, at any
//!   moment, even while shares move. (Each partition's rate window is its own fixed window, as a
//!   plain queue's.)
//!
//! A share raised wakes a worker of that partition. A partition that gets work while the whole
//! limit is used elsewhere waits for the next round and for room (a job's end; a window's end);
//! while some is free, the spread rest gives each partition some at once. Without any worker, or
//! while a partition does not answer (a round stops at the first error), the shares stay as last
//! written.

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

/// A worker that did not get the lease (or whose queue has neither limit) tries again after this
/// long.
const TRY_AGAIN: Duration = Duration::from_millis(500);

/// A limit that is kept as shares: the global concurrency, or the rate limit's max.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Limit {
    /// Most jobs active at once (each share bounds its partition's `active`).
    Concurrency,
    /// Most jobs started per window (each share bounds its partition's starts in its window).
    Rate,
}

impl Limit {
    /// The logical queue's meta field that holds the total.
    fn field(self) -> &'static str {
        match self {
            Limit::Concurrency => "share_total",
            Limit::Rate => "share_rate",
        }
    }
}

/// Sets (or with None lifts) `limit` on the partitioned queue `q`: the total and a new version in
/// its own slot, then an even split of shares over its partitions (for the rate limit, each with
/// `window`).
pub(crate) async fn set_total(
    q: &Queue,
    parts: &Partitions,
    limit: Limit,
    total: Option<u32>,
    window: Option<Duration>,
) -> Result<()> {
    let v: i64 = script::SHARE_TOTAL
        .on(q.name(), None)?
        .arg(limit.field())
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
    let window = window
        .map(|w| (w.as_millis() as u64).to_string())
        .unwrap_or_default();
    // A stale reply means a newer limit came meanwhile: its shares stand.
    try_join_all(parts.members.iter().zip(each).map(|(m, share)| {
        let (conc, rate) = match limit {
            Limit::Concurrency => (share, String::new()),
            Limit::Rate => (String::new(), share),
        };
        share_set(m, v, conc, rate, window.clone())
    }))
    .await?;
    Ok(())
}

/// Forgets the totals, version and lease of an obliterated partitioned queue.
pub(crate) async fn forget(q: &Queue) -> Result<()> {
    let _: i64 = redis::cmd("HDEL")
        .arg(&q.keys().meta)
        .arg("share_total")
        .arg("share_rate")
        .arg("share_v")
        .arg("share_holder")
        .arg("share_until")
        .arg("share_parts")
        .query_async(&mut q.store().conn())
        .await?;
    Ok(())
}

/// What `share_set.lua` saw on one partition.
#[derive(Clone, Copy, Debug)]
struct Seen {
    active: u64,
    ready: u64,
    /// The concurrency share before the call; None when it had none.
    conc: Option<u64>,
    /// Starts in the current rate window.
    used: u64,
    /// The rate share before the call; None when it had none.
    rate: Option<u64>,
}

/// One `share_set.lua` call (`''` keeps a share); None when the version was stale.
async fn share_set(
    m: &Queue,
    version: i64,
    conc: String,
    rate: String,
    window: String,
) -> Result<Option<Seen>> {
    let r: Vec<i64> = script::SHARE_SET
        .on(m.name(), None)?
        .arg(version)
        .arg(conc)
        .arg(rate)
        .arg(window)
        .invoke(m.store())
        .await?;
    match r.as_slice() {
        [-1] => Ok(None),
        [active, ready, conc, used, rate] => Ok(Some(Seen {
            active: *active as u64,
            ready: *ready as u64,
            conc: u64::try_from(*conc).ok(),
            used: (*used).max(0) as u64,
            rate: u64::try_from(*rate).ok(),
        })),
        _ => Err(Error::new(
            ErrorCode::Internal,
            format!("share_set.lua answered {r:?}"),
        )),
    }
}

/// One limit's plan for a round: the targets, and what each partition may use from now on
/// whatever it is told next (the larger of its share and its use: a partition never goes past
/// its share, so that bound only falls).
struct Plan {
    total: u64,
    target: Vec<u64>,
    share: Vec<Option<u64>>,
    reserved: Vec<u64>,
}

impl Plan {
    fn new(
        total: u64,
        share: Vec<Option<u64>>,
        used: Vec<u64>,
        demand: &[u64],
        turn: usize,
    ) -> Plan {
        let reserved = share
            .iter()
            .zip(&used)
            .map(|(s, u)| s.unwrap_or(u64::MAX).max(*u))
            .collect();
        Plan {
            total,
            target: targets(total, demand, turn),
            share,
            reserved,
        }
    }

    /// The share to write to partition `i` when shrinking ('' keeps it): a share with none (lifted
    /// meanwhile) counts as unbounded.
    fn shrink(&self, i: usize) -> Option<u64> {
        self.share[i]
            .map_or(true, |s| self.target[i] < s)
            .then_some(self.target[i])
    }

    /// After the shrinks (`used` as they left each shrunk partition), the share to grow each
    /// partition to, into what is free.
    fn grows(&mut self, used_after: &[Option<u64>]) -> Vec<Option<u64>> {
        for (i, u) in used_after.iter().enumerate() {
            if let Some(u) = u {
                self.reserved[i] = self.target[i].max(*u);
            }
        }
        let mut free = self
            .total
            .saturating_sub(self.reserved.iter().fold(0u64, |a, r| a.saturating_add(*r)));
        (0..self.target.len())
            .map(|i| {
                let share = self.share[i]?;
                if used_after[i].is_some() || self.target[i] <= share || free == 0 {
                    return None;
                }
                let grow = (self.target[i] - share).min(free);
                free -= grow;
                Some(share + grow)
            })
            .collect()
    }
}

fn text(v: Option<u64>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

/// One round of moving the shares of the partitioned queue `q` (its partitions `parts`) as
/// `holder`; false when another holder has the lease or the queue has neither limit.
pub(crate) async fn round(q: &Queue, parts: &Partitions, holder: &str) -> Result<bool> {
    let r: Vec<i64> = script::SHARE_LEASE
        .on(q.name(), None)?
        .arg(holder)
        .arg(ROUND_LEASE.as_millis() as u64)
        .arg(parts.members.len())
        .invoke(q.store())
        .await?;
    let (version, conc_total, rate_total) = match r.as_slice() {
        [v, c, r] if *v > 0 => (*v, u64::try_from(*c).ok(), u64::try_from(*r).ok()),
        _ => return Ok(false),
    };
    let members = &parts.members;
    let n = members.len();
    let keep = || String::new();
    let read = try_join_all(
        members
            .iter()
            .map(|m| share_set(m, version, keep(), keep(), keep())),
    )
    .await?;
    let Some(seen) = read.into_iter().collect::<Option<Vec<Seen>>>() else {
        return Ok(true);
    };
    let turn = version as usize;
    // Each limit's plan from its share and use on every partition (its work: use plus ready).
    let plan = |total: u64, share: fn(&Seen) -> Option<u64>, used: fn(&Seen) -> u64| {
        let demand: Vec<u64> = seen.iter().map(|s| used(s) + s.ready).collect();
        Plan::new(
            total,
            seen.iter().map(share).collect(),
            seen.iter().map(used).collect(),
            &demand,
            turn,
        )
    };
    let mut conc = conc_total.map(|t| plan(t, |s| s.conc, |s| s.active));
    let mut rate = rate_total.map(|t| plan(t, |s| s.rate, |s| s.used));
    // Shrink first.
    let shrink: Vec<(Option<u64>, Option<u64>)> = (0..n)
        .map(|i| {
            (
                conc.as_ref().and_then(|p| p.shrink(i)),
                rate.as_ref().and_then(|p| p.shrink(i)),
            )
        })
        .collect();
    let shrunk = try_join_all(shrink.iter().enumerate().map(|(i, (c, r))| async move {
        if c.is_none() && r.is_none() {
            return Ok(Some(None));
        }
        let after = share_set(&members[i], version, text(*c), text(*r), String::new()).await?;
        Ok::<_, Error>(after.map(Some))
    }))
    .await?;
    let Some(shrunk) = shrunk.into_iter().collect::<Option<Vec<Option<Seen>>>>() else {
        return Ok(true);
    };
    // Then grow, into what is free.
    let conc_grows = conc.as_mut().map(|p| {
        let after: Vec<Option<u64>> = (0..n)
            .map(|i| shrink[i].0.and(shrunk[i].map(|s| s.active)))
            .collect();
        p.grows(&after)
    });
    let rate_grows = rate.as_mut().map(|p| {
        let after: Vec<Option<u64>> = (0..n)
            .map(|i| shrink[i].1.and(shrunk[i].map(|s| s.used)))
            .collect();
        p.grows(&after)
    });
    try_join_all((0..n).map(|i| {
        let c = conc_grows.as_ref().and_then(|g| g[i]);
        let r = rate_grows.as_ref().and_then(|g| g[i]);
        async move {
            if c.is_none() && r.is_none() {
                return Ok(());
            }
            share_set(&members[i], version, text(c), text(r), String::new()).await?;
            Ok::<_, Error>(())
        }
    }))
    .await?;
    Ok(true)
}

/// The round loop of a worker on the partitioned queue `q` (its lend task; it ends when the
/// worker's tasks are stopped).
pub(crate) async fn lend_loop(q: Queue, holder: String) {
    if q.spread().is_none() {
        return;
    }
    loop {
        // The partitions as the handle knows them now (a growth reaches it within a second).
        let Some(parts) = q.spread() else { return };
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
