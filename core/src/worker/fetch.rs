//! Fetching work: `claim.lua` (select-then-claim), reading records in one pipelined HMGET, blocking on the `handoff` and marker lists on a dedicated connection, and claiming a marker's named job.

use super::*;

pub(super) fn claim_keys(inv: Invocation, q: &Queue) -> Invocation {
    let k = q.keys();
    inv.key(&k.wait)
        .key(&k.paused)
        .key(&k.delayed)
        .key(&k.prioritized)
        .key(&k.active)
        .key(&k.leases)
        .key(&k.meta)
        .key(&k.events)
        .key(&k.marker)
        .key(&k.limiter)
        .key(&k.groups)
        .key(&k.group_counts)
        .key(&k.group_windows)
        .key(&k.handoff)
        .key(&k.delayed_priority)
        .group_keys(k)
}

pub(super) fn parse_err(e: impl std::fmt::Display) -> crate::Error {
    crate::Error::new(ErrorCode::Internal, format!("unexpected claim reply: {e}"))
}

/// Parses a claim reply: {next due in ms or -1, id, token, …}.
pub(super) fn parse_claim(reply: Vec<redis::Value>) -> Result<(Option<u64>, Vec<Leased>)> {
    let mut it = reply.into_iter();
    let due: i64 = match it.next() {
        Some(v) => redis::from_redis_value(v).map_err(parse_err)?,
        None => -1,
    };
    let mut jobs = Vec::new();
    while let (Some(id), Some(token)) = (it.next(), it.next()) {
        let id: String = redis::from_redis_value(id).map_err(parse_err)?;
        let token: String = redis::from_redis_value(token).map_err(parse_err)?;
        jobs.push((JobId::parse(&id)?, token));
    }
    Ok(((due >= 0).then_some(due as u64), jobs))
}

/// The record fields a run reads, by name (`claim_id.lua` returns only these; the other claims
/// read the whole record): a field missing here is missing from the job a marker-named claim
/// starts, as `batch` (the batch of a job added in its batch's slot) once was.
pub(super) const RECORD_FIELDS: [&str; 13] = [
    "name",
    "data",
    "opts",
    "batch",
    "atts",
    "attempts",
    "stalls",
    "created_ms",
    "priority",
    "progress",
    "dedup",
    "parent",
    "strands",
];

/// Reads the records of leased jobs in one pipelined round trip (HGETALL: a leased job's record holds
/// only what a run needs); None for a job removed meanwhile.
pub(super) async fn read_records(q: &Queue, ids: &[JobId]) -> Result<Vec<Option<Job>>> {
    let mut pipe = redis::pipe();
    for id in ids {
        pipe.cmd("HGETALL")
            .arg(q.name().job_key(*id, JobPart::Record));
    }
    let rows: Vec<HashMap<String, String>> = pipe.query_async(&mut q.store().conn()).await?;
    Ok(ids
        .iter()
        .zip(rows)
        .map(|(id, map)| {
            map.contains_key("name")
                .then(|| Job::from_record(*id, Some(JobState::Active), map))
        })
        .collect())
}

pub(super) async fn fetch_loop(s: Arc<Shared>) {
    let mut blocking: Option<Blocking> = None;
    let mut backoff = Duration::from_millis(100);
    // When the next delayed job is due, as the last claim said.
    let mut next_due: Option<Instant> = None;
    // After a marker-named claim there is nothing else to claim (`claim_id.lua` pushes a new
    // marker when wait still holds jobs), so the loop goes straight back to waiting.
    let mut just_named = false;
    // The queue's job defaults before the first claim, so that no job runs without them.
    while !s.stopping.load(Ordering::SeqCst) {
        match s.refresh_defaults().await {
            Ok(()) => break,
            Err(e) => {
                s.trouble("reading the queue's job defaults failed; retrying", &e);
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => {}
                    _ = s.stop.notified() => {}
                }
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    }
    // Nor before the cancels stream is followed: a cancel asked once a job runs must be read.
    cancels_followed(&s).await;
    backoff = Duration::from_millis(100);
    while !s.stopping.load(Ordering::SeqCst) {
        let room = capacity(&s) > s.pool.held.load(Ordering::SeqCst);
        if std::mem::take(&mut just_named) && room && next_due.map_or(true, |t| t > Instant::now())
        {
            let wait = next_due
                .map(|t| t.saturating_duration_since(Instant::now()))
                .unwrap_or(s.opts.block_timeout)
                .min(s.opts.block_timeout);
            just_named = block_for_marker(&s, &mut blocking, wait, backoff).await;
            continue;
        }
        // While completions are on their way, the completer refills: claiming here too would only
        // add round trips.
        let free = if s.unrecorded.load(Ordering::SeqCst) == 0 {
            reserve(&s, usize::MAX)
        } else {
            0
        };
        if free == 0 {
            s.wake.notified().await;
            continue;
        }
        let starting = free_slots(&s);
        let ticket = Ticket::take(&s, true);
        let call = claim_keys(script::CLAIM.prepare(), &s.queue)
            .arg(free)
            .arg(s.opts.lease.as_millis() as u64)
            .arg(s.queue.max_events)
            .arg(starting)
            .invoke::<Vec<redis::Value>>(s.queue.store());
        let (claimed, still) = leasing(&s, free, call).await;
        let (due, jobs) = match claimed.and_then(parse_claim) {
            Ok(c) => {
                backoff = Duration::from_millis(100);
                s.pool.claimed(s.member, free, c.1.len());
                settle_lease(&s, still, c.1.len());
                c
            }
            Err(e) => {
                unreserve(&s, still);
                s.pool.claim_failed(s.member);
                s.trouble("claim failed; retrying", &e);
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => {}
                    _ = s.wake.notified() => {}
                }
                backoff = (backoff * 2).min(Duration::from_secs(5));
                continue;
            }
        };
        next_due = due.map(|d| Instant::now() + Duration::from_millis(d.max(1)));
        if !jobs.is_empty() {
            start(&s, jobs, starting, ticket).await;
            continue;
        }
        // Nothing leased: let the later claims' jobs through now (the completer's refill, say),
        // not when this wait ends (they would sit in the buffer, unstarted, until it does).
        drop(ticket);
        let wait = due
            .map(|d| Duration::from_millis(d.max(1)))
            .unwrap_or(s.opts.block_timeout)
            .min(s.opts.block_timeout);
        just_named = block_for_marker(&s, &mut blocking, wait, backoff).await;
    }
}

/// Waits up to `wait` on the dedicated connection for a job an add hands over (`handoff`) or the
/// queue's marker, registered in `waiters` meanwhile (one pipeline: `wait_register.lua`, BRPOP).
/// A handed job starts at once; a marker that names a job is claimed and read in one call.
/// Returns true when it started a job that way (the queue had nothing else ready).
pub(super) async fn block_for_marker(
    s: &Arc<Shared>,
    blocking: &mut Option<Blocking>,
    wait: Duration,
    backoff: Duration,
) -> bool {
    // Blocked on its queue, it waits for work, not for room.
    s.pool.blocks(s.member);
    let k = s.queue.keys();
    if blocking.is_none() {
        match connect_blocking(s).await {
            Ok(b) => *blocking = Some(b),
            Err(e) => {
                s.trouble("cannot open the blocking connection", &e);
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => {}
                    _ = s.wake.notified() => {}
                }
                return false;
            }
        }
    }
    let b = blocking.as_mut().expect("connected");
    let client_id = b.client_id;
    let register = script::WAIT_REGISTER
        .prepare()
        .key(&k.waiters)
        .arg(&s.waiter)
        .arg(wait.as_millis().max(1) as u64);
    let register = match register.command(s.queue.store().guarded()) {
        Ok(cmd) => cmd,
        Err(e) => {
            // Only a mistake in this file can get here: the tests run every invocation.
            tracing::error!(error = %e, "emq: wait_register refused before sending");
            return false;
        }
    };
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    // A worker on several queues takes no hand-over: an add would lease it a job whatever the
    // order between its queues says; the marker wakes it and its claim follows the order.
    let hand_over = s.pool.size() == 1;
    if hand_over {
        pipe.add_command(register);
    }
    pipe.cmd("BRPOP")
        .arg(&k.handoff)
        .arg(&k.marker)
        .arg(wait.as_secs_f64().max(0.001));
    // An add hands over a job leased after this wait began.
    let since = Instant::now();
    let reply = {
        let waiting = pipe.query_async::<Vec<redis::RedisResult<redis::Value>>>(&mut b.conn);
        tokio::pin!(waiting);
        tokio::select! {
            r = &mut waiting => Some(r),
            _ = s.stop.notified() => {
                // close was called: end the wait on the server, so an entry it popped is not lost
                // with the connection (it goes to the buffer, which close releases).
                if unblock(s, client_id).await {
                    tokio::time::timeout(Duration::from_secs(1), &mut waiting).await.ok()
                } else {
                    None
                }
            }
        }
    };
    let replies = match reply {
        Some(Ok(r)) => r,
        Some(Err(e)) => {
            tracing::debug!(error = %e, "blocking wait failed; reconnecting");
            *blocking = None;
            return false;
        }
        None => {
            *blocking = None;
            return false;
        }
    };
    let mut replies = replies.into_iter();
    if !hand_over {
    } else if let Some(Err(e)) = replies.next() {
        // Not registered this time (NOSCRIPT after a flush, say): load it for the next wait.
        tracing::debug!(error = %e, "wait registration failed");
        let _ = script::WAIT_REGISTER.load(s.queue.store()).await;
    }
    let popped = match replies.next() {
        Some(Ok(v)) => redis::from_redis_value::<Option<(String, Vec<u8>)>>(v)
            .ok()
            .flatten(),
        Some(Err(e)) => {
            tracing::debug!(error = %e, "blocking wait failed; reconnecting");
            *blocking = None;
            return false;
        }
        None => None,
    };
    let Some((from, entry)) = popped else {
        return false;
    };
    s.pool.woken(s.member);
    if from == k.handoff.as_str() {
        match handoff::parse(&entry) {
            Ok(h) => {
                // Leased to this worker already: take it even at capacity (it waits in the buffer).
                hold_one(s);
                // Leased ahead by the add: the slot that takes it reports its start.
                dispatch(s, vec![(h.job, h.token)], 0, since);
                tokio::task::yield_now().await;
                return true;
            }
            Err(e) => {
                // Its lease expires and the sweep gives it back to wait.
                s.trouble("cannot read a handed-over job", &e);
                return false;
            }
        }
    }
    // A marker that names a job: claim it and read it in one call. At capacity, the job stays
    // in wait for the next claim.
    let Some(id) = std::str::from_utf8(&entry)
        .ok()
        .and_then(|t| JobId::parse(t).ok())
    else {
        return false;
    };
    if reserve(s, 1) == 1 {
        let starts = free_slots(s) > 0;
        let ticket = Ticket::take(s, true);
        match claim_named(s, id, starts).await {
            Ok(Some(job)) => {
                ticket.deliver(vec![job], usize::from(starts));
                // Let the new slot start its handler before this loop sends anything more (its
                // next wait would otherwise go first).
                tokio::task::yield_now().await;
                return true;
            }
            Ok(None) => unreserve(s, 1),
            Err(e) => {
                unreserve(s, 1);
                tracing::debug!(error = %e, "claim of a named job failed");
            }
        }
    }
    false
}

/// Opens the dedicated blocking connection, learns its client id and loads the registration
/// script on its node.
pub(super) async fn connect_blocking(s: &Arc<Shared>) -> Result<Blocking> {
    let store = s.queue.store();
    let mut conn = store.blocking_connection(&s.queue.keys().marker).await?;
    let client_id = redis::cmd("CLIENT")
        .arg("ID")
        .query_async::<i64>(&mut conn)
        .await
        .ok();
    // A failure here only means no registration (each wait then retries the load).
    let _: std::result::Result<String, _> = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(script::WAIT_REGISTER.source(store.guarded()))
        .query_async(&mut conn)
        .await;
    Ok(Blocking { conn, client_id })
}

/// Ends a worker's blocking wait from another connection to the same node; false when it could not.
pub(super) async fn unblock(s: &Arc<Shared>, client_id: Option<i64>) -> bool {
    let Some(id) = client_id else {
        return false;
    };
    let Ok(mut conn) = s
        .queue
        .store()
        .blocking_connection(&s.queue.keys().marker)
        .await
    else {
        return false;
    };
    redis::cmd("CLIENT")
        .arg("UNBLOCK")
        .arg(id)
        .query_async::<i64>(&mut conn)
        .await
        .is_ok()
}

/// Leases the job a wake-up marker named and reads its record in the same call (`claim_id.lua`);
/// None when the general claim must decide (paused, limits, priorities, or already taken).
pub(super) async fn claim_named(
    s: &Arc<Shared>,
    id: JobId,
    starts: bool,
) -> Result<Option<(Job, String)>> {
    let q = &s.queue;
    let reply: Vec<redis::Value> = script::CLAIM_ID
        .on(s.queue.name(), Some(id))?
        .arg(id)
        .arg(s.opts.lease.as_millis() as u64)
        .arg(q.max_events)
        .arg(if starts { "1" } else { "0" })
        .arg(&RECORD_FIELDS[..])
        .invoke(q.store())
        .await?;
    let mut it = reply.into_iter();
    let claimed: i64 = it
        .next()
        .map(redis::from_redis_value)
        .transpose()
        .map_err(parse_err)?
        .unwrap_or(0);
    if claimed != 1 {
        return Ok(None);
    }
    let token: String = it
        .next()
        .map(redis::from_redis_value)
        .transpose()
        .map_err(parse_err)?
        .unwrap_or_default();
    let values: Vec<Option<String>> = it
        .map(|v| redis::from_redis_value::<Option<String>>(v).map_err(parse_err))
        .collect::<Result<_>>()?;
    if values.first().map(Option::is_none).unwrap_or(true) {
        // Leased but its record is gone (removed meanwhile): the sweep will tidy the lease.
        return Ok(None);
    }
    let map: HashMap<String, String> = RECORD_FIELDS
        .iter()
        .zip(values)
        .filter_map(|(k, v)| Some((k.to_string(), v?)))
        .collect();
    Ok(Some((
        Job::from_record(id, Some(JobState::Active), map),
        token,
    )))
}

/// Reads leased jobs' records and delivers them in their claim's turn (`ticket`); the first
/// `starting` of `leased` were leased as starting at once (the claim's `start`), the others ahead.
pub(super) async fn start(s: &Arc<Shared>, leased: Vec<Leased>, starting: usize, ticket: Ticket) {
    let ids: Vec<JobId> = leased.iter().map(|(id, _)| *id).collect();
    let records = match read_records(&s.queue, &ids).await {
        Ok(r) => r,
        Err(e) => {
            // The leases stand; if we cannot read the jobs they stall and are recovered.
            s.trouble(
                "cannot read leased jobs; they will be recovered when their leases expire",
                &e,
            );
            unreserve(s, leased.len());
            return;
        }
    };
    let mut jobs = Vec::with_capacity(leased.len());
    let mut reported = 0;
    for (i, ((_, token), job)) in leased.into_iter().zip(records).enumerate() {
        match job {
            Some(job) => {
                reported += usize::from(i < starting);
                jobs.push((job, token));
            }
            None => unreserve(s, 1),
        }
    }
    ticket.deliver(jobs, reported);
}
