//! Recording outcomes: completions batched into `complete.lua` calls (which also lease the next jobs), failures with retry and backoff.

use super::*;

/// Completes a job (handing it to the completer, which records it in a batch) or fails it.
pub(super) async fn finish(s: &Arc<Shared>, job: &Arc<Job>, token: &str, outcome: HandlerResult) {
    finish_reporting(s, job, token, outcome, None, None).await
}

/// The wait of a job's first run, in ms: from its add (or the end of its delay) to the claim that
/// leased it (the lease token's server clock); None for a later run (its wait is its backoff).
fn first_wait_ms(job: &Job, token: &str) -> Option<u64> {
    if job.attempts_made > 0 || job.strands > 0 || job.created_ms == 0 {
        return None;
    }
    let leased_ms = crate::handler::fence_of(token) / 1_000;
    let ready = job.created_ms + job.job_options().delay_ms;
    Some(leased_ms.saturating_sub(ready))
}

/// [`finish`], and a completion also reports the start of `started` (a leased-ahead job the slot
/// took next) in its call.
pub(super) async fn finish_reporting(
    s: &Arc<Shared>,
    job: &Arc<Job>,
    token: &str,
    outcome: HandlerResult,
    started: Option<(JobId, String)>,
    run_ms: Option<u64>,
) {
    let q = &s.queue;
    let k = q.keys();
    let opts = job.job_options();
    match outcome {
        Ok(result) => {
            if let Some(parent) = &job.parent {
                // The second step of a flow child's completion goes first: it is idempotent, so a
                // crash before the child's own completion only re-runs the child.
                if let Err(e) =
                    crate::flow::notify_parent(q, parent, job.id, Ok(&result), job).await
                {
                    tracing::warn!(job = %job.id, error = %e, "cannot reach the parent; the child will be retried when its lease expires");
                    if let Some(pair) = started {
                        report_started(s, &[pair]).await;
                    }
                    return;
                }
                if std::env::var_os("EMQ_FAULT_AFTER_PARENT_STEP").is_some() {
                    // Chaos hook for tests: die between a child's two completion steps.
                    std::process::abort();
                }
            }
            let c = Completion {
                id: job.id,
                token: token.to_string(),
                result: serde_json::to_string(&result).unwrap_or_else(|_| "null".into()),
                removal: opts.remove_on_complete,
                dedup: job.dedup.clone().unwrap_or_default(),
                batch: opts.batch.clone(),
                // For the host's `completed` event once recorded (only when it has a hook).
                event: s.events.as_ref().map(|_| (job.clone(), result)),
                started,
                latency: run_ms.map(|run| (run, first_wait_ms(job, token))),
            };
            s.unrecorded.fetch_add(1, Ordering::SeqCst);
            if s.completions.send(c).is_err() {
                s.unrecorded.fetch_sub(1, Ordering::SeqCst);
            }
        }
        Err(err) => {
            let delay = opts.backoff.delay(job.attempts_made + 1, opts.jitter);
            let failure = serde_json::json!({
                "code": err.code, "message": err.message, "stack": err.stack,
            });
            let last = err.unrecoverable || job.attempts_made + 1 >= job.attempts;
            if let (true, Some(parent)) = (last, &job.parent) {
                if let Err(e) =
                    crate::flow::notify_parent(q, parent, job.id, Err(&failure), job).await
                {
                    tracing::warn!(job = %job.id, error = %e, "cannot reach the parent; the child will be retried when its lease expires");
                    return;
                }
            }
            let r = script::FAIL
                .prepare()
                .key(&q.name().job_key(job.id, JobPart::Record))
                .key(&q.name().job_key(job.id, JobPart::Logs))
                .key(&k.active)
                .key(&k.leases)
                .key(&k.wait)
                .key(&k.paused)
                .key(&k.delayed)
                .key(&k.failed)
                .key(&k.dedup)
                .key(&k.meta)
                .key(&k.events)
                .key(&k.marker)
                .key(&k.metrics)
                .key(&k.groups)
                .key(&k.prioritized)
                .key(&k.delayed_priority)
                .group_keys(k)
                .key(&k.dead_letters)
                .key(&k.batch_pending)
                .arg(job.id)
                .arg(token)
                .arg(failure.to_string())
                .arg(delay.as_millis() as u64)
                .arg(if err.unrecoverable { "0" } else { "1" })
                .arg(if opts.remove_on_fail.is_now() {
                    "0"
                } else {
                    "1"
                })
                .arg(q.max_events)
                .arg(job.attempts)
                .invoke::<String>(q.store())
                .await;
            match r {
                Err(e) => note_finish_error(s, job.id, e),
                Ok(status) => {
                    if status == "dead_letter" {
                        // The move's other steps (another slot); a failure here is finished by
                        // the maintenance loop (dead_letter.rs).
                        if let Err(e) = crate::dead_letter::forward(q, job.id).await {
                            s.trouble(
                                &format!("could not move failed job {} to its dead-letter queue yet; the maintenance loop will", job.id),
                                &e,
                            );
                        }
                    }
                    if let (true, Some(b)) = (status != "retry", &opts.batch) {
                        settle_batched(s, &[crate::batch::pending_entry('f', job.id, b)]).await;
                    }
                    // Counted once recorded, by what the script did: a retry, or failed for good.
                    if status == "retry" {
                        s.retried.fetch_add(1, Ordering::Relaxed);
                    } else {
                        s.failed.fetch_add(1, Ordering::Relaxed);
                    }
                    if last {
                        s.job_retention
                            .finished(JobState::Failed, opts.remove_on_fail);
                    }
                    emit(&s.events, || WorkerEvent::Failed {
                        job: job.clone(),
                        failure: crate::job::Failure {
                            code: err.code.clone(),
                            message: err.message.clone(),
                            stack: err.stack.clone(),
                        },
                        will_retry: status == "retry",
                    });
                }
            }
        }
    }
}

/// Ends the successful run of a job that added children (this run, or one before: its record
/// counts them): it waits in waiting-children for them, or runs again at once when every one is
/// done (`children_wait.lua`); a child that failed under the `fail` policy fails it instead.
pub(super) async fn wait_for_children(
    s: &Arc<Shared>,
    job: &Arc<Job>,
    token: &str,
    result: serde_json::Value,
) {
    let q = &s.queue;
    let r = match script::CHILDREN_WAIT.on(q.name(), Some(job.id)) {
        Ok(inv) => {
            inv.arg(job.id)
                .arg(token)
                .arg(serde_json::to_string(&result).unwrap_or_else(|_| "null".into()))
                .arg(q.max_events)
                .invoke::<String>(q.store())
                .await
        }
        Err(e) => Err(e),
    };
    match r {
        Ok(r) => {
            if let Some(child) = r.strip_prefix("fail:") {
                let e = HandlerError::unrecoverable(format!("child {child} failed"))
                    .with_code("child_failed");
                Box::pin(finish(s, job, token, Err(e))).await;
            }
        }
        Err(e) => note_finish_error(s, job.id, e),
    }
}

/// Puts a running job back to delayed for the handler's [`HandlerError::delay`] (`delay_job.lua`),
/// its attempt counted only when asked.
pub(super) async fn delay_job(s: &Shared, job: &Job, token: &str, e: &HandlerError) {
    let delay = e.delay.unwrap_or_default();
    let r = match script::DELAY_JOB.on(s.queue.name(), Some(job.id)) {
        Ok(inv) => {
            inv.arg(job.id)
                .arg(token)
                .arg(delay.as_millis() as u64)
                .arg(if e.count_attempt { "1" } else { "0" })
                .arg(s.queue.max_events)
                .invoke::<u64>(s.queue.store())
                .await
        }
        Err(e) => Err(e),
    };
    if let Err(e) = r {
        note_finish_error(s, job.id, e);
    }
}

/// Records successful runs in batches: one call of `complete.lua` completes every run that finished
/// since the last call and leases as many next jobs as the worker has room for.
pub(super) async fn complete_loop(
    s: Arc<Shared>,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<Completion>,
) {
    while let Some(first) = rx.recv().await {
        let mut batch = vec![first];
        while batch.len() < COMPLETE_BATCH {
            match rx.try_recv() {
                Ok(c) => batch.push(c),
                Err(_) => break,
            }
        }
        // While every slot has a buffered job to go on with, nobody waits for this call's refill:
        // let a few more completions join it (at most COMPLETE_LINGER), so slow handlers (a
        // foreign language's hop per job) still share one call among several jobs.
        let linger_until = tokio::time::Instant::now() + COMPLETE_LINGER;
        while batch.len() < COMPLETE_BATCH
            && !s.stopping.load(Ordering::SeqCst)
            && buffered(&s) >= s.pool.concurrency
        {
            match tokio::time::timeout_at(linger_until, rx.recv()).await {
                Ok(Some(c)) => batch.push(c),
                _ => break,
            }
        }
        let want = reserve(&s, usize::MAX);
        let starting = free_slots(&s);
        let reports: Vec<&(JobId, String)> =
            batch.iter().filter_map(|c| c.started.as_ref()).collect();
        let q = &s.queue;
        let k = q.keys();
        let mut inv = script::COMPLETE
            .prepare()
            .key(&k.active)
            .key(&k.leases)
            .key(&k.completed)
            .key(&k.dedup)
            .key(&k.wait)
            .key(&k.paused)
            .key(&k.delayed)
            .key(&k.prioritized)
            .key(&k.meta)
            .key(&k.events)
            .key(&k.marker)
            .key(&k.limiter)
            .key(&k.metrics)
            .key(&k.groups)
            .key(&k.group_counts)
            .key(&k.group_windows)
            .key(&k.handoff)
            .key(&k.delayed_priority)
            .group_keys(k)
            .key(&k.batch_pending);
        for c in &batch {
            inv = inv
                .key(&q.name().job_key(c.id, JobPart::Record))
                .key(&q.name().job_key(c.id, JobPart::Logs));
        }
        let mut latency = crate::latency::LatencyDelta::default();
        for (run, wait) in batch.iter().filter_map(|c| c.latency) {
            latency.count(run, wait);
        }
        inv = inv
            .arg(want)
            .arg(s.opts.lease.as_millis() as u64)
            .arg(q.max_events)
            .arg(starting)
            .arg(
                reports
                    .iter()
                    .map(|(id, token)| format!("{id} {token}"))
                    .collect::<Vec<_>>()
                    .join(" "),
            )
            .arg(latency.encode());
        for c in &batch {
            let keep = match (c.removal.is_now(), c.batch.is_some()) {
                (true, false) => "0",
                (false, false) => "1",
                (true, true) => "2",
                (false, true) => "3",
            };
            inv = inv
                .arg(c.id)
                .arg(c.token.as_str())
                .arg(c.result.as_str())
                .arg(format!("{keep}{}", c.dedup));
        }
        let ticket = Ticket::take(&s, want > 0);
        let call = inv.invoke::<(Vec<i64>, Vec<redis::Value>)>(q.store());
        let (reply, still) = leasing(&s, want, call).await;
        let reply = reply.and_then(|(lost, claim)| Ok((lost, parse_claim(claim)?.1)));
        match reply {
            Err(e) => {
                unreserve(&s, still);
                if want > 0 {
                    s.pool.claim_failed(s.member);
                }
                let pairs: Vec<(JobId, String)> = reports.iter().map(|p| (*p).clone()).collect();
                if !pairs.is_empty() {
                    report_started(&s, &pairs).await;
                }
                for c in &batch {
                    note_finish_error(&s, c.id, e.clone());
                }
            }
            Ok((lost, next)) => {
                // The batched jobs' second step (their batches' slots): one call per batch for
                // all of this call's outcomes, then one removal of their notes.
                let entries: Vec<String> = (1..)
                    .zip(batch.iter())
                    .filter_map(|(place, c)| {
                        let b = c.batch.as_ref().filter(|_| !lost.contains(&place))?;
                        Some(crate::batch::pending_entry('c', c.id, b))
                    })
                    .collect();
                if !entries.is_empty() {
                    settle_batched(&s, &entries).await;
                }
                // The reply names the (1-based) places of the jobs whose leases were lost.
                for (place, c) in (1..).zip(batch.iter_mut()) {
                    if !lost.contains(&place) {
                        s.completed.fetch_add(1, Ordering::Relaxed);
                        s.job_retention.finished(JobState::Completed, c.removal);
                        if let Some((job, result)) = c.event.take() {
                            emit(&s.events, || WorkerEvent::Completed { job, result });
                        }
                    } else {
                        note_finish_error(
                            &s,
                            c.id,
                            crate::Error::new(ErrorCode::LeaseLost, "lease lost"),
                        );
                    }
                }
                s.pool.claimed(s.member, want, next.len());
                settle_lease(&s, still, next.len());
                if !next.is_empty() {
                    // Reading the next jobs' records is one more round trip: do it off this loop
                    // so the next batch of completions can go out meanwhile. The batch counts as
                    // unrecorded until its next jobs are registered, so `close` waits for them.
                    let s2 = s.clone();
                    let n = batch.len();
                    tokio::spawn(async move {
                        start(&s2, next, starting, ticket).await;
                        recorded(&s2, n);
                    });
                    continue;
                }
            }
        }
        recorded(&s, batch.len());
    }
}

/// Records batched jobs' outcomes (noted as `entries` by their finish scripts) in their batches
/// (`crate::batch::settle_many`: one call per batch); a failure is left to the maintenance loop
/// (`core/src/batch/`).
async fn settle_batched(s: &Shared, entries: &[String]) {
    if let Err(e) = crate::batch::settle_many(&s.queue, entries).await {
        s.trouble(
            "could not record a batched job's outcome in its batch yet; the maintenance loop will",
            &e,
        );
    }
}

/// `n` completions are recorded (and their next jobs registered).
pub(super) fn recorded(s: &Shared, n: usize) {
    if s.unrecorded.fetch_sub(n, Ordering::SeqCst) == n {
        // Nothing more on its way: the fetch loop claims (or waits) from here.
        s.wake.notify_one();
        s.idle.notify_waiters();
    }
}

pub(super) fn note_finish_error(s: &Shared, id: JobId, e: crate::Error) {
    if e.code() == ErrorCode::LeaseLost {
        s.lease_lost.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(job = %id, "lease lost before the job finished; its result was not recorded");
    } else {
        s.trouble(
            &format!("could not record the outcome of job {id}; it will be recovered when its lease expires"),
            &e,
        );
    }
}
