//! Job schedulers: a named schedule that enqueues a job every N ms, or at each occurrence of a cron
//! expression in an IANA time zone, on the server's clock, exactly once per due time however many
//! workers and producers race. The scheduler id is user data (a field of `emq:{q}:schedulers`),
//! never a key.
//!
//! Firing is select-then-compare-and-set. `schedulers_due.lua` returns the server's now and, per due
//! scheduler, its stored due instant D and spec. For an every-N schedule the fire script moves the
//! due time itself. For a cron schedule the firing client computes, with the cron calendar (a pure
//! function of D, the server's now, the expression and the zone — never the local clock), the
//! duration from D to the next occurrence after max(D, now), and sends that duration with the spec's
//! revision; `scheduler_fire.lua` checks that the revision is unchanged (every step that moves a due
//! time bumps it, so the stored due is still D and of racing firers exactly one enqueues), enqueues
//! the run, and stores D + duration. Every instant it stores is thus server time
//! plus durations (wire rule 4). A new or re-timed cron scheduler is stored "unprimed" with a start
//! instant; the first fire step only moves it to its first occurrence at or after the start.
//!
//! A schedule may stop after `limit` runs, or at `end_after` (a duration from the upsert, stored as a
//! server instant): a run due after the end is not enqueued and the scheduler is removed.

use crate::error::{Error, ErrorCode, Result};
use crate::job_id::JobId;
use crate::options::JobOptions;
use crate::queue::Queue;
use crate::script;
use chrono::{TimeZone, Utc};
use croner::parser::{CronParser, Seconds, Year};
use croner::Cron;
use serde_json::Value;
use std::time::Duration;

/// How a scheduler repeats.
#[derive(Clone, Debug, PartialEq)]
pub enum Repeat {
    /// Every this long (at least 1 ms), counted from the previous due time.
    Every(Duration),
    /// At each occurrence of a cron expression (5 fields, or 6 with seconds first) read in an IANA
    /// time zone ("UTC", "Europe/Berlin"); daylight-saving changes follow the zone's rules.
    Cron {
        /// The expression, e.g. `0 9 * * MON-FRI` or `*/10 * * * * *`.
        expr: String,
        /// The IANA zone name.
        tz: String,
    },
}

impl Repeat {
    /// A cron repeat in `tz`.
    pub fn cron(expr: impl Into<String>, tz: impl Into<String>) -> Repeat {
        Repeat::Cron {
            expr: expr.into(),
            tz: tz.into(),
        }
    }
}

/// What a scheduler enqueues, and when.
#[derive(Clone, Debug)]
pub struct Schedule {
    /// How it repeats.
    pub repeat: Repeat,
    /// Start this long after the upsert (0: now). Every-N: the first run; cron: the first occurrence
    /// at or after it.
    pub first_after: Duration,
    /// Stop after this many runs (None: never).
    pub limit: Option<u64>,
    /// Stop this long after the upsert: no run due later is enqueued (None: never).
    pub end_after: Option<Duration>,
    /// The job's name.
    pub name: String,
    /// The job's payload.
    pub data: Value,
    /// The job's options (delay and dedup are not used for scheduled runs).
    pub options: JobOptions,
}

impl Schedule {
    /// A schedule repeating as `repeat`, starting now, with no limit or end and default options.
    pub fn new(repeat: Repeat, name: impl Into<String>, data: Value) -> Schedule {
        Schedule {
            repeat,
            first_after: Duration::ZERO,
            limit: None,
            end_after: None,
            name: name.into(),
            data,
            options: JobOptions::default(),
        }
    }
}

/// A scheduler as stored.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct SchedulerInfo {
    /// Its id.
    pub id: String,
    /// Interval in ms (0 for a cron scheduler).
    pub every_ms: u64,
    /// The cron expression, for a cron scheduler.
    pub cron: Option<String>,
    /// The cron expression's time zone, for a cron scheduler.
    pub tz: Option<String>,
    /// Runs so far.
    pub count: u64,
    /// Most runs (0: no limit).
    pub limit: u64,
    /// Ms until the next run (for a cron scheduler not yet primed: until its start).
    pub next_in_ms: Option<u64>,
    /// Ms until its end, when it has one.
    pub ends_in_ms: Option<u64>,
    /// The job's name.
    pub name: String,
}

/// A scheduler as the bindings show it (`Queue.schedulers` in Python and Node): what does not
/// apply is `None` (`every` of a cron scheduler, `limit` when there is none), durations in `D`:
/// whole milliseconds ([`SchedulerInfo::view`]) or seconds ([`SchedulerView::in_seconds`]).
/// Serialized with snake_case names; a binding renames them only to its language's case.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SchedulerView<D = u64> {
    /// Its id.
    pub id: String,
    /// The job's name.
    pub name: String,
    /// The interval, for an interval scheduler.
    pub every: Option<D>,
    /// The cron expression, for a cron scheduler.
    pub cron: Option<String>,
    /// The cron expression's time zone, for a cron scheduler.
    pub tz: Option<String>,
    /// Until its end, when it has one.
    pub ends_in: Option<D>,
    /// Runs so far.
    pub count: u64,
    /// Most runs, when limited.
    pub limit: Option<u64>,
    /// Until the next run; `None` when none is due (its limit reached).
    pub next_in: Option<D>,
}

impl SchedulerInfo {
    /// As the bindings show it, durations in milliseconds.
    pub fn view(&self) -> SchedulerView<u64> {
        SchedulerView {
            id: self.id.clone(),
            name: self.name.clone(),
            every: (self.every_ms > 0).then_some(self.every_ms),
            cron: self.cron.clone(),
            tz: self.tz.clone(),
            ends_in: self.ends_in_ms,
            count: self.count,
            limit: (self.limit > 0).then_some(self.limit),
            next_in: self.next_in_ms,
        }
    }
}

impl SchedulerView<u64> {
    /// The same view, durations in seconds.
    pub fn in_seconds(self) -> SchedulerView<f64> {
        let s = |ms: u64| ms as f64 / 1000.0;
        SchedulerView {
            id: self.id,
            name: self.name,
            every: self.every.map(s),
            cron: self.cron,
            tz: self.tz,
            ends_in: self.ends_in.map(s),
            count: self.count,
            limit: self.limit,
            next_in: self.next_in.map(s),
        }
    }
}

fn invalid(msg: String) -> Error {
    Error::new(ErrorCode::InvalidOption, msg)
}

/// A parsed cron expression and its zone.
#[derive(Clone, Debug)]
pub struct CronSchedule {
    cron: Cron,
    tz: chrono_tz::Tz,
}

impl CronSchedule {
    /// Parses `expr` (5 fields, or 6 with seconds first) in the IANA zone `tz`; an `invalid_option`
    /// error names what is wrong.
    pub fn parse(expr: &str, tz: &str) -> Result<CronSchedule> {
        let fields = expr.split_whitespace().count();
        if !(5..=6).contains(&fields) {
            return Err(invalid(format!(
                "a cron expression has 5 fields (or 6 with seconds first), got {fields} in {expr:?}"
            )));
        }
        // A list with an empty item (`,`, `1,,2`, `5,`) names no value; the parser accepts some of
        // them and then searches for an occurrence forever (found by fuzzing `fuzz/`).
        if let Some(field) = expr
            .split_whitespace()
            .find(|f| f.split(',').any(str::is_empty))
        {
            return Err(invalid(format!(
                "invalid cron expression {expr:?}: the field {field:?} has an empty list item"
            )));
        }
        let cron = CronParser::builder()
            .seconds(Seconds::Optional)
            .year(Year::Disallowed)
            .build()
            .parse(expr)
            .map_err(|e| invalid(format!("invalid cron expression {expr:?}: {e}")))?;
        let tz: chrono_tz::Tz = tz.parse().map_err(|_| {
            invalid(format!(
                "unknown time zone {tz:?} (use an IANA name such as \"Europe/Berlin\")"
            ))
        })?;
        // An expression that never matches (e.g. 30 February) would make every fire step fail.
        // The calendar repeats every 400 years (146,097 days, a whole number of weeks), so an
        // expression that occurs at all occurs within any 400 years: probe the last 401 years the
        // parser searches (it gives up at the year `YEAR_UPPER_LIMIT`), which bounds the cost
        // of a refusal. Probing from 1970 searched 3,030 years (~40 ms of CPU per refused
        // expression in a release build; found by fuzzing).
        let probe = Utc
            .with_ymd_and_hms(croner::YEAR_UPPER_LIMIT - 401, 1, 1, 0, 0, 0)
            .single()
            .expect("a valid instant")
            .with_timezone(&tz);
        cron.find_next_occurrence(&probe, true)
            .map_err(|e| invalid(format!("cron expression {expr:?} never occurs: {e}")))?;
        Ok(CronSchedule { cron, tz })
    }

    /// The first occurrence after `after_ms` (or at it, with `inclusive`), in Unix ms.
    pub fn next_occurrence_ms(&self, after_ms: u64, inclusive: bool) -> Result<u64> {
        // The calendar works in whole seconds: start from the second that holds `after_ms`, and
        // step on until the occurrence lies after (or at) it.
        let mut from_ms = after_ms - after_ms % 1000;
        let mut incl = true;
        for _ in 0..4 {
            let start = Utc
                .timestamp_millis_opt(from_ms as i64)
                .single()
                .ok_or_else(|| invalid(format!("instant {from_ms} ms is out of range")))?
                .with_timezone(&self.tz);
            let next = self
                .cron
                .find_next_occurrence(&start, incl)
                .map_err(|e| invalid(format!("no next occurrence: {e}")))?;
            let ms = u64::try_from(next.timestamp_millis())
                .map_err(|_| invalid("an occurrence before 1970".into()))?;
            if ms > after_ms || (inclusive && ms == after_ms) {
                return Ok(ms);
            }
            from_ms = ms;
            incl = false;
        }
        Err(Error::new(
            ErrorCode::Internal,
            "the cron calendar did not move forward",
        ))
    }

    /// The duration the fire script adds to the stored due instant `due_ms`: to the first occurrence
    /// after max(due, now) for a primed scheduler (missed occurrences are skipped, not replayed; at
    /// least 1 ms), or at or after `due_ms` (its start) for an unprimed one.
    pub fn delay_from_due(&self, due_ms: u64, now_ms: u64, primed: bool) -> Result<u64> {
        let next = if primed {
            self.next_occurrence_ms(due_ms.max(now_ms), false)?
        } else {
            self.next_occurrence_ms(due_ms, true)?
        };
        Ok(next.saturating_sub(due_ms).max(u64::from(primed)))
    }
}

/// One due scheduler as `schedulers_due.lua` returns it.
struct Due {
    id: String,
    due_ms: u64,
    spec: Value,
}

fn reply_err(e: impl std::fmt::Display) -> Error {
    Error::new(ErrorCode::Internal, format!("schedulers_due: {e}"))
}

impl Queue {
    /// Creates or replaces the scheduler `id`. A replaced one keeps its count, and its next due time
    /// when it repeats the same way (a changed repeat starts again from `first_after`). Returns true
    /// when it was created. A bad cron expression or time zone is an `invalid_option` error.
    ///
    /// On a partitioned queue a scheduler lives in one partition, its home, and enqueues its runs
    /// there: the partition of its jobs' `group` when they have one, so a group's jobs keep to
    /// one partition, else the partition its id routes to. A scheduler whose group changed moves
    /// to its new home and starts its count and due time again.
    pub async fn upsert_scheduler(&self, id: &str, schedule: Schedule) -> Result<bool> {
        if let Some(p) = &self.spread() {
            let key = schedule.options.group.as_deref();
            let home = p.for_key(key.unwrap_or(id));
            let created = home.upsert_scheduler_here(id, schedule).await?;
            let elsewhere = p.members.iter().filter(|m| m.name() != home.name());
            let moved =
                futures::future::try_join_all(elsewhere.map(|m| m.remove_scheduler_here(id)))
                    .await?;
            return Ok(created && !moved.contains(&true));
        }
        self.upsert_scheduler_here(id, schedule).await
    }

    /// [`Queue::upsert_scheduler`] on this queue's own slot (a plain queue, or one partition).
    pub(crate) async fn upsert_scheduler_here(&self, id: &str, schedule: Schedule) -> Result<bool> {
        if id.is_empty() || id.len() > 256 {
            return Err(invalid("a scheduler id must be 1 to 256 bytes".into()));
        }
        let (every_ms, cron, tz) = match &schedule.repeat {
            Repeat::Every(d) if d.as_millis() == 0 => {
                return Err(invalid("a scheduler runs every 1 ms or more".into()))
            }
            Repeat::Every(d) => (d.as_millis() as u64, None, None),
            Repeat::Cron { expr, tz } => {
                CronSchedule::parse(expr, tz)?;
                (0, Some(expr.trim().to_string()), Some(tz.clone()))
            }
        };
        if schedule.end_after == Some(Duration::ZERO) {
            return Err(invalid("end_after must be more than 0 (or None)".into()));
        }
        schedule.options.validate()?;
        crate::job::check_payload("the scheduled job's payload", &schedule.data)?;
        let mut spec = serde_json::json!({
            "name": schedule.name,
            "data": serde_json::to_string(&schedule.data)?,
            "opts": schedule.options.compact_json(),
            "attempts": schedule.options.attempts,
            "every_ms": every_ms,
            "limit": schedule.limit.unwrap_or(0),
            "count": 0,
            "rev": 0,
        });
        if let Some(g) = &schedule.options.group {
            spec["group"] = Value::from(g.as_str());
        }
        if schedule.options.priority > 0 {
            spec["priority"] = Value::from(schedule.options.priority);
        }
        if let (Some(c), Some(z)) = (cron, tz) {
            spec["cron"] = Value::from(c);
            spec["tz"] = Value::from(z);
        }
        let created: i64 = script::SCHEDULER_UPSERT
            .on(&self.name, None)?
            .arg(id)
            .arg(spec.to_string())
            .arg(schedule.first_after.as_millis() as u64)
            .arg(schedule.end_after.map_or(0, |d| d.as_millis() as u64))
            .invoke(self.store())
            .await?;
        if matches!(schedule.repeat, Repeat::Cron { .. }) && schedule.first_after.is_zero() {
            // Prime it now, so its next due time is its first occurrence (any worker would soon).
            self.fire_due_schedulers_here().await?;
        }
        Ok(created == 1)
    }

    /// Deletes the scheduler `id`; true when it existed (on a partitioned queue, asked of every
    /// partition).
    pub async fn remove_scheduler(&self, id: &str) -> Result<bool> {
        if let Some(p) = &self.spread() {
            let gone =
                crate::queue::partitioned::each(p, |m| Box::pin(m.remove_scheduler_here(id)))
                    .await?;
            return Ok(gone.contains(&true));
        }
        self.remove_scheduler_here(id).await
    }

    /// [`Queue::remove_scheduler`] on this queue's own slot.
    pub(crate) async fn remove_scheduler_here(&self, id: &str) -> Result<bool> {
        let n: i64 = script::SCHEDULER_REMOVE
            .on(&self.name, None)?
            .arg(id)
            .invoke(self.store())
            .await?;
        Ok(n == 1)
    }

    /// Every scheduler of the queue, by id (on a partitioned queue, every partition's).
    pub async fn schedulers(&self) -> Result<Vec<SchedulerInfo>> {
        if let Some(p) = &self.spread() {
            let all = crate::queue::partitioned::each(p, |m| Box::pin(m.schedulers_here())).await?;
            let mut out: Vec<SchedulerInfo> = all.into_iter().flatten().collect();
            out.sort_by(|a, b| a.id.cmp(&b.id));
            return Ok(out);
        }
        self.schedulers_here().await
    }

    /// [`Queue::schedulers`] of this queue's own slot.
    pub(crate) async fn schedulers_here(&self) -> Result<Vec<SchedulerInfo>> {
        let k = self.keys();
        let mut conn = self.store().conn();
        let specs: std::collections::HashMap<String, String> = redis::cmd("HGETALL")
            .arg(&k.schedulers)
            .query_async(&mut conn)
            .await?;
        let now = self.server_time_ms().await?;
        let mut out = Vec::new();
        for (id, raw) in specs {
            let spec: Value = serde_json::from_str(&raw)?;
            let due: Option<f64> = redis::cmd("ZSCORE")
                .arg(&k.schedule_due)
                .arg(&id)
                .query_async(&mut conn)
                .await?;
            let text = |f: &str| spec[f].as_str().map(str::to_string);
            out.push(SchedulerInfo {
                next_in_ms: due.map(|d| (d as u64).saturating_sub(now)),
                ends_in_ms: spec["end_ms"].as_u64().map(|e| e.saturating_sub(now)),
                every_ms: spec["every_ms"].as_u64().unwrap_or(0),
                cron: text("cron"),
                tz: text("tz"),
                count: spec["count"].as_u64().unwrap_or(0),
                limit: spec["limit"].as_u64().unwrap_or(0),
                name: text("name").unwrap_or_default(),
                id,
            });
        }
        out.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(out)
    }

    /// Fires every due scheduler once; returns the runs enqueued and the ms until the next is due
    /// (on a partitioned queue, every partition's: workers fire each partition's from its member).
    pub async fn fire_due_schedulers(&self) -> Result<(u64, Option<u64>)> {
        if let Some(p) = &self.spread() {
            let all =
                crate::queue::partitioned::each(p, |m| Box::pin(m.fire_due_schedulers_here()))
                    .await?;
            let fired = all.iter().map(|(n, _)| n).sum();
            return Ok((fired, all.iter().filter_map(|(_, next)| *next).min()));
        }
        self.fire_due_schedulers_here().await
    }

    /// [`Queue::fire_due_schedulers`] on this queue's own slot.
    pub(crate) async fn fire_due_schedulers_here(&self) -> Result<(u64, Option<u64>)> {
        let reply: Vec<redis::Value> = script::SCHEDULERS_DUE
            .on(&self.name, None)?
            .arg(100)
            .invoke(self.store())
            .await?;
        let mut it = reply.into_iter();
        let int = |it: &mut std::vec::IntoIter<redis::Value>| -> Result<i64> {
            it.next()
                .map(redis::from_redis_value::<i64>)
                .transpose()
                .map_err(reply_err)?
                .ok_or_else(|| reply_err("short reply"))
        };
        let next = int(&mut it)?;
        let now_ms = int(&mut it)? as u64;
        let mut due = Vec::new();
        while let Some(v) = it.next() {
            let id: String = redis::from_redis_value(v).map_err(reply_err)?;
            let due_ms = int(&mut it)? as u64;
            let raw: String = it
                .next()
                .map(redis::from_redis_value)
                .transpose()
                .map_err(reply_err)?
                .ok_or_else(|| reply_err("short reply"))?;
            due.push(Due {
                id,
                due_ms,
                spec: serde_json::from_str(&raw)?,
            });
        }
        let mut fired = 0;
        for d in due {
            let delay = match (d.spec["cron"].as_str(), d.spec["tz"].as_str()) {
                (Some(expr), Some(tz)) => {
                    let primed = d.spec["primed"].as_bool().unwrap_or(false);
                    match CronSchedule::parse(expr, tz)
                        .and_then(|c| c.delay_from_due(d.due_ms, now_ms, primed))
                    {
                        Ok(ms) => ms.to_string(),
                        Err(e) => {
                            tracing::warn!(scheduler = %d.id, error = %e, "cannot compute the next run");
                            continue;
                        }
                    }
                }
                _ => String::new(),
            };
            let id: JobId = self.mint_id()?;
            let n: i64 = script::SCHEDULER_FIRE
                .on(&self.name, Some(id))?
                .arg(&d.id)
                .arg(id)
                .arg(self.max_events)
                .arg(d.spec["rev"].as_u64().unwrap_or(0))
                .arg(delay)
                .invoke(self.store())
                .await?;
            fired += n as u64;
        }
        Ok((fired, (next >= 0).then_some(next as u64)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> u64 {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, s)
            .unwrap()
            .timestamp_millis() as u64
    }

    #[test]
    fn daily_in_berlin_follows_daylight_saving() {
        let c = CronSchedule::parse("0 9 * * *", "Europe/Berlin").unwrap();
        // 29 March 2025, 09:00 CET is 08:00 UTC; the clocks go forward on the 30th, so the next
        // 09:00 (CEST) is 07:00 UTC: 23 hours later.
        let sat = ms(2025, 3, 29, 8, 0, 0);
        let sun = c.next_occurrence_ms(sat, false).unwrap();
        assert_eq!(sun, ms(2025, 3, 30, 7, 0, 0));
        assert_eq!(
            c.delay_from_due(sat, sat + 5, true).unwrap(),
            23 * 3600 * 1000
        );
        // And back in October: 25 hours.
        let oct = ms(2025, 10, 25, 7, 0, 0);
        assert_eq!(
            c.next_occurrence_ms(oct, false).unwrap(),
            ms(2025, 10, 26, 8, 0, 0)
        );
        // The same expression in UTC keeps 24 hours.
        let u = CronSchedule::parse("0 9 * * *", "UTC").unwrap();
        let t = ms(2025, 3, 29, 9, 0, 0);
        assert_eq!(
            u.next_occurrence_ms(t, false).unwrap() - t,
            24 * 3600 * 1000
        );
    }

    #[test]
    fn a_time_in_a_gap_or_an_overlap_runs_once() {
        // 02:30 does not exist in Berlin on 30 March 2025 (02:00 CET jumps to 03:00 CEST).
        let c = CronSchedule::parse("30 2 * * *", "Europe/Berlin").unwrap();
        let before = ms(2025, 3, 29, 12, 0, 0);
        let next = c.next_occurrence_ms(before, false).unwrap();
        // It runs once that day, when the gap ends: 03:00 CEST, 01:00 UTC.
        assert_eq!(next, ms(2025, 3, 30, 1, 0, 0));
        let after = c.next_occurrence_ms(next, false).unwrap();
        assert_eq!(after, ms(2025, 3, 31, 0, 30, 0), "02:30 CEST on the 31st");
        // 02:30 happens twice on 26 October 2025 (03:00 CEST falls back to 02:00 CET): once only.
        let oct = c
            .next_occurrence_ms(ms(2025, 10, 25, 12, 0, 0), false)
            .unwrap();
        assert_eq!(oct, ms(2025, 10, 26, 0, 30, 0), "the first 02:30 (CEST)");
        assert_eq!(
            c.next_occurrence_ms(oct, false).unwrap(),
            ms(2025, 10, 27, 1, 30, 0),
            "next day, 02:30 CET"
        );
    }

    #[test]
    fn seconds_and_missed_runs() {
        let c = CronSchedule::parse("* * * * * *", "UTC").unwrap();
        let d = ms(2026, 1, 1, 0, 0, 0);
        assert_eq!(c.delay_from_due(d, d + 3, true).unwrap(), 1000);
        // Missed runs are skipped: from 2.5 s late, the next is 3 s after the due.
        assert_eq!(c.delay_from_due(d, d + 2_500, true).unwrap(), 3_000);
        // Priming from a start in the middle of a second: the next whole second.
        assert_eq!(c.delay_from_due(d + 200, d + 200, false).unwrap(), 800);
        assert_eq!(c.delay_from_due(d, d, false).unwrap(), 0);
        let five = CronSchedule::parse("*/5 * * * *", "America/New_York").unwrap();
        assert_eq!(
            five.next_occurrence_ms(d + 1, false).unwrap(),
            d + 5 * 60 * 1000
        );
    }

    #[test]
    fn a_field_with_an_empty_list_item_is_refused_at_once() {
        // It used to hang (no occurrence search ever ended); run it on a thread with a deadline.
        for expr in [
            "*/255 , * * * *",
            "1,,2 * * * *",
            "5, * * * *",
            "0 ,1 * * *",
        ] {
            let (tx, rx) = std::sync::mpsc::channel();
            let e = expr.to_string();
            std::thread::spawn(move || {
                let _ = tx.send(CronSchedule::parse(&e, "UTC").map(|_| ()));
            });
            let r = rx
                .recv_timeout(std::time::Duration::from_secs(5))
                .unwrap_or_else(|_| panic!("{expr:?}: parse did not return within 5 s"));
            assert_eq!(r.unwrap_err().code(), ErrorCode::InvalidOption, "{expr:?}");
        }
    }

    #[test]
    fn rare_expressions_are_accepted_and_impossible_ones_refused_quickly() {
        // Rare but real: 29 February on a Monday (AND of day and weekday), the last Friday of
        // February, 31 December; in a zone with daylight saving too.
        for (expr, tz) in [
            ("0 0 29 2 +MON", "UTC"),
            ("0 12 * 2 FRI#L", "UTC"),
            ("0 0 31 12 *", "Europe/Berlin"),
            ("0 0 29 2 +MON", "America/New_York"),
        ] {
            let c = CronSchedule::parse(expr, tz).unwrap_or_else(|e| panic!("{expr:?}: {e}"));
            let next = c
                .next_occurrence_ms(ms(2026, 1, 1, 0, 0, 0), false)
                .unwrap();
            assert!(next > ms(2026, 1, 1, 0, 0, 0), "{expr:?}");
        }
        // Never: 30 February, 31 April, the 2nd of a month that is also "+" (AND with no weekday
        // named). Each refusal used to search from 1970 to the year 5000 (over 300 ms each in a
        // debug build); now 401 years at most.
        let t = std::time::Instant::now();
        for expr in [
            "0 0 30 2 *",
            "0 0 31 4 *",
            "1 00 2 4 +",
            "0 0 2 * +",
            "0 0 2 8 +",
        ] {
            let e = CronSchedule::parse(expr, "UTC").unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidOption, "{expr:?}: {e}");
            assert!(e.to_string().contains("never occurs"), "{expr:?}: {e}");
        }
        eprintln!("five impossible expressions refused in {:?}", t.elapsed());
    }

    #[test]
    fn bad_expressions_and_zones_are_invalid_options() {
        for (expr, tz) in [
            ("* * * *", "UTC"),
            ("* * * * * * *", "UTC"),
            ("61 * * * *", "UTC"),
            ("* * 32 * *", "UTC"),
            ("nonsense here a b c", "UTC"),
            ("0 0 30 2 *", "UTC"),
            ("* * * * *", "Mars/Olympus"),
            ("* * * * *", ""),
        ] {
            let e = CronSchedule::parse(expr, tz).unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidOption, "{expr:?} {tz:?}: {e}");
        }
    }
}
