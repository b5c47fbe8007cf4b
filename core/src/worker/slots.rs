//! Slot accounting: how many jobs a worker may hold (running plus prefetched), reserving and returning capacity, dispatching leased jobs to slots.

use super::*;

/// Capacity: the jobs a worker may hold (running or buffered).
pub(super) fn capacity(s: &Shared) -> usize {
    let c = s.opts.concurrency;
    let ahead = s.opts.prefetch.unwrap_or_else(|| (2 * c).clamp(16, 256));
    if s.job_us.load(Ordering::Relaxed) > PREFETCH_MAX_JOB.as_micros() as u64 {
        c
    } else {
        c + ahead
    }
}

/// Reserves room for up to `max` more leased jobs; returns how many (0 when full or stopping).
pub(super) fn reserve(s: &Shared, max: usize) -> usize {
    if s.stopping.load(Ordering::SeqCst) {
        return 0;
    }
    let cap = capacity(s);
    let mut held = s.held.load(Ordering::SeqCst);
    loop {
        let n = max.min(cap.saturating_sub(held));
        if n == 0 {
            return 0;
        }
        match s
            .held
            .compare_exchange(held, held + n, Ordering::SeqCst, Ordering::SeqCst)
        {
            Ok(_) => return n,
            Err(now) => held = now,
        }
    }
}

/// Gives back room: a reservation that leased nothing, or a job that finished.
pub(super) fn unreserve(s: &Shared, n: usize) {
    if n > 0 {
        s.held.fetch_sub(n, Ordering::SeqCst);
        s.wake.notify_one();
    }
}

/// Slots free now: the jobs a claim made now would start at once (the rest wait in the buffer).
pub(super) fn free_slots(s: &Shared) -> usize {
    s.opts
        .concurrency
        .saturating_sub(s.running.load(Ordering::SeqCst))
}

/// Takes leased, read jobs: registers their leases (renewed from now on, released by `close`) and
/// starts slots for them while fewer than `concurrency` run; the rest wait in the buffer. The first
/// `reported` were leased as started (their claim knew they would start at once); a slot reports
/// the start of any other when it takes it (see `run_slot`).
pub(super) fn dispatch(s: &Arc<Shared>, jobs: Vec<(Job, String)>, reported: usize) {
    if jobs.is_empty() {
        return;
    }
    {
        let mut flights = s.flights.lock().expect("flights");
        let mut early = s.early_cancels.lock().expect("early cancels");
        for (i, (job, token)) in jobs.iter().enumerate() {
            flights.insert(
                job.id,
                Flight {
                    token: token.clone(),
                    lease_ms: job_lease_ms(s, job),
                    lost: Arc::new(AtomicBool::new(false)),
                    abort: None,
                    interrupt: None,
                    cancel: early.remove(&job.id).map(|(reason, _)| reason),
                    started: i < reported,
                },
            );
        }
    }
    let mut starting = Vec::new();
    {
        let mut ready = s.ready.lock().expect("ready");
        ready.jobs.extend(jobs);
        // Once stopping, they wait here for `close` to release them.
        while ready.slots < s.opts.concurrency && !s.stopping.load(Ordering::SeqCst) {
            let Some(next) = ready.jobs.pop_front() else {
                break;
            };
            ready.slots += 1;
            s.running.store(ready.slots, Ordering::SeqCst);
            starting.push(next);
        }
    }
    // The starts of leased-ahead jobs that get a slot now go in one call for all of them, not one
    // call per slot (a job with strands reports its own before its handler runs, see `run_slot`).
    let reports: Vec<(JobId, String)> = starting
        .iter()
        .filter(|(job, _)| job.strands == 0 && claim_report(s, job.id))
        .map(|(job, token)| (job.id, token.clone()))
        .collect();
    if !reports.is_empty() {
        let s2 = s.clone();
        tokio::spawn(async move { report_started(&s2, &reports).await });
    }
    for (job, token) in starting {
        tokio::spawn(run_slot(s.clone(), job, token));
    }
}

/// The next job from the buffer if there is one (the slot count is left as it is).
pub(super) fn take_next(s: &Shared) -> Option<(Job, String)> {
    if s.stopping.load(Ordering::SeqCst) {
        return None;
    }
    s.ready.lock().expect("ready").jobs.pop_front()
}

/// Marks a job's start as reported if it was not: true when the caller must report it now (it
/// was leased ahead and its start is not on its way yet).
pub(super) fn claim_report(s: &Shared, id: JobId) -> bool {
    let mut flights = s.flights.lock().expect("flights");
    match flights.get_mut(&id) {
        Some(f) if !f.started && f.cancel.is_none() => {
            f.started = true;
            true
        }
        _ => false,
    }
}

/// The slot's next job from the buffer, or None (the slot then ends).
pub(super) fn next_or_end(s: &Shared) -> Option<(Job, String)> {
    let mut ready = s.ready.lock().expect("ready");
    if !s.stopping.load(Ordering::SeqCst) {
        if let Some(next) = ready.jobs.pop_front() {
            return Some(next);
        }
    }
    ready.slots -= 1;
    s.running.store(ready.slots, Ordering::SeqCst);
    None
}

pub(super) fn job_lease_ms(s: &Shared, job: &Job) -> u64 {
    let own = job.job_options().lease_ms;
    if own > 0 {
        own
    } else {
        s.opts.lease.as_millis() as u64
    }
}
