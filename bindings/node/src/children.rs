//! Children added to a job that waits for its children (the core's `Queue::add_child`); a running
//! job adds its own through its worker (`NativeWorker::add_child`, worker.rs).

use crate::options::job_options;
use crate::queue::NativeQueue;
use crate::{throw, Settled};
use emq::JobId;
use napi_derive::napi;

#[napi]
impl NativeQueue {
    /// Adds a child (JSON payload text, options as a `JobSpec`'s JSON) to `queue` for `parent`, a
    /// job of this queue waiting for its children; the child's id.
    #[napi]
    pub async fn add_child(
        &self,
        parent: String,
        queue: String,
        name: String,
        data: String,
        opts: Option<String>,
    ) -> Settled<String> {
        Settled::of(async move {
            let parent = JobId::parse(&parent).map_err(throw)?;
            let options = job_options(opts.as_deref()).map_err(throw)?;
            emq::job::check_integer_widths("the payload", &data).map_err(throw)?;
            let data: serde_json::Value =
                serde_json::from_str(&data).map_err(|e| throw(emq::Error::from(e)))?;
            let id = self
                .q
                .add_child(parent, &queue, &name, data, options)
                .await
                .map_err(throw)?;
            Ok(id.to_string())
        })
        .await
    }
}
