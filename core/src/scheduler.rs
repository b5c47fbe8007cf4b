//! Job schedulers: a named schedule that enqueues a job every N ms, on the server's clock, exactly
//! once per due time however many workers and producers race. The scheduler id is user data (a
//! field of `emq:{q}:schedulers`), never a key. Workers fire due schedulers in the background:
//! `schedulers_due.lua` selects them, `scheduler_fire.lua` enqueues each run with a freshly minted
//! id and moves the due time on in one atomic step.
//!
//! Cron expressions with time zones are not supported yet (see the issue notes).

use crate::error::{Error, ErrorCode, Result};
use crate::job_id::JobId;
use crate::keyspace::JobPart;
use crate::options::JobOptions;
use crate::queue::Queue;
use crate::script;
use serde_json::Value;
use std::time::Duration;

/// What a scheduler enqueues, and how often.
#[derive(Clone, Debug)]
pub struct Schedule {
    /// Run every this long (at least 1 ms).
    pub every: Duration,
    /// The first run this long after the upsert (0: now).
    pub first_after: Duration,
    /// Stop after this many runs (None: never).
    pub limit: Option<u64>,
    /// The job's name.
    pub name: String,
    /// The job's payload.
    pub data: Value,
    /// The job's options (delay, priority and dedup are not used for scheduled runs).
    pub options: JobOptions,
}

/// A scheduler as stored.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SchedulerInfo {
    /// Its id.
    pub id: String,
    /// Interval in ms.
    pub every_ms: u64,
    /// Runs so far.
    pub count: u64,
    /// Most runs (0: no limit).
    pub limit: u64,
    /// Ms until the next run.
    pub next_in_ms: Option<u64>,
    /// The job's name.
    pub name: String,
}

impl Queue {
    /// Creates or replaces the scheduler `id`; an existing one keeps its next due time and count.
    /// Returns true when it was created.
    pub async fn upsert_scheduler(&self, id: &str, schedule: Schedule) -> Result<bool> {
        if id.is_empty() || id.len() > 256 {
            return Err(Error::new(
                ErrorCode::InvalidOption,
                "a scheduler id must be 1 to 256 bytes",
            ));
        }
        if schedule.every.as_millis() == 0 {
            return Err(Error::new(
                ErrorCode::InvalidOption,
                "a scheduler runs every 1 ms or more",
            ));
        }
        schedule.options.validate()?;
        let spec = serde_json::json!({
            "name": schedule.name,
            "data": serde_json::to_string(&schedule.data)?,
            "opts": schedule.options.compact_json(),
            "attempts": schedule.options.attempts,
            "every_ms": schedule.every.as_millis() as u64,
            "limit": schedule.limit.unwrap_or(0),
            "count": 0,
        });
        let k = self.keys();
        let created: i64 = script::SCHEDULER_UPSERT
            .prepare()
            .key(&k.schedulers)
            .key(&k.schedule_due)
            .arg(id)
            .arg(spec.to_string())
            .arg(schedule.first_after.as_millis() as u64)
            .invoke(self.store())
            .await?;
        Ok(created == 1)
    }

    /// Deletes the scheduler `id`; true when it existed.
    pub async fn remove_scheduler(&self, id: &str) -> Result<bool> {
        let k = self.keys();
        let n: i64 = script::SCHEDULER_REMOVE
            .prepare()
            .key(&k.schedulers)
            .key(&k.schedule_due)
            .arg(id)
            .invoke(self.store())
            .await?;
        Ok(n == 1)
    }

    /// Every scheduler of the queue.
    pub async fn schedulers(&self) -> Result<Vec<SchedulerInfo>> {
        let k = self.keys();
        let mut conn = self.store().conn();
        let specs: std::collections::HashMap<String, String> = redis::cmd("HGETALL")
            .arg(&k.schedulers)
            .query_async(&mut conn)
            .await?;
        let (secs, micros): (u64, u64) = redis::cmd("TIME").query_async(&mut conn).await?;
        let now = secs * 1000 + micros / 1000;
        let mut out = Vec::new();
        for (id, raw) in specs {
            let spec: Value = serde_json::from_str(&raw)?;
            let due: Option<f64> = redis::cmd("ZSCORE")
                .arg(&k.schedule_due)
                .arg(&id)
                .query_async(&mut conn)
                .await?;
            out.push(SchedulerInfo {
                next_in_ms: due.map(|d| (d as u64).saturating_sub(now)),
                every_ms: spec["every_ms"].as_u64().unwrap_or(0),
                count: spec["count"].as_u64().unwrap_or(0),
                limit: spec["limit"].as_u64().unwrap_or(0),
                name: spec["name"].as_str().unwrap_or_default().to_string(),
                id,
            });
        }
        out.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(out)
    }

    /// Fires every due scheduler once; returns the runs enqueued and the ms until the next is due.
    pub async fn fire_due_schedulers(&self) -> Result<(u64, Option<u64>)> {
        let k = self.keys();
        let reply: Vec<redis::Value> = script::SCHEDULERS_DUE
            .prepare()
            .key(&k.schedule_due)
            .arg(100)
            .invoke(self.store())
            .await?;
        let mut it = reply.into_iter();
        let next: i64 = it
            .next()
            .map(redis::from_redis_value)
            .transpose()
            .map_err(|e| Error::new(ErrorCode::Internal, format!("schedulers_due: {e}")))?
            .unwrap_or(-1);
        let mut fired = 0;
        for v in it {
            let sid: String = redis::from_redis_value(v)
                .map_err(|e| Error::new(ErrorCode::Internal, format!("schedulers_due: {e}")))?;
            let id: JobId = self.mint_id()?;
            let n: i64 = script::SCHEDULER_FIRE
                .prepare()
                .key(&k.schedulers)
                .key(&k.schedule_due)
                .key(&self.name().job_key(id, JobPart::Record))
                .key(&k.wait)
                .key(&k.paused)
                .key(&k.meta)
                .key(&k.events)
                .key(&k.marker)
                .arg(&sid)
                .arg(id)
                .arg(self.max_events)
                .invoke(self.store())
                .await?;
            fired += n as u64;
        }
        Ok((fired, (next >= 0).then_some(next as u64)))
    }
}
