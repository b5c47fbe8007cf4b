//! [`Queue`]: the producer and operator side of one queue — add, read, count, list, pause, drain,
//! clean, obliterate, progress, logs, remove, retry, promote, events and audit.
//!
//! Ids are minted here, before sending, so a retried add (after a timeout or a dropped connection)
//! carries the same id and the add script makes it a no-op: an add never duplicates. Work on ids not
//! known in advance (drain, clean, trim, obliterate) selects ids from the queue's containers first,
//! then removes each with a script that declares that job's keys and re-checks its state.

use crate::error::{Error, ErrorCode, Result};
use crate::events::EventStream;
use crate::job::{check_payload, payload_from_text, Counts, Job, JobState};
use crate::job_id::JobId;
use crate::keyspace::{JobPart, QueueKeys, QueueName};
use crate::minter::IdMinter;
use crate::options::{JobOptions, Retention};
use crate::outcome::Moved;
use crate::script::{self, Invocation};
use crate::store::{ConnectOptions, Store};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Default cap of a queue's events stream (approximate, trimmed as it grows).
pub const DEFAULT_MAX_EVENTS: u64 = 10_000;
/// Jobs per call of `add.lua` in a bulk add.
const ADD_BATCH: usize = 250;
/// Most add calls of one `add_bulk` waiting for their replies at once.
const ADD_IN_FLIGHT: usize = 8;

/// One pipelined group of add calls in flight: the refused (index, holder) pairs of each call.
type AddGroup = tokio::task::JoinHandle<Result<Vec<Vec<String>>>>;

/// The outcome of a spawned group of script calls.
fn joined<T>(r: std::result::Result<Result<T>, tokio::task::JoinError>) -> Result<T> {
    r.map_err(|e| Error::new(ErrorCode::Internal, format!("an add task failed: {e}")))?
}
/// The `spec` argument of `add.lua` for a job with every one of its options at the default.
const PLAIN_SPEC: &str = "1|0|0||0|";

/// A job `add_one.lua` can add: no delay, priority, LIFO, dedup key or group (any attempts and
/// retention; a parent is checked by the caller).
fn is_plain(o: &JobOptions) -> bool {
    o.delay_ms == 0
        && o.priority == 0
        && !o.lifo
        && o.dedup_ttl_ms == 0
        && o.dedup.is_none()
        && o.group.is_none()
}

/// add_one.lua with its twelve keys bound (the queue's eleven, then `id`'s record), before any
/// argument: the one list of them, for the call and the tests of its checked prefix.
pub(crate) fn add_one_keyed(name: &QueueName, k: &QueueKeys, id: JobId) -> Invocation {
    script::ADD_ONE
        .prepare()
        .key(&k.wait)
        .key(&k.paused)
        .key(&k.prioritized)
        .key(&k.delayed)
        .key(&k.meta)
        .key(&k.events)
        .key(&k.marker)
        .key(&k.waiters)
        .key(&k.handoff)
        .key(&k.active)
        .key(&k.leases)
        .key(&name.job_key(id, JobPart::Record))
}

/// add_one.lua's optional arguments after the name and data (opts, attempts, max_events), as the
/// call sends them: up to the last that is not its default (every argument costs the server
/// ~1,400 instructions, bench/notes/addpath.md). One value for both ways the call is made
/// ([`Queue::add_one_invocation`] and the prefix of [`Queue::add_one_call`]).
struct AddOneTail {
    compact: Arc<str>,
    attempts: String,
    max_events: String,
    sent: usize,
}

impl AddOneTail {
    fn new(options: &JobOptions, max_events: u64) -> Self {
        let compact = compact_json_cached(options);
        let sent = if max_events != DEFAULT_MAX_EVENTS {
            3
        } else if options.attempts != 1 {
            2
        } else {
            usize::from(&*compact != "{}")
        };
        // (no allocation for the defaults, which are not sent)
        let text = |n: u64, sent: bool| if sent { n.to_string() } else { String::new() };
        AddOneTail {
            attempts: text(options.attempts.into(), sent >= 2),
            max_events: text(max_events, sent >= 3),
            compact,
            sent,
        }
    }

    /// The arguments sent, in order.
    fn args(&self) -> ([&[u8]; 3], usize) {
        let all = [
            self.compact.as_bytes(),
            self.attempts.as_bytes(),
            self.max_events.as_bytes(),
        ];
        (all, self.sent)
    }
}

/// Calls `f` with the compact JSON of `options` ([`JobOptions::compact_json`]). The text of the
/// options last seen on this thread is kept: an application's adds mostly repeat one set of
/// options, and serialising them (through a `serde_json::Value`, compared with the defaults) was a
/// quarter of the client's instructions per one-at-a-time add.
fn with_compact_json<R>(options: &JobOptions, f: impl FnOnce(&str) -> R) -> R {
    f(&compact_json_cached(options))
}

/// [`JobOptions::compact_json`] of `options`, from the per-thread copy of the last options seen
/// (shared text: a count, not a copy).
fn compact_json_cached(options: &JobOptions) -> Arc<str> {
    thread_local! {
        static LAST: std::cell::RefCell<Option<(JobOptions, Arc<str>)>> =
            const { std::cell::RefCell::new(None) };
    }
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        match &*last {
            Some((prev, text)) if prev == options => text.clone(),
            _ => {
                let text: Arc<str> = options.compact_json().into();
                *last = Some((options.clone(), text.clone()));
                text
            }
        }
    })
}

/// Most log lines kept per job.
pub const MAX_LOG_LINES: u64 = 1_000;

/// One job to add.
#[derive(Clone, Debug)]
pub struct NewJob {
    /// The kind of work.
    pub name: String,
    /// The payload.
    pub data: Value,
    /// Its options.
    pub options: JobOptions,
}

/// A handle on one queue. Cheap to clone.
#[derive(Clone)]
pub struct Queue {
    pub(crate) store: Store,
    pub(crate) name: QueueName,
    pub(crate) keys: Arc<QueueKeys>,
    pub(crate) minter: Arc<IdMinter>,
    pub(crate) max_events: u64,
    /// Set once this handle wrote the queue into the registry (see `registry`).
    pub(crate) registered: Arc<std::sync::atomic::AtomicBool>,
    /// The waits of [`Queue::wait`] on this handle and its clones, and their one follower.
    pub(crate) waiters: Arc<crate::waiters::Waiters>,
    /// add_one.lua's checked front (its sha and eleven queue keys), made on the first one-job add.
    add_one_prefix: Arc<std::sync::OnceLock<script::Prefix>>,
}

impl Queue {
    /// Connects to the datastore and opens the queue `name` (`orders` or `{orders}`).
    pub async fn connect(options: ConnectOptions, name: &str) -> Result<Queue> {
        let queue_name = QueueName::new(name)?;
        let store = Store::connect(options).await?;
        let minter = Arc::new(IdMinter::start(store.clone()).await?);
        Ok(Queue::from_parts(store, minter, queue_name))
    }

    /// Opens the queue `name` on an existing store and id minter (several queues share them).
    pub fn with_store(store: Store, minter: Arc<IdMinter>, name: &str) -> Result<Queue> {
        Ok(Queue::from_parts(store, minter, QueueName::new(name)?))
    }

    pub(crate) fn from_parts(store: Store, minter: Arc<IdMinter>, name: QueueName) -> Queue {
        Queue {
            keys: Arc::new(name.keys()),
            store,
            name,
            minter,
            max_events: DEFAULT_MAX_EVENTS,
            registered: Arc::default(),
            waiters: Arc::default(),
            add_one_prefix: Arc::default(),
        }
    }

    /// Another queue on the same connection and id minter.
    pub fn queue(&self, name: &str) -> Result<Queue> {
        Ok(Queue::from_parts(
            self.store.clone(),
            self.minter.clone(),
            QueueName::new(name)?,
        ))
    }

    /// The queue's name.
    pub fn name(&self) -> &QueueName {
        &self.name
    }

    /// The store it talks to.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Its keys.
    pub fn keys(&self) -> &QueueKeys {
        &self.keys
    }

    /// Mints a job id now (to add later with `JobOptions::id`, for an add that is idempotent across
    /// process restarts).
    pub fn mint_id(&self) -> Result<JobId> {
        self.minter.mint()
    }

    /// One call of `add.lua` for a batch of (id, job, data text).
    pub(crate) fn add_invocation(&self, batch: &[(JobId, &NewJob, String)]) -> Result<Invocation> {
        self.add_invocation_with_parent(batch, "")
    }

    /// As `add_invocation`, every job of the batch a child of `parent` ("<queue>:<id>", or "").
    pub(crate) fn add_invocation_with_parent(
        &self,
        batch: &[(JobId, &NewJob, String)],
        parent: &str,
    ) -> Result<Invocation> {
        if let ([(id, job, data)], "") = (batch, parent) {
            if is_plain(&job.options) {
                return self.add_one_invocation(*id, job, data);
            }
        }
        let k = &self.keys;
        let mut inv = script::ADD
            .prepare()
            .key(&k.wait)
            .key(&k.paused)
            .key(&k.delayed)
            .key(&k.prioritized)
            .key(&k.meta)
            .key(&k.events)
            .key(&k.dedup)
            .key(&k.marker)
            .key(&k.groups)
            .key(&k.dedup_expiry)
            .key(&k.waiters)
            .key(&k.handoff)
            .key(&k.active)
            .key(&k.leases)
            .key(&k.delayed_priority);
        for (id, _, _) in batch {
            inv = inv.key(&self.name.job_key(*id, JobPart::Record));
        }
        inv = inv.arg(self.max_events);
        for (id, job, data) in batch {
            job.options.validate()?;
            let o = &job.options;
            inv = with_compact_json(o, |compact| {
                inv.arg(*id).arg(&job.name).arg(data.as_str()).arg(compact)
            });
            inv = if o.attempts == 1
                && o.delay_ms == 0
                && o.priority == 0
                && !o.lifo
                && o.dedup_ttl_ms == 0
                && o.dedup.is_none()
            {
                inv.arg(PLAIN_SPEC)
            } else {
                inv.arg(format!(
                    "{}|{}|{}|{}|{}|{}",
                    o.attempts,
                    o.delay_ms,
                    o.priority,
                    if o.lifo { "l" } else { "" },
                    o.dedup_ttl_ms,
                    o.dedup.as_deref().unwrap_or("")
                ))
            };
            inv = inv.arg(parent).arg(o.group.as_deref().unwrap_or(""));
        }
        Ok(inv)
    }

    /// One call of `add_one.lua` for a plain job (see [`is_plain`]): add.lua's transition for it
    /// with only the keys and arguments it can touch (the server runs ~16 % fewer instructions for
    /// it; bench/RESULTS.md).
    fn add_one_invocation(&self, id: JobId, job: &NewJob, data: &str) -> Result<Invocation> {
        job.options.validate()?;
        let inv = add_one_keyed(&self.name, &self.keys, id)
            .reserve_arg_bytes(job.name.len() + data.len() + 64)
            .arg(&job.name)
            .arg(data);
        let tail = AddOneTail::new(&job.options, self.max_events);
        let (args, sent) = tail.args();
        Ok(args[..sent].iter().fold(inv, |inv, a| inv.arg(*a)))
    }

    /// The call [`Queue::add_one_invocation`] makes, sent through the queue's checked prefix of
    /// add_one.lua (its sha and fixed keys written once, not cloned, checked and written on every
    /// add): only the record key and the arguments are added per call.
    async fn add_one_call(&self, id: JobId, job: &NewJob, data: &str) -> Result<Vec<String>> {
        job.options.validate()?;
        let prefix = match self.add_one_prefix.get() {
            Some(p) => p,
            None => {
                let sample = self.add_one_invocation(id, job, data)?;
                let p = script::Prefix::new(&sample, self.store.guarded())?;
                self.add_one_prefix.get_or_init(|| p)
            }
        };
        let tail = AddOneTail::new(&job.options, self.max_events);
        let (args, sent) = tail.args();
        let all: [&[u8]; 5] = [
            job.name.as_bytes(),
            data.as_bytes(),
            args[0],
            args[1],
            args[2],
        ];
        let record = self.name.job_key(id, JobPart::Record);
        prefix.call(&self.store, &record, &all[..2 + sent]).await
    }

    /// Adds a job; returns its id (or, with a dedup key held by a live job, that job's id).
    pub async fn add(&self, name: &str, data: Value, options: JobOptions) -> Result<JobId> {
        check_payload("the payload", &data)?;
        let data_text = serde_json::to_string(&data)?;
        self.add_text(name, data_text, options).await
    }

    /// Adds a job whose payload is JSON text (bindings pass their serialised payload); the text is
    /// refused (`invalid_payload`) unless every reader will parse it back as the same value
    /// ([`payload_from_text`]: JSON, at most 127 levels deep, no lone surrogate, integers within 64
    /// bits).
    pub async fn add_json(&self, name: &str, data: &str, options: JobOptions) -> Result<JobId> {
        payload_from_text("the payload", data)?;
        self.add_text(name, data.to_string(), options).await
    }

    async fn add_text(&self, name: &str, data: String, options: JobOptions) -> Result<JobId> {
        options.validate()?;
        let id = match options.id {
            Some(id) => id,
            None => self.minter.mint()?,
        };
        let job = NewJob {
            name: name.to_string(),
            data: Value::Null,
            options,
        };
        let batch = [(id, &job, data)];
        let refused = self.add_call(&batch, self.retry_deadline()).await?;
        self.register_after_add().await;
        let held = match refused.get(1) {
            Some(holder) => JobId::parse(holder)?,
            None => return Ok(id),
        };
        if held != id && job.options.debounce {
            self.debounce(held, &job.options, &batch[0].2).await?;
        }
        Ok(held)
    }

    /// Until when an add started now resends while the datastore is unavailable.
    fn retry_deadline(&self) -> Instant {
        Instant::now() + self.store.options().retry_unavailable
    }

    /// One call of `add.lua` for `batch`, resent while the datastore is unavailable until
    /// `deadline`. The ids were fixed before the first send and `add.lua` changes nothing for an id
    /// whose record exists, so a resend after a lost reply (the job was written, the reply never
    /// came) neither duplicates the job nor counts it twice. Past the deadline the error names the
    /// ids, so the caller can add again with the same `id` option.
    async fn add_call(
        &self,
        batch: &[(JobId, &NewJob, String)],
        deadline: Instant,
    ) -> Result<Vec<String>> {
        let mut pause = Duration::from_millis(50);
        loop {
            let sent = match (&self.store.options().durable, batch) {
                (None, [(id, job, data)]) if is_plain(&job.options) => {
                    self.add_one_call(*id, job, data).await
                }
                (Some(d), _) => {
                    let inv = self.add_invocation(batch)?;
                    let ids = batch.iter().map(|(id, _, _)| *id).collect();
                    crate::durable::add_durably(&self.store, &self.keys.meta, inv, d, ids).await
                }
                (None, _) => {
                    self.add_invocation(batch)?
                        .invoke::<Vec<String>>(&self.store)
                        .await
                }
            };
            match sent {
                Err(e) if e.code() == ErrorCode::ServerUnavailable => {
                    if Instant::now() + pause >= deadline {
                        return Err(unavailable_add(e, batch));
                    }
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(500));
                }
                other => return other,
            }
        }
    }

    /// Debounces the delayed holder of a dedup key: new data, due time pushed to now + delay.
    async fn debounce(&self, holder: JobId, options: &JobOptions, data: &str) -> Result<bool> {
        let n: i64 = script::DEBOUNCE
            .on(&self.name, Some(holder))?
            .arg(holder)
            .arg(options.dedup.as_deref().unwrap_or(""))
            .arg(data)
            .arg(options.delay_ms)
            .arg(self.max_events)
            .invoke(&self.store)
            .await?;
        Ok(n == 1)
    }

    /// Drops dedup keys whose TTL hold ended (workers do this as they trim); returns how many.
    pub async fn expire_dedup(&self) -> Result<u64> {
        let mut dropped = 0;
        loop {
            let n: u64 = script::DEDUP_EXPIRE
                .on(&self.name, None)?
                .arg(1_000)
                .invoke(&self.store)
                .await?;
            dropped += n;
            if n < 1_000 {
                return Ok(dropped);
            }
        }
    }

    /// Adds many jobs, a few hundred per script call and the calls pipelined; returns their ids in
    /// order.
    pub async fn add_bulk(&self, jobs: Vec<NewJob>) -> Result<Vec<JobId>> {
        let mut prepared = Vec::with_capacity(jobs.len());
        for job in &jobs {
            job.options.validate()?;
            check_payload("the payload", &job.data)?;
            let id = match job.options.id {
                Some(id) => id,
                None => self.minter.mint()?,
            };
            prepared.push((id, job, serde_json::to_string(&job.data)?));
        }
        let mut ids: Vec<JobId> = prepared.iter().map(|(id, _, _)| *id).collect();
        // The calls go out in order, ADD_IN_FLIGHT at a time in one pipeline (so the jobs land in
        // the order given), and the next group is built while the previous one is in flight.
        let mut settle = |refused: Vec<String>, first: usize| -> Result<()> {
            for pair in refused.chunks(2) {
                if let [index, holder] = pair {
                    let j: usize = index.parse().map_err(|_| {
                        Error::new(ErrorCode::Internal, "add.lua returned a bad index")
                    })?;
                    ids[first + j] = JobId::parse(holder)?;
                }
            }
            Ok(())
        };
        let deadline = self.retry_deadline();
        if self.store.options().durable.is_some() {
            // Durable: one call at a time, each with its WAIT (crate::durable).
            for (n, batch) in prepared.chunks(ADD_BATCH).enumerate() {
                settle(self.add_call(batch, deadline).await?, n * ADD_BATCH)?;
            }
            self.register_after_add().await;
            return Ok(ids);
        }
        const GROUP: usize = ADD_BATCH * ADD_IN_FLIGHT;
        let mut pending: Option<(usize, AddGroup)> = None;
        for (g, group) in prepared.chunks(GROUP).enumerate() {
            let invs = group
                .chunks(ADD_BATCH)
                .map(|batch| self.add_invocation(batch))
                .collect::<Result<Vec<_>>>()?;
            if let Some((first, call)) = pending.take() {
                self.settle_group(&prepared, first, joined(call.await), deadline, &mut settle)
                    .await?;
            }
            let store = self.store.clone();
            let call =
                tokio::spawn(async move { script::pipeline::<Vec<String>>(&store, &invs).await });
            pending = Some((g * GROUP, call));
        }
        if let Some((first, call)) = pending.take() {
            self.settle_group(&prepared, first, joined(call.await), deadline, &mut settle)
                .await?;
        }
        self.register_after_add().await;
        Ok(ids)
    }

    /// The replies of one pipelined group of add calls starting at job `first`; when the datastore
    /// was unavailable, each call of the group is resent (same ids) until the deadline, in order.
    async fn settle_group(
        &self,
        prepared: &[(JobId, &NewJob, String)],
        first: usize,
        replies: Result<Vec<Vec<String>>>,
        deadline: Instant,
        settle: &mut impl FnMut(Vec<String>, usize) -> Result<()>,
    ) -> Result<()> {
        let end = (first + ADD_BATCH * ADD_IN_FLIGHT).min(prepared.len());
        match replies {
            Ok(replies) => {
                for (n, refused) in replies.into_iter().enumerate() {
                    settle(refused, first + n * ADD_BATCH)?;
                }
            }
            Err(e) if e.code() == ErrorCode::ServerUnavailable => {
                for (n, batch) in prepared[first..end].chunks(ADD_BATCH).enumerate() {
                    settle(self.add_call(batch, deadline).await?, first + n * ADD_BATCH)?;
                }
            }
            Err(e) => return Err(e),
        }
        Ok(())
    }

    /// Reads a job by its id's text form (the one gate parses it); None when there is no such job.
    pub async fn get_str(&self, id: &str) -> Result<Option<Job>> {
        self.get(JobId::parse(id)?).await
    }

    /// Reads a job and its state.
    pub async fn get(&self, id: JobId) -> Result<Option<Job>> {
        self.read_job(id, false).await
    }

    /// [`Queue::get`]; `as_stored`: a stored JSON field that cannot be read is left null with
    /// [`Job::unreadable`] saying why, instead of failing (operator views).
    pub(crate) async fn read_job(&self, id: JobId, as_stored: bool) -> Result<Option<Job>> {
        let flat: Vec<String> = script::JOB_STATE
            .on(&self.name, Some(id))?
            .arg(id)
            .invoke(&self.store)
            .await?;
        let Some((state, rest)) = flat.split_first() else {
            return Ok(None);
        };
        let map: HashMap<String, String> = rest
            .chunks(2)
            .filter_map(|p| Some((p.first()?.clone(), p.get(1)?.clone())))
            .collect();
        Job::from_record(id, JobState::parse(state).ok(), map)
            .readable_unless(as_stored)
            .map(Some)
    }

    /// Counts jobs per state.
    pub async fn counts(&self) -> Result<Counts> {
        let k = &self.keys;
        let mut pipe = redis::pipe();
        pipe.cmd("LLEN").arg(&k.wait);
        pipe.cmd("LLEN").arg(&k.paused);
        pipe.cmd("ZCARD").arg(&k.active);
        pipe.cmd("ZCARD").arg(&k.delayed);
        pipe.cmd("ZCARD").arg(&k.prioritized);
        pipe.cmd("ZCARD").arg(&k.completed);
        pipe.cmd("ZCARD").arg(&k.failed);
        pipe.cmd("SCARD").arg(&k.stalled);
        pipe.cmd("ZCARD").arg(&k.waiting_children);
        let v: Vec<u64> = pipe.query_async(&mut self.store.conn()).await?;
        Ok(Counts {
            waiting: v[0],
            paused: v[1],
            active: v[2],
            delayed: v[3],
            prioritized: v[4],
            completed: v[5],
            failed: v[6],
            stalled: v[7],
            waiting_children: v[8],
        })
    }

    /// Ids in one state, a page at a time: oldest first for waiting states, newest first for
    /// completed and failed.
    pub async fn list_ids(&self, state: JobState, offset: u64, limit: u64) -> Result<Vec<JobId>> {
        if limit == 0 {
            return Ok(vec![]);
        }
        let k = &self.keys;
        let (start, stop) = (offset as i64, (offset + limit) as i64 - 1);
        let mut conn = self.store.conn();
        let raw: Vec<String> = match state {
            JobState::Waiting | JobState::Paused => {
                let key = if state == JobState::Waiting {
                    &k.wait
                } else {
                    &k.paused
                };
                // Lists hold the oldest at the right.
                let mut v: Vec<String> = redis::cmd("LRANGE")
                    .arg(key)
                    .arg(-stop - 1)
                    .arg(-start - 1)
                    .query_async(&mut conn)
                    .await?;
                v.reverse();
                v
            }
            JobState::Stalled => {
                // A set (small: jobs between a lost lease and the next sweep), read whole.
                let all: Vec<String> = redis::cmd("SMEMBERS")
                    .arg(&k.stalled)
                    .query_async(&mut conn)
                    .await?;
                all.into_iter()
                    .skip(offset as usize)
                    .take(limit as usize)
                    .collect()
            }
            JobState::Completed | JobState::Failed => {
                let key = if state == JobState::Completed {
                    &k.completed
                } else {
                    &k.failed
                };
                redis::cmd("ZRANGE")
                    .arg(key)
                    .arg(start)
                    .arg(stop)
                    .arg("REV")
                    .query_async(&mut conn)
                    .await?
            }
            JobState::Active
            | JobState::Delayed
            | JobState::Prioritized
            | JobState::WaitingChildren => {
                let key = match state {
                    JobState::Active => &k.active,
                    JobState::Delayed => &k.delayed,
                    JobState::Prioritized => &k.prioritized,
                    _ => &k.waiting_children,
                };
                redis::cmd("ZRANGE")
                    .arg(key)
                    .arg(start)
                    .arg(stop)
                    .query_async(&mut conn)
                    .await?
            }
        };
        raw.iter().map(|s| JobId::parse(s)).collect()
    }

    /// Jobs in one state, a page at a time (see [`Queue::list_ids`]). Each carries the state it
    /// was listed in, its record read in one pipelined round trip with the others and its state
    /// not looked up again: a job that moved in between shows the state it was listed in (its own
    /// read, [`Queue::get`], says where it is now), one removed in between is left out.
    pub async fn list(&self, state: JobState, offset: u64, limit: u64) -> Result<Vec<Job>> {
        let ids = self.list_ids(state, offset, limit).await?;
        self.jobs_listed_in(state, &ids, false).await
    }

    /// Stops handing out jobs (adds still land, in paused).
    pub async fn pause(&self) -> Result<()> {
        let _: i64 = script::PAUSE
            .on(&self.name, None)?
            .arg(self.max_events)
            .invoke(&self.store)
            .await?;
        Ok(())
    }

    /// Hands out jobs again.
    pub async fn resume(&self) -> Result<()> {
        let _: i64 = script::RESUME
            .on(&self.name, None)?
            .arg(self.max_events)
            .invoke(&self.store)
            .await?;
        Ok(())
    }

    /// True while paused.
    pub async fn is_paused(&self) -> Result<bool> {
        let v: Option<String> = redis::cmd("HGET")
            .arg(&self.keys.meta)
            .arg("paused")
            .query_async(&mut self.store.conn())
            .await?;
        Ok(v.as_deref() == Some("1"))
    }

    pub(crate) fn remove_invocation(
        &self,
        id: JobId,
        allowed: &str,
        older_ms: u64,
    ) -> Result<Invocation> {
        Ok(script::REMOVE_JOB
            .on(&self.name, Some(id))?
            .arg(id)
            .arg(allowed)
            .arg(self.max_events)
            .arg(older_ms))
    }

    /// Removes a job that is not active: [`Moved::Moved`], [`Moved::NotFound`], or
    /// [`Moved::WrongState`]`(Active)`.
    pub async fn remove(&self, id: JobId) -> Result<Moved> {
        let n: i64 = self
            .remove_invocation(id, "any", 0)?
            .invoke(&self.store)
            .await?;
        self.outcome(id, n).await
    }

    /// A move script's reply as a [`Moved`]: 1 moved; otherwise the job's state, read next.
    async fn outcome(&self, id: JobId, reply: i64) -> Result<Moved> {
        if reply == 1 {
            return Ok(Moved::Moved);
        }
        Ok(match self.get(id).await? {
            None => Moved::NotFound,
            Some(job) => match job.state {
                Some(state) => Moved::WrongState(state),
                None => Moved::NotFound,
            },
        })
    }

    async fn remove_many(&self, ids: &[JobId], allowed: &str, older_ms: u64) -> Result<u64> {
        let mut removed = 0;
        for chunk in ids.chunks(500) {
            let invs: Vec<Invocation> = chunk
                .iter()
                .map(|id| self.remove_invocation(*id, allowed, older_ms))
                .collect::<Result<_>>()?;
            let replies: Vec<i64> = script::pipeline(&self.store, &invs).await?;
            removed += replies.iter().filter(|r| **r == 1).count() as u64;
        }
        Ok(removed)
    }

    /// Removes every waiting, paused and prioritized job, and the delayed ones too when asked.
    pub async fn drain(&self, delayed: bool) -> Result<u64> {
        let mut states = vec![JobState::Waiting, JobState::Paused, JobState::Prioritized];
        if delayed {
            states.push(JobState::Delayed);
        }
        let mut total = 0;
        for state in states {
            loop {
                let ids = self.list_ids(state, 0, 1_000).await?;
                if ids.is_empty() {
                    break;
                }
                let n = self.remove_many(&ids, "waiting", 0).await?;
                total += n;
                if n == 0 {
                    break;
                }
            }
        }
        Ok(total)
    }

    async fn select_finished(
        &self,
        state: JobState,
        keep: Option<u64>,
        age_ms: Option<u64>,
        limit: u64,
    ) -> Result<Vec<JobId>> {
        let key = match state {
            JobState::Completed => &self.keys.completed,
            JobState::Failed => &self.keys.failed,
            other => {
                return Err(Error::new(
                    ErrorCode::InvalidOption,
                    format!(
                        "only completed and failed jobs are cleaned or trimmed, not {}",
                        other.as_str()
                    ),
                ))
            }
        };
        let ids: Vec<String> = script::SELECT_FINISHED
            .prepare()
            .key(key)
            .arg(keep.map(|c| c as i64).unwrap_or(-1))
            .arg(age_ms.map(|a| a as i64).unwrap_or(-1))
            .arg(limit)
            .invoke(&self.store)
            .await?;
        ids.iter().map(|s| JobId::parse(s)).collect()
    }

    async fn remove_finished(&self, state: JobState, ids: &[JobId], older_ms: u64) -> Result<u64> {
        let key = if state == JobState::Completed {
            &self.keys.completed
        } else {
            &self.keys.failed
        };
        let mut calls = Vec::new();
        for chunk in ids.chunks(250) {
            let mut inv = script::REMOVE_FINISHED
                .prepare()
                .key(key)
                .key(&self.keys.meta)
                .key(&self.keys.events);
            for id in chunk {
                inv = inv
                    .key(&self.name.job_key(*id, JobPart::Record))
                    .key(&self.name.job_key(*id, JobPart::Logs));
            }
            inv = inv.arg(self.max_events).arg(older_ms);
            for id in chunk {
                inv = inv.arg(*id);
            }
            calls.push(inv);
        }
        let mut removed = 0;
        for chunk in calls.chunks(8) {
            let replies: Vec<u64> = script::pipeline(&self.store, chunk).await?;
            removed += replies.iter().sum::<u64>();
        }
        Ok(removed)
    }

    /// Removes up to `limit` completed or failed jobs that finished more than `grace` ago.
    pub async fn clean(&self, state: JobState, grace: Duration, limit: u64) -> Result<u64> {
        let grace_ms = grace.as_millis() as u64;
        let ids = self
            .select_finished(state, None, Some(grace_ms), limit)
            .await?;
        self.remove_finished(state, &ids, grace_ms).await
    }

    /// Applies a retention policy to completed or failed jobs; returns how many were removed.
    pub async fn trim(&self, state: JobState, keep: Retention) -> Result<u64> {
        if keep == Retention::KEEP_ALL {
            return Ok(0);
        }
        let mut total = 0;
        loop {
            let ids = self
                .select_finished(state, keep.count, keep.age_ms, 1_000)
                .await?;
            if ids.is_empty() {
                return Ok(total);
            }
            let n = self.remove_finished(state, &ids, 0).await?;
            total += n;
            if n == 0 {
                return Ok(total);
            }
        }
    }

    /// Deletes the whole queue: every job and every key. Refuses while jobs are active unless
    /// `force`.
    pub async fn obliterate(&self, force: bool) -> Result<u64> {
        if !force && self.counts().await?.active > 0 {
            return Err(Error::new(
                ErrorCode::InvalidState,
                "the queue has active jobs; stop its workers first, or obliterate with force",
            ));
        }
        self.pause().await?;
        let mut total = 0;
        for state in JobState::ALL {
            loop {
                let ids = self.list_ids(state, 0, 1_000).await?;
                if ids.is_empty() {
                    break;
                }
                let n = self.remove_many(&ids, "force", 0).await?;
                total += n;
                if n == 0 {
                    break;
                }
            }
        }
        // Every queue-wide key (the job containers are empty by now): the families are listed
        // once, in keyspace.rs, so a new one cannot be forgotten here.
        let mut conn = self.store.conn();
        for family in crate::keyspace::Family::ALL {
            let _: i64 = redis::cmd("DEL")
                .arg(self.name.key(family))
                .query_async(&mut conn)
                .await?;
        }
        self.unregister().await?;
        Ok(total)
    }

    /// Records a job's progress (any JSON) and announces it on the events stream.
    pub async fn update_progress(&self, id: JobId, progress: &Value) -> Result<()> {
        let n: i64 = script::PROGRESS
            .on(&self.name, Some(id))?
            .arg(id)
            .arg(serde_json::to_string(progress)?)
            .arg(self.max_events)
            .invoke(&self.store)
            .await?;
        not_found_if_zero(n, id)
    }

    /// Appends a line to a job's log; returns the number of lines kept.
    pub async fn log(&self, id: JobId, line: &str) -> Result<u64> {
        let n: i64 = script::LOG
            .on(&self.name, Some(id))?
            .arg(line)
            .arg(MAX_LOG_LINES)
            .invoke(&self.store)
            .await?;
        not_found_if_zero(n, id)?;
        Ok(n as u64)
    }

    /// A job's log lines, oldest first.
    pub async fn logs(&self, id: JobId) -> Result<Vec<String>> {
        Ok(redis::cmd("LRANGE")
            .arg(self.name.job_key(id, JobPart::Logs))
            .arg(0)
            .arg(-1)
            .query_async(&mut self.store.conn())
            .await?)
    }

    /// Sends a failed job back to wait with its attempts reset; [`Moved::WrongState`] when it is
    /// not failed.
    pub async fn retry(&self, id: JobId) -> Result<Moved> {
        let n: i64 = script::RETRY_JOB
            .on(&self.name, Some(id))?
            .arg(id)
            .arg(self.max_events)
            .invoke(&self.store)
            .await?;
        self.outcome(id, n).await
    }

    /// Retries every failed job; returns how many.
    pub async fn retry_failed(&self) -> Result<u64> {
        let mut total = 0;
        loop {
            let ids = self.list_ids(JobState::Failed, 0, 500).await?;
            if ids.is_empty() {
                return Ok(total);
            }
            let mut n = 0;
            for id in ids {
                n += self.retry(id).await?.is_moved() as u64;
            }
            total += n;
            if n == 0 {
                return Ok(total);
            }
        }
    }

    /// Runs a delayed job now; [`Moved::WrongState`] when it is not delayed.
    pub async fn promote(&self, id: JobId) -> Result<Moved> {
        let n: i64 = script::PROMOTE_JOB
            .on(&self.name, None)?
            .arg(id)
            .arg(self.max_events)
            .invoke(&self.store)
            .await?;
        self.outcome(id, n).await
    }

    /// Gives a job that has not finished a new priority (0: none; at most
    /// [`MAX_PRIORITY`](crate::options::MAX_PRIORITY)). A ready job moves at once (in prioritized,
    /// among the jobs of its new priority by when it was added); a delayed one takes it when due;
    /// an active one when it is next ready (a retry, say). [`Moved::NotFound`] when there is no
    /// such job, [`Moved::WrongState`] when it has finished.
    pub async fn change_priority(&self, id: JobId, priority: u32) -> Result<Moved> {
        JobOptions {
            priority,
            ..JobOptions::default()
        }
        .validate()?;
        let n: i64 = script::CHANGE_PRIORITY
            .on(&self.name, Some(id))?
            .arg(id)
            .arg(priority)
            .arg(self.max_events)
            .invoke(&self.store)
            .await?;
        self.outcome(id, n).await
    }

    /// Cancels a job. One that has not run yet (waiting, paused, prioritized, delayed, stalled, a
    /// flow parent waiting for children) does not run: it moves to failed at once, its failure
    /// code `cancelled` and message "the job was cancelled: <reason>", without a retry. For a
    /// running job the request goes on the queue's `cancels` stream: the worker holding it tells
    /// its handler at once ([`JobContext::cancelled`](crate::JobContext::cancelled) resolves with
    /// [`Interrupt::Cancelled`](crate::Interrupt::Cancelled); a binding cancels its task), then
    /// fails it the same way. A job that finished is left as it is.
    pub async fn cancel(&self, id: JobId, reason: &str) -> Result<CancelOutcome> {
        let r: String = script::CANCEL
            .on(&self.name, Some(id))?
            .arg(id)
            .arg(reason)
            .arg(self.max_events)
            .invoke(&self.store)
            .await?;
        Ok(match r.as_str() {
            "cancelled" => CancelOutcome::Cancelled,
            "running" => CancelOutcome::Requested,
            "finished" => CancelOutcome::Finished,
            _ => CancelOutcome::NotFound,
        })
    }

    /// Follows the queue's events from now on (or after a stream id).
    pub async fn events(&self, after: Option<String>) -> Result<EventStream> {
        EventStream::new(self.store.clone(), self.keys.events.clone(), after).await
    }

    /// Releases the queue's node-id lease (ids can no longer be minted by it or its siblings).
    pub async fn close(&self) -> Result<()> {
        self.minter.release().await
    }
}

/// An add that stayed unavailable past its retry window: the jobs may have been written (the reply
/// may be what was lost), so the error names their ids for a retry that cannot duplicate them.
fn unavailable_add(e: Error, batch: &[(JobId, &NewJob, String)]) -> Error {
    let ids: Vec<String> = batch
        .iter()
        .take(3)
        .map(|(id, _, _)| id.to_string())
        .collect();
    let more = if batch.len() > 3 {
        format!(" and {} more", batch.len() - 3)
    } else {
        String::new()
    };
    Error::new(
        ErrorCode::ServerUnavailable,
        format!(
            "{}; the add may have been written: add again with the same id ({}{more}) to be sure \
             without a duplicate",
            e.message(),
            ids.join(", ")
        ),
    )
}

/// What [`Queue::cancel`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CancelOutcome {
    /// It had not run: it is failed now, cancelled.
    Cancelled,
    /// It is running: its worker is told, stops the handler and fails it, cancelled.
    Requested,
    /// It had finished (completed or failed): nothing was done.
    Finished,
    /// No such job.
    NotFound,
}

impl CancelOutcome {
    /// `cancelled`, `requested`, `finished` or `not_found`.
    pub fn as_str(self) -> &'static str {
        match self {
            CancelOutcome::Cancelled => "cancelled",
            CancelOutcome::Requested => "requested",
            CancelOutcome::Finished => "finished",
            CancelOutcome::NotFound => "not_found",
        }
    }
}

fn not_found_if_zero(n: i64, id: JobId) -> Result<()> {
    if n == 0 {
        Err(Error::new(
            ErrorCode::JobNotFound,
            format!("no job {id} in this queue"),
        ))
    } else {
        Ok(())
    }
}
