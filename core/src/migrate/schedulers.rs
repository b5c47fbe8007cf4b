//! BullMQ job schedulers (the `repeat` set and `repeat:<id>` hashes) copied as emq schedulers
//! where the spec maps.

use super::{run::*, source::*};
use crate::error::{ErrorCode, Result};
use crate::scheduler::{Repeat, Schedule};
use serde_json::Value;
use std::collections::HashMap;
use std::time::Duration;

impl Migration<'_> {
    /// Job schedulers (BullMQ 5.16+: the `repeat` set and `repeat:<id>` hashes) become emq
    /// schedulers where the spec maps.
    pub(super) async fn schedulers(&mut self) -> Result<()> {
        let ids = self.zset_ids("repeat").await?;
        if ids.is_empty() {
            return Ok(());
        }
        let now = self.q.server_time_ms().await?;
        let mut left_in_source = 0;
        for (id, next) in ids {
            self.report.row("schedulers").read += 1;
            let key = self.src.key(&format!("repeat:{id}"));
            let h: HashMap<String, String> = redis::cmd("HGETALL")
                .arg(&key)
                .query_async(&mut self.conn())
                .await?;
            if h.is_empty() {
                self.report.skip(
                    "schedulers",
                    &id,
                    "scheduler: a legacy repeatable job with no scheduler hash (re-create it with upsert_scheduler)"
                        .into(),
                );
                continue;
            }
            let schedule = match self.schedule_of(&h, next.map(|n| n as u64), now) {
                Ok(s) => s,
                Err(reason) => {
                    self.report.skip("schedulers", &id, reason);
                    continue;
                }
            };
            if self.o.dry_run {
                self.report.row("schedulers").written += 1;
                self.schedulers.insert(id);
                continue;
            }
            match self.q.upsert_scheduler(&id, schedule).await {
                Ok(_) => {
                    self.report.row("schedulers").written += 1;
                    if self.o.delete_source {
                        let _: i64 = redis::cmd("ZREM")
                            .arg(self.src.key("repeat"))
                            .arg(&id)
                            .query_async(&mut self.conn())
                            .await?;
                        let n: i64 = redis::cmd("DEL")
                            .arg(&key)
                            .query_async(&mut self.conn())
                            .await?;
                        self.report.source_deleted += n as u64;
                    } else {
                        left_in_source += 1;
                    }
                    self.schedulers.insert(id);
                }
                Err(e) if e.code() == ErrorCode::InvalidOption => {
                    self.report
                        .skip("schedulers", &id, format!("scheduler: {}", e.message()));
                }
                Err(e) => return Err(e),
            }
        }
        if !self.o.dry_run && !self.schedulers.is_empty() {
            // A migrated scheduler already due enqueues its run now, in whichever partition it
            // lives (an upsert fires only its own slot's due schedulers).
            self.q.fire_due_schedulers().await?;
        }
        if left_in_source > 0 {
            self.report.notes.push(format!(
                "{left_in_source} scheduler(s) now exist in both BullMQ and emq: remove them from \
                 BullMQ (or run again with --delete-source) before BullMQ workers run again, or \
                 both will enqueue"
            ));
        }
        Ok(())
    }

    pub(super) fn schedule_of(
        &mut self,
        h: &HashMap<String, String>,
        next_ms: Option<u64>,
        now: u64,
    ) -> std::result::Result<Schedule, String> {
        let every = field_u64(h, "every").filter(|e| *e > 0);
        let pattern = h.get("pattern").filter(|p| !p.is_empty());
        let start = field_u64(h, "startDate");
        let repeat = match (every, pattern) {
            (Some(ms), None) => Repeat::Every(Duration::from_millis(ms)),
            (None, Some(p)) => {
                Repeat::cron(p.clone(), h.get("tz").cloned().unwrap_or("UTC".into()))
            }
            (Some(_), Some(_)) => return Err("scheduler: both every and pattern".into()),
            (None, None) => return Err("scheduler: neither every nor pattern".into()),
        };
        if h.get("offset").is_some_and(|o| o != "0") && every.is_some() {
            *self
                .report
                .not_mapped
                .entry("scheduler offset (runs follow the next due time)".into())
                .or_default() += 1;
        }
        let first_after = match &repeat {
            Repeat::Every(_) => next_ms.unwrap_or(now).saturating_sub(now),
            Repeat::Cron { .. } => start.unwrap_or(now).saturating_sub(now),
        };
        let end_after = match field_u64(h, "endDate") {
            None => None,
            Some(end) if end <= now => return Err("scheduler: its endDate has passed".into()),
            Some(end) => Some(Duration::from_millis(end - now)),
        };
        let limit = field_u64(h, "limit").filter(|l| *l > 0).map(|l| {
            // `ic` counts the runs BullMQ has made (from 1, the first one pending).
            let made = field_u64(h, "ic").unwrap_or(1).saturating_sub(1);
            l.saturating_sub(made).max(1)
        });
        let opts = h
            .get("opts")
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or(Value::Null);
        let mut options = map_options(&opts, 0, &mut self.report.not_mapped);
        options.lifo = false;
        let data = h
            .get("data")
            .map(|t| serde_json::from_str(t).unwrap_or_else(|_| Value::String(t.clone())))
            .unwrap_or(Value::Null);
        Ok(Schedule {
            repeat,
            first_after: Duration::from_millis(first_after),
            limit,
            end_after,
            name: h.get("name").cloned().unwrap_or_default(),
            data,
            options,
        })
    }
}
