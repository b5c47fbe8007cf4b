//! Read-only look-ups for operators (the dashboard, the CLI): a job by its dedup key, jobs of one
//! state by name in a bounded scan, a flow parent's children, a job's recent events, and a
//! scheduler's stored spec. None of them writes; none keeps an index.
//!
//! Search by name keeps no index (a per-name key would make a user's string a key, and a name
//! index kept by every add would cost memory and a write per job): it reads ids of one state in the
//! order of [`Queue::list_ids`] and the `name` field of their records, at most
//! [`MAX_NAME_SCAN`] per call, and says where the next call goes on. Its cost is the scan, paid only
//! by the one asking.

use crate::error::{Error, ErrorCode, Result};
use crate::events::Event;
use crate::job::{Job, JobState};
use crate::job_id::JobId;
use crate::keyspace::JobPart;
use crate::queue::Queue;
use crate::scheduler::SchedulerInfo;
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;

/// Most ids one [`Queue::find_by_name`] call reads.
pub const MAX_NAME_SCAN: u64 = 5_000;
/// Ids read per round trip of a name scan.
const NAME_CHUNK: u64 = 500;
/// Most events one [`Queue::job_events`] call reads from the stream.
pub const MAX_EVENT_SCAN: usize = 10_000;

/// What one bounded name scan found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NameScan {
    /// Ids whose name matched, in scan order.
    pub ids: Vec<JobId>,
    /// Their jobs, each in the state scanned (read with their records at the end of the scan, not
    /// looked up again; one removed in between is left out).
    #[serde(skip)]
    pub jobs: Vec<Job>,
    /// Most ids one call reads ([`MAX_NAME_SCAN`], or less when asked).
    pub window: u64,
    /// Where this scan started (a position in the state, as for [`Queue::list_ids`]).
    pub offset: u64,
    /// How many ids it read.
    pub scanned: u64,
    /// Where the next call goes on; None when the state was read to its end.
    pub next_offset: Option<u64>,
    /// Jobs in the state when the scan began.
    pub in_state: u64,
}

/// Who holds a dedup key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DedupHolder {
    /// The job holding it.
    pub id: JobId,
    /// For a key held for a TTL: until when (server ms); the job may be gone before that.
    pub until_ms: Option<u64>,
}

/// One child of a flow parent, from the parent's record.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FlowChild {
    /// The child's queue.
    pub queue: String,
    /// The child's id.
    pub id: JobId,
    /// `pending`, `completed` or `failed` (a failed child under the `ignore` policy).
    pub status: &'static str,
    /// Its result (completed) or failure text (failed).
    pub value: Option<Value>,
}

/// A scheduler's stored instants (see [`Queue::scheduler_instants`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SchedulerInstants {
    /// Its due time (server ms).
    pub due_ms: Option<u64>,
    /// Its end (server ms).
    pub end_ms: Option<u64>,
    /// False for a cron scheduler whose due time is still its start.
    pub primed: bool,
}

impl SchedulerInstants {
    /// The next `n` runs of scheduler `s` (server ms) from these instants, within its limit and its
    /// end: what the dashboard shows for each scheduler.
    pub fn next_runs(&self, s: &SchedulerInfo, n: usize) -> Vec<u64> {
        let at = *self;
        let Some(due) = at.due_ms else {
            return vec![];
        };
        let end = at.end_ms;
        let left = if s.limit > 0 {
            s.limit.saturating_sub(s.count) as usize
        } else {
            n
        };
        let cron = match (&s.cron, &s.tz) {
            (Some(c), Some(tz)) => crate::scheduler::CronSchedule::parse(c, tz).ok(),
            _ => None,
        };
        // An unprimed cron scheduler's due time is its start: its first run is the first occurrence
        // at or after it.
        let first = match (&cron, at.primed) {
            (Some(c), false) => match c.next_occurrence_ms(due, true) {
                Ok(ms) => ms,
                Err(_) => return vec![],
            },
            _ => due,
        };
        let mut out = Vec::new();
        let mut at = first;
        while out.len() < n.min(left) {
            if end.is_some_and(|e| at > e) {
                break;
            }
            out.push(at);
            at = match &cron {
                Some(c) => match c.next_occurrence_ms(at, false) {
                    Ok(n) => n,
                    Err(_) => break,
                },
                None if s.every_ms > 0 => at + s.every_ms,
                None => break,
            };
        }
        out
    }
}

fn split_child(s: &str) -> Option<(String, JobId)> {
    let (q, id) = s.rsplit_once(':')?;
    Some((q.to_string(), JobId::parse(id).ok()?))
}

impl Queue {
    /// The job holding a dedup key (exact match: one `HGET` on the queue's dedup hash), if any.
    pub async fn find_by_dedup(&self, key: &str) -> Result<Option<DedupHolder>> {
        if key.is_empty() {
            return Ok(None);
        }
        // On a partitioned queue a dedup key's jobs go to the key's partition.
        let q = self
            .spread()
            .map_or_else(|| self.clone(), |p| p.for_key(key).clone());
        let raw: Option<String> = redis::cmd("HGET")
            .arg(&q.keys().dedup)
            .arg(key)
            .query_async(&mut q.store().conn())
            .await?;
        let Some(raw) = raw else { return Ok(None) };
        let (id, until_ms) = match raw.split_once('|') {
            Some((id, until)) => (id, until.parse().ok()),
            None => (raw.as_str(), None),
        };
        Ok(Some(DedupHolder {
            id: JobId::parse(id)?,
            until_ms,
        }))
    }

    /// Jobs of one state whose name contains `needle` (case-insensitive), scanning at most `scan`
    /// ids (1 to [`MAX_NAME_SCAN`]) from `offset` in [`Queue::list_ids`] order, stopping early once
    /// `limit` matched. Bounded work per call; call again from `next_offset` to go on.
    pub async fn find_by_name(
        &self,
        state: JobState,
        needle: &str,
        offset: u64,
        scan: u64,
        limit: usize,
    ) -> Result<NameScan> {
        if needle.is_empty() {
            return Err(Error::new(
                ErrorCode::InvalidOption,
                "a name search needs some text to look for",
            ));
        }
        let scan = scan.clamp(1, MAX_NAME_SCAN);
        let needle = needle.to_lowercase();
        let in_state = self.counts().await?.get(state);
        let mut ids = Vec::new();
        let mut pos = offset;
        let end = offset.saturating_add(scan);
        let mut exhausted = false;
        'outer: while pos < end {
            let n = NAME_CHUNK.min(end - pos);
            let chunk = self.list_ids(state, pos, n).await?;
            if chunk.is_empty() {
                exhausted = true;
                break;
            }
            let names = self.names_of(&chunk).await?;
            let got = chunk.len() as u64;
            for (i, (id, name)) in chunk.into_iter().zip(names).enumerate() {
                if name.is_some_and(|n| n.to_lowercase().contains(&needle)) {
                    ids.push(id);
                    if ids.len() >= limit.max(1) {
                        pos += i as u64 + 1;
                        break 'outer;
                    }
                }
            }
            pos += got;
            if got < n {
                exhausted = true;
                break;
            }
        }
        let jobs = self.jobs_listed_in(state, &ids, true).await?;
        Ok(NameScan {
            ids,
            jobs,
            window: scan,
            offset,
            scanned: pos - offset,
            next_offset: if exhausted || pos >= in_state {
                None
            } else {
                Some(pos)
            },
            in_state,
        })
    }

    /// The records of `ids`, all just read from the container of `state`, each as a job in that
    /// state: one pipelined round trip of `HGETALL`s and no look-up of where each job is now (that
    /// look-up, [`Queue::get`], finds a waiting job with `LPOS`, O(its place in the list)). An id
    /// whose record is gone (removed since it was listed) is left out; a job that moved since
    /// shows `state`.
    ///
    /// `as_stored`: a job whose stored JSON field cannot be read comes back with that field null
    /// and [`Job::unreadable`] saying why (operator views); otherwise the whole read fails with
    /// that job's `invalid_payload`.
    pub(crate) async fn jobs_listed_in(
        &self,
        state: JobState,
        ids: &[JobId],
        as_stored: bool,
    ) -> Result<Vec<Job>> {
        if let Some(p) = &self.spread() {
            // Each id's records from its partition, in the order of `ids`.
            let parts = crate::queue::partitioned::by_owner(p, ids, |m, mine| {
                Box::pin(async move { m.jobs_listed_in_here(state, &mine, as_stored).await })
            })
            .await?;
            let place: HashMap<JobId, usize> =
                ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
            let mut out: Vec<Job> = parts.into_iter().flat_map(|(_, jobs)| jobs).collect();
            out.sort_by_key(|j| place.get(&j.id).copied());
            return Ok(out);
        }
        self.jobs_listed_in_here(state, ids, as_stored).await
    }

    /// The `name` field of each of `ids` (None where the record is gone), in their order: one
    /// pipeline per slot (on a partitioned queue, each id's partition's).
    async fn names_of(&self, ids: &[JobId]) -> Result<Vec<Option<String>>> {
        let Some(p) = &self.spread() else {
            return self.names_here(ids).await;
        };
        let parts = crate::queue::partitioned::by_owner(p, ids, |m, mine| {
            Box::pin(async move { m.names_here(&mine).await })
        })
        .await?;
        let mut out = vec![None; ids.len()];
        for (places, names) in parts {
            for (k, name) in places.into_iter().zip(names) {
                out[k] = name;
            }
        }
        Ok(out)
    }

    async fn names_here(&self, ids: &[JobId]) -> Result<Vec<Option<String>>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for id in ids {
            pipe.cmd("HGET")
                .arg(self.name().job_key(*id, JobPart::Record))
                .arg("name");
        }
        Ok(pipe.query_async(&mut self.store().conn()).await?)
    }

    /// [`Queue::jobs_listed_in`] on this queue's own slot.
    pub(crate) async fn jobs_listed_in_here(
        &self,
        state: JobState,
        ids: &[JobId],
        as_stored: bool,
    ) -> Result<Vec<Job>> {
        if ids.is_empty() {
            return Ok(vec![]);
        }
        let mut pipe = redis::pipe();
        for id in ids {
            pipe.cmd("HGETALL")
                .arg(self.name().job_key(*id, JobPart::Record));
        }
        let records: Vec<HashMap<String, String>> =
            pipe.query_async(&mut self.store().conn()).await?;
        ids.iter()
            .zip(records)
            .filter(|(_, record)| !record.is_empty())
            .map(|(id, record)| {
                Job::from_record(*id, Some(state), record).readable_unless(as_stored)
            })
            .collect()
    }

    /// One job as [`Queue::get`] reads it, for views that must show a broken job rather than fail
    /// on it (`emq ui`): a stored JSON field that cannot be read is left null, with
    /// [`Job::unreadable`] saying why.
    pub async fn get_as_stored(&self, id: JobId) -> Result<Option<Job>> {
        self.read_job(id, true).await
    }

    /// One page of the jobs in `state`, as [`Queue::list`] reads it, for views that must show a
    /// broken job rather than fail on it (`emq ui`): a job whose stored JSON field cannot be read
    /// (written by hand, or by another tool) comes back with that field null and
    /// [`Job::unreadable`] saying why, where `list` fails with its `invalid_payload`.
    pub async fn list_as_stored(
        &self,
        state: JobState,
        offset: u64,
        limit: u64,
    ) -> Result<Vec<Job>> {
        if let Some(p) = &self.spread() {
            return crate::queue::partitioned::list(p, state, offset, limit, true).await;
        }
        self.list_as_stored_here(state, offset, limit).await
    }

    /// [`Queue::list_as_stored`] on this queue's own slot (a plain queue, or one partition).
    pub(crate) async fn list_as_stored_here(
        &self,
        state: JobState,
        offset: u64,
        limit: u64,
    ) -> Result<Vec<Job>> {
        let ids = self.list_ids(state, offset, limit).await?;
        self.jobs_listed_in(state, &ids, true).await
    }

    /// One page of the jobs in `state`, newest first, as [`Queue::list_as_stored`] reads them (the
    /// dashboard's order): completed and failed are stored newest first (and stalled, a set, has
    /// no order); the other states are read from their far end and turned round. The page's
    /// records come in one round trip, each in the state it was listed in; a job removed in
    /// between is left out, one that moved shows this state. `held` is the state's count as the
    /// caller read it ([`Queue::counts`]), so the page and the count shown beside it agree and no
    /// second read of the counts is made.
    pub async fn list_newest_first(
        &self,
        state: JobState,
        held: u64,
        offset: u64,
        limit: u64,
    ) -> Result<Vec<Job>> {
        let mut list = match state {
            JobState::Completed | JobState::Failed | JobState::Stalled => {
                self.list_as_stored(state, offset, limit).await?
            }
            _ => {
                let end = held.saturating_sub(offset);
                let start = end.saturating_sub(limit);
                let mut v = self.list_as_stored(state, start, end - start).await?;
                v.reverse();
                v
            }
        };
        list.truncate(limit as usize);
        Ok(list)
    }

    /// A flow parent's children as its record lists them: pending ones, and those done (with their
    /// result or failure). A child dropped by the `remove` policy is no longer listed.
    pub async fn flow_children(&self, parent: JobId) -> Result<Vec<FlowChild>> {
        let all: HashMap<String, String> = redis::cmd("HGETALL")
            .arg(self.name().job_key(parent, JobPart::Record))
            .query_async(&mut self.store().conn())
            .await?;
        let mut out = Vec::new();
        for (field, value) in all {
            let (status, child) = if let Some(c) = field.strip_prefix("dep:") {
                ("pending", c)
            } else if let Some(c) = field.strip_prefix("child:") {
                ("completed", c)
            } else if let Some(c) = field.strip_prefix("child_failed:") {
                ("failed", c)
            } else {
                continue;
            };
            let Some((queue, id)) = split_child(child) else {
                continue;
            };
            let value = (status != "pending")
                .then(|| serde_json::from_str(&value).unwrap_or(Value::String(value)));
            out.push(FlowChild {
                queue,
                id,
                status,
                value,
            });
        }
        out.sort_by(|a, b| (&a.queue, a.id.to_string()).cmp(&(&b.queue, b.id.to_string())));
        Ok(out)
    }

    /// One job's events, oldest first: the entries of the queue's stream from `since_ms` (server
    /// ms; the job's creation, less a second) on, at most the newest `scan` of them (at most
    /// [`MAX_EVENT_SCAN`]); true when that read every entry since `since_ms` (nothing was left out
    /// by the bound; the stream's own cap may have trimmed older ones). A batch entry (`ids`) is
    /// looked into without expanding it. Each entry id is the server's time of the transition.
    pub async fn job_events(
        &self,
        id: JobId,
        since_ms: u64,
        scan: usize,
    ) -> Result<(Vec<Event>, bool)> {
        if let Some(p) = &self.spread() {
            // A job's events are in its partition's stream.
            let q = crate::queue::partitioned::owner(p, id).await?;
            return q.job_events_here(id, since_ms, scan).await;
        }
        self.job_events_here(id, since_ms, scan).await
    }

    /// [`Queue::job_events`] on this queue's own slot.
    pub(crate) async fn job_events_here(
        &self,
        id: JobId,
        since_ms: u64,
        scan: usize,
    ) -> Result<(Vec<Event>, bool)> {
        let scan = scan.clamp(1, MAX_EVENT_SCAN);
        let mut entries: Vec<(String, HashMap<String, String>)> = redis::cmd("XREVRANGE")
            .arg(&self.keys().events)
            .arg("+")
            .arg(format!("{since_ms}-0"))
            .arg("COUNT")
            .arg(scan)
            .query_async(&mut self.store().conn())
            .await?;
        let whole = entries.len() < scan;
        entries.reverse();
        let me = id.to_string();
        let result_field = format!("r:{me}");
        let mut out = Vec::new();
        for (stream_id, mut fields) in entries {
            let mine = fields.get("id").is_some_and(|v| *v == me)
                || fields
                    .get("ids")
                    .is_some_and(|v| v.split(' ').any(|x| x == me));
            if !mine {
                continue;
            }
            let result = fields.remove(&result_field);
            fields.retain(|k, _| k != "ids" && !k.starts_with("r:"));
            if let Some(r) = result {
                fields.insert("result".into(), r);
            }
            out.push(Event {
                stream_id,
                kind: fields.get("ev").cloned().unwrap_or_default(),
                job_id: Some(id),
                fields,
            });
        }
        Ok((out, whole))
    }

    /// Every scheduler's stored instants on the server's clock, by id: its due time and its end,
    /// when it has them ([`Queue::schedulers`] gives them as durations from its own read of the
    /// clock), and whether a cron scheduler is primed (unprimed, its due time is its start, and its
    /// first run the first occurrence at or after it).
    pub async fn scheduler_instants(&self) -> Result<HashMap<String, SchedulerInstants>> {
        if let Some(p) = &self.spread() {
            let all = crate::queue::partitioned::each(p, |m| Box::pin(m.scheduler_instants_here()))
                .await?;
            return Ok(all.into_iter().flatten().collect());
        }
        self.scheduler_instants_here().await
    }

    /// [`Queue::scheduler_instants`] of this queue's own slot.
    pub(crate) async fn scheduler_instants_here(
        &self,
    ) -> Result<HashMap<String, SchedulerInstants>> {
        let k = self.keys();
        let mut pipe = redis::pipe();
        pipe.cmd("ZRANGE")
            .arg(&k.schedule_due)
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES");
        pipe.cmd("HGETALL").arg(&k.schedulers);
        let (due, specs): (Vec<(String, f64)>, HashMap<String, String>) =
            pipe.query_async(&mut self.store().conn()).await?;
        let due: HashMap<String, u64> = due.into_iter().map(|(id, d)| (id, d as u64)).collect();
        Ok(specs
            .into_iter()
            .map(|(id, raw)| {
                let spec = serde_json::from_str::<Value>(&raw).unwrap_or(Value::Null);
                let at = SchedulerInstants {
                    due_ms: due.get(&id).copied(),
                    end_ms: spec["end_ms"].as_u64(),
                    primed: spec["cron"].is_null() || spec["primed"].as_bool().unwrap_or(false),
                };
                (id, at)
            })
            .collect())
    }

    /// A scheduler's stored spec (`name`, `data`, `opts`, `every_ms`, `cron`, `tz`, `limit`,
    /// `count`, `end_ms`), with `data` and `opts` parsed; None when there is no such scheduler.
    pub async fn scheduler_spec(&self, id: &str) -> Result<Option<Value>> {
        if let Some(p) = &self.spread() {
            let all =
                crate::queue::partitioned::each(p, |m| Box::pin(m.scheduler_spec_here(id))).await?;
            return Ok(all.into_iter().flatten().next());
        }
        self.scheduler_spec_here(id).await
    }

    /// [`Queue::scheduler_spec`] of this queue's own slot.
    pub(crate) async fn scheduler_spec_here(&self, id: &str) -> Result<Option<Value>> {
        let raw: Option<String> = redis::cmd("HGET")
            .arg(&self.keys().schedulers)
            .arg(id)
            .query_async(&mut self.store().conn())
            .await?;
        let Some(raw) = raw else { return Ok(None) };
        let mut spec: Value = serde_json::from_str(&raw)?;
        for f in ["data", "opts"] {
            if let Some(text) = spec[f].as_str() {
                let parsed = serde_json::from_str(text).unwrap_or(Value::Null);
                spec[f] = parsed;
            }
        }
        Ok(Some(spec))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn next_runs(s: &SchedulerInfo, at: SchedulerInstants) -> Vec<u64> {
        at.next_runs(s, 5)
    }

    fn info(every_ms: u64, cron: Option<&str>, count: u64, limit: u64) -> SchedulerInfo {
        SchedulerInfo {
            id: "s".into(),
            every_ms,
            cron: cron.map(String::from),
            tz: cron.map(|_| "Europe/Berlin".to_string()),
            count,
            limit,
            next_in_ms: Some(1_000),
            ends_in_ms: None,
            name: "n".into(),
        }
    }

    #[test]
    fn next_runs_follow_the_repeat_limit_and_end() {
        let t0 = 1_700_000_001_000;
        let at = |due: Option<u64>, end: Option<u64>, primed: bool| SchedulerInstants {
            due_ms: due,
            end_ms: end,
            primed,
        };
        assert_eq!(
            next_runs(&info(60_000, None, 0, 0), at(Some(t0), None, true)),
            (0..5).map(|i| t0 + i * 60_000).collect::<Vec<_>>()
        );
        assert_eq!(
            next_runs(&info(60_000, None, 8, 10), at(Some(t0), None, true)).len(),
            2
        );
        let ended = at(Some(t0), Some(t0 + 130_000), true);
        assert_eq!(next_runs(&info(60_000, None, 0, 0), ended).len(), 3);
        assert!(next_runs(&info(60_000, None, 0, 0), at(None, None, true)).is_empty());
        // Daily at 09:00 Berlin (08:00 UTC in winter): primed, due at an occurrence; unprimed,
        // due at its start, the first run is the next occurrence.
        let first = 1_700_035_200_000; // 2023-11-15T08:00:00Z
        let daily = info(0, Some("0 9 * * *"), 0, 0);
        let want: Vec<u64> = (0..5).map(|i| first + i * 86_400_000).collect();
        assert_eq!(next_runs(&daily, at(Some(first), None, true)), want);
        assert_eq!(
            next_runs(&daily, at(Some(first - 3_600_123), None, false)),
            want
        );
    }
}
