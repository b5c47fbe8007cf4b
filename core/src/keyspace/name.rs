//! A validated queue name (the tag between the braces; the rules are the module's, `keyspace/mod.rs`)
//! and the builders of its keys.

use super::{Family, JobPart, Key, MAX_QUEUE_NAME_BYTES, PREFIX};
use crate::error::{Error, ErrorCode, Result};
use crate::hash_slot::key_slot;
use crate::job_id::JobId;
use std::fmt;

/// A validated queue name: the tag that goes between the braces.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QueueName {
    pub(super) tag: String,
}

fn invalid(name: &str, rule: &str) -> Error {
    Error::new(
        ErrorCode::InvalidQueueName,
        format!("invalid queue name {name:?}: {rule}"),
    )
}

impl QueueName {
    /// Validates `name` (bare `orders` or braced `{orders}`) and wraps it.
    pub fn new(name: &str) -> Result<QueueName> {
        let tag = match name.strip_prefix('{') {
            Some(rest) => rest.strip_suffix('}').ok_or_else(|| {
                invalid(
                    name,
                    "a braced name must be exactly `{name}` (unbalanced `{`)",
                )
            })?,
            None => name,
        };
        if tag.is_empty() {
            return Err(invalid(name, "the name is empty"));
        }
        if tag.len() > MAX_QUEUE_NAME_BYTES {
            return Err(invalid(
                name,
                &format!("longer than {MAX_QUEUE_NAME_BYTES} bytes"),
            ));
        }
        if let Some((base, suffix)) = tag.split_once(':') {
            if let Some((index, salt)) = partition_suffix(suffix) {
                let base = QueueName::new(base)?;
                return Ok(QueueName::partition(&base, index, salt));
            }
        }
        if let Some(c) = tag.chars().find(|c| matches!(c, ':' | '{' | '}')) {
            return Err(invalid(
                name,
                &format!("`{c}` is not allowed inside the hash tag"),
            ));
        }
        if tag.chars().any(char::is_whitespace) {
            return Err(invalid(name, "whitespace is not allowed"));
        }
        if tag.chars().any(char::is_control) {
            return Err(invalid(name, "control characters are not allowed"));
        }
        if tag.eq_ignore_ascii_case(PREFIX) {
            return Err(invalid(
                name,
                "`emq` is reserved for the core's own keys ({emq}:…)",
            ));
        }
        Ok(QueueName {
            tag: tag.to_string(),
        })
    }

    /// Partition `index` of the partitioned queue `base`, its tag `<base>:p<index>.<salt>`: the one
    /// form of tag with a `:`, which no plain queue name can have, so a partition never shares keys
    /// with a plain queue or with `{emq}` (see `partitions.rs` for how `salt` spreads them).
    pub(crate) fn partition(base: &QueueName, index: u16, salt: u32) -> QueueName {
        QueueName {
            tag: format!("{}:p{index}.{salt}", base.tag),
        }
    }

    /// For a partition's name, the partitioned queue's name and the partition's index.
    pub fn partition_of(&self) -> Option<(QueueName, u16)> {
        let (base, suffix) = self.tag.split_once(':')?;
        let (index, _) = partition_suffix(suffix)?;
        Some((
            QueueName {
                tag: base.to_string(),
            },
            index,
        ))
    }

    /// The bare name (the hash tag's text).
    pub fn as_str(&self) -> &str {
        &self.tag
    }

    /// The braced form, `{name}`; `QueueName::new` of it gives the same queue.
    pub fn braced(&self) -> String {
        format!("{{{}}}", self.tag)
    }

    /// The cluster slot every key of this queue lives in.
    pub fn slot(&self) -> u16 {
        key_slot(&self.braced())
    }

    /// The key of a queue-wide family.
    pub fn key(&self, family: Family) -> Key {
        Key::new(
            format!("{PREFIX}:{{{}}}:{}", self.tag, family.suffix()),
            family.role(),
        )
    }

    /// The key of one part of one job.
    pub fn job_key(&self, id: JobId, part: JobPart) -> Key {
        match part.suffix() {
            "" => Key::new(format!("{PREFIX}:{{{}}}:{id}", self.tag), part.role()),
            suffix => Key::new(
                format!("{PREFIX}:{{{}}}:{id}:{suffix}", self.tag),
                part.role(),
            ),
        }
    }

    /// The v1 (EchoMQ 1.x) spelling of a family's key, for the keyspace figure only; never used.
    pub fn v1_key(&self, family: Family) -> String {
        format!("{PREFIX}:{}:{}", self.tag, family.suffix())
    }
}

impl fmt::Display for QueueName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.tag)
    }
}

impl std::str::FromStr for QueueName {
    type Err = Error;
    fn from_str(s: &str) -> Result<QueueName> {
        QueueName::new(s)
    }
}

/// `p<index>.<salt>` in canonical decimal (no sign, no leading zero), or None.
fn partition_suffix(suffix: &str) -> Option<(u16, u32)> {
    let (index, salt) = suffix.strip_prefix('p')?.split_once('.')?;
    let canonical = |t: &str| {
        !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) && (t == "0" || !t.starts_with('0'))
    };
    if !canonical(index) || !canonical(salt) {
        return None;
    }
    Some((index.parse().ok()?, salt.parse().ok()?))
}
