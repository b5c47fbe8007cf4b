//! The owned keyspace: validated queue names and the only builders of keys.
//!
//! Every per-queue key is `emq:{q}:<type>` (or `emq:{q}:<jobId>:<part>` for a job's own keys), so all
//! of a queue's keys share one hash tag and one cluster slot. The core's own cross-queue keys live
//! under `{emq}:`. A [`Key`] can only be made here, from a [`QueueName`] and, for per-job keys, a
//! [`JobId`]; scripts accept nothing else as a key.
//!
//! Rules on a queue name (the tag between the braces), each with its own message:
//! - the caller may write `orders` or `{orders}`: the wrap is idempotent;
//! - not empty; at most [`MAX_QUEUE_NAME_BYTES`] bytes of UTF-8;
//! - no `:`, `{` or `}` (a cluster hashes the text between the first `{` and the next `}`), except
//!   in the one form the core gives a partition of a partitioned queue, `<name>:p<index>.<salt>`
//!   (`partitions.rs`): no plain name has a `:`, so partitions and plain queues never collide;
//! - no whitespace and no control characters (they make keys unreadable in every tool);
//! - not `emq` in any letter case (`{emq}` is the core's namespace);
//! - any other Unicode is allowed and kept byte for byte (no normalisation: `é` and `e\u{301}` are two
//!   queues).
//!
//! One file per concept: [`QueueName`] and its rules (`name.rs`), [`Key`] (`key.rs`), the queue-wide
//! [`Family`] table and [`QueueKeys`] (`family.rs`), a job's and a batch's parts and the core's own
//! keys (`parts.rs`).

mod family;
mod key;
mod name;
mod parts;
#[cfg(test)]
mod tests;

pub use family::{Family, QueueKeys};
pub use key::Key;
pub use name::QueueName;
pub use parts::{BatchPart, CoreKey, JobPart};

/// Longest queue name, in bytes of UTF-8.
pub const MAX_QUEUE_NAME_BYTES: usize = 128;

/// The prefix of every per-queue key.
pub const PREFIX: &str = "emq";
