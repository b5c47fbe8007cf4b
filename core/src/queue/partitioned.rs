//! How the calls of a partitioned queue's handle span its partitions (`partitions.rs`): each
//! public call of [`Queue`] that has a partitioned form starts with `if let Some(p) = self.spread()`
//! (`grow.rs`: the partitions as last read) and comes here. Every partition is a plain queue in its own slot, so each step below is the
//! plain call on one partition; nothing here spans two slots in one script.
//!
//! - adds go to the partition `Partitions::job_index` picks for a key or a caller's id, else the
//!   emptier of two (`Partitions::by_backlog`; an id minted first either way), a bulk add split
//!   by partition and its ids given back in the order of the jobs;
//! - counts are summed; a page of a state is merged by id (creation order: oldest first for the
//!   waiting states, newest first for completed and failed), reading `offset + limit` ids of each
//!   partition;
//! - a call on one job asks every partition at once whether it holds the job (one round trip),
//!   then calls that partition (a job no partition holds: the partition of its id, which answers
//!   "not found" as a plain queue does);
//! - pause, resume, drain, clean, trim, obliterate, retry_failed and dedup expiry run on each
//!   partition and add up; `is_paused` is true when every partition is paused;
//! - a group's settings go to the group's partition, and the groups' page is merged by name
//!   (`groups.rs`); the queue's dead-letter default to every one;
//! - the events stream is every partition's, merged (`events.rs`).
//!
//! - the operator views (`lookup.rs`: pages as stored, name search, a job's events, schedulers'
//!   instants and specs, a dedup key's holder) and the worker registry read every partition, a
//!   page's records each from its job's partition ([`owners`]: one pipeline per partition);
//! - a scheduler lives in one partition, its home (its jobs' group's, else its id's), and
//!   enqueues its runs there (`scheduler.rs`); the list merges every partition's;
//! - each job of a flow, and a child added to a job, goes to one partition as an add with its id
//!   would, and the references between parent and children name partitions (`flow.rs`);
//! - as a dead-letter queue, its copies land in partitions as adds do, and `dead_letters` and
//!   `replay_dead_letters` read and replay every partition's (`dead_letter.rs`);
//! - a batch created on it lives in the partition its id routes to (`open_batch` finds it there),
//!   and `batches` merges every partition's, newest first (`batch/mod.rs`, `batch_list.rs`);
//! - a migration into it reads the source once per partition, each pass copying the jobs that
//!   belong to its partition (`migrate/mod.rs`);
//! - the global concurrency and the rate limit are kept as one share per partition, which the
//!   workers move to the partitions that have work, never past the total (`shares.rs`).
//!
//! No call of a queue handle writes into the logical name's own job keys, which no worker serves.

use super::{NewJob, Queue};
use crate::error::{Error, Result};
use crate::job::{Counts, Job, JobState};
use crate::job_id::JobId;
use crate::keyspace::JobPart;
use crate::queue::partition_set::Partitions;
use futures::future::{try_join_all, BoxFuture};
use std::sync::Arc;

impl Queue {
    /// The queue that holds job `id`: this one, or on a partitioned handle the partition that
    /// holds it ([`owner`]).
    pub(crate) async fn holder_of(&self, id: JobId) -> Result<Queue> {
        match &self.spread() {
            Some(p) => owner(p, id).await.cloned(),
            None => Ok(self.clone()),
        }
    }
}

/// The partition that holds job `id` (asked of all at once), else the one its id routes to.
pub(crate) async fn owner(p: &Partitions, id: JobId) -> Result<&Queue> {
    let found = try_join_all(p.members.iter().map(|m| async move {
        let n: i64 = redis::cmd("EXISTS")
            .arg(m.name.job_key(id, JobPart::Record))
            .query_async(&mut m.store.conn())
            .await?;
        Ok::<bool, Error>(n == 1)
    }))
    .await?;
    Ok(found
        .iter()
        .position(|f| *f)
        .map(|i| &p.members[i])
        .unwrap_or_else(|| p.for_id(id)))
}

/// The partition (by index) that holds each of `ids`, else the one its id routes to: one
/// pipeline of `EXISTS` per partition, all at once.
pub(crate) async fn owners(p: &Partitions, ids: &[JobId]) -> Result<Vec<usize>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let held = try_join_all(p.members.iter().map(|m| async move {
        let mut pipe = redis::pipe();
        for id in ids {
            pipe.cmd("EXISTS").arg(m.name.job_key(*id, JobPart::Record));
        }
        let v: Vec<i64> = pipe.query_async(&mut m.store.conn()).await?;
        Ok::<Vec<i64>, Error>(v)
    }))
    .await?;
    Ok(ids
        .iter()
        .enumerate()
        .map(|(k, id)| {
            (0..p.members.len())
                .find(|i| held[*i][k] == 1)
                .unwrap_or_else(|| p.id_index(*id))
        })
        .collect())
}

/// Runs `f` on each partition with those of `ids` it holds ([`owners`]), all at once; each
/// result comes with the places in `ids` of the ids that partition was given.
pub(crate) async fn by_owner<'a, T, F>(
    p: &'a Partitions,
    ids: &[JobId],
    f: F,
) -> Result<Vec<(Vec<usize>, T)>>
where
    F: Fn(&'a Queue, Vec<JobId>) -> BoxFuture<'a, Result<T>>,
{
    let at = owners(p, ids).await?;
    try_join_all(p.members.iter().enumerate().map(|(i, m)| {
        let places: Vec<usize> = (0..ids.len()).filter(|k| at[*k] == i).collect();
        let mine = f(m, places.iter().map(|k| ids[*k]).collect());
        async move { Ok((places, mine.await?)) }
    }))
    .await
}

/// Runs `f` on every partition at once.
pub(crate) async fn each<'a, T, F>(p: &'a Partitions, f: F) -> Result<Vec<T>>
where
    F: Fn(&'a Queue) -> BoxFuture<'a, Result<T>>,
{
    try_join_all(p.members.iter().map(f)).await
}

/// Sums what `f` gives on every partition.
pub(crate) async fn sum<'a, F>(p: &'a Partitions, f: F) -> Result<u64>
where
    F: Fn(&'a Queue) -> BoxFuture<'a, Result<u64>>,
{
    Ok(each(p, f).await?.into_iter().sum())
}

pub(crate) fn add_counts(all: Vec<Counts>) -> Counts {
    all.into_iter().fold(Counts::default(), |a, c| Counts {
        waiting: a.waiting + c.waiting,
        paused: a.paused + c.paused,
        active: a.active + c.active,
        delayed: a.delayed + c.delayed,
        prioritized: a.prioritized + c.prioritized,
        completed: a.completed + c.completed,
        failed: a.failed + c.failed,
        stalled: a.stalled + c.stalled,
        waiting_children: a.waiting_children + c.waiting_children,
    })
}

/// True when a state's page runs newest first (see [`Queue::list_ids`]).
fn newest_first(state: JobState) -> bool {
    matches!(state, JobState::Completed | JobState::Failed)
}

/// One merged page from the partitions' pages (each the first `offset + limit` of its state):
/// by id, oldest first or, for completed and failed, newest first.
fn merge<T>(
    pages: Vec<Vec<T>>,
    id: fn(&T) -> JobId,
    state: JobState,
    offset: u64,
    limit: u64,
) -> Vec<T> {
    let mut all: Vec<T> = pages.into_iter().flatten().collect();
    all.sort_unstable_by_key(id);
    if newest_first(state) {
        all.reverse();
    }
    all.into_iter()
        .skip(offset as usize)
        .take(limit as usize)
        .collect()
}

/// A merged page of ids in `state` (see [`merge`]).
pub(crate) async fn list_ids(
    p: &Partitions,
    state: JobState,
    offset: u64,
    limit: u64,
) -> Result<Vec<JobId>> {
    let want = offset.saturating_add(limit);
    let pages = each(p, |m| Box::pin(m.list_ids_here(state, 0, want))).await?;
    Ok(merge(pages, |id| *id, state, offset, limit))
}

/// A merged page of jobs in `state` (see [`merge`]): as [`Queue::list`] reads them, or
/// `as_stored` as [`Queue::list_as_stored`] does.
pub(crate) async fn list(
    p: &Partitions,
    state: JobState,
    offset: u64,
    limit: u64,
    as_stored: bool,
) -> Result<Vec<Job>> {
    let want = offset.saturating_add(limit);
    let pages = each(p, |m| -> BoxFuture<'_, Result<Vec<Job>>> {
        if as_stored {
            Box::pin(m.list_as_stored_here(state, 0, want))
        } else {
            Box::pin(m.list_here(state, 0, want))
        }
    })
    .await?;
    Ok(merge(pages, |j| j.id, state, offset, limit))
}

/// A bulk add split by partition (each part one plain bulk add, all at once); the ids in the
/// order of `jobs`.
pub(crate) async fn add_bulk(
    q: &Queue,
    p: &Arc<Partitions>,
    jobs: Vec<NewJob>,
) -> Result<Vec<JobId>> {
    let n = p.members.len();
    let mut parts: Vec<Vec<NewJob>> = (0..n).map(|_| Vec::new()).collect();
    let mut at: Vec<(usize, usize)> = Vec::with_capacity(jobs.len());
    for mut job in jobs {
        let i = q.route(p, &mut job.options)?;
        at.push((i, parts[i].len()));
        parts[i].push(job);
    }
    let ids = try_join_all(p.members.iter().zip(parts).map(
        |(m, jobs)| -> BoxFuture<'_, Result<Vec<JobId>>> {
            if jobs.is_empty() {
                Box::pin(async { Ok(Vec::new()) })
            } else {
                Box::pin(m.add_bulk_here(jobs))
            }
        },
    ))
    .await?;
    Ok(at.into_iter().map(|(i, k)| ids[i][k]).collect())
}
