//! Queue metrics: counts per state, finished jobs per minute over a bounded window, and lifetime
//! counters (added, deleted, lease losses, stalled recoveries); rendered in the Prometheus text
//! format for `emq metrics --listen`. Per-group gauges (backlog and running, a series per group)
//! only when asked ([`Queue::metrics_with_groups`]): a label per tenant can grow a metrics store
//! without bound, so they are off by default and capped in number.

use crate::error::Result;
use crate::job::{Counts, JobState};
use crate::queue::Queue;
use std::collections::HashMap;
use std::fmt::Write;

/// Minutes of per-minute counts kept.
pub const METRICS_WINDOW_MINUTES: u64 = 60;

/// A snapshot of one queue's metrics.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct QueueMetrics {
    /// The queue.
    pub queue: String,
    /// Jobs per state.
    pub counts: Counts,
    /// (minute since the epoch, jobs completed in it), oldest first, within the window.
    pub completed_per_minute: Vec<(u64, u64)>,
    /// (minute since the epoch, jobs failed in it), oldest first, within the window.
    pub failed_per_minute: Vec<(u64, u64)>,
    /// Jobs ever added.
    pub added: u64,
    /// Job records ever deleted (removed, trimmed, or finished with remove-on-complete/fail).
    pub deleted: u64,
    /// Completions refused because the lease was lost.
    pub lease_lost: u64,
    /// Stalled jobs recovered.
    pub stalled: u64,
    /// The queue's groups (fair groups), only when asked for ([`Queue::metrics_with_groups`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<crate::groups::GroupInfo>,
}

impl Queue {
    /// Reads the queue's metrics.
    pub async fn metrics(&self) -> Result<QueueMetrics> {
        self.plain_only("metrics (read each partition)")?;
        let counts = self.counts().await?;
        let k = self.keys();
        let mut conn = self.store().conn();
        let per_minute: HashMap<String, u64> = redis::cmd("HGETALL")
            .arg(&k.metrics)
            .query_async(&mut conn)
            .await?;
        let meta: HashMap<String, String> = redis::cmd("HGETALL")
            .arg(&k.meta)
            .query_async(&mut conn)
            .await?;
        let num = |f: &str| meta.get(f).and_then(|v| v.parse().ok()).unwrap_or(0);
        let mut m = QueueMetrics {
            queue: self.name().to_string(),
            counts,
            added: num("added"),
            deleted: num("gone"),
            lease_lost: num("lease_lost"),
            stalled: num("stalled_total"),
            ..QueueMetrics::default()
        };
        for (field, n) in per_minute {
            let Some((kind, minute)) = field.split_once(':') else {
                continue;
            };
            let Ok(minute) = minute.parse::<u64>() else {
                continue;
            };
            match kind {
                "c" => m.completed_per_minute.push((minute, n)),
                "f" => m.failed_per_minute.push((minute, n)),
                _ => {}
            }
        }
        m.completed_per_minute.sort();
        m.failed_per_minute.sort();
        Ok(m)
    }

    /// The queue's metrics with its first `most` groups (by name; at most 10,000), whose backlog
    /// and running count [`prometheus_text`] renders as `emq_group_waiting` and
    /// `emq_group_running`, labelled by group.
    pub async fn metrics_with_groups(&self, most: u64) -> Result<QueueMetrics> {
        let mut m = self.metrics().await?;
        m.groups = self.groups(0, most).await?;
        Ok(m)
    }

    /// Drops per-minute counts older than the window (workers call it in the background).
    pub async fn trim_metrics(&self) -> Result<u64> {
        let k = self.keys();
        let mut conn = self.store().conn();
        let secs = self.server_time_ms().await? / 1000;
        let oldest = (secs / 60).saturating_sub(METRICS_WINDOW_MINUTES);
        let fields: Vec<String> = redis::cmd("HKEYS")
            .arg(&k.metrics)
            .query_async(&mut conn)
            .await?;
        let old: Vec<&String> = fields
            .iter()
            .filter(|f| {
                f.split_once(':')
                    .and_then(|(_, m)| m.parse::<u64>().ok())
                    .is_some_and(|m| m < oldest)
            })
            .collect();
        if old.is_empty() {
            return Ok(0);
        }
        let n: u64 = redis::cmd("HDEL")
            .arg(&k.metrics)
            .arg(&old)
            .query_async(&mut conn)
            .await?;
        Ok(n)
    }
}

fn label(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Renders metrics of several queues in the Prometheus text exposition format.
pub fn prometheus_text(all: &[QueueMetrics]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# HELP emq_jobs Jobs in each state.\n# TYPE emq_jobs gauge"
    );
    for m in all {
        for st in JobState::ALL {
            let _ = writeln!(
                out,
                "emq_jobs{{queue=\"{}\",state=\"{}\"}} {}",
                label(&m.queue),
                st.as_str(),
                m.counts.get(st)
            );
        }
    }
    for (name, help, f) in [
        (
            "emq_jobs_added_total",
            "Jobs added.",
            (|m: &QueueMetrics| m.added) as fn(&QueueMetrics) -> u64,
        ),
        ("emq_jobs_deleted_total", "Job records deleted.", |m| {
            m.deleted
        }),
        (
            "emq_lease_lost_total",
            "Completions refused because the lease was lost.",
            |m| m.lease_lost,
        ),
        ("emq_stalled_total", "Stalled jobs recovered.", |m| {
            m.stalled
        }),
    ] {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
        for m in all {
            let _ = writeln!(out, "{name}{{queue=\"{}\"}} {}", label(&m.queue), f(m));
        }
    }
    for (name, help, pick) in [
        (
            "emq_completed_last_minute",
            "Jobs completed in the last full minute.",
            (|m: &QueueMetrics| &m.completed_per_minute) as fn(&QueueMetrics) -> &Vec<(u64, u64)>,
        ),
        (
            "emq_failed_last_minute",
            "Jobs failed in the last full minute.",
            |m| &m.failed_per_minute,
        ),
    ] {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
        for m in all {
            let series = pick(m);
            let newest = series.last().map(|(minute, _)| *minute).unwrap_or(0);
            let last_full = series
                .iter()
                .find(|(minute, _)| *minute + 1 == newest)
                .map(|(_, n)| *n)
                .unwrap_or(0);
            let _ = writeln!(out, "{name}{{queue=\"{}\"}} {last_full}", label(&m.queue));
        }
    }
    if all.iter().any(|m| !m.groups.is_empty()) {
        for (name, help, f) in [
            (
                "emq_group_waiting",
                "Jobs of a group ready to run.",
                (|g: &crate::groups::GroupInfo| g.waiting) as fn(&crate::groups::GroupInfo) -> u64,
            ),
            ("emq_group_running", "Jobs of a group running.", |g| {
                g.running
            }),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
            for m in all {
                for g in &m.groups {
                    let _ = writeln!(
                        out,
                        "{name}{{queue=\"{}\",group=\"{}\"}} {}",
                        label(&m.queue),
                        label(&g.name),
                        f(g)
                    );
                }
            }
        }
    }
    out
}
