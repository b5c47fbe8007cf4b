//! The server's clock as the core reads it: `TIME` on the node that owns the queue's slot (through
//! `server_time.lua`, whose one key names the slot), the same clock every script of the queue
//! stamps leases, due times and events with. On a cluster a bare `TIME` goes to any node, whose
//! clock may differ; readers that compare against stamps (the audit, scheduler listings, metrics
//! trims, `emq migrate`'s remaining delays) use this one function.

use crate::error::Result;
use crate::queue::Queue;
use crate::script;

impl Queue {
    /// The clock of the node that owns this queue, in milliseconds since the epoch.
    pub async fn server_time_ms(&self) -> Result<u64> {
        script::SERVER_TIME
            .on(self.name(), None)?
            .invoke(self.store())
            .await
    }
}
