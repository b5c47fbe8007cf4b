//! How long finished jobs are kept: a queue-wide [`Retention`] (a worker's `completed` and `failed`
//! options) and a job's own [`Removal`] (its `remove_on_complete` / `remove_on_fail`).

use serde::{Deserialize, Serialize};

/// How long finished jobs are kept (applied by workers in the background).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retention {
    /// Keep at most this many (None: no count limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// Keep none older than this (None: no age limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub age_ms: Option<u64>,
}

/// What becomes of a job's record once it finishes (`remove_on_complete`, `remove_on_fail`).
///
/// Stored in the job's options as `false`, `true` or `{"count", "age_ms"}` (the first two are what
/// records written before per-job retention hold). A job with [`Removal::Within`] is kept when it
/// finishes; its worker then trims the finished jobs of the queue to that retention
/// (select-then-act, as the queue-wide trim: the ids are not known in advance), the latest such
/// job's retention winning, BullMQ's `removeOnComplete: {count, age}`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Removal {
    /// Kept under the queue's retention (the worker's `completed` / `failed`).
    #[default]
    Keep,
    /// Deleted as it finishes.
    Now,
    /// Kept; the queue's finished jobs are trimmed to this.
    Within(Retention),
}

impl Removal {
    /// Whether the record is deleted as the job finishes.
    pub fn is_now(self) -> bool {
        self == Removal::Now
    }

    /// The retention this job asks for, if any.
    pub fn retention(self) -> Option<Retention> {
        match self {
            Removal::Within(r) => Some(r),
            _ => None,
        }
    }
}

impl Serialize for Removal {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Removal::Keep => s.serialize_bool(false),
            Removal::Now => s.serialize_bool(true),
            Removal::Within(r) => r.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Removal {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Removal, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Wire {
            Flag(bool),
            Within(Retention),
        }
        Ok(match Wire::deserialize(d)? {
            Wire::Flag(false) => Removal::Keep,
            Wire::Flag(true) => Removal::Now,
            Wire::Within(r) => Removal::Within(r),
        })
    }
}

impl Retention {
    /// Keep everything: memory grows without bound.
    pub const KEEP_ALL: Retention = Retention {
        count: None,
        age_ms: None,
    };
    /// Default for completed jobs: the newest 1,000, none older than a day.
    pub const COMPLETED: Retention = Retention {
        count: Some(1_000),
        age_ms: Some(24 * 3600 * 1000),
    };
    /// Default for failed jobs: the newest 10,000, none older than a week.
    pub const FAILED: Retention = Retention {
        count: Some(10_000),
        age_ms: Some(7 * 24 * 3600 * 1000),
    };
}
