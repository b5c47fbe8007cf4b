//! A queue's last day, for charts: per hour, the jobs completed and failed, the run and wait
//! histograms and the largest backlog sampled; and the backlog per minute over the metrics window.
//!
//! Drawn from the queue's `metrics` hash alone. `complete.lua` and `fail.lua` count per minute;
//! workers, as they trim (every `trim_interval`, 5 s by default), run `metrics_rollup.lua`, which
//! samples the backlog (waiting, paused, prioritized and ready grouped jobs, on the server's clock)
//! into `b:<minute>` and folds each minute older than [`METRICS_WINDOW_MINUTES`] into its hour
//! (`<kind>:h<hour>`; the backlog keeps the hour's largest sample), dropping hours older than
//! [`METRICS_DAY_HOURS`]. A minute is either in its own field or folded into its hour, never both
//! (one script does both), so an hour here adds its folded counts and its minutes still in the
//! window. Cost: one script call per trim per queue (an `HGETALL` of at most about a hundred fields
//! per kind); nothing per job. Backlog samples exist only for minutes a worker of the queue ran.

use crate::error::Result;
use crate::latency::{self, Histogram, Which};
use crate::metrics::{metrics_field, At};
use crate::queue::Queue;
use crate::script;
use std::collections::{BTreeMap, HashMap};

/// Whole hours kept per hour, besides the current one.
pub const METRICS_DAY_HOURS: u64 = 24;

/// One hour of a queue's metrics.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct HourMetrics {
    /// Hours since the epoch (server clock).
    pub hour: u64,
    /// Jobs completed in the hour.
    pub completed: u64,
    /// Jobs failed for good in the hour (cancelled ones included).
    pub failed: u64,
    /// The largest backlog sampled in the hour; `None` when no worker sampled it.
    pub backlog_max: Option<u64>,
    /// Run lengths of the runs completed in the hour.
    pub run: Histogram,
    /// Waits of the first runs completed in the hour.
    pub wait: Histogram,
}

/// A queue's last day ([`Queue::metrics_history`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct MetricsHistory {
    /// The queue.
    pub queue: String,
    /// The hours that have any figure, oldest first (the current hour last).
    pub hours: Vec<HourMetrics>,
    /// (minute since the epoch, jobs waiting to run then), oldest first, within the window.
    pub backlog_per_minute: Vec<(u64, u64)>,
}

impl Queue {
    /// The queue's last day, per hour, and its backlog per minute (a partitioned queue's:
    /// its partitions' added up; an hour's largest backlog is then the sum of each partition's).
    pub async fn metrics_history(&self) -> Result<MetricsHistory> {
        let mut out = if let Some(p) = &self.spread() {
            let all =
                crate::queue::partitioned::each(p, |m| Box::pin(m.metrics_history_here())).await?;
            merge(all)
        } else {
            self.metrics_history_here().await?
        };
        out.queue = self.name().to_string();
        Ok(out)
    }

    pub(crate) async fn metrics_history_here(&self) -> Result<MetricsHistory> {
        let fields: HashMap<String, u64> = redis::cmd("HGETALL")
            .arg(&self.keys().metrics)
            .query_async(&mut self.store().conn())
            .await?;
        Ok(from_fields(fields))
    }

    /// [`Queue::trim_metrics`] of this queue's own slot: samples the backlog, folds the minutes
    /// past the window into their hours and drops the hours past the day; the fields removed.
    pub(crate) async fn trim_metrics_here(&self) -> Result<u64> {
        script::METRICS_ROLLUP
            .on(self.name(), None)?
            .arg(crate::metrics::METRICS_WINDOW_MINUTES)
            .arg(METRICS_DAY_HOURS)
            .invoke(self.store())
            .await
    }
}

/// The history in a `metrics` hash's fields.
fn from_fields(fields: HashMap<String, u64>) -> MetricsHistory {
    let mut hours: BTreeMap<u64, HourMetrics> = BTreeMap::new();
    let mut backlog = Vec::new();
    for (field, n) in fields {
        let Some((kind, at)) = metrics_field(&field) else {
            continue;
        };
        let hour = match at {
            At::Hour(hour) => hour,
            At::Minute(minute) => {
                if kind == "b" {
                    backlog.push((minute, n));
                }
                minute / 60
            }
        };
        let h = hours.entry(hour).or_insert_with(|| HourMetrics {
            hour,
            ..HourMetrics::default()
        });
        match kind {
            "c" => h.completed += n,
            "f" => h.failed += n,
            "b" => h.backlog_max = Some(h.backlog_max.unwrap_or(0).max(n)),
            _ => match latency::field_kind(kind) {
                Some((Which::Run, part)) => h.run.add_part(part, n),
                Some((Which::Wait, part)) => h.wait.add_part(part, n),
                None => {}
            },
        }
    }
    backlog.sort();
    MetricsHistory {
        queue: String::new(),
        hours: hours.into_values().collect(),
        backlog_per_minute: backlog,
    }
}

/// Partitions' histories as one: hours and minutes added up.
fn merge(all: Vec<MetricsHistory>) -> MetricsHistory {
    let mut hours: BTreeMap<u64, HourMetrics> = BTreeMap::new();
    let mut backlog: BTreeMap<u64, u64> = BTreeMap::new();
    for m in all {
        for h in m.hours {
            let into = hours.entry(h.hour).or_insert_with(|| HourMetrics {
                hour: h.hour,
                ..HourMetrics::default()
            });
            into.completed += h.completed;
            into.failed += h.failed;
            if let Some(b) = h.backlog_max {
                into.backlog_max = Some(into.backlog_max.unwrap_or(0) + b);
            }
            into.run.merge(&h.run);
            into.wait.merge(&h.wait);
        }
        for (minute, n) in m.backlog_per_minute {
            *backlog.entry(minute).or_insert(0) += n;
        }
    }
    MetricsHistory {
        queue: String::new(),
        hours: hours.into_values().collect(),
        backlog_per_minute: backlog.into_iter().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_hour_adds_its_folded_counts_and_its_minutes() {
        let fields: HashMap<String, u64> = [
            ("c:h100", 5),
            ("c:6001", 2), // minute 6001 is in hour 100
            ("f:6002", 1),
            ("b:6001", 7),
            ("b:6003", 3),
            ("b:h100", 9),
            ("r3:h100", 4),
            ("r3:6001", 1),
            ("rs:6001", 8),
            ("w0:h99", 2),
            ("junk", 1),
            ("c:hx", 1),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let h = from_fields(fields);
        assert_eq!(h.backlog_per_minute, vec![(6001, 7), (6003, 3)]);
        assert_eq!(h.hours.len(), 2);
        assert_eq!((h.hours[0].hour, h.hours[0].wait.count()), (99, 2));
        assert_eq!(h.hours[0].backlog_max, None);
        let h100 = &h.hours[1];
        assert_eq!((h100.completed, h100.failed), (7, 1));
        assert_eq!(h100.backlog_max, Some(9));
        assert_eq!((h100.run.counts[3], h100.run.sum_ms), (5, 8));
    }
}
