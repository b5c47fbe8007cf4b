//! [`EventStream`]: a subscriber on a queue's events stream (`emq:{q}:events`).
//!
//! Every transition appends an entry (`ev` = added, active, completed, retrying, failed, stalled,
//! delayed (a handler put its job back to delayed: `due` = server ms, `atts`), released, removed,
//! progress, paused, resumed, cancelling (a running job's cancel was asked, with its `reason`); `id` = the job, or `ids` = the jobs of a batch transition, read back as one
//! [`Event`] per job). A job cancelled before it ran is `failed` with `code` = `cancelled` and
//! its `reason`. A grouped job's events carry its `group` (a batch entry as `g:<id>` fields).
//!
//! Outcomes travel with their events, capped: a `completed` event carries the job's result
//! (field `result`, JSON text) when it is at most [`EVENT_VALUE_CAP`] bytes (and the results of
//! one batch entry stay within [`EVENT_ENTRY_CAP`] bytes); `retrying` and `failed` carry the
//! failure's `code` and its `message` cut to [`EVENT_VALUE_CAP`] bytes. The record keeps the whole
//! result and failure (with its stack); [`Queue::wait`](crate::Queue::wait) reads it there. The stream is capped
//! (approximately) by the queue, so memory stays bounded. Reading blocks on a dedicated connection
//! to the node that owns the queue, never on the shared one.

use crate::error::{Error, ErrorCode, Result};
use crate::job_id::JobId;
use crate::keyspace::Key;
use crate::store::Store;
use std::collections::HashMap;
use std::time::Duration;

/// Longest result (JSON text) or failure message, in bytes, an event carries (`lua/complete.lua`,
/// `lua/fail.lua`).
pub const EVENT_VALUE_CAP: usize = 512;

/// Most bytes of results one `completed` entry (a batch of jobs) carries in all.
pub const EVENT_ENTRY_CAP: usize = 4096;

/// One stream's entries as XREAD returns them: (stream key, [(entry id, fields)]).
type StreamReply = (String, Vec<(String, HashMap<String, String>)>);

/// One event.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct Event {
    /// The stream entry id (server ms and sequence).
    pub stream_id: String,
    /// What happened.
    pub kind: String,
    /// The job it happened to, when there is one.
    pub job_id: Option<JobId>,
    /// Every field of the entry.
    pub fields: HashMap<String, String>,
}

pub(crate) fn not_found(id: JobId, why: &str) -> Error {
    Error::new(
        ErrorCode::JobNotFound,
        format!("no job {id} in this queue{why}"),
    )
}

/// Turns stream entries into events, one per job of a batch entry.
pub(crate) fn expand(
    entries: Vec<(String, HashMap<String, String>)>,
    last: Option<&mut String>,
) -> Vec<Event> {
    let mut out = Vec::new();
    let mut newest = None;
    for (stream_id, fields) in entries {
        newest = Some(stream_id.clone());
        let kind = fields.get("ev").cloned().unwrap_or_default();
        // A batch transition writes one entry with `ids`; it reads as one event per job.
        let ids: Vec<Option<JobId>> = match (fields.get("ids"), fields.get("id")) {
            (Some(ids), _) => ids.split(' ').map(|s| JobId::parse(s).ok()).collect(),
            (None, Some(id)) => vec![JobId::parse(id).ok()],
            (None, None) => vec![None],
        };
        // Per-job values of a batch entry (`r:<id>`: a completed job's result; `g:<id>`: a
        // grouped job's group) become that job's own `result` and `group` fields.
        let (per_job, shared): (HashMap<String, String>, HashMap<String, String>) = fields
            .into_iter()
            .partition(|(k, _)| k.starts_with("r:") || k.starts_with("g:"));
        for job_id in ids {
            let mut fields = shared.clone();
            if let Some(id) = job_id {
                if let Some(r) = per_job.get(&format!("r:{id}")) {
                    fields.insert("result".into(), r.clone());
                }
                if let Some(g) = per_job.get(&format!("g:{id}")) {
                    fields.insert("group".into(), g.clone());
                }
            }
            out.push(Event {
                stream_id: stream_id.clone(),
                kind: kind.clone(),
                job_id,
                fields,
            });
        }
    }
    if let (Some(last), Some(newest)) = (last, newest) {
        *last = newest;
    }
    out
}

/// Reads a queue's events in order.
pub struct EventStream {
    store: Store,
    key: Key,
    last: String,
    conn: Option<redis::aio::MultiplexedConnection>,
}

impl EventStream {
    pub(crate) async fn new(store: Store, key: Key, after: Option<String>) -> Result<EventStream> {
        let last = match after {
            Some(id) => id,
            None => {
                // Pin "now" to a concrete id, so no event is missed between two reads.
                let newest: Vec<(String, HashMap<String, String>)> = redis::cmd("XREVRANGE")
                    .arg(&key)
                    .arg("+")
                    .arg("-")
                    .arg("COUNT")
                    .arg(1)
                    .query_async(&mut store.conn())
                    .await?;
                newest
                    .first()
                    .map(|e| e.0.clone())
                    .unwrap_or_else(|| "0-0".into())
            }
        };
        Ok(EventStream {
            store,
            key,
            last,
            conn: None,
        })
    }

    /// The next events, waiting up to `wait` for the first one; empty when none came.
    pub async fn next_batch(&mut self, wait: Duration, count: usize) -> Result<Vec<Event>> {
        if self.conn.is_none() {
            self.conn = Some(self.store.blocking_connection(&self.key).await?);
        }
        let conn = self.conn.as_mut().expect("connected");
        let reply: redis::RedisResult<Option<Vec<StreamReply>>> = redis::cmd("XREAD")
            .arg("COUNT")
            .arg(count)
            .arg("BLOCK")
            .arg(wait.as_millis() as u64)
            .arg("STREAMS")
            .arg(&self.key)
            .arg(&self.last)
            .query_async(conn)
            .await;
        let reply = match reply {
            Ok(r) => r,
            Err(e) => {
                self.conn = None;
                return Err(e.into());
            }
        };
        let mut out = Vec::new();
        for (_, entries) in reply.unwrap_or_default() {
            out.extend(expand(entries, Some(&mut self.last)));
        }
        Ok(out)
    }
}
