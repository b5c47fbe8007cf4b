//! Reads of one queue: a job by id, the counts per state, a state's ids and jobs by page.

use super::*;
use crate::error::Result;
use crate::job::{Counts, Job, JobState};
use crate::job_id::JobId;
use crate::script;
use std::collections::HashMap;

impl Queue {
    /// Reads a job by its id's text form (the one gate parses it); None when there is no such job.
    pub async fn get_str(&self, id: &str) -> Result<Option<Job>> {
        self.get(JobId::parse(id)?).await
    }

    /// Reads a job and its state.
    pub async fn get(&self, id: JobId) -> Result<Option<Job>> {
        self.read_job(id, false).await
    }

    /// [`Queue::get`]; `as_stored`: a stored JSON field that cannot be read is left null with
    /// [`Job::unreadable`] saying why, instead of failing (operator views).
    pub(crate) async fn read_job(&self, id: JobId, as_stored: bool) -> Result<Option<Job>> {
        if let Some(p) = &self.spread() {
            let q = super::partitioned::owner(p, id).await?;
            return q.read_job_here(id, as_stored).await;
        }
        self.read_job_here(id, as_stored).await
    }

    /// `read_job` on this queue's own slot (a plain queue, or one partition).
    pub(super) async fn read_job_here(&self, id: JobId, as_stored: bool) -> Result<Option<Job>> {
        let flat: Vec<String> = script::JOB_STATE
            .on(&self.name, Some(id))?
            .arg(id)
            .invoke(&self.store)
            .await?;
        let Some((state, rest)) = flat.split_first() else {
            return Ok(None);
        };
        let map: HashMap<String, String> = rest
            .chunks(2)
            .filter_map(|p| Some((p.first()?.clone(), p.get(1)?.clone())))
            .collect();
        Job::from_record(id, JobState::parse(state).ok(), map)
            .readable_unless(as_stored)
            .map(Some)
    }

    /// Counts jobs per state.
    pub async fn counts(&self) -> Result<Counts> {
        if let Some(p) = &self.spread() {
            return Ok(super::partitioned::add_counts(
                super::partitioned::each(p, |m| Box::pin(m.counts_here())).await?,
            ));
        }
        self.counts_here().await
    }

    /// [`Queue::counts`] on this queue's own slot (a plain queue, or one partition).
    pub(super) async fn counts_here(&self) -> Result<Counts> {
        let k = &self.keys;
        let mut pipe = redis::pipe();
        pipe.cmd("LLEN").arg(&k.wait);
        pipe.cmd("LLEN").arg(&k.paused);
        pipe.cmd("ZCARD").arg(&k.active);
        pipe.cmd("ZCARD").arg(&k.delayed);
        pipe.cmd("ZCARD").arg(&k.prioritized);
        pipe.cmd("ZCARD").arg(&k.completed);
        pipe.cmd("ZCARD").arg(&k.failed);
        pipe.cmd("SCARD").arg(&k.stalled);
        pipe.cmd("ZCARD").arg(&k.waiting_children);
        pipe.cmd("ZCARD").arg(&k.group_ready);
        let v: Vec<u64> = pipe.query_async(&mut self.store.conn()).await?;
        Ok(Counts {
            // Ready jobs in wait and, for grouped jobs, in their groups.
            waiting: v[0] + v[9],
            paused: v[1],
            active: v[2],
            delayed: v[3],
            prioritized: v[4],
            completed: v[5],
            failed: v[6],
            stalled: v[7],
            waiting_children: v[8],
        })
    }

    /// Ids in one state, a page at a time: oldest first for waiting states, newest first for
    /// completed and failed.
    pub async fn list_ids(&self, state: JobState, offset: u64, limit: u64) -> Result<Vec<JobId>> {
        if let Some(p) = &self.spread() {
            return (super::partitioned::list_ids(p, state, offset, limit)).await;
        }
        self.list_ids_here(state, offset, limit).await
    }

    /// [`Queue::list_ids`] on this queue's own slot (a plain queue, or one partition).
    pub(super) async fn list_ids_here(
        &self,
        state: JobState,
        offset: u64,
        limit: u64,
    ) -> Result<Vec<JobId>> {
        if limit == 0 {
            return Ok(vec![]);
        }
        let k = &self.keys;
        let (start, stop) = (offset as i64, (offset + limit) as i64 - 1);
        let mut conn = self.store.conn();
        let raw: Vec<String> = match state {
            JobState::Waiting | JobState::Paused => {
                let key = if state == JobState::Waiting {
                    &k.wait
                } else {
                    &k.paused
                };
                // Lists hold the oldest at the right.
                let mut v: Vec<String> = redis::cmd("LRANGE")
                    .arg(key)
                    .arg(-stop - 1)
                    .arg(-start - 1)
                    .query_async(&mut conn)
                    .await?;
                v.reverse();
                if state == JobState::Waiting && (v.len() as u64) < limit {
                    // Then the grouped ready jobs, group by group in name order.
                    let listed: u64 = redis::cmd("LLEN").arg(key).query_async(&mut conn).await?;
                    let from = offset.saturating_sub(listed);
                    let want = limit - v.len() as u64;
                    let members: Vec<Vec<u8>> = redis::cmd("ZRANGE")
                        .arg(&k.group_ready)
                        .arg(from)
                        .arg(from + want - 1)
                        .query_async(&mut conn)
                        .await?;
                    v.extend(members.iter().filter_map(|m| crate::groups::member_id(m)));
                }
                v
            }
            JobState::Stalled => {
                // A set (small: jobs between a lost lease and the next sweep), read whole.
                let all: Vec<String> = redis::cmd("SMEMBERS")
                    .arg(&k.stalled)
                    .query_async(&mut conn)
                    .await?;
                all.into_iter()
                    .skip(offset as usize)
                    .take(limit as usize)
                    .collect()
            }
            JobState::Completed | JobState::Failed => {
                let key = if state == JobState::Completed {
                    &k.completed
                } else {
                    &k.failed
                };
                redis::cmd("ZRANGE")
                    .arg(key)
                    .arg(start)
                    .arg(stop)
                    .arg("REV")
                    .query_async(&mut conn)
                    .await?
            }
            JobState::Active
            | JobState::Delayed
            | JobState::Prioritized
            | JobState::WaitingChildren => {
                let key = match state {
                    JobState::Active => &k.active,
                    JobState::Delayed => &k.delayed,
                    JobState::Prioritized => &k.prioritized,
                    _ => &k.waiting_children,
                };
                redis::cmd("ZRANGE")
                    .arg(key)
                    .arg(start)
                    .arg(stop)
                    .query_async(&mut conn)
                    .await?
            }
        };
        raw.iter().map(|s| JobId::parse(s)).collect()
    }

    /// Jobs in one state, a page at a time (see [`Queue::list_ids`]). Each carries the state it
    /// was listed in, its record read in one pipelined round trip with the others and its state
    /// not looked up again: a job that moved in between shows the state it was listed in (its own
    /// read, [`Queue::get`], says where it is now), one removed in between is left out.
    pub async fn list(&self, state: JobState, offset: u64, limit: u64) -> Result<Vec<Job>> {
        if let Some(p) = &self.spread() {
            return (super::partitioned::list(p, state, offset, limit, false)).await;
        }
        self.list_here(state, offset, limit).await
    }

    /// [`Queue::list`] on this queue's own slot (a plain queue, or one partition).
    pub(super) async fn list_here(
        &self,
        state: JobState,
        offset: u64,
        limit: u64,
    ) -> Result<Vec<Job>> {
        let ids = self.list_ids(state, offset, limit).await?;
        self.jobs_listed_in(state, &ids, false).await
    }
}
