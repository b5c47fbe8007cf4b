//! A queue's dead letters (the core's `dead_letter.rs`): its default dead-letter queue, the jobs
//! dead-lettered into it, and their replay.

use crate::queue::{parse_id, NativeQueue};
use crate::{throw, Result, Settled};
use napi_derive::napi;

#[napi]
impl NativeQueue {
    /// Sets (or with null clears) the queue's default dead-letter queue.
    #[napi]
    pub async fn set_dead_letter(&self, queue: Option<String>) -> Settled<()> {
        Settled::of(async move {
            self.q
                .set_dead_letter(queue.as_deref())
                .await
                .map_err(throw)
        })
        .await
    }

    /// The queue's default dead-letter queue, or null.
    #[napi]
    pub async fn dead_letter(&self) -> Settled<Option<String>> {
        Settled::of(async move { self.q.dead_letter().await.map_err(throw) }).await
    }

    /// The dead-lettered jobs this queue holds, as JSON text `[{id, name, state, origin}]`.
    #[napi]
    pub async fn dead_letters(&self, limit: f64) -> Settled<String> {
        Settled::of(async move {
            let limit = emq::spec::whole("limit", limit, u32::MAX as u64).map_err(throw)?;
            let jobs = self.q.dead_letters(limit).await.map_err(throw)?;
            let out: Vec<serde_json::Value> = jobs
                .iter()
                .map(|j| {
                    serde_json::json!({
                        "id": j.id, "name": j.name, "state": j.state.map(|s| s.as_str()),
                        "origin": j.dead_letter_origin(),
                    })
                })
                .collect();
            Ok(serde_json::Value::Array(out).to_string())
        })
        .await
    }

    /// Replays dead-lettered jobs (`ids`, or with null all); JSON text `[{id, queue, origin_id}]`.
    #[napi]
    pub async fn replay_dead_letters(&self, ids: Option<Vec<String>>) -> Settled<String> {
        Settled::of(async move {
            let ids = ids
                .map(|v| v.iter().map(|i| parse_id(i)).collect::<Result<Vec<_>>>())
                .transpose()?;
            let done = self
                .q
                .replay_dead_letters(ids.as_deref())
                .await
                .map_err(throw)?;
            Ok(serde_json::to_string(&done).unwrap_or_else(|_| "[]".into()))
        })
        .await
    }
}
