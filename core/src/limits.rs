//! Queue-wide limits that every worker honours inside the claim script: global concurrency (most
//! jobs active across all workers) and a rate limit (most jobs started per window, on the server's
//! clock). Both live in the queue's meta hash, so they change without restarting workers.

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

impl Queue {
    /// Sets (or with None lifts) the most jobs of this queue active at once across all workers.
    pub async fn set_global_concurrency(&self, max: Option<u32>) -> Result<()> {
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

    /// Sets (or with None lifts) the queue's rate limit.
    pub async fn set_rate_limit(&self, limit: Option<RateLimit>) -> Result<()> {
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
}
