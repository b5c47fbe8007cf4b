//! The parts of one job and of one batch, and the core's own cross-queue keys (`{emq}:`).

use super::{Key, QueueName, PREFIX};
use crate::job_id::JobId;

/// The parts of one job, each `emq:{q}:<jobId>[:<part>]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JobPart {
    /// HASH: name, data, options, attempts, result, failure, stamps.
    Record,
    /// LIST: the job's log lines.
    Logs,
}

impl JobPart {
    /// Every part.
    pub const ALL: [JobPart; 2] = [JobPart::Record, JobPart::Logs];

    /// The `<part>` suffix ("" for the record itself).
    pub const fn suffix(self) -> &'static str {
        match self {
            JobPart::Record => "",
            JobPart::Logs => "logs",
        }
    }

    /// The name a script header gives this part: `record` or `logs`.
    pub const fn role(self) -> &'static str {
        match self {
            JobPart::Record => "record",
            JobPart::Logs => "logs",
        }
    }
}

/// The parts of one batch (`core/src/batch/`), each `emq:{q}:batch:<batchId>[:<part>]`, in the
/// slot of the queue that created it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BatchPart {
    /// HASH: description, counters (total, completed, failed), the callbacks' specs and pinned ids.
    Record,
    /// HASH from each job counted in (its id) to `<state>|<its queue>`, state `p` pending, `c`
    /// completed, `f` failed: what makes counting in and recording an outcome idempotent.
    Jobs,
    /// ZSET of the batch's failed jobs (`<queue>:<id>`), by when they failed (server ms).
    Failed,
}

impl BatchPart {
    /// Every part.
    pub const ALL: [BatchPart; 3] = [BatchPart::Record, BatchPart::Jobs, BatchPart::Failed];

    /// The `<part>` suffix ("" for the record itself).
    pub const fn suffix(self) -> &'static str {
        match self {
            BatchPart::Record => "",
            BatchPart::Jobs => "jobs",
            BatchPart::Failed => "failed",
        }
    }

    /// The name a script header gives this part: `batch`, `batch_jobs`, `batch_failed`.
    pub const fn role(self) -> &'static str {
        match self {
            BatchPart::Record => "batch",
            BatchPart::Jobs => "batch_jobs",
            BatchPart::Failed => "batch_failed",
        }
    }

    /// The datastore type behind the key.
    pub const fn redis_type(self) -> &'static str {
        match self {
            BatchPart::Record | BatchPart::Jobs => "hash",
            BatchPart::Failed => "zset",
        }
    }
}

impl QueueName {
    /// The key of one part of one batch created on this queue.
    pub fn batch_key(&self, id: JobId, part: BatchPart) -> Key {
        match part.suffix() {
            "" => Key::new(format!("{PREFIX}:{{{}}}:batch:{id}", self.tag), part.role()),
            suffix => Key::new(
                format!("{PREFIX}:{{{}}}:batch:{id}:{suffix}", self.tag),
                part.role(),
            ),
        }
    }
}

/// The core's own cross-queue keys, under the `{emq}` tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CoreKey {
    /// STRING: the wire version of the keyspace.
    Version,
    /// HASH: node-id leases for job-id minting.
    Nodes,
    /// SET: the names of the queues in use (written by a queue handle's first add and by every
    /// worker heartbeat; `registry::repair` adds queues found by SCAN).
    Queues,
    /// HASH: partitioned queue name → its partition count, written once (`partitions.rs`).
    Partitions,
}

impl CoreKey {
    /// Every core key.
    pub const ALL: [CoreKey; 4] = [
        CoreKey::Version,
        CoreKey::Nodes,
        CoreKey::Queues,
        CoreKey::Partitions,
    ];

    /// The key.
    pub fn key(self) -> Key {
        match self {
            CoreKey::Version => Key::new(format!("{{{PREFIX}}}:version"), "version"),
            CoreKey::Nodes => Key::new(format!("{{{PREFIX}}}:nodes"), "nodes"),
            CoreKey::Queues => Key::new(format!("{{{PREFIX}}}:queues"), "queues"),
            CoreKey::Partitions => Key::new(format!("{{{PREFIX}}}:partitions"), "partitions"),
        }
    }
}
