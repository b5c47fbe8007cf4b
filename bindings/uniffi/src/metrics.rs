//! A queue's metrics.

use crate::job::Counts;
pub use emq::latency::Histogram;

/// The upper bounds, in ms, of the latency histograms' buckets (a histogram's `counts` has one
/// more: above the last bound).
#[uniffi::export]
pub fn latency_buckets_ms() -> Vec<u64> {
    emq::latency::LATENCY_BUCKETS_MS.to_vec()
}

/// Jobs finished in one minute.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct MinuteCount {
    /// Minutes since the Unix epoch (server time).
    pub minute: u64,
    pub count: u64,
}

/// A snapshot of a queue's metrics.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct QueueMetrics {
    pub queue: String,
    /// Jobs per state.
    pub counts: Counts,
    /// Jobs completed per minute, oldest first, within the last hour.
    pub completed_per_minute: Vec<MinuteCount>,
    /// Jobs failed per minute, oldest first, within the last hour.
    pub failed_per_minute: Vec<MinuteCount>,
    /// Jobs ever added.
    pub added: u64,
    /// Job records ever deleted (removed, trimmed, or removed on completion or failure).
    pub deleted: u64,
    /// Completions refused because the lease was lost.
    pub lease_lost: u64,
    /// Stalled jobs recovered.
    pub stalled: u64,
    /// Completed runs' lengths since the queue began (buckets: `latencyBucketsMs()`).
    pub run: Histogram,
    /// First runs' waits (add or due time to the start) since the queue began.
    pub wait: Histogram,
}

impl From<emq::QueueMetrics> for QueueMetrics {
    fn from(m: emq::QueueMetrics) -> QueueMetrics {
        let minutes = |v: Vec<(u64, u64)>| {
            v.into_iter()
                .map(|(minute, count)| MinuteCount { minute, count })
                .collect()
        };
        QueueMetrics {
            queue: m.queue,
            counts: m.counts,
            completed_per_minute: minutes(m.completed_per_minute),
            failed_per_minute: minutes(m.failed_per_minute),
            added: m.added,
            deleted: m.deleted,
            lease_lost: m.lease_lost,
            stalled: m.stalled,
            run: m.run,
            wait: m.wait,
        }
    }
}
