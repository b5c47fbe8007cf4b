//! `emq keyspace <queue> [--json]`: the keyspace figure of one queue.
//!
//! One row per queue-wide family (`Family::ALL`), then one per part of a job (`JobPart::ALL`, with
//! the placeholder `<jobId>`), then v1's per-job lock string and where v2 keeps it instead (a field
//! of the `leases` hash); then the core's own keys under `{emq}`. Each row gives the v1 (EchoMQ 1.x)
//! and the v2 spelling, the datastore type (v2's), and the hash tag and cluster slot of the v2 key,
//! computed from the key text itself. No server is involved.

use clap::Args as ClapArgs;
use emq::keyspace::PREFIX;
use emq::{hash_tag, key_slot};
use emq::{CoreKey, Family, JobPart, QueueName};
use serde::Serialize;
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// The placeholder shown where a job's id goes.
pub const JOB_ID: &str = "<jobId>";

/// `emq keyspace` options.
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The queue name, bare (`payments`) or braced (`{payments}`).
    pub queue: String,

    /// Print JSON: `{"queue", "keys": [{"family", "type", "v1", "v2", "tag", "slot"}],
    /// "core": [{"key", "tag", "slot"}]}`.
    #[arg(long)]
    pub json: bool,
}

/// One queue key of the figure.
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub struct KeyRow {
    /// What follows `emq:{q}:` (a family's suffix, or `<jobId>[:part]`).
    pub family: String,
    /// The v2 datastore type.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The v1 key.
    pub v1: String,
    /// The v2 key.
    pub v2: String,
    /// The hash tag of the v2 key (without braces).
    pub tag: String,
    /// The cluster slot of the v2 key.
    pub slot: u16,
}

/// One core key of the figure.
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub struct CoreRow {
    /// The key.
    pub key: String,
    /// Its hash tag (without braces).
    pub tag: String,
    /// Its cluster slot.
    pub slot: u16,
}

/// The whole figure; serialises to the `--json` output.
#[derive(Serialize, Debug)]
pub struct Figure {
    /// The bare queue name.
    pub queue: String,
    /// Queue keys: families, job parts, then the v1 lock's v2 home.
    pub keys: Vec<KeyRow>,
    /// The core's keys.
    pub core: Vec<CoreRow>,
}

/// The v2 datastore type of a job part. (Exhaustive: a new part must say its type here.)
fn part_type(part: JobPart) -> &'static str {
    match part {
        JobPart::Record => "hash",
        JobPart::Logs => "list",
    }
}

fn tag_of(key: &str) -> String {
    hash_tag(key).unwrap_or_default().to_string()
}

fn row(family: String, kind: &'static str, v1: String, v2: String) -> KeyRow {
    KeyRow {
        tag: tag_of(&v2),
        slot: key_slot(&v2),
        family,
        kind,
        v1,
        v2,
    }
}

/// The `family` label of v1's per-job lock row.
fn lock_label() -> String {
    format!("{JOB_ID}:lock")
}

/// Builds the figure of `queue`.
pub fn figure(queue: &QueueName) -> Figure {
    let mut keys: Vec<KeyRow> = Family::ALL
        .iter()
        .map(|&f| {
            row(
                f.suffix().to_string(),
                f.redis_type(),
                queue.v1_key(f),
                queue.key(f).as_str().to_string(),
            )
        })
        .collect();
    // The key builders need a real JobId, so the per-job keys are spelled out here from the same
    // parts: the prefix, the (braced in v2) name, the id, the part's suffix.
    for part in JobPart::ALL {
        let family = match part.suffix() {
            "" => JOB_ID.to_string(),
            suffix => format!("{JOB_ID}:{suffix}"),
        };
        keys.push(row(
            family.clone(),
            part_type(part),
            format!("{PREFIX}:{}:{family}", queue.as_str()),
            format!("{PREFIX}:{}:{family}", queue.braced()),
        ));
    }
    // v1 locked a job with its own string key; v2 keeps the lease token in a field of `leases`.
    keys.push(row(
        lock_label(),
        Family::Leases.redis_type(),
        format!("{PREFIX}:{}:{}", queue.as_str(), lock_label()),
        queue.key(Family::Leases).as_str().to_string(),
    ));
    let core = CoreKey::ALL
        .iter()
        .map(|k| {
            let key = k.key().as_str().to_string();
            CoreRow {
                tag: tag_of(&key),
                slot: key_slot(&key),
                key,
            }
        })
        .collect();
    Figure {
        queue: queue.as_str().to_string(),
        keys,
        core,
    }
}

/// Runs `emq keyspace`.
pub fn run(args: &Args) -> emq::Result<()> {
    let queue = QueueName::new(&args.queue)?;
    let fig = figure(&queue);
    if args.json {
        let text = serde_json::to_string_pretty(&fig).map_err(|e| {
            emq::Error::new(emq::ErrorCode::Internal, format!("cannot write JSON: {e}"))
        })?;
        outln!("{text}");
    } else {
        out!("{}", render_text(&queue, &fig));
    }
    Ok(())
}

/// `(tag, slot)` pairs of some rows, each once.
fn tags_and_slots<'a>(rows: impl Iterator<Item = (&'a str, u16)>) -> BTreeSet<(&'a str, u16)> {
    rows.collect()
}

fn describe(pairs: &BTreeSet<(&str, u16)>) -> String {
    pairs
        .iter()
        .map(|(tag, slot)| format!("{{{tag}}} → slot {slot}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The text form: a title, one aligned table of the queue keys, a note on v1's lock, the core keys,
/// and a closing line on tags and slots.
pub fn render_text(queue: &QueueName, fig: &Figure) -> String {
    let lock = lock_label();
    let v2_cell = |r: &KeyRow| {
        if r.family == lock {
            format!("{} (field {JOB_ID})", r.v2)
        } else {
            r.v2.clone()
        }
    };
    let tag_cell = |tag: &str| format!("{{{tag}}}");
    let header = ["FAMILY", "TYPE", "V1 KEY", "V2 KEY", "TAG", "SLOT"];
    let mut w = header.map(|h| h.chars().count());
    for r in &fig.keys {
        let cells = [
            r.family.chars().count(),
            r.kind.chars().count(),
            r.v1.chars().count(),
            v2_cell(r).chars().count(),
            tag_cell(&r.tag).chars().count(),
            r.slot.to_string().len(),
        ];
        for (w, c) in w.iter_mut().zip(cells) {
            *w = (*w).max(c);
        }
    }
    let line = |c: [&str; 6]| {
        format!(
            "  {:<w0$}  {:<w1$}  {:<w2$}  {:<w3$}  {:<w4$}  {:>w5$}\n",
            c[0],
            c[1],
            c[2],
            c[3],
            c[4],
            c[5],
            w0 = w[0],
            w1 = w[1],
            w2 = w[2],
            w3 = w[3],
            w4 = w[4],
            w5 = w[5],
        )
    };

    let mut out = String::new();
    let _ = writeln!(
        out,
        "emq keyspace of queue {:?}: v1 (EchoMQ 1.x) → v2 keys, datastore type, hash tag, cluster slot",
        queue.as_str()
    );
    out.push('\n');
    out.push_str(&line(header));
    let mut section = "";
    for r in &fig.keys {
        let this = if r.family == lock {
            "lock"
        } else if r.family.starts_with(JOB_ID) {
            "job"
        } else {
            "family"
        };
        if this != section {
            match this {
                "job" => {
                    let _ = writeln!(out, "  per job ({JOB_ID} stands for a job's id):");
                }
                "lock" => {
                    let _ = writeln!(out, "  v1's per-job lock:");
                }
                _ => {}
            }
            section = this;
        }
        let (v2, tag, slot) = (v2_cell(r), tag_cell(&r.tag), r.slot.to_string());
        out.push_str(&line([&r.family, r.kind, &r.v1, &v2, &tag, &slot]));
    }
    let leases = queue.key(Family::Leases);
    let v1_lock = format!("{PREFIX}:{}:{lock}", queue.as_str());
    let _ = write!(
        out,
        "\nnote: v2 has no per-job lock string. v1's {v1_lock} (a string) becomes\n\
         \x20     the field {JOB_ID} of the hash {leases}, which holds the job's lease token;\n\
         \x20     the lease's expiry is the job's score in {}. So fetch and the stalled\n\
         \x20     sweep touch only keys their scripts declare.\n",
        queue.key(Family::Active)
    );

    let core_w = fig
        .core
        .iter()
        .map(|c| c.key.chars().count())
        .max()
        .unwrap_or(0)
        .max("KEY".len());
    let core_tag_w = fig
        .core
        .iter()
        .map(|c| tag_cell(&c.tag).chars().count())
        .max()
        .unwrap_or(0)
        .max("TAG".len());
    let _ = writeln!(out, "\ncore keys (shared by every queue):");
    let _ = writeln!(
        out,
        "  {:<core_w$}  {:<core_tag_w$}  {:>5}",
        "KEY", "TAG", "SLOT"
    );
    for c in &fig.core {
        let _ = writeln!(
            out,
            "  {:<core_w$}  {:<core_tag_w$}  {:>5}",
            c.key,
            tag_cell(&c.tag),
            c.slot
        );
    }

    // The closing line is derived from the rows, so it would show a split if there were one.
    let queue_keys: BTreeSet<&str> = fig.keys.iter().map(|r| r.v2.as_str()).collect();
    let queue_pairs = tags_and_slots(fig.keys.iter().map(|r| (r.tag.as_str(), r.slot)));
    let core_pairs = tags_and_slots(fig.core.iter().map(|c| (c.tag.as_str(), c.slot)));
    let n = queue_keys.len();
    let queue_part = if queue_pairs.len() == 1 {
        format!("all {n} queue keys share tag {}", describe(&queue_pairs))
    } else {
        format!("the {n} queue keys span {}", describe(&queue_pairs))
    };
    let core_part = if core_pairs.len() == 1 {
        format!("core keys share tag {}", describe(&core_pairs))
    } else {
        format!("core keys span {}", describe(&core_pairs))
    };
    let _ = writeln!(out, "\n{queue_part}; {core_part}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_lives_in_the_queue_slot() {
        let q = QueueName::new("payments").unwrap();
        let fig = figure(&q);
        assert_eq!(fig.keys.len(), Family::ALL.len() + JobPart::ALL.len() + 1);
        for r in &fig.keys {
            assert_eq!(r.tag, "payments", "{r:?}");
            assert_eq!(r.slot, q.slot(), "{r:?}");
            assert!(r.v1.starts_with("emq:payments:"), "{r:?}");
            assert!(r.v2.starts_with("emq:{payments}:"), "{r:?}");
        }
        assert!(fig
            .keys
            .iter()
            .any(|r| r.v2 == "emq:{payments}:<jobId>:logs" && r.v1 == "emq:payments:<jobId>:logs"));
        for c in &fig.core {
            assert_eq!(c.tag, "emq");
            assert_eq!(c.slot, key_slot("{emq}"));
        }
    }

    #[test]
    fn text_closes_with_the_shared_slots() {
        let q = QueueName::new("{payments}").unwrap();
        let text = render_text(&q, &figure(&q));
        let want = format!(
            "all {} queue keys share tag {{payments}} → slot {}; core keys share tag {{emq}} → slot {}",
            Family::ALL.len() + JobPart::ALL.len(),
            key_slot("{payments}"),
            key_slot("{emq}")
        );
        assert!(text.trim_end().ends_with(&want), "{text}");
        assert!(text.contains("emq:payments:<jobId>:lock"), "{text}");
        assert!(
            text.contains("emq:{payments}:leases (field <jobId>)"),
            "{text}"
        );
    }
}
