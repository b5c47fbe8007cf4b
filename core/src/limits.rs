//! Queue-wide limits that every worker honours inside the claim script: global concurrency (most
//! jobs active across all workers), a rate limit (most jobs started per window, on the server's
//! clock) and a per-group rate limit (most jobs of one group — the `group` job option — started per
//! window, each group on its own). All live in the queue's meta hash, so they change without
//! restarting workers.
//!
//! Per-group limit: a grouped job waits in its group (`core/src/groups.rs`). A group's window opens
//! at its first start (end in the `group-windows` ZSET, starts so far in `group-counts`, both on the
//! server's clock, trimmed when the window ends); a group that has used its window leaves the
//! groups' turns until it ends, when a claim rejoins it, so one busy group never blocks the others.
//!
//! On a partitioned queue the global concurrency and the rate limit are kept as one share per
//! partition, which each partition's claims honour and the workers move to the partitions that
//! have work, never past the limit (`shares.rs`). The per-group rate limit applies in each
//! partition as is (a group's jobs keep to one partition).

use crate::error::{Error, ErrorCode, Result};
use crate::queue::Queue;
use std::time::Duration;

/// At most `max` jobs start per `window`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimit {
    /// Jobs per window (at least 1).
    pub max: u32,
    /// The window (at least 1 ms).
    pub window: Duration,
}

/// At most `max` jobs of each group start per `window`; each group is counted on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupRateLimit {
    /// Jobs of one group per window (at least 1).
    pub max: u32,
    /// The window (at least 1 ms), opened by the group's first start.
    pub window: Duration,
}

impl Queue {
    /// Sets (or with None lifts) the most jobs of this queue active at once across all workers
    /// (a partitioned queue: over all its partitions, see the module doc).
    pub async fn set_global_concurrency(&self, max: Option<u32>) -> Result<()> {
        if let Some(p) = &self.spread_now().await? {
            if max == Some(0) {
                return self.set_global_concurrency_here(max).await;
            }
            return crate::shares::set_total(self, p, crate::shares::Limit::Concurrency, max, None)
                .await;
        }
        self.set_global_concurrency_here(max).await
    }

    /// [`Queue::set_global_concurrency`] on this queue's own slot (a plain queue, or one
    /// partition).
    pub(crate) async fn set_global_concurrency_here(&self, max: Option<u32>) -> Result<()> {
        let mut conn = self.store().conn();
        let meta = &self.keys().meta;
        match max {
            Some(0) => Err(Error::new(
                ErrorCode::InvalidOption,
                "global concurrency must be at least 1 (pause the queue to stop it)",
            )),
            Some(n) => Ok(redis::cmd("HSET")
                .arg(meta)
                .arg("concurrency")
                .arg(n)
                .query_async(&mut conn)
                .await?),
            None => Ok(redis::cmd("HDEL")
                .arg(meta)
                .arg("concurrency")
                .query_async(&mut conn)
                .await?),
        }
    }

    /// Sets (or with None lifts) the queue's rate limit (a partitioned queue: its `max` over all
    /// its partitions, each counting its share in its own window of that length; see the module
    /// doc).
    pub async fn set_rate_limit(&self, limit: Option<RateLimit>) -> Result<()> {
        if let Some(p) = &self.spread_now().await? {
            return match limit {
                Some(l) if l.max == 0 || l.window.as_millis() == 0 => {
                    self.set_rate_limit_here(limit).await
                }
                Some(l) => {
                    crate::shares::set_total(
                        self,
                        p,
                        crate::shares::Limit::Rate,
                        Some(l.max),
                        Some(l.window),
                    )
                    .await
                }
                None => {
                    crate::shares::set_total(self, p, crate::shares::Limit::Rate, None, None).await
                }
            };
        }
        self.set_rate_limit_here(limit).await
    }

    /// [`Queue::set_rate_limit`] on this queue's own slot (a plain queue, or one partition).
    pub(crate) async fn set_rate_limit_here(&self, limit: Option<RateLimit>) -> Result<()> {
        let mut conn = self.store().conn();
        let meta = &self.keys().meta;
        match limit {
            Some(l) if l.max == 0 || l.window.as_millis() == 0 => Err(Error::new(
                ErrorCode::InvalidOption,
                "a rate limit needs max ≥ 1 and a window of at least 1 ms",
            )),
            Some(l) => Ok(redis::cmd("HSET")
                .arg(meta)
                .arg("rl_max")
                .arg(l.max)
                .arg("rl_window_ms")
                .arg(l.window.as_millis() as u64)
                .query_async(&mut conn)
                .await?),
            None => Ok(redis::cmd("HDEL")
                .arg(meta)
                .arg("rl_max")
                .arg("rl_window_ms")
                .query_async(&mut conn)
                .await?),
        }
    }

    /// Sets (or with None lifts) the per-group rate limit (jobs added with a `group`); lifting it
    /// forgets every group's window.
    pub async fn set_group_rate_limit(&self, limit: Option<GroupRateLimit>) -> Result<()> {
        if let Some(p) = &self.spread_now().await? {
            crate::queue::partitioned::each(p, |m| Box::pin(m.set_group_rate_limit_here(limit)))
                .await?;
            return Ok(());
        }
        self.set_group_rate_limit_here(limit).await
    }

    /// [`Queue::set_group_rate_limit`] on this queue's own slot (a plain queue, or one partition).
    pub(crate) async fn set_group_rate_limit_here(
        &self,
        limit: Option<GroupRateLimit>,
    ) -> Result<()> {
        let mut conn = self.store().conn();
        let k = self.keys();
        match limit {
            Some(l) if l.max == 0 || l.window.as_millis() == 0 => Err(Error::new(
                ErrorCode::InvalidOption,
                "a group rate limit needs max ≥ 1 and a window of at least 1 ms",
            )),
            Some(l) => Ok(redis::cmd("HSET")
                .arg(&k.meta)
                .arg("grl_max")
                .arg(l.max)
                .arg("grl_window_ms")
                .arg(l.window.as_millis() as u64)
                .query_async(&mut conn)
                .await?),
            None => {
                let _: i64 = redis::cmd("HDEL")
                    .arg(&k.meta)
                    .arg("grl_max")
                    .arg("grl_window_ms")
                    .query_async(&mut conn)
                    .await?;
                Ok(redis::cmd("DEL")
                    .arg(&k.group_counts)
                    .arg(&k.group_windows)
                    .query_async(&mut conn)
                    .await?)
            }
        }
    }
}
