//! Latency histograms: how long completed jobs waited (from their add, or the end of their delay,
//! to the claim that leased them, on the server's clock) and ran (the handler's run, timed by the
//! worker), in fixed buckets ([`LATENCY_BUCKETS_MS`]).
//!
//! A worker counts its completed runs into one [`LatencyDelta`] per `complete.lua` call and sends it
//! as one argument; the script adds it to the queue's `metrics` hash per minute (`r<b>:<minute>`,
//! `w<b>:<minute>`, `rs:`/`ws:` the sums in ms: the last [`crate::metrics::METRICS_WINDOW_MINUTES`]
//! kept, for charts) and to lifetime counters in `meta` (`hr<b>`, `hw<b>`, `hrs`, `hws`: what a
//! Prometheus histogram needs, counters that only grow). Cost: no command per job, a few
//! `HINCRBY`s per call (two per bucket that saw a job). Only first runs count a wait (a retry's
//! wait is its backoff); a job leased ahead waits a little longer in the worker's buffer (at most
//! its prefetch), which is not counted.

use serde::Serialize;

/// The buckets' upper bounds, in ms; one more bucket above the last holds the rest.
pub const LATENCY_BUCKETS_MS: [u64; 16] = [
    1, 2, 5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000,
];

/// Buckets in all (the finite ones and the one above them).
pub const LATENCY_BUCKETS: usize = LATENCY_BUCKETS_MS.len() + 1;

/// The bucket of a latency in ms.
pub fn bucket_of(ms: u64) -> usize {
    LATENCY_BUCKETS_MS
        .iter()
        .position(|b| ms <= *b)
        .unwrap_or(LATENCY_BUCKETS_MS.len())
}

/// One histogram: the count per bucket (not cumulative) and the sum in ms.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct Histogram {
    /// Counts per bucket of [`LATENCY_BUCKETS_MS`] (and the last: above them).
    pub counts: Vec<u64>,
    /// The sum of the latencies, in ms.
    pub sum_ms: u64,
}

impl Default for Histogram {
    fn default() -> Histogram {
        Histogram::new()
    }
}

impl Histogram {
    /// An empty histogram.
    pub fn new() -> Histogram {
        Histogram {
            counts: vec![0; LATENCY_BUCKETS],
            sum_ms: 0,
        }
    }

    /// Latencies counted.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The upper bound (ms) of the bucket holding quantile `q` (0 to 1), or None when empty;
    /// the top bucket reads as the last finite bound.
    pub fn quantile_bound_ms(&self, q: f64) -> Option<u64> {
        let total = self.count();
        if total == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Some(LATENCY_BUCKETS_MS[i.min(LATENCY_BUCKETS_MS.len() - 1)]);
            }
        }
        LATENCY_BUCKETS_MS.last().copied()
    }

    /// Adds `other`'s counts and sum to this one.
    pub fn merge(&mut self, other: &Histogram) {
        for (b, n) in other.counts.iter().enumerate() {
            self.add(b, *n);
        }
        self.sum_ms += other.sum_ms;
    }

    pub(crate) fn add(&mut self, bucket: usize, n: u64) {
        if self.counts.len() < LATENCY_BUCKETS {
            self.counts.resize(LATENCY_BUCKETS, 0);
        }
        self.counts[bucket.min(LATENCY_BUCKETS - 1)] += n;
    }

    /// Adds `n` to one part: a bucket's count or the sum.
    pub(crate) fn add_part(&mut self, part: Part, n: u64) {
        match part {
            Part::Bucket(b) => self.add(b, n),
            Part::SumMs => self.sum_ms += n,
        }
    }
}

/// Which of a queue's two histograms a field of its `metrics` hash counts into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Which {
    Run,
    Wait,
}

/// What part of a histogram a field of the `metrics` hash counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Part {
    Bucket(usize),
    SumMs,
}

/// A latency kind of the `metrics` hash's fields (`r<b>` / `w<b>`: bucket `b` of the run's or the
/// wait's histogram; `rs` / `ws`: its sum in ms), or None for any other kind.
pub(crate) fn field_kind(kind: &str) -> Option<(Which, Part)> {
    let (which, rest) = match kind.split_at_checked(1)? {
        ("r", rest) => (Which::Run, rest),
        ("w", rest) => (Which::Wait, rest),
        _ => return None,
    };
    if rest == "s" {
        return Some((which, Part::SumMs));
    }
    rest.parse().ok().map(|b| (which, Part::Bucket(b)))
}

/// What one call of `complete.lua` adds: the runs and waits of the jobs it completes.
#[derive(Clone, Debug, Default)]
pub(crate) struct LatencyDelta {
    run: Vec<u64>,
    wait: Vec<u64>,
    run_sum: u64,
    wait_sum: u64,
}

impl LatencyDelta {
    /// Counts one completed run: `run_ms` long, after a wait of `wait_ms` (None: not counted).
    pub(crate) fn count(&mut self, run_ms: u64, wait_ms: Option<u64>) {
        if self.run.is_empty() {
            self.run = vec![0; LATENCY_BUCKETS];
            self.wait = vec![0; LATENCY_BUCKETS];
        }
        self.run[bucket_of(run_ms)] += 1;
        self.run_sum += run_ms;
        if let Some(w) = wait_ms {
            self.wait[bucket_of(w)] += 1;
            self.wait_sum += w;
        }
    }

    /// As `complete.lua` reads it: `<field>=<n>` pairs, space-separated (`r<b>`, `w<b>`, `rs`,
    /// `ws`); empty when nothing was counted.
    pub(crate) fn encode(&self) -> String {
        let mut out = Vec::new();
        for (kind, v) in [("r", &self.run), ("w", &self.wait)] {
            for (b, n) in v.iter().enumerate() {
                if *n > 0 {
                    out.push(format!("{kind}{b}={n}"));
                }
            }
        }
        if !self.run.is_empty() {
            out.push(format!("rs={}", self.run_sum));
            if self.wait.iter().any(|n| *n > 0) {
                out.push(format!("ws={}", self.wait_sum));
            }
        }
        out.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_fall_in_their_buckets_and_encode_for_the_script() {
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(1), 0);
        assert_eq!(bucket_of(2), 1);
        assert_eq!(bucket_of(3), 2);
        assert_eq!(bucket_of(300_000), 15);
        assert_eq!(bucket_of(300_001), 16);
        let mut d = LatencyDelta::default();
        assert_eq!(d.encode(), "");
        d.count(3, Some(0));
        d.count(4, None);
        d.count(700, Some(12));
        assert_eq!(d.encode(), "r2=2 r9=1 w0=1 w4=1 rs=707 ws=12");
    }

    #[test]
    fn a_quantile_reads_its_buckets_upper_bound() {
        let mut h = Histogram::new();
        assert_eq!(h.quantile_bound_ms(0.5), None);
        h.add(2, 90); // ≤ 5 ms
        h.add(9, 9); // ≤ 1 s
        h.add(16, 1); // above 300 s
        assert_eq!(h.count(), 100);
        assert_eq!(h.quantile_bound_ms(0.5), Some(5));
        assert_eq!(h.quantile_bound_ms(0.95), Some(1_000));
        assert_eq!(h.quantile_bound_ms(0.999), Some(300_000));
    }
}
