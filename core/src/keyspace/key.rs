//! A datastore key: its text, its role (the name a script header gives it) and its cluster slot.

use crate::hash_slot::key_slot;
use std::fmt;

/// A datastore key built by this module. There is no way to make one from a `&str` outside it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    // Shared text: an invocation clones the queue's fixed keys on every call (a count, not a copy).
    text: std::sync::Arc<str>,
    role: &'static str,
    // Its cluster slot, computed once (every invocation checks the one-slot rule on every key).
    slot: u16,
}

impl Key {
    pub(super) fn new(text: String, role: &'static str) -> Key {
        let slot = key_slot(&text);
        Key {
            text: text.into(),
            role,
            slot,
        }
    }

    /// The key's text.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Its cluster slot.
    pub fn slot(&self) -> u16 {
        self.slot
    }

    /// What the key is, in the words of a script header's `KEYS` names: a family's suffix with `_`
    /// for `-` (`waiting_children`), `record` or `logs` for a job's parts, `version` or `nodes` for
    /// the core's keys. An invocation is refused when a key's role is not the one its header names
    /// at that position (see `script::Invocation::check`).
    pub fn role(&self) -> &'static str {
        self.role
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl redis::ToRedisArgs for Key {
    fn write_redis_args<W: ?Sized + redis::RedisWrite>(&self, out: &mut W) {
        out.write_arg(self.text.as_bytes())
    }
}
