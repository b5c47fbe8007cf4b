//! Flows: a `FlowJob` tree in, its `FlowIds` out.

use crate::error::EmqException;
use crate::options::{json, JobOptions};

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

/// The ids a flow was given, in the flow's shape.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct FlowIds {
    pub queue: String,
    pub id: String,
    pub children: Vec<FlowIds>,
}

impl From<&emq::FlowIds> for FlowIds {
    fn from(f: &emq::FlowIds) -> FlowIds {
        FlowIds {
            queue: f.queue.clone(),
            id: f.id.to_string(),
            children: f.children.iter().map(FlowIds::from).collect(),
        }
    }
}
