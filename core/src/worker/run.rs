//! Running a handler on one slot: timeouts, panics, interrupts (cancel, timeout, shutdown) that stop the run before its outcome is recorded, and releasing unstarted or interrupted jobs.

use super::*;

pub(super) async fn run_slot(first_owner: Arc<Shared>, first: Job, first_token: String) {
    // A slot of a worker on several queues goes on with the next job of any of them.
    let mut s = first_owner;
    let mut next = Some((s.clone(), first, first_token));
    while let Some((owner, job, token)) = next.take() {
        s = owner;
        let id = job.id;
        let mut job = job;
        s.defaults().apply(&mut job);
        let job = Arc::new(job);
        let began = Instant::now();
        // A job whose lease may have lapsed while it waited in the buffer is given back, not run
        // (see `lapsed`).
        if lapsed(&s, id) {
            s.flights.lock().expect("flights").remove(&id);
            let s2 = s.clone();
            tokio::spawn(async move { release_jobs(&s2, &[(id, token)]).await });
            let Some(n) = pass_over(&s) else { return };
            next = Some(n);
            continue;
        }
        // A job leased ahead reports its start (so that a crash from now on is charged): in the
        // call that records the previous job when the slot came from one (see below), else in a
        // call of its own, sent beside the run; a job that came back uncounted before waits for
        // that call, so a job that kills its worker is returned uncounted at most once.
        if claim_report(&s, id) {
            let pair = [(id, token.clone())];
            if job.strands > 0 {
                report_started(&s, &pair).await;
            } else {
                let s2 = s.clone();
                tokio::spawn(async move { report_started(&s2, &pair).await });
            }
        }
        let (itx, irx) = interrupt_channel();
        let children;
        let mut run = {
            let mut flights = s.flights.lock().expect("flights");
            // Gone: close released it while it waited in the buffer.
            let Some(flight) = flights.get_mut(&id) else {
                drop(flights);
                let Some(n) = pass_over(&s) else { return };
                next = Some(n);
                continue;
            };
            // Cancelled while it waited in the buffer: it does not run.
            if let Some(reason) = flight.cancel.take() {
                flights.remove(&id);
                drop(flights);
                let e = HandlerError::unrecoverable(Interrupt::Cancelled(reason).message())
                    .with_code(CANCELLED);
                let s2 = s.clone();
                let job2 = job.clone();
                // Recorded off the slot's path; the slot goes on with its next job.
                s.unrecorded.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    finish(&s2, &job2, &token, Err(e)).await;
                    recorded(&s2, 1);
                });
                let Some(n) = pass_over(&s) else { return };
                next = Some(n);
                continue;
            }
            flight.interrupt = Some(itx.clone());
            children = Arc::new(AtomicBool::new(false));
            let ctx = JobContext {
                job: job.clone(),
                queue: s.queue.clone(),
                lost: flight.lost.clone(),
                interrupt: irx,
                events: s.events.clone(),
                fence: crate::handler::fence_of(&token),
                token: token.clone(),
                children: children.clone(),
            };
            use tracing::Instrument;
            let span = tracing::info_span!("emq.job", queue = %s.queue.name(), job = %id);
            let work = match job.unreadable() {
                // A stored field no reader can parse fails the job with its code; the handler
                // never sees it as null.
                Some(e) => Box::pin(std::future::ready(Err(HandlerError::unrecoverable(
                    e.message(),
                )
                .with_code(e.code().as_str()))))
                    as futures::future::BoxFuture<'static, HandlerResult>,
                None => s.handler.handle(ctx),
            };
            #[cfg(feature = "otel")]
            let work = span::process(s.queue.name(), &job, work);
            let run = tokio::spawn(work.instrument(span));
            flight.abort = Some(run.abort_handle());
            run
        };
        let lease_ms = job_lease_ms(&s, &job);
        if lease_ms != s.opts.lease.as_millis() as u64 {
            let _ = renew(&s, lease_ms, &[(id, token.clone())]).await;
        }
        let timeout_ms = job.job_options().timeout_ms;
        // Runs until the handler ends, or until it is interrupted (its timeout, a cancel, the end
        // of the shutdown grace): then the handler is told, and stopped — dropped, or for a
        // cooperative (binding) handler awaited until it has stopped — before anything is
        // recorded, so no retry of this job can overlap this run.
        let (joined, why) = {
            let mut watch = itx.subscribe();
            let timed = async {
                if timeout_ms > 0 {
                    tokio::time::sleep(Duration::from_millis(timeout_ms)).await
                } else {
                    std::future::pending().await
                }
            };
            tokio::select! {
                biased;
                _ = async { let _ = watch.wait_for(Option::is_some).await; } => {
                    (stop_run(&s, &mut run).await, itx.borrow().clone())
                }
                // It ended: its outcome stands, unless it was told to stop meanwhile (a handler
                // that returns when told lands here too).
                j = &mut run => (j, itx.borrow().clone()),
                _ = timed => {
                    interrupt(&itx, Interrupt::TimedOut);
                    (stop_run(&s, &mut run).await, itx.borrow().clone())
                }
            }
        };
        let took = began.elapsed().as_micros() as u64;
        let avg = match s.job_us.load(Ordering::Relaxed) {
            u64::MAX => took,
            avg => avg - avg / 4 + took / 4,
        };
        s.job_us.store(avg, Ordering::Relaxed);
        let outcome = match joined_outcome(joined) {
            Ok(o) => o,
            // Aborted by close (the second, immediate stop): nothing is recorded; close releases
            // the job or its lease expires.
            Err(_cancelled) => break,
        };
        let still_ours = s.flights.lock().expect("flights").remove(&id).is_some();
        // After a success the slot takes its next job first, so that the call recording this one
        // also reports that one's start.
        let mut taken = None;
        if still_ours {
            match (why, outcome) {
                // Once a run is told to stop, the reason decides, whatever the handler returned.
                (Some(Interrupt::Shutdown), _) => {
                    release_jobs(&s, &[(id, token.clone())]).await;
                }
                (None, Err(e)) if e.code == HandlerError::INTERRUPTED => {
                    // The handler's host is going down: give the job back and take no more.
                    tracing::info!(job = %id, "the handler was interrupted by its host; the job goes back to waiting and the worker stops fetching");
                    begin_stop(&s);
                    release_jobs(&s, &[(id, token.clone())]).await;
                }
                (Some(Interrupt::TimedOut), _) => {
                    let e =
                        HandlerError::new(format!("the handler ran longer than {timeout_ms} ms"))
                            .with_code("timeout");
                    finish(&s, &job, &token, Err(e)).await;
                }
                (Some(Interrupt::Cancelled(reason)), _) => {
                    let e = HandlerError::unrecoverable(Interrupt::Cancelled(reason).message())
                        .with_code(CANCELLED);
                    finish(&s, &job, &token, Err(e)).await;
                }
                (None, Ok(result)) if job.pending > 0 || children.load(Ordering::SeqCst) => {
                    // It added children (this run or an earlier one): it waits for them.
                    wait_for_children(&s, &job, &token, result).await;
                }
                (None, Ok(result)) => {
                    taken = take_next(&s);
                    let report = taken
                        .as_ref()
                        .filter(|(owner, next, _)| {
                            Arc::ptr_eq(owner, &s) && next.strands == 0 && claim_report(&s, next.id)
                        })
                        .map(|(_, next, token)| (next.id, token.clone()));
                    finish_reporting(&s, &job, &token, Ok(result), report, Some(took / 1_000)).await
                }
                (None, Err(e)) if e.delay.is_some() => {
                    delay_job(&s, &job, &token, &e).await;
                }
                (None, outcome) => finish(&s, &job, &token, outcome).await,
            }
        }
        unreserve(&s, 1);
        next = taken.or_else(|| next_or_end(&s));
        if next.is_none() {
            s.pool.idle_all();
            return;
        }
    }
    // Aborted by close.
    let mut ready = s.pool.ready.lock().expect("ready");
    ready.slots -= 1;
    s.pool.running.store(ready.slots, Ordering::SeqCst);
    drop(ready);
    s.pool.idle_all();
}

/// The slot leaves a buffered job it does not run (gone, cancelled, lapsed): its room given back,
/// and the slot's next job, or None once the slot has ended (nothing buffered), counted once.
fn pass_over(s: &Arc<Shared>) -> Option<(Arc<Shared>, Job, String)> {
    unreserve(s, 1);
    let next = next_or_end(s);
    if next.is_none() {
        s.pool.idle_all();
    }
    next
}

/// The failure code of a cancelled job (`Queue::cancel`).
pub const CANCELLED: &str = "cancelled";

/// How long a non-cooperative handler (a Rust closure) may go on after it was told to stop
/// ([`JobContext::cancelled`] resolved) before the worker drops its future.
pub const INTERRUPT_DROP_AFTER: Duration = Duration::from_millis(100);

/// Stops an interrupted run: a cooperative handler is awaited (it stops once told), any other is
/// aborted at once.
pub(super) async fn stop_run(
    s: &Shared,
    run: &mut tokio::task::JoinHandle<HandlerResult>,
) -> std::result::Result<HandlerResult, tokio::task::JoinError> {
    if !s.handler.cooperative_cancel() {
        // A moment to react to `JobContext::cancelled` (clean up, return), then dropped.
        if let Ok(j) = tokio::time::timeout(INTERRUPT_DROP_AFTER, &mut *run).await {
            return j;
        }
        run.abort();
        return match run.await {
            // Aborted as asked: the interrupt decides the outcome.
            Err(e) if e.is_cancelled() => Ok(Err(HandlerError::new("stopped"))),
            other => other,
        };
    }
    run.await
}

/// Stops taking jobs (the start of a close, without waiting for anything).
pub(super) fn begin_stop(s: &Arc<Shared>) {
    if !s.stopping.swap(true, Ordering::SeqCst) {
        s.wake.notify_waiters();
        s.wake.notify_one();
        s.stop.notify_waiters();
        let s2 = s.clone();
        tokio::spawn(async move { withdraw(&s2).await });
    }
}

/// Gives leased jobs back to the front of wait (or their priority), uncounted (`release.lua`);
/// returns how many were still this worker's.
pub(super) async fn release_jobs(s: &Shared, held: &[(JobId, String)]) -> u64 {
    if held.is_empty() {
        return 0;
    }
    let k = s.queue.keys();
    let mut inv = script::RELEASE
        .prepare()
        .key(&k.active)
        .key(&k.leases)
        .key(&k.wait)
        .key(&k.paused)
        .key(&k.meta)
        .key(&k.events)
        .key(&k.marker)
        .key(&k.groups)
        .key(&k.prioritized)
        .group_keys(k);
    for (id, _) in held {
        inv = inv.key(&s.queue.name().job_key(*id, JobPart::Record));
    }
    inv = inv.arg(s.queue.max_events);
    for (id, token) in held {
        inv = inv.arg(*id).arg(token);
    }
    match inv.invoke::<u64>(s.queue.store()).await {
        Ok(n) => {
            s.released.fetch_add(n, Ordering::SeqCst);
            n
        }
        Err(e) => {
            s.trouble(
                "could not release jobs; they come back when their leases expire",
                &e,
            );
            0
        }
    }
}

pub(super) fn joined_outcome(
    joined: std::result::Result<HandlerResult, tokio::task::JoinError>,
) -> std::result::Result<HandlerResult, &'static str> {
    match joined {
        Ok(r) => Ok(r),
        Err(e) if e.is_panic() => {
            let payload = e.into_panic();
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "the handler panicked".into());
            Ok(Err(HandlerError::new(msg).with_code("panic")))
        }
        Err(_) => Err("cancelled"),
    }
}
