//! Flows: a `FlowJob` tree in, its `FlowIds` out (the core's own type, exported through its
//! `uniffi` feature; a `JobId` is its text in Kotlin and Swift).

use crate::error::EmqException;
use crate::options::{json, JobOptions};
pub use emq::FlowIds;

/// A job of a flow and the children it waits for (each in its own queue or this one).
#[derive(Debug, Clone, PartialEq, uniffi::Record)]
pub struct FlowJob {
    pub name: String,
    /// The payload as JSON text.
    pub data_json: String,
    /// Its options (`parent_policy` says what its failure does to its parent; a parent takes no
    /// delay).
    #[uniffi(default = None)]
    pub options: Option<JobOptions>,
    /// The queue it goes to (null: the queue adding the flow; any queue on the same server).
    #[uniffi(default = None)]
    pub queue: Option<String>,
    /// Jobs that must finish before it runs.
    #[uniffi(default = [])]
    pub children: Vec<FlowJob>,
}

impl FlowJob {
    fn to_spec(&self) -> Result<emq::spec::FlowSpec, EmqException> {
        Ok(emq::spec::FlowSpec {
            queue: self.queue.clone(),
            name: self.name.clone(),
            data: Some(json(&self.data_json)?),
            options: self.options.clone().unwrap_or_default().to_spec()?,
            children: self
                .children
                .iter()
                .map(FlowJob::to_spec)
                .collect::<Result<_, _>>()?,
        })
    }

    /// The core's flow (checked by the core: options, depth).
    pub(crate) fn to_core(&self, default_queue: &str) -> Result<emq::FlowJob, EmqException> {
        Ok(self.to_spec()?.into_flow(default_queue)?)
    }
}
