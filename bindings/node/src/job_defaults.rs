//! A queue's job defaults (the core's `job_defaults.rs`): set from the JSON of a job's options
//! (only `attempts`, `backoff`, `jitter`, `removeOnComplete`, `removeOnFail`; checked by the core)
//! and read back in the same form.

use crate::options::job_spec;
use crate::queue::NativeQueue;
use crate::{throw, Settled};
use napi_derive::napi;

#[napi]
impl NativeQueue {
    /// Replaces the queue's job defaults (`opts`: JSON of job options; undefined: none).
    #[napi]
    pub async fn set_job_defaults(&self, opts: Option<String>) -> Settled<()> {
        Settled::of(async move {
            let spec = job_spec(opts.as_deref()).map_err(throw)?;
            let defaults = emq::JobDefaults::from_spec(spec).map_err(throw)?;
            self.q.set_job_defaults(&defaults).await.map_err(throw)
        })
        .await
    }

    /// The queue's job defaults as JSON text in the form `setJobDefaults` takes (ms, snake_case
    /// keys, which `node/src/queue.ts` turns to camelCase).
    #[napi]
    pub async fn job_defaults(&self) -> Settled<String> {
        Settled::of(async move {
            let d = self.q.job_defaults().await.map_err(throw)?;
            Ok(d.spec_json(false).to_string())
        })
        .await
    }
}
