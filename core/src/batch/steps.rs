//! A batch's steps after its jobs run: adding the callbacks that fell due, recording a batched
//! job's outcome (or a batch inside a batch's) from its queue's `batch-pending` note (now, or by
//! maintenance after [`super::BATCH_GRACE`]), the test stops between steps, deleting and auditing a queue's batches.

use super::{BatchCallback, BatchDone, BatchRef};
use crate::error::Result;
use crate::job_id::JobId;
use crate::keyspace::{BatchPart, QueueName};
use crate::queue::Queue;
use crate::script;
use std::collections::HashMap;
use std::time::Duration;

/// Adds the due callbacks `due` (batch_seal.lua / batch_record.lua's list: kind, id, spec, total,
/// completed, failed per callback) of batch `id` of `q`, each under its pinned id, then marks it
/// added.
pub(super) async fn add_callbacks(q: &Queue, id: JobId, due: &[String]) -> Result<()> {
    for c in due.chunks(6) {
        let [kind, cid, spec, total, completed, failed] = c else {
            continue;
        };
        let cid = JobId::parse(cid)?;
        let spec: BatchCallback = serde_json::from_str(spec)?;
        let n = |s: &str| s.parse::<u64>().unwrap_or(0);
        let mut options = spec.options;
        options.id = Some(cid);
        options.batch_done = Some(BatchDone {
            queue: q.name().as_str().to_string(),
            id: id.to_string(),
            kind: kind.clone(),
            total: n(total),
            completed: n(completed),
            failed: n(failed),
        });
        q.queue_opened(&spec.queue)
            .await?
            .add(&spec.name, spec.data, options)
            .await?;
        if stopped_at(q, Step::CallbackAdded) {
            continue;
        }
        let _: i64 = script::BATCH_CALLBACK_DONE
            .on(q.name(), Some(id))?
            .arg(kind.as_str())
            .arg(cid)
            .invoke(q.store())
            .await?;
    }
    Ok(())
}

/// Where a test stops the steps of a batched outcome ([`stop_batch_steps_after`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Step {
    /// The job's finish (its note in batch-pending) only.
    Finished,
    /// The outcome recorded in the batch, its note not removed, no callback added.
    Recorded,
    /// A callback added, not marked added.
    CallbackAdded,
}

#[cfg(feature = "testing")]
static STOPS: std::sync::Mutex<Option<HashMap<String, u8>>> = std::sync::Mutex::new(None);

/// For `core/tests` (feature `testing`): make the steps after a batched job's finish stop, as a
/// crash there would: for jobs of queue `queue`, after `step` 1 (the finish only) or 2 (recorded
/// in the batch, note kept, callbacks not added); for batches of queue `queue`, 3 (a callback
/// added, not marked added); 0: no stop.
#[cfg(feature = "testing")]
#[doc(hidden)]
pub fn stop_batch_steps_after(queue: &str, step: u8) {
    let mut g = STOPS.lock().unwrap_or_else(|p| p.into_inner());
    g.get_or_insert_with(HashMap::new)
        .insert(queue.to_string(), step);
}

pub(super) fn stopped_at(_queue: &Queue, _step: Step) -> bool {
    #[cfg(feature = "testing")]
    {
        let g = STOPS.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = g.as_ref().and_then(|m| m.get(_queue.name().as_str())) {
            let n = match _step {
                Step::Finished => 1,
                Step::Recorded => 2,
                Step::CallbackAdded => 3,
            };
            return *s == n;
        }
    }
    false
}

/// The note a finish script leaves for a batched job (`lib/batch.lua`): `<o>|<job>|<bq>|<bid>`.
pub(crate) fn pending_entry(outcome: char, job: JobId, batch: &BatchRef) -> String {
    format!("{outcome}|{job}|{}|{}", batch.queue, batch.id)
}

/// Records the outcomes noted as `entries` in `q`'s batch-pending set in their batches (adding
/// the callbacks that fall due), then removes the notes: one `batch_record.lua` call per batch
/// they name (with every outcome for it, in the order given), then one removal of the notes it
/// recorded. A batch that cannot be reached now holds back no other: its notes stay (for the
/// maintenance loop), and the first error is returned after the others are done. Returns how many
/// outcomes the batches counted now.
pub(crate) async fn settle_many(q: &Queue, entries: &[String]) -> Result<u64> {
    if entries.is_empty() || stopped_at(q, Step::Finished) {
        return Ok(0);
    }
    // The notes by batch, in order of first appearance; a note no batch can be read from goes.
    let mut order: Vec<(&str, &str)> = Vec::new();
    let mut by_batch: HashMap<(&str, &str), Vec<Note>> = HashMap::new();
    let mut done: Vec<&String> = Vec::new();
    for entry in entries {
        let parsed = entry.split_once('|').and_then(|(o, rest)| {
            let (job, rest) = rest.split_once('|')?;
            let (bq, bid) = rest.rsplit_once('|')?;
            Some((o, job, bq, bid))
        });
        match parsed {
            Some((o, job, bq, bid)) if JobId::parse(job).is_ok() => {
                let notes = by_batch.entry((bq, bid)).or_default();
                if notes.is_empty() {
                    order.push((bq, bid));
                }
                notes.push((job, o, entry));
            }
            _ => done.push(entry),
        }
    }
    let (mut counted, mut first_error) = (0, None);
    for key in order {
        let notes = &by_batch[&key];
        match record_in_batch(q, key, notes).await {
            Ok(Some(n)) => {
                counted += n;
                done.extend(notes.iter().map(|(_, _, e)| *e));
            }
            // Recorded, its notes kept (a test's stop).
            Ok(None) => {}
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    if !done.is_empty() {
        let _: i64 = redis::cmd("ZREM")
            .arg(&q.keys().batch_pending)
            .arg(&done)
            .query_async(&mut q.store().conn())
            .await?;
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(counted),
    }
}

/// One note of [`settle_many`]: the job's id, its outcome ('c' or 'f') and the note itself.
type Note<'a> = (&'a str, &'a str, &'a String);

/// One batch's part of [`settle_many`]: its outcomes recorded, its due callbacks added and its
/// note for a parent settled. None when a test stops it after the recording.
async fn record_in_batch(
    q: &Queue,
    (bq, bid): (&str, &str),
    notes: &[Note<'_>],
) -> Result<Option<u64>> {
    let (Ok(bid), Ok(bq)) = (JobId::parse(bid), q.queue(bq)) else {
        // No batch can be named by it: the notes go.
        return Ok(Some(0));
    };
    let mut call = script::BATCH_RECORD
        .on(bq.name(), Some(bid))?
        .arg(bq.mint_id()?)
        .arg(bq.mint_id()?);
    for (job, o, _) in notes {
        call = call.arg(*job).arg(*o);
    }
    let reply: Vec<String> = call.invoke(bq.store()).await?;
    let counted = reply.first().and_then(|c| c.parse().ok()).unwrap_or(0);
    if stopped_at(q, Step::Recorded) {
        return Ok(None);
    }
    add_callbacks(&bq, bid, reply.get(2..).unwrap_or_default()).await?;
    settle_parent_note(&bq, reply.get(1)).await?;
    Ok(Some(counted))
}

/// Settles `note`, the outcome a batch inside a batch left for its parent in `q`'s (its own
/// queue's) batch-pending set when the step that called this saw it done ('' or none: nothing to
/// do). A crash before this leaves the note for the maintenance loop.
pub(super) async fn settle_parent_note(q: &Queue, note: Option<&String>) -> Result<()> {
    match note {
        Some(n) if !n.is_empty() => Box::pin(settle_many(q, std::slice::from_ref(n)))
            .await
            .map(|_| ()),
        _ => Ok(()),
    }
}

/// Records the notes of `q` that waited at least `age` (at most `limit`); returns how many notes
/// it saw and how many outcomes the batches counted now.
pub(crate) async fn settle_due(q: &Queue, age: Duration, limit: u64) -> Result<(u64, u64)> {
    let entries: Vec<String> = script::BATCH_PENDING_DUE
        .on(q.name(), None)?
        .arg(age.as_millis() as u64)
        .arg(limit)
        .invoke(q.store())
        .await?;
    // One batch that cannot be settled now (its callback's queue refusing the add, say) does not
    // hold back the others (settle_many).
    let counted = settle_many(q, &entries).await?;
    Ok((entries.len() as u64, counted))
}

/// Deletes every batch `q` created, each with all its parts (for [`Queue::obliterate`], before
/// the queue's families, `batches` among them, go).
pub(crate) async fn delete_all(q: &Queue) -> Result<()> {
    let mut conn = q.store().conn();
    loop {
        let ids: Vec<String> = redis::cmd("ZRANGE")
            .arg(&q.keys().batches)
            .arg(0)
            .arg(499)
            .query_async(&mut conn)
            .await?;
        if ids.is_empty() {
            return Ok(());
        }
        for id in &ids {
            if let Ok(bid) = JobId::parse(id) {
                for part in BatchPart::ALL {
                    let _: i64 = redis::cmd("DEL")
                        .arg(q.name().batch_key(bid, part))
                        .query_async(&mut conn)
                        .await?;
                }
            }
            let _: i64 = redis::cmd("ZREM")
                .arg(&q.keys().batches)
                .arg(id)
                .query_async(&mut conn)
                .await?;
        }
    }
}

/// The batch part of the audit, for queue `q`: each batch it created has counters equal to its
/// jobs' states and a failed set holding exactly its failed jobs; each note in its batch-pending
/// set is well formed.
pub(crate) async fn audit(q: &Queue, problems: &mut Vec<String>) -> Result<()> {
    let mut conn = q.store().conn();
    let ids: Vec<String> = redis::cmd("ZRANGE")
        .arg(&q.keys().batches)
        .arg(0)
        .arg(-1)
        .query_async(&mut conn)
        .await?;
    for id in &ids {
        let Ok(bid) = JobId::parse(id) else {
            problems.push(format!("batches holds {id:?}, not a batch id"));
            continue;
        };
        let b = q.open_batch(id)?;
        let st = match b.status(0, 0).await {
            Ok(st) => st,
            Err(_) => {
                problems.push(format!("batch {id} is listed but has no record"));
                continue;
            }
        };
        let jobs: HashMap<String, String> = redis::cmd("HGETALL")
            .arg(q.name().batch_key(bid, BatchPart::Jobs))
            .query_async(&mut conn)
            .await?;
        let count = |s: &str| jobs.values().filter(|v| v.starts_with(s)).count() as u64;
        let (p, c, f) = (count("p|"), count("c|"), count("f|"));
        if (st.total, st.completed, st.failed) != (p + c + f, c, f) {
            problems.push(format!(
                "batch {id}: counters total {} completed {} failed {}, its jobs {} / {c} / {f}",
                st.total,
                st.completed,
                st.failed,
                p + c + f
            ));
        }
        let failed_set: u64 = redis::cmd("ZCARD")
            .arg(q.name().batch_key(bid, BatchPart::Failed))
            .query_async(&mut conn)
            .await?;
        if failed_set != f {
            problems.push(format!(
                "batch {id}: {failed_set} in its failed set, {f} failed jobs"
            ));
        }
    }
    let notes: Vec<String> = redis::cmd("ZRANGE")
        .arg(&q.keys().batch_pending)
        .arg(0)
        .arg(-1)
        .query_async(&mut conn)
        .await?;
    for n in notes {
        let ok = n.len() > 2
            && (n.starts_with("c|") || n.starts_with("f|"))
            && n[2..]
                .split_once('|')
                .and_then(|(job, rest)| Some((JobId::parse(job).ok()?, rest.rsplit_once('|')?)))
                .is_some_and(|(_, (bq, bid))| {
                    QueueName::new(bq).is_ok() && JobId::parse(bid).is_ok()
                });
        if !ok {
            problems.push(format!("batch-pending holds {n:?}, not a batched outcome"));
        }
    }
    Ok(())
}
