//! A queue's limits and fair groups (the core's `limits.rs` and `groups.rs`): global concurrency,
//! the rate limits, group weights, concurrency, caps, pause and the groups' page.

use crate::options::whole;
use crate::queue::NativeQueue;
use crate::{throw, Settled};
use emq::spec::{Millis, RateLimitSpec};
use emq::{GroupRateLimit, RateLimit};
use napi_derive::napi;
use serde_json::{json, Value};

#[napi]
impl NativeQueue {
    /// Sets (a positive whole number) or lifts (null) the most jobs active at once across workers.
    #[napi]
    pub async fn set_global_concurrency(&self, max: Option<f64>) -> Settled<()> {
        Settled::of(async move {
            let max = emq::spec::global_concurrency(max).map_err(throw)?;
            self.q.set_global_concurrency(max).await.map_err(throw)
        })
        .await
    }

    /// Sets (`max` jobs per `window` ms) or lifts (both null) the queue's rate limit.
    #[napi]
    pub async fn set_rate_limit(&self, max: Option<f64>, window: Option<f64>) -> Settled<()> {
        Settled::of(async move {
            let spec = RateLimitSpec {
                max,
                window: window.map(Millis),
            };
            let limit = Option::<RateLimit>::try_from(spec).map_err(throw)?;
            self.q.set_rate_limit(limit).await.map_err(throw)
        })
        .await
    }

    /// Sets (`max` jobs per `window` ms for each group) or lifts (both null) the per-group limit.
    #[napi]
    pub async fn set_group_rate_limit(&self, max: Option<f64>, window: Option<f64>) -> Settled<()> {
        Settled::of(async move {
            let spec = RateLimitSpec {
                max,
                window: window.map(Millis),
            };
            let limit = Option::<GroupRateLimit>::try_from(spec).map_err(throw)?;
            self.q.set_group_rate_limit(limit).await.map_err(throw)
        })
        .await
    }

    /// Sets a group's weight (1 to 1000; the core checks it).
    #[napi]
    pub async fn set_group_weight(&self, group: String, weight: f64) -> Settled<()> {
        Settled::of(async move {
            let weight = whole("weight", weight, u32::MAX.into()).map_err(throw)? as u32;
            self.q.set_group_weight(&group, weight).await.map_err(throw)
        })
        .await
    }

    /// Sets (a whole number) or lifts (null) the most jobs of `group` (null: by default, of every
    /// group) running at once across workers.
    #[napi]
    pub async fn set_group_concurrency(
        &self,
        limit: Option<f64>,
        group: Option<String>,
    ) -> Settled<()> {
        Settled::of(async move {
            let limit = limit
                .map(|n| whole("limit", n, u32::MAX.into()).map(|n| n as u32))
                .transpose()
                .map_err(throw)?;
            self.q
                .set_group_concurrency(limit, group.as_deref())
                .await
                .map_err(throw)
        })
        .await
    }

    /// Sets (a whole number) or lifts (null) the most jobs of `group` (null: by default, of every
    /// group) waiting to run; an add past it is refused (`group_full`).
    #[napi]
    pub async fn set_group_max_waiting(
        &self,
        limit: Option<f64>,
        group: Option<String>,
    ) -> Settled<()> {
        Settled::of(async move {
            let limit = limit
                .map(|n| whole("limit", n, emq::spec::MAX_COUNT))
                .transpose()
                .map_err(throw)?;
            self.q
                .set_group_max_waiting(limit, group.as_deref())
                .await
                .map_err(throw)
        })
        .await
    }

    /// Stops handing out jobs of `group`.
    #[napi]
    pub async fn pause_group(&self, group: String) -> Settled<()> {
        Settled::of(async move { self.q.pause_group(&group).await.map_err(throw) }).await
    }

    /// Hands out jobs of a paused `group` again.
    #[napi]
    pub async fn resume_group(&self, group: String) -> Settled<()> {
        Settled::of(async move { self.q.resume_group(&group).await.map_err(throw) }).await
    }

    /// One page of the queue's groups, as JSON (camelCase keys; caps null when none).
    #[napi]
    pub async fn groups(&self, offset: f64, limit: f64) -> Settled<String> {
        Settled::of(async move {
            let offset = whole("offset", offset, emq::spec::MAX_COUNT).map_err(throw)?;
            let limit = whole("limit", limit, emq::spec::MAX_COUNT).map_err(throw)?;
            let list = self.q.groups(offset, limit).await.map_err(throw)?;
            let out: Vec<Value> = list
                .iter()
                .map(|g| {
                    json!({
                        "name": g.name,
                        "waiting": g.waiting,
                        "running": g.running,
                        "weight": g.weight,
                        "concurrency": g.concurrency,
                        "maxWaiting": g.max_waiting,
                        "paused": g.paused,
                    })
                })
                .collect();
            Ok(Value::Array(out).to_string())
        })
        .await
    }
}
