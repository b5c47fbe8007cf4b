//! Adds: one plain job through `add_one.lua` (a checked prefix per queue), batches through
//! `add.lua` (pipelined, up to [`ADD_IN_FLIGHT`] calls in flight), debounce and dedup expiry, and
//! the retry of an add the datastore did not answer (same ids, so it cannot duplicate). A one-job
//! [`Queue::add`] goes through the handle's coalescer (`coalesce.rs`), which sends the adds that
//! arrive while another is in flight together as one `add.lua` call.

use super::*;
use crate::error::{Error, ErrorCode, Result};
use crate::job::{check_payload, payload_from_text};
use crate::job_id::JobId;
use crate::keyspace::{BatchPart, JobPart, QueueKeys, QueueName};
use crate::options::JobOptions;
use crate::script::{self, Invocation};
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Jobs per call of `add.lua` in a bulk add (and in a coalesced call, `coalesce.rs`).
pub(super) const ADD_BATCH: usize = 250;
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

/// How `add.lua` refuses jobs past a group's cap on waiting jobs (its `refusal` argument).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Refusal {
    /// The whole call fails with `group_full`, nothing written (one caller's batch: `add_bulk`, a
    /// lone add).
    Call,
    /// Only the jobs past the cap, each reported in the reply (the coalesced adds of separate
    /// callers, each told its own outcome).
    Job,
}

/// A job `add_one.lua` can add: no delay, priority, LIFO, dedup key or group (any attempts and
/// retention; a parent is checked by the caller).
pub(super) fn is_plain(o: &JobOptions) -> bool {
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
/// (shared text: a count, not a copy). A traced job's context differs from job to job, so the
/// copy is kept of its options without it and its `trace` member is written into that text
/// (its JSON alone, no full serialisation of the options per job; issue 29).
fn compact_json_cached(options: &JobOptions) -> Arc<str> {
    match &options.trace {
        None => untraced_compact_json_cached(options),
        Some(trace) => {
            let mut rest = options.clone();
            rest.trace = None;
            let text = untraced_compact_json_cached(&rest);
            let member = serde_json::to_string(trace).unwrap_or_else(|_| "null".into());
            let body = &text[..text.len() - 1];
            let sep = if body == "{" { "" } else { "," };
            format!("{body}{sep}\"trace\":{member}}}").into()
        }
    }
}

fn untraced_compact_json_cached(options: &JobOptions) -> Arc<str> {
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

impl Queue {
    /// One call of `add.lua` for a batch of (id, job, data text), every job of it a child of
    /// `parent` ("<queue>:<id>", or "").
    pub(crate) fn add_invocation_with_parent(
        &self,
        batch: &[(JobId, &NewJob, String)],
        parent: &str,
    ) -> Result<Invocation> {
        self.add_invocation_refusing(batch, parent, Refusal::Call, None)
    }

    /// As `add_invocation_with_parent`, jobs past a group's cap refused as `refusal` says; with
    /// `into`, a call of `batch_add.lua` that counts the jobs it adds into that batch of this
    /// queue (same slot) in the same call.
    fn add_invocation_refusing(
        &self,
        batch: &[(JobId, &NewJob, String)],
        parent: &str,
        refusal: Refusal,
        into: Option<JobId>,
    ) -> Result<Invocation> {
        if let ([(id, job, data)], "", None) = (batch, parent, into) {
            if is_plain(&job.options) {
                return self.add_one_invocation(*id, job, data);
            }
        }
        let k = &self.keys;
        let mut inv = match into {
            None => &script::ADD,
            Some(_) => &script::BATCH_ADD,
        }
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
        .key(&k.delayed_priority)
        .group_keys(k)
        .key(&k.group_names);
        if let Some(b) = into {
            inv = inv
                .key(&self.name.batch_key(b, BatchPart::Record))
                .key(&self.name.batch_key(b, BatchPart::Jobs));
        }
        for (id, _, _) in batch {
            inv = inv.key(&self.name.job_key(*id, JobPart::Record));
        }
        inv = inv.arg(self.max_events).arg(match refusal {
            Refusal::Call => "",
            Refusal::Job => "j",
        });
        if let Some(b) = into {
            inv = inv.arg(self.name.as_str()).arg(b);
        }
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
        let (prefix, cmd) = self.add_one_command(id, job, data)?;
        prefix.send(&self.store, cmd).await
    }

    /// The bytes of that call, for a socket of the caller's own (`queue/direct.rs`).
    pub(super) fn add_one_frame(&self, id: JobId, job: &NewJob, data: &str) -> Result<Vec<u8>> {
        Ok(self.add_one_command(id, job, data)?.1.get_packed_command())
    }

    /// The queue's checked prefix of add_one.lua (built from this first call when there is none)
    /// and the command of the call for a plain job: the record key and the arguments added.
    fn add_one_command(
        &self,
        id: JobId,
        job: &NewJob,
        data: &str,
    ) -> Result<(&script::Prefix, redis::Cmd)> {
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
        Ok((prefix, prefix.command(&record, &all[..2 + sent])?))
    }

    /// Adds a job; returns its id (or, with a dedup key held by a live job, that job's id).
    pub async fn add(
        &self,
        name: &str,
        data: Value,
        #[cfg_attr(not(feature = "otel"), allow(unused_mut))] mut options: JobOptions,
    ) -> Result<JobId> {
        #[cfg(feature = "otel")]
        let send = crate::otel::Send::start(self.name(), None);
        #[cfg(feature = "otel")]
        send.stamp(&mut options);
        // Boxed: the add's state (~6 KB) goes to the heap once, so the future a caller moves into
        // a task or a set of futures is small (moving the whole state was ~15 % of a traced
        // add's client CPU at 1,000 concurrent adds; issue 29's profile).
        let added = Box::pin(self.add_routed(name, data, options)).await;
        #[cfg(feature = "otel")]
        send.end(added.as_ref().map(|id| Some(*id)));
        added
    }

    async fn add_routed(&self, name: &str, data: Value, mut options: JobOptions) -> Result<JobId> {
        if let Some(p) = &self.spread() {
            let i = self.route(p, &mut options)?;
            // Boxed: a plain queue's add future does not carry a second add's state.
            return Box::pin(p.watched(i, p.members[i].add_here(name, data, options))).await;
        }
        self.add_here(name, data, options).await
    }

    /// [`Queue::add`] on this queue's own slot (a plain queue, or one partition).
    pub(super) async fn add_here(
        &self,
        name: &str,
        data: Value,
        options: JobOptions,
    ) -> Result<JobId> {
        check_payload("the payload", &data)?;
        let data_text = serde_json::to_string(&data)?;
        self.add_text(name, data_text, options).await
    }

    /// Adds a job whose payload is JSON text (bindings pass their serialised payload); the text is
    /// refused (`invalid_payload`) unless every reader will parse it back as the same value
    /// ([`payload_from_text`]: JSON, at most 127 levels deep, no lone surrogate, integers within 64
    /// bits).
    pub async fn add_json(&self, name: &str, data: &str, mut options: JobOptions) -> Result<JobId> {
        if let Some(p) = &self.spread() {
            let i = self.route(p, &mut options)?;
            return Box::pin(p.watched(i, p.members[i].add_json_here(name, data, options))).await;
        }
        // Boxed, as `add`'s state is: the bindings move this future into a task.
        Box::pin(self.add_json_here(name, data, options)).await
    }

    /// [`Queue::add_json`] on this queue's own slot (a plain queue, or one partition).
    pub(super) async fn add_json_here(
        &self,
        name: &str,
        data: &str,
        options: JobOptions,
    ) -> Result<JobId> {
        payload_from_text("the payload", data)?;
        self.add_text(name, data.to_string(), options).await
    }

    /// For a partitioned queue: the job's options checked, its id settled (minted when not
    /// given) and the index of its partition.
    pub(super) fn route(
        &self,
        p: &std::sync::Arc<crate::queue::partition_set::Partitions>,
        options: &mut JobOptions,
    ) -> Result<usize> {
        options.validate()?;
        let (id, own_id) = match options.id {
            Some(id) => (id, true),
            None => (self.minter.mint()?, false),
        };
        options.id = Some(id);
        if own_id || options.group.is_some() || options.dedup.is_some() {
            return Ok(p.job_index(id, options));
        }
        Ok(p.by_backlog())
    }

    async fn add_text(&self, name: &str, data: String, options: JobOptions) -> Result<JobId> {
        options.validate()?;
        crate::options::check_dead_letter_not_own(self.name(), &options)?;
        let id = match options.id {
            Some(id) => id,
            None => self.minter.mint()?,
        };
        let job = NewJob {
            name: name.to_string(),
            data: Value::Null,
            options,
        };
        // (a debounce, rare, needs the options and data back after the add)
        let debounce = job
            .options
            .debounce
            .then(|| (job.options.clone(), data.clone()));
        let holder = self.add_coalesced(id, job, data).await?;
        self.register_after_add().await;
        let Some(held) = holder else { return Ok(id) };
        if let (true, Some((options, data))) = (held != id, debounce) {
            Box::pin(self.debounce(held, &options, &data)).await?;
        }
        Ok(held)
    }

    /// Until when an add started now resends while the datastore is unavailable.
    pub(super) fn retry_deadline(&self) -> Instant {
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
        into: Option<JobId>,
    ) -> Result<Vec<String>> {
        self.add_call_refusing(batch, deadline, Refusal::Call, into)
            .await
            .map_err(|e| match e.code() {
                ErrorCode::ServerUnavailable => unavailable_add(e, batch),
                _ => e,
            })
    }

    /// As [`Queue::add_call`], jobs past a group's cap refused as `refusal` says, and an add still
    /// unavailable at the deadline failing with the datastore's own error (the caller names the
    /// ids, [`unavailable_add`]); with `into`, counted into that batch of this queue in the same
    /// call.
    pub(super) async fn add_call_refusing(
        &self,
        batch: &[(JobId, &NewJob, String)],
        deadline: Instant,
        refusal: Refusal,
        into: Option<JobId>,
    ) -> Result<Vec<String>> {
        let mut pause = Duration::from_millis(50);
        loop {
            let sent = match (&self.store.options().durable, batch) {
                (None, [(id, job, data)]) if into.is_none() && is_plain(&job.options) => {
                    self.add_one_call(*id, job, data).await
                }
                (Some(d), _) => {
                    let inv = self.add_invocation_refusing(batch, "", refusal, into)?;
                    let ids = batch.iter().map(|(id, _, _)| *id).collect();
                    crate::durable::add_durably(&self.store, &self.keys.meta, inv, d, ids).await
                }
                (None, _) => {
                    self.add_invocation_refusing(batch, "", refusal, into)?
                        .invoke::<Vec<String>>(&self.store)
                        .await
                }
            };
            match sent {
                Err(e) if e.code() == ErrorCode::ServerUnavailable => {
                    if Instant::now() + pause >= deadline {
                        return Err(e);
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
        if let Some(p) = &self.spread() {
            return super::partitioned::sum(p, |m| Box::pin(m.expire_dedup_here())).await;
        }
        self.expire_dedup_here().await
    }

    /// [`Queue::expire_dedup`] on this queue's own slot (a plain queue, or one partition).
    pub(super) async fn expire_dedup_here(&self) -> Result<u64> {
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
        self.add_bulk_sent(jobs, None).await
    }

    /// [`Queue::add_bulk`]; with `into`, the jobs are counted into that batch of this queue (a
    /// plain queue's, or this partition's) by the add's own calls ([`Queue::add_bulk_into`]).
    pub(crate) async fn add_bulk_sent(
        &self,
        #[cfg_attr(not(feature = "otel"), allow(unused_mut))] mut jobs: Vec<NewJob>,
        into: Option<JobId>,
    ) -> Result<Vec<JobId>> {
        #[cfg(feature = "otel")]
        let send = crate::otel::Send::start(self.name(), Some(jobs.len()));
        #[cfg(feature = "otel")]
        for j in &mut jobs {
            send.stamp(&mut j.options);
        }
        let added = match into {
            None => self.add_bulk_routed(jobs).await,
            Some(_) => self.add_bulk_into(jobs, into).await,
        };
        #[cfg(feature = "otel")]
        send.end(added.as_ref().map(|_| None));
        added
    }

    async fn add_bulk_routed(&self, jobs: Vec<NewJob>) -> Result<Vec<JobId>> {
        if let Some(p) = &self.spread() {
            return (super::partitioned::add_bulk(self, p, jobs)).await;
        }
        self.add_bulk_here(jobs).await
    }

    /// [`Queue::add_bulk`] on this queue's own slot (a plain queue, or one partition).
    pub(super) async fn add_bulk_here(&self, jobs: Vec<NewJob>) -> Result<Vec<JobId>> {
        self.add_bulk_into(jobs, None).await
    }

    /// [`Queue::add_bulk_here`]; with `into`, every job added now is counted into that batch of
    /// this queue (same slot) by the add's own call (`batch_add.lua`), so a retry counts none twice.
    pub(super) async fn add_bulk_into(
        &self,
        mut jobs: Vec<NewJob>,
        into: Option<JobId>,
    ) -> Result<Vec<JobId>> {
        // A caller's id is taken out of the options before they are sent: it is never stored with
        // them (`#[serde(skip)]`), and left in, it made every job's options differ, so the
        // per-thread copy of their compact JSON (`compact_json_cached`) missed on every job of a
        // batch (whose ids are pinned before the add): a serialisation per job, the main cost of
        // a batched add (bench/RESULTS.md "Batches").
        let mut pinned = Vec::with_capacity(jobs.len());
        for job in &mut jobs {
            job.options.validate()?;
            crate::options::check_dead_letter_not_own(self.name(), &job.options)?;
            check_payload("the payload", &job.data)?;
            pinned.push(job.options.id.take());
        }
        let mut prepared = Vec::with_capacity(jobs.len());
        for (job, id) in jobs.iter().zip(pinned) {
            let id = match id {
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
                settle(self.add_call(batch, deadline, into).await?, n * ADD_BATCH)?;
            }
            self.register_after_add().await;
            return Ok(ids);
        }
        const GROUP: usize = ADD_BATCH * ADD_IN_FLIGHT;
        let mut pending: Option<(usize, AddGroup)> = None;
        for (g, group) in prepared.chunks(GROUP).enumerate() {
            let invs = group
                .chunks(ADD_BATCH)
                .map(|batch| self.add_invocation_refusing(batch, "", Refusal::Call, into))
                .collect::<Result<Vec<_>>>()?;
            if let Some((first, call)) = pending.take() {
                self.settle_group(
                    &prepared,
                    first,
                    joined(call.await),
                    deadline,
                    into,
                    &mut settle,
                )
                .await?;
            }
            let store = self.store.clone();
            let call =
                tokio::spawn(async move { script::pipeline::<Vec<String>>(&store, &invs).await });
            pending = Some((g * GROUP, call));
        }
        if let Some((first, call)) = pending.take() {
            self.settle_group(
                &prepared,
                first,
                joined(call.await),
                deadline,
                into,
                &mut settle,
            )
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
        into: Option<JobId>,
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
                    settle(
                        self.add_call(batch, deadline, into).await?,
                        first + n * ADD_BATCH,
                    )?;
                }
            }
            Err(e) => return Err(e),
        }
        Ok(())
    }
}

/// An add that stayed unavailable past its retry window: the jobs may have been written (the reply
/// may be what was lost), so the error names their ids for a retry that cannot duplicate them.
pub(super) fn unavailable_add(e: Error, batch: &[(JobId, &NewJob, String)]) -> Error {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::TraceContext;

    /// The text a traced job's options are sent as (the cached untraced text with the `trace`
    /// member written in) reads back as the options' own full serialisation does.
    #[test]
    fn a_traced_jobs_cached_options_text_reads_back_as_its_full_serialisation() {
        let tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let traces = [
            TraceContext::new(tp, None).unwrap(),
            TraceContext::new(tp, Some("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")).unwrap(),
        ];
        let bases = [
            JobOptions::default(),
            JobOptions {
                attempts: 3,
                priority: 5,
                group: Some("tenant-7".into()),
                description: Some("a \"quoted\" job".into()),
                ..JobOptions::default()
            },
        ];
        for base in &bases {
            for trace in &traces {
                let o = JobOptions {
                    trace: Some(trace.clone()),
                    ..base.clone()
                };
                // Twice: the second from the per-thread copy.
                for _ in 0..2 {
                    let sent: serde_json::Value =
                        serde_json::from_str(&compact_json_cached(&o)).unwrap();
                    let full: serde_json::Value = serde_json::from_str(&o.compact_json()).unwrap();
                    assert_eq!(sent, full);
                }
            }
            assert_eq!(&*compact_json_cached(base), base.compact_json());
        }
    }
}
