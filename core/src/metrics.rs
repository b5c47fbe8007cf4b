//! Queue metrics: counts per state, finished jobs per minute over a bounded window, lifetime
//! counters (added, deleted, lease losses, stalled recoveries) and the run and wait histograms
//! (`latency.rs`: per minute in the window, and over the queue's life); rendered in the Prometheus text
//! format for `emq metrics --listen`. Per-group gauges (backlog and running, a series per group)
//! only when asked ([`Queue::metrics_with_groups`]): a label per tenant can grow a metrics store
//! without bound, so they are off by default and capped in number.

use crate::error::Result;
use crate::job::{Counts, JobState};
use crate::latency::{self, Histogram, Which, LATENCY_BUCKETS, LATENCY_BUCKETS_MS};
use crate::queue::Queue;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

/// Minutes of per-minute counts kept.
pub const METRICS_WINDOW_MINUTES: u64 = 60;

/// When a field of the queue's `metrics` hash counts: `<kind>:<minute>` (written per minute by
/// `complete.lua`, `fail.lua`, `cancel.lua`, and the backlog by `metrics_rollup.lua`) or, once the
/// trim folded it, `<kind>:h<hour>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum At {
    Minute(u64),
    Hour(u64),
}

/// A `metrics` field's kind and time, or None for a field of another shape.
pub(crate) fn metrics_field(field: &str) -> Option<(&str, At)> {
    let (kind, at) = field.split_once(':')?;
    let at = match at.strip_prefix('h') {
        Some(hour) => At::Hour(hour.parse().ok()?),
        None => At::Minute(at.parse().ok()?),
    };
    Some((kind, at))
}

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
    /// Completed runs' lengths over the queue's life (`core/src/latency.rs`).
    pub run: Histogram,
    /// Completed first runs' waits (add or due time to the claim) over the queue's life.
    pub wait: Histogram,
    /// (minute since the epoch, run lengths completed in it), oldest first, within the window.
    pub run_per_minute: Vec<(u64, Histogram)>,
    /// (minute since the epoch, waits of the first runs completed in it), oldest first.
    pub wait_per_minute: Vec<(u64, Histogram)>,
    /// The queue's groups (fair groups), only when asked for ([`Queue::metrics_with_groups`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<crate::groups::GroupInfo>,
}

impl Queue {
    /// Reads the queue's metrics.
    pub async fn metrics(&self) -> Result<QueueMetrics> {
        if let Some(p) = &self.spread() {
            // A partitioned queue's: its partitions' added up, under its own name.
            let all = crate::queue::partitioned::each(p, |m| Box::pin(m.metrics_here())).await?;
            let mut total = merge(all);
            total.queue = self.name().to_string();
            return Ok(total);
        }
        self.metrics_here().await
    }

    /// [`Queue::metrics`] of this queue's own slot (a plain queue, or one partition).
    pub(crate) async fn metrics_here(&self) -> Result<QueueMetrics> {
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
        m.run = lifetime(&meta, "hr");
        m.wait = lifetime(&meta, "hw");
        let mut runs: BTreeMap<u64, Histogram> = BTreeMap::new();
        let mut waits: BTreeMap<u64, Histogram> = BTreeMap::new();
        for (field, n) in per_minute {
            // The window's minutes only (hours folded by the trim are `metrics_history.rs`'s).
            let Some((kind, At::Minute(minute))) = metrics_field(&field) else {
                continue;
            };
            match kind {
                "c" => m.completed_per_minute.push((minute, n)),
                "f" => m.failed_per_minute.push((minute, n)),
                _ => {
                    let Some((which, part)) = latency::field_kind(kind) else {
                        continue;
                    };
                    let series = match which {
                        Which::Run => &mut runs,
                        Which::Wait => &mut waits,
                    };
                    series.entry(minute).or_default().add_part(part, n);
                }
            }
        }
        m.completed_per_minute.sort();
        m.failed_per_minute.sort();
        m.run_per_minute = runs.into_iter().collect();
        m.wait_per_minute = waits.into_iter().collect();
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

    /// Samples the backlog and folds per-minute counts older than the window into per-hour ones
    /// (`metrics_history.rs`; workers call it in the background); the fields removed.
    pub async fn trim_metrics(&self) -> Result<u64> {
        if let Some(p) = &self.spread() {
            return crate::queue::partitioned::sum(p, |m| Box::pin(m.trim_metrics_here())).await;
        }
        self.trim_metrics_here().await
    }
}

/// Several queues' metrics as one (a partitioned queue's partitions): counts, counters, the
/// per-minute series and the histograms added up.
fn merge(all: Vec<QueueMetrics>) -> QueueMetrics {
    let mut out = QueueMetrics::default();
    let mut completed = BTreeMap::new();
    let mut failed = BTreeMap::new();
    let mut runs: BTreeMap<u64, Histogram> = BTreeMap::new();
    let mut waits: BTreeMap<u64, Histogram> = BTreeMap::new();
    let mut counts = Vec::new();
    for m in all {
        counts.push(m.counts);
        out.added += m.added;
        out.deleted += m.deleted;
        out.lease_lost += m.lease_lost;
        out.stalled += m.stalled;
        out.run.merge(&m.run);
        out.wait.merge(&m.wait);
        for (minute, n) in m.completed_per_minute {
            *completed.entry(minute).or_insert(0) += n;
        }
        for (minute, n) in m.failed_per_minute {
            *failed.entry(minute).or_insert(0) += n;
        }
        for (minute, h) in m.run_per_minute {
            runs.entry(minute).or_default().merge(&h);
        }
        for (minute, h) in m.wait_per_minute {
            waits.entry(minute).or_default().merge(&h);
        }
    }
    out.counts = crate::queue::partitioned::add_counts(counts);
    out.completed_per_minute = completed.into_iter().collect();
    out.failed_per_minute = failed.into_iter().collect();
    out.run_per_minute = runs.into_iter().collect();
    out.wait_per_minute = waits.into_iter().collect();
    out
}

/// A lifetime histogram from meta's `<prefix><bucket>` and `<prefix>s` counters.
fn lifetime(meta: &HashMap<String, String>, prefix: &str) -> Histogram {
    let mut h = Histogram::new();
    for b in 0..LATENCY_BUCKETS {
        if let Some(n) = meta
            .get(&format!("{prefix}{b}"))
            .and_then(|v| v.parse().ok())
        {
            h.add(b, n);
        }
    }
    h.sum_ms = meta
        .get(&format!("{prefix}s"))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    h
}

/// A Prometheus histogram (`<name>_bucket`, cumulative, `le` in seconds; `_sum`; `_count`) per queue.
fn histogram_text(
    out: &mut String,
    name: &str,
    help: &str,
    all: &[QueueMetrics],
    pick: fn(&QueueMetrics) -> &Histogram,
) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
    for m in all {
        let h = pick(m);
        let q = label(&m.queue);
        let mut cumulative = 0;
        for (i, bound) in LATENCY_BUCKETS_MS.iter().enumerate() {
            cumulative += h.counts.get(i).copied().unwrap_or(0);
            let _ = writeln!(
                out,
                "{name}_bucket{{queue=\"{q}\",le=\"{}\"}} {cumulative}",
                *bound as f64 / 1000.0
            );
        }
        let count = h.count();
        let _ = writeln!(out, "{name}_bucket{{queue=\"{q}\",le=\"+Inf\"}} {count}");
        let _ = writeln!(
            out,
            "{name}_sum{{queue=\"{q}\"}} {}",
            h.sum_ms as f64 / 1000.0
        );
        let _ = writeln!(out, "{name}_count{{queue=\"{q}\"}} {count}");
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
    histogram_text(
        &mut out,
        "emq_job_run_seconds",
        "How long completed runs took (the handler's run, timed by the worker).",
        all,
        |m| &m.run,
    );
    histogram_text(
        &mut out,
        "emq_job_wait_seconds",
        "How long jobs waited before their first run (add or due time to the claim, on the server's clock).",
        all,
        |m| &m.wait,
    );
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
