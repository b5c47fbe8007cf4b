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
use crate::task::TaskHandle;
use std::collections::HashMap;
use std::time::Duration;
use tokio::sync::mpsc;

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

/// Reads a queue's events in order: one stream, or (a partitioned queue) its partitions' streams
/// merged (`Merged`, below: in order per partition, each event's `stream_id` then a cursor
/// over every partition).
pub struct EventStream {
    inner: Inner,
}

enum Inner {
    One(OneStream),
    Merged(Merged),
}

/// One stream's reader.
pub(crate) struct OneStream {
    store: Store,
    key: Key,
    last: String,
    conn: Option<redis::aio::MultiplexedConnection>,
}

/// A stream's newest `count` entries, oldest first.
pub(crate) async fn newest_entries(
    store: &Store,
    key: &Key,
    count: usize,
) -> Result<Vec<(String, HashMap<String, String>)>> {
    let mut entries: Vec<(String, HashMap<String, String>)> = redis::cmd("XREVRANGE")
        .arg(key)
        .arg("+")
        .arg("-")
        .arg("COUNT")
        .arg(count)
        .query_async(&mut store.conn())
        .await?;
    entries.reverse();
    Ok(entries)
}

/// The id of a stream's newest entry, or `0-0`: "now", pinned so no event is missed between two
/// reads.
pub(crate) async fn newest_id(store: &Store, key: &Key) -> Result<String> {
    Ok(newest_entries(store, key, 1)
        .await?
        .pop()
        .map(|e| e.0)
        .unwrap_or_else(|| "0-0".into()))
}

impl EventStream {
    pub(crate) async fn new(store: Store, key: Key, after: Option<String>) -> Result<EventStream> {
        Ok(EventStream {
            inner: Inner::One(OneStream::new(store, key, after).await?),
        })
    }

    pub(crate) fn merged(m: Merged) -> EventStream {
        EventStream {
            inner: Inner::Merged(m),
        }
    }

    /// The next events, waiting up to `wait` for the first one; empty when none came.
    pub async fn next_batch(&mut self, wait: Duration, count: usize) -> Result<Vec<Event>> {
        match &mut self.inner {
            Inner::One(s) => s.next_batch(wait, count).await,
            Inner::Merged(m) => m.next_batch(wait, count).await,
        }
    }
}

impl OneStream {
    pub(crate) async fn new(store: Store, key: Key, after: Option<String>) -> Result<OneStream> {
        let last = match after {
            Some(id) => id,
            None => newest_id(&store, &key).await?,
        };
        Ok(OneStream {
            store,
            key,
            last,
            conn: None,
        })
    }

    /// The next raw entries after `last` (which moves on), waiting up to `wait`.
    pub(crate) async fn next_entries(
        &mut self,
        wait: Duration,
        count: usize,
    ) -> Result<Vec<(String, HashMap<String, String>)>> {
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
            if let Some((id, _)) = entries.last() {
                self.last = id.clone();
            }
            out.extend(entries);
        }
        Ok(out)
    }

    async fn next_batch(&mut self, wait: Duration, count: usize) -> Result<Vec<Event>> {
        let entries = self.next_entries(wait, count).await?;
        Ok(expand(entries, None))
    }
}

// ---------------------------------------------------------------------------------------------
// A partitioned queue's events as one stream: [`Merged`] reads every partition's stream (each on
// a blocking connection of its own, to the node that owns it, in a reader task per partition) and
// hands their events on in order per partition; between partitions, in the order they arrived.
//
// The cursor: a merged event's `stream_id` is not one entry id but the position of every
// partition when the event was handed on, `<id of partition 0>,<id of partition 1>,…` (the
// event's own entry id at its partition's place). Passing it back as `after` resumes each
// partition exactly there, so a follower that stops and resumes misses and repeats nothing. A
// plain entry id is refused as `after` (it names one partition's place only). `recent_events`
// gives the newest entries of all partitions merged by entry id (the masters' clocks), each with
// the cursor of its place in that merge.

/// Raw stream entries: (entry id, fields).
type Entries = Vec<(String, HashMap<String, String>)>;

/// How long a reader task blocks in one XREAD.
const READ_BLOCK: Duration = Duration::from_millis(1000);

/// The partitions' streams as the queue's handle knows them now (a grown queue has more).
pub(crate) type PartsNow = Box<dyn Fn() -> Vec<(Store, Key)> + Send + Sync>;

/// The merged reader of a partitioned queue's events.
pub(crate) struct Merged {
    /// Each partition's place: the id of the last entry handed on.
    last: Vec<String>,
    rx: mpsc::Receiver<(usize, Entries)>,
    tx: mpsc::Sender<(usize, Entries)>,
    /// Where a grown queue's new partitions are found: each gets a reader from its stream's start
    /// (it held no events before the growth), its place appended to the cursor.
    now: Option<PartsNow>,
    /// Entries received and not yet handed on (a batch takes at most `count` events).
    held: std::collections::VecDeque<(usize, Entries)>,
    _readers: Vec<TaskHandle>,
}

/// The cursor of a place: every partition's id, comma-separated.
fn cursor(last: &[String]) -> String {
    last.join(",")
}

/// The places an `after` cursor names, one per partition (a cursor given before the queue grew
/// names fewer: the new partitions from their start).
fn parse_after(after: &str, n: usize) -> Result<Vec<String>> {
    let mut ids: Vec<String> = after.split(',').map(str::to_string).collect();
    let well_formed = (2..=n).contains(&ids.len())
        && ids.iter().all(|id| {
            let mut it = id.splitn(2, '-');
            let (ms, seq) = (it.next().unwrap_or(""), it.next().unwrap_or("0"));
            !ms.is_empty()
                && ms.bytes().all(|b| b.is_ascii_digit())
                && seq.bytes().all(|b| b.is_ascii_digit())
        });
    if !well_formed {
        return Err(Error::new(
            ErrorCode::InvalidOption,
            format!(
                "after must be a stream id this partitioned queue's events gave ({n} entry ids, comma-separated), got {after:?}"
            ),
        ));
    }
    ids.resize(n, "0-0".to_string());
    Ok(ids)
}

impl Merged {
    /// Follows the partitions' streams from now on, or from an `after` cursor; with `now`, also
    /// the partitions a growth adds.
    pub(crate) async fn open(
        parts: &[(Store, Key)],
        after: Option<String>,
        now: Option<PartsNow>,
    ) -> Result<Merged> {
        let last = match after {
            Some(a) => parse_after(&a, parts.len())?,
            None => {
                futures::future::try_join_all(
                    parts.iter().map(|(store, key)| newest_id(store, key)),
                )
                .await?
            }
        };
        let (tx, rx) = mpsc::channel(64);
        let mut m = Merged {
            last: Vec::new(),
            rx,
            tx,
            now,
            held: Default::default(),
            _readers: Vec::with_capacity(parts.len()),
        };
        for (p, from) in parts.iter().zip(last) {
            m.follow(p, from).await?;
        }
        Ok(m)
    }

    /// Starts the reader of one more partition (the next index), after entry `from`.
    async fn follow(&mut self, p: &(Store, Key), from: String) -> Result<()> {
        let i = self.last.len();
        let mut one = OneStream::new(p.0.clone(), p.1.clone(), Some(from.clone())).await?;
        let tx = self.tx.clone();
        self._readers.push(TaskHandle::spawn(async move {
            loop {
                match one.next_entries(READ_BLOCK, 500).await {
                    Ok(entries) if entries.is_empty() => {}
                    Ok(entries) => {
                        if tx.send((i, entries)).await.is_err() {
                            return;
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, partition = i, "emq: reading a partition's events failed; retrying");
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                }
            }
        }));
        self.last.push(from);
        Ok(())
    }

    /// The next events, waiting up to `wait` for the first one; empty when none came.
    pub(crate) async fn next_batch(&mut self, wait: Duration, count: usize) -> Result<Vec<Event>> {
        if let Some(now) = &self.now {
            let parts = now();
            for p in parts.iter().skip(self.last.len()) {
                self.follow(p, "0-0".to_string()).await?;
            }
        }
        if self.held.is_empty() {
            match tokio::time::timeout(wait, self.rx.recv()).await {
                Ok(Some(got)) => self.held.push_back(got),
                Ok(None) | Err(_) => return Ok(Vec::new()),
            }
        }
        while let Ok(got) = self.rx.try_recv() {
            self.held.push_back(got);
        }
        let mut out = Vec::new();
        while out.len() < count.max(1) {
            let Some((i, entries)) = self.held.pop_front() else {
                break;
            };
            // An entry of a batch transition reads as many events; a batch may end inside it.
            let mut rest = entries.into_iter();
            for entry in rest.by_ref() {
                self.last[i] = entry.0.clone();
                let at = cursor(&self.last);
                for mut e in expand(vec![entry], None) {
                    e.stream_id = at.clone();
                    out.push(e);
                }
                if out.len() >= count.max(1) {
                    break;
                }
            }
            let rest: Entries = rest.collect();
            if !rest.is_empty() {
                self.held.push_front((i, rest));
            }
        }
        Ok(out)
    }
}

/// The newest `limit` events of every partition, merged by entry id, oldest first; each with the
/// cursor of its place in the merge (a partition with no entry before it: `0-0`).
pub(crate) async fn recent(parts: &[(Store, Key)], limit: usize) -> Result<Vec<Event>> {
    let per: Vec<Entries> = futures::future::try_join_all(
        parts
            .iter()
            .map(|(store, key)| newest_entries(store, key, limit + 1)),
    )
    .await?;
    let key = |id: &str| -> (u64, u64) {
        let mut it = id.splitn(2, '-');
        (
            it.next().and_then(|m| m.parse().ok()).unwrap_or(0),
            it.next().and_then(|s| s.parse().ok()).unwrap_or(0),
        )
    };
    let mut all: Vec<(usize, String, HashMap<String, String>)> = per
        .into_iter()
        .enumerate()
        .flat_map(|(i, es)| es.into_iter().map(move |(id, f)| (i, id, f)))
        .collect();
    all.sort_by_key(|(i, id, _)| (key(id), *i));
    let skip = all.len().saturating_sub(limit);
    let mut last = vec!["0-0".to_string(); parts.len()];
    let mut out = Vec::new();
    for (n, (i, id, fields)) in all.into_iter().enumerate() {
        last[i] = id.clone();
        if n < skip {
            continue;
        }
        let at = cursor(&last);
        for mut e in expand(vec![(id, fields)], None) {
            e.stream_id = at.clone();
            out.push(e);
        }
    }
    Ok(out)
}
