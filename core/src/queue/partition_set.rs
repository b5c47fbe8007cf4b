//! A partitioned queue's handle side (`partitions.rs` holds the names, the layout and the
//! bounds): the layout stored in `{emq}:partitions`, settled when a handle opens (the stored one
//! wins; a plain queue holding jobs is not turned into a partitioned one), read again as the
//! handle goes (`queue/grow.rs`) and forgotten when the queue is obliterated; and [`Partitions`],
//! the members in index order with the routing of a job to one of them.

use super::Queue;
use crate::error::{Error, ErrorCode, Result};
use crate::hash_slot::crc16;
use crate::job_id::JobId;
use crate::keyspace::CoreKey;
use crate::options::JobOptions;
use crate::partitions::{check_count, Layout};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The layout stored for `name`, if it is a partitioned queue.
pub(crate) async fn stored_layout(q: &Queue) -> Result<Option<Layout>> {
    let v: Option<String> = redis::cmd("HGET")
        .arg(CoreKey::Partitions.key())
        .arg(q.name().as_str())
        .query_async(&mut q.store().conn())
        .await?;
    match v {
        None => Ok(None),
        Some(t) => Layout::parse(&t).map(Some).ok_or_else(|| {
            Error::new(
                ErrorCode::Internal,
                format!("{{emq}}:partitions holds {t:?} for queue {}", q.name()),
            )
        }),
    }
}

/// Settles the layout of `plain` (a plain handle on the logical name): the stored one, or `asked`
/// partitions stored now when none is. None: a plain queue.
pub(crate) async fn settle_layout(plain: &Queue, asked: Option<u16>) -> Result<Option<Layout>> {
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
    let stored = stored_layout(plain).await?;
    let mismatch = |stored: u16, asked: u16| {
        Error::new(
            ErrorCode::InvalidOption,
            format!(
                "queue {} has {stored} partitions; it was opened with partitions={asked} (grow it with grow_partitions; shrinking is not supported)",
                plain.name()
            ),
        )
    };
    let partitioned = |l: Layout| Some(l).filter(|l| l.count() > 1);
    match (asked, stored) {
        (None, s) => Ok(s.and_then(partitioned)),
        (Some(a), Some(s)) if a == s.count() => Ok(partitioned(s)),
        (Some(a), Some(s)) => Err(mismatch(s.count(), a)),
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
            match stored_layout(plain).await? {
                Some(s) if s.count() == a => Ok(Some(s)),
                Some(s) => Err(mismatch(s.count(), a)),
                None => Ok(Some(Layout::new(a))),
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

/// A handle's partitions as it last read them, swapped when a read finds the queue grown
/// (`grow.rs`), and the lanes (one connection per master, a cluster's) its members talk over.
pub(crate) struct PartsCell {
    now: std::sync::RwLock<Arc<Partitions>>,
    lanes: std::sync::Mutex<Vec<(String, crate::store::Store)>>,
    epoch: Instant,
    /// When the layout was last read (ms since `epoch`), and whether a read is under way.
    pub(crate) checked_ms: AtomicU64,
    pub(crate) checking: AtomicBool,
}

impl PartsCell {
    pub(crate) fn new(parts: Partitions) -> PartsCell {
        PartsCell {
            now: std::sync::RwLock::new(Arc::new(parts)),
            lanes: std::sync::Mutex::new(Vec::new()),
            epoch: Instant::now(),
            checked_ms: AtomicU64::new(0),
            checking: AtomicBool::new(false),
        }
    }

    /// The partitions now.
    pub(crate) fn now(&self) -> Arc<Partitions> {
        self.now.read().expect("partitions").clone()
    }

    /// Puts `parts` in place of the partitions (a grown layout only: never fewer).
    pub(crate) fn set(&self, parts: Partitions) {
        let mut now = self.now.write().expect("partitions");
        if parts.members.len() >= now.members.len() {
            *now = Arc::new(parts);
        }
    }

    pub(crate) fn ms(&self) -> u64 {
        (self.epoch.elapsed().as_millis() as u64).max(1)
    }

    pub(crate) fn lane_of(&self, master: &str) -> Option<crate::store::Store> {
        let lanes = self.lanes.lock().expect("lanes");
        lanes
            .iter()
            .find(|(m, _)| m == master)
            .map(|(_, l)| l.clone())
    }

    pub(crate) fn add_lane(&self, master: String, lane: crate::store::Store) {
        self.lanes.lock().expect("lanes").push((master, lane));
    }
}

/// How old the backlogs a handle routes by may get before it reads them again.
const BACKLOG_REFRESH: Duration = Duration::from_millis(250);

/// A backlog read still unanswered after this long marks its partition unreachable (a dead master
/// before the cluster notices: the read hangs rather than fails).
const READ_SUSPECT: Duration = Duration::from_millis(500);

/// Longest one backlog read may take before it counts as failed (its partition stays unreachable
/// until a later read is answered).
const READ_LIMIT: Duration = Duration::from_secs(2);

/// The partitions of one partitioned queue, in index order, and this handle's estimate of each
/// one's backlog (the jobs ready to run: wait, prioritized and the grouped ready ones), by which a
/// job with neither a key nor an id of its own goes to the emptier of two partitions picked at
/// random (power of two choices) among those reachable: a backlog read at most
/// [`BACKLOG_REFRESH`] ago (in the background, one small pipeline per partition, each partition's
/// read on its own, started by an add that finds it stale), plus the jobs this handle routed to it
/// since. A partition whose last read failed, or whose read has gone unanswered for
/// [`READ_SUSPECT`] (its master died, say, and no replica has taken over yet), is not picked until
/// a read is answered again: such jobs go to the live partitions meanwhile (a job with a key or
/// an id of its own still goes to its partition, and waits for it).
pub(crate) struct Partitions {
    pub(crate) members: Vec<Queue>,
    /// The layout the members are of (keys and ids route over its first generation's, the home
    /// partitions).
    pub(crate) layout: Layout,
    health: Vec<Health>,
    epoch: Instant,
}

/// One partition's backlog estimate and the state of its reads (times in ms since `epoch`, 0 for
/// never).
#[derive(Default)]
struct Health {
    backlog: AtomicU64,
    /// When its last read started; whether one is under way.
    started_ms: AtomicU64,
    reading: AtomicBool,
    /// Whether the last read that ended failed (or an add since failed for want of its server).
    failed: AtomicBool,
    /// Adds to it under way, and when it last answered one while others were under way (or when
    /// the first of them was sent).
    adds: AtomicU64,
    add_progress_ms: AtomicU64,
}

impl Health {
    /// False while the last read failed, or one has gone unanswered for [`READ_SUSPECT`], or
    /// adds have been under way that long with none answered.
    fn reachable(&self, now_ms: u64) -> bool {
        if self.failed.load(Ordering::Relaxed) {
            return false;
        }
        let suspect = |since: &AtomicU64| {
            now_ms.saturating_sub(since.load(Ordering::Relaxed)) > READ_SUSPECT.as_millis() as u64
        };
        !((self.reading.load(Ordering::Acquire) && suspect(&self.started_ms))
            || (self.adds.load(Ordering::Acquire) > 0 && suspect(&self.add_progress_ms)))
    }
}

impl Partitions {
    /// The partitions of `layout`, `members` in index order (as many as it has).
    pub(crate) fn new(members: Vec<Queue>, layout: Layout) -> Partitions {
        debug_assert_eq!(members.len(), usize::from(layout.count()));
        Partitions {
            health: members.iter().map(|_| Health::default()).collect(),
            layout,
            members,
            epoch: Instant::now(),
        }
    }

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

    fn now_ms(&self) -> u64 {
        (self.epoch.elapsed().as_millis() as u64).max(1)
    }

    /// The partition for a job with neither a key nor an id given by its caller (a retried add
    /// with its own id must find the same partition, so those go by id): the emptier of two
    /// picked at random among the reachable partitions (all of them when none is), by the
    /// backlogs as last read and what this handle sent since. Starts a read of the backlogs that
    /// are stale (on the current tokio runtime).
    pub(crate) fn by_backlog(self: &Arc<Self>) -> usize {
        let now = self.now_ms();
        self.refresh_stale(now);
        let n = self.members.len();
        let mut live: Vec<usize> = (0..n).filter(|&i| self.health[i].reachable(now)).collect();
        if live.is_empty() {
            live = (0..n).collect();
        }
        let m = live.len();
        let a = live[rand::random::<u64>() as usize % m];
        let pick = if m == 1 {
            a
        } else {
            let b = live[(live.iter().position(|&i| i == a).unwrap()
                + 1
                + rand::random::<u64>() as usize % (m - 1))
                % m];
            let (la, lb) = (
                self.health[a].backlog.load(Ordering::Relaxed),
                self.health[b].backlog.load(Ordering::Relaxed),
            );
            if lb < la {
                b
            } else {
                a
            }
        };
        self.health[pick].backlog.fetch_add(1, Ordering::Relaxed);
        pick
    }

    /// Runs an add to partition `i`, watched: while adds to it go unanswered for
    /// [`READ_SUSPECT`], or when one fails for want of its server, it is not picked for the jobs
    /// this handle routes by backlog (a later answered backlog read makes it reachable again), so
    /// the requests after the first ones a dead master holds go to the live partitions at once.
    pub(crate) async fn watched<T>(
        &self,
        i: usize,
        add: impl std::future::Future<Output = Result<T>>,
    ) -> Result<T> {
        let h = &self.health[i];
        if h.adds.fetch_add(1, Ordering::AcqRel) == 0 {
            h.add_progress_ms.store(self.now_ms(), Ordering::Relaxed);
        }
        let r = add.await;
        h.add_progress_ms.store(self.now_ms(), Ordering::Relaxed);
        h.adds.fetch_sub(1, Ordering::AcqRel);
        if let Err(e) = &r {
            if matches!(e.code(), ErrorCode::ServerUnavailable | ErrorCode::Timeout) {
                h.failed.store(true, Ordering::Relaxed);
            }
        }
        r
    }

    /// Starts a read of each partition's backlog whose last read is older than
    /// [`BACKLOG_REFRESH`] and that has none under way; each partition's read is its own task, so
    /// one that hangs holds back no other.
    fn refresh_stale(self: &Arc<Self>, now: u64) {
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        for i in 0..self.members.len() {
            let h = &self.health[i];
            let started = h.started_ms.load(Ordering::Relaxed);
            if started != 0 && now.saturating_sub(started) < BACKLOG_REFRESH.as_millis() as u64 {
                continue;
            }
            if h.reading.swap(true, Ordering::AcqRel) {
                continue;
            }
            h.started_ms.store(now, Ordering::Relaxed);
            let p = self.clone();
            rt.spawn(async move {
                let read = tokio::time::timeout(READ_LIMIT, backlog_of(&p.members[i])).await;
                let h = &p.health[i];
                match read {
                    Ok(Ok(n)) => {
                        h.backlog.store(n, Ordering::Relaxed);
                        h.failed.store(false, Ordering::Relaxed);
                    }
                    // A partition that could not be read keeps its estimate, and is not picked
                    // until a read is answered.
                    _ => h.failed.store(true, Ordering::Relaxed),
                }
                h.reading.store(false, Ordering::Release);
            });
        }
    }

    pub(crate) fn key_index(&self, key: &str) -> usize {
        usize::from(crc16(key.as_bytes())) % usize::from(self.layout.home())
    }

    pub(crate) fn id_index(&self, id: JobId) -> usize {
        // A 64-bit mix, so ids minted in one millisecond (differing in low bits) spread too.
        let mut x = id.as_u64();
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        (x % u64::from(self.layout.home())) as usize
    }
}

/// One partition's backlog: its wait list, its prioritized jobs and its grouped ready jobs.
async fn backlog_of(q: &Queue) -> Result<u64> {
    let k = q.keys();
    let (wait, prioritized, grouped): (u64, u64, u64) = redis::pipe()
        .cmd("LLEN")
        .arg(&k.wait)
        .cmd("ZCARD")
        .arg(&k.prioritized)
        .cmd("ZCARD")
        .arg(&k.group_ready)
        .query_async(&mut q.store().conn())
        .await?;
    Ok(wait + prioritized + grouped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partition_whose_adds_go_unanswered_is_not_reachable() {
        let h = Health::default();
        let suspect = READ_SUSPECT.as_millis() as u64;
        assert!(h.reachable(10_000));
        // An add under way since 10 s: reachable until it has gone unanswered past READ_SUSPECT.
        h.adds.store(1, Ordering::Relaxed);
        h.add_progress_ms.store(10_000, Ordering::Relaxed);
        assert!(h.reachable(10_000 + suspect));
        assert!(!h.reachable(10_000 + suspect + 1));
        // Another add answered meanwhile (progress): reachable again.
        h.add_progress_ms.store(10_000 + suspect, Ordering::Relaxed);
        assert!(h.reachable(10_000 + suspect + 1));
        // None under way: however old the last answer.
        h.adds.store(0, Ordering::Relaxed);
        assert!(h.reachable(1_000_000));
        // A failed read or add: not reachable until a read answers.
        h.failed.store(true, Ordering::Relaxed);
        assert!(!h.reachable(1_000_000));
    }
}
