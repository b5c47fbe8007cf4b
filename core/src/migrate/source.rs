//! A BullMQ job as read (`Source` keys, `Read` fields) and the mapping of its options and fields
//! onto emq's; what does not map is reported, never guessed.

use super::*;
use crate::options::{Backoff, JobOptions, Removal, MAX_PRIORITY};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// The source queue's keys (BullMQ's, not emq's: flat, in any slot).
pub(super) struct Source {
    pub(super) base: String,
}

impl Source {
    pub(super) fn key(&self, suffix: &str) -> String {
        format!("{}:{suffix}", self.base)
    }
    pub(super) fn job(&self, id: &str) -> String {
        format!("{}:{id}", self.base)
    }
}

/// Source ids of one container, with their scores (sorted sets only), in order.
pub(super) type Ids = Vec<(String, Option<f64>)>;

/// Where a job sits in the source, and how it is copied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// A list (`wait`, `paused`, `active`): copied as waiting, in list order.
    List,
    /// `prioritized`: copied with its priority, in score order.
    Prioritized,
    /// `delayed`: copied with the delay left.
    Delayed,
    /// `failed` or `completed`: inserted finished.
    Finished,
}

/// One source job read, ready to copy.
pub(super) struct Read {
    pub(super) source_id: String,
    pub(super) field: String,
    pub(super) fields: HashMap<String, String>,
    /// Due time (server ms) for a delayed job.
    pub(super) due_ms: Option<u64>,
}

/// The due time of a BullMQ delayed score: `due * 4096 + counter` since BullMQ 3 (scores above
/// 2^52 / 4096 ms cannot be plain timestamps), the due time itself before.
pub fn bullmq_due_ms(score: f64) -> u64 {
    let s = score.max(0.0) as u64;
    if s > 100_000_000_000_000 {
        s / 4096
    } else {
        s
    }
}

pub(super) fn num(v: Option<&Value>) -> Option<u64> {
    v.and_then(|x| x.as_u64().or_else(|| x.as_f64().map(|f| f.max(0.0) as u64)))
}

/// The emq options of a BullMQ job's `opts` (and its attempts made); what does not map is counted
/// in `not_mapped`.
pub(super) fn map_options(
    opts: &Value,
    attempts_made: u32,
    not_mapped: &mut BTreeMap<String, u64>,
) -> JobOptions {
    let mut o = JobOptions::default();
    let mut miss = |what: &str| *not_mapped.entry(what.to_string()).or_default() += 1;
    let attempts = num(opts.get("attempts"))
        .unwrap_or(1)
        .clamp(1, u32::MAX as u64) as u32;
    o.attempts = attempts.saturating_sub(attempts_made).max(1);
    if let Some(p) = num(opts.get("priority")) {
        if p > MAX_PRIORITY as u64 {
            miss("priority above 2097151 (capped)");
        }
        o.priority = p.min(MAX_PRIORITY as u64) as u32;
    }
    o.lifo = opts.get("lifo").and_then(Value::as_bool).unwrap_or(false);
    match opts.get("backoff") {
        None | Some(Value::Null) => {}
        Some(b) if b.is_number() => {
            o.backoff = Backoff::Fixed {
                delay_ms: num(Some(b)).unwrap_or(0),
            }
        }
        Some(b) => {
            let delay_ms = num(b.get("delay")).unwrap_or(0);
            match b.get("type").and_then(Value::as_str) {
                Some("fixed") => o.backoff = Backoff::Fixed { delay_ms },
                Some("exponential") => {
                    o.backoff = Backoff::Exponential {
                        delay_ms,
                        max_ms: 0,
                    }
                }
                _ => miss("backoff of a custom type"),
            }
            if let Some(j) = b.get("jitter").and_then(Value::as_f64) {
                o.jitter = j.clamp(0.0, 1.0);
            }
        }
    }
    for (name, removal) in [
        ("removeOnComplete", &mut o.remove_on_complete),
        ("removeOnFail", &mut o.remove_on_fail),
    ] {
        // BullMQ's `true | count | {count, age}` (age in seconds) is emq's per-job retention.
        let v = opts.get(name);
        let keep = |count: Option<u64>, age_ms: Option<u64>| {
            Removal::Within(crate::options::Retention { count, age_ms })
        };
        match v {
            None | Some(Value::Null) | Some(Value::Bool(false)) => {}
            Some(Value::Bool(true)) => *removal = Removal::Now,
            Some(Value::Number(_)) => *removal = keep(num(v), None),
            Some(Value::Object(m)) if m.contains_key("count") || m.contains_key("age") => {
                *removal = keep(
                    num(m.get("count")),
                    num(m.get("age")).map(|s| s.saturating_mul(1000)),
                )
            }
            Some(_) => miss(&format!("{name} of another shape")),
        }
    }
    if let Some(g) = opts
        .get("group")
        .and_then(|g| g.get("id"))
        .and_then(|i| i.as_str().map(String::from).or_else(|| Some(i.to_string())))
    {
        // A BullMQ Pro group id becomes the job's fair group (core/src/groups.rs).
        if crate::groups::check_group_name(&g).is_ok() {
            o.group = Some(g);
        } else {
            miss("group id");
        }
    }
    // BullMQ's deduplication (`opts.de`, older `deduplication`): its id becomes the emq dedup key
    // (data in the queue's dedup hash, never a key); a ttl restarts at the migration.
    if let Some(de) = opts
        .get("de")
        .or_else(|| opts.get("deduplication"))
        .filter(|v| !v.is_null())
    {
        let key = de.get("id").and_then(|i| match i {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        });
        match key {
            Some(k) if !k.is_empty() && k.len() <= MAX_DEDUP_KEY => {
                o.dedup = Some(k);
                if let Some(ttl) = num(de.get("ttl")).filter(|t| *t > 0) {
                    o.dedup_ttl_ms = ttl;
                    miss("deduplication ttl (restarted at the migration)");
                }
                if ["extend", "replace"]
                    .iter()
                    .any(|f| de.get(*f).and_then(Value::as_bool) == Some(true))
                {
                    miss("deduplication extend/replace (debounce)");
                }
            }
            _ => miss("deduplication id"),
        }
    }
    for (name, what) in [
        ("debounce", "debounce"),
        ("rateLimiterKey", "rate-limiter key"),
    ] {
        if opts.get(name).is_some_and(|v| !v.is_null()) {
            miss(what);
        }
    }
    o
}

pub(super) fn data_of(fields: &HashMap<String, String>) -> Value {
    match fields.get("data") {
        None => Value::Null,
        Some(t) => serde_json::from_str(t).unwrap_or_else(|_| Value::String(t.clone())),
    }
}

pub(super) fn opts_of(fields: &HashMap<String, String>) -> Value {
    fields
        .get("opts")
        .and_then(|t| serde_json::from_str(t).ok())
        .unwrap_or(Value::Null)
}

pub(super) fn attempts_made(fields: &HashMap<String, String>) -> u32 {
    fields
        .get("atm")
        .or_else(|| fields.get("attemptsMade"))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

pub(super) fn field_u64(fields: &HashMap<String, String>, name: &str) -> Option<u64> {
    fields
        .get(name)
        .and_then(|v| v.parse::<f64>().ok())
        .map(|f| f.max(0.0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn delayed_scores_decode_both_ways() {
        let due = 1_767_225_600_000u64; // 2026-01-01
        assert_eq!(bullmq_due_ms((due * 4096 + 7) as f64), due);
        assert_eq!(bullmq_due_ms(due as f64), due);
    }

    #[test]
    fn options_map_and_count_what_does_not() {
        let mut miss = BTreeMap::new();
        let o = map_options(
            &json!({"attempts": 5, "priority": 3, "backoff": {"type": "exponential", "delay": 100},
                    "removeOnComplete": true, "removeOnFail": 10, "de": {"id": "x"}}),
            2,
            &mut miss,
        );
        assert_eq!(o.attempts, 3);
        assert_eq!(o.priority, 3);
        assert_eq!(
            o.backoff,
            Backoff::Exponential {
                delay_ms: 100,
                max_ms: 0
            }
        );
        assert_eq!(o.remove_on_complete, Removal::Now);
        assert_eq!(
            o.remove_on_fail,
            Removal::Within(crate::options::Retention {
                count: Some(10),
                age_ms: None
            })
        );
        assert_eq!(
            o.dedup.as_deref(),
            Some("x"),
            "the deduplication id is the dedup key"
        );
        assert!(miss.is_empty(), "{miss:?}");
        assert!(o.validate().is_ok());
        let o = map_options(
            &json!({"de": {"id": 42, "ttl": 5000, "extend": true}}),
            0,
            &mut miss,
        );
        assert_eq!((o.dedup.as_deref(), o.dedup_ttl_ms), (Some("42"), 5000));
        assert!(o.validate().is_ok());
        assert!(miss.contains_key("deduplication ttl (restarted at the migration)"));
        assert!(miss.contains_key("deduplication extend/replace (debounce)"));
        let o = map_options(&json!({"attempts": 2, "backoff": 50}), 7, &mut miss);
        assert_eq!(o.attempts, 1, "at least one attempt is left");
        assert_eq!(o.backoff, Backoff::Fixed { delay_ms: 50 });
    }

    #[test]
    fn options_are_checked() {
        assert!(MigrateOptions::new("bull", "q").validate().is_ok());
        for o in [
            MigrateOptions::new("", "q"),
            MigrateOptions::new("bull", "a b"),
            MigrateOptions {
                batch: 0,
                ..MigrateOptions::new("bull", "q")
            },
            MigrateOptions {
                dry_run: true,
                delete_source: true,
                ..MigrateOptions::new("bull", "q")
            },
        ] {
            assert_eq!(o.validate().unwrap_err().code(), ErrorCode::InvalidOption);
        }
    }
}
