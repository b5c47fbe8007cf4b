//! Slot accounting: how many jobs a worker may hold (running plus prefetched), reserving and returning capacity, dispatching leased jobs to slots.

use super::*;

/// Capacity: the jobs a worker may hold (running or buffered), over all its queues.
pub(super) fn capacity(s: &Shared) -> usize {
    let c = s.pool.concurrency;
    let job_us = s.job_us.load(Ordering::Relaxed);
    if job_us > PREFETCH_MAX_JOB.as_micros() as u64 {
        c
    } else {
        c + s.opts.prefetch.unwrap_or_else(|| default_ahead(c, job_us))
    }
}

/// Fewest jobs a worker leases ahead by default, whatever its jobs take.
const AHEAD_FLOOR: usize = 16;
/// Most jobs leased ahead by default at a low concurrency, for jobs short enough that they hold
/// at most [`AHEAD_HOLD`] of work.
const AHEAD_SHORT: usize = 64;
/// Work (by the recent average job) the floor's jobs above [`AHEAD_FLOOR`] may hold back from
/// other workers.
const AHEAD_HOLD: Duration = Duration::from_millis(50);

/// The default prefetch: twice the concurrency, within 256 and at least a floor. The floor is 16,
/// raised for short jobs to as many as take [`AHEAD_HOLD`] on average (at most 64, reached under
/// ~0.8 ms a job). Each `complete.lua` call has a fixed cost (~190,000 server instructions,
/// counted) shared by the jobs it completes and refills, about half the buffer at concurrency 1;
/// the raised floor never makes the buffer hold more work than 16 jobs of 3 ms (50 ms), so
/// other workers are kept from no more than before (see bench/notes/processed.md).
pub(super) fn default_ahead(concurrency: usize, job_us: u64) -> usize {
    let by_time = (AHEAD_HOLD.as_micros() as u64 / job_us.max(1)).min(AHEAD_SHORT as u64) as usize;
    (2 * concurrency).clamp(by_time.max(AHEAD_FLOOR), 256)
}

/// Reserves room for up to `max` more leased jobs; returns how many (0 when full, stopping, or
/// when the pool's order lets this queue lease none now: see `pool.rs`).
pub(super) fn reserve(s: &Shared, max: usize) -> usize {
    if s.stopping.load(Ordering::SeqCst) {
        return 0;
    }
    let cap = capacity(s);
    let pool = &s.pool;
    let mut held = pool.held.load(Ordering::SeqCst);
    loop {
        let allowed = pool.allowed(s.member, max, cap);
        if allowed == 0 {
            // Its share is full, or it yields to a member further behind (marked there).
            return 0;
        }
        let n = allowed.min(cap.saturating_sub(held));
        if n == 0 {
            // No room: it waits for room, and room that frees goes first to the furthest behind.
            pool.wanted(s.member);
            return 0;
        }
        match pool
            .held
            .compare_exchange(held, held + n, Ordering::SeqCst, Ordering::SeqCst)
        {
            Ok(_) => {
                pool.took(s.member, n);
                return n;
            }
            Err(now) => held = now,
        }
    }
}

/// Holds one more job whatever the room (one an add handed over, leased to this worker already).
pub(super) fn hold_one(s: &Shared) {
    hold(s, 1);
}

/// Holds `n` more jobs whatever the room (leased to this worker already).
pub(super) fn hold(s: &Shared, n: usize) {
    if n == 0 {
        return;
    }
    let room = reserve(s, n);
    if room < n {
        s.pool.held.fetch_add(n - room, Ordering::SeqCst);
        s.pool.took(s.member, n - room);
    }
}

/// How long a call that may lease jobs (a claim, a completion's refill) holds its reservation
/// unanswered: a claim takes milliseconds; one sent to a master that died holds until the cluster
/// notices (seconds), and its reservation would keep the pool's other queues, their partitions on
/// live masters, from leasing meanwhile.
pub(super) const LEASING_CALL_HOLDS: Duration = Duration::from_secs(1);

/// Runs `call`, which may lease up to `reserved` jobs (reserved by the caller); on a worker on
/// several queues (or partitions), gives the reservation back (and marks this queue as having
/// found nothing, so that the others' shares grow) if it goes unanswered for
/// [`LEASING_CALL_HOLDS`]. Returns its result and what is still reserved: `reserved`, or 0 once
/// given back — then whatever the call leases when it answers must be held again with [`hold`].
pub(super) async fn leasing<T>(
    s: &Shared,
    reserved: usize,
    call: impl std::future::Future<Output = T>,
) -> (T, usize) {
    tokio::pin!(call);
    // A worker on one queue has no other member its reservation could keep from leasing.
    if reserved == 0 || s.pool.size() == 1 {
        return (call.await, reserved);
    }
    match tokio::time::timeout(LEASING_CALL_HOLDS, &mut call).await {
        Ok(r) => (r, reserved),
        Err(_) => {
            unreserve(s, reserved);
            s.pool.claimed(s.member, reserved, 0);
            if s.pool.waits_for_coming() {
                // Its queue counts as having found nothing: the others' jobs need not wait.
                fill(s);
            }
            (call.await, 0)
        }
    }
}

/// Settles the reservation of a leasing call that leased `got` jobs (never more than it
/// reserved): the rest of what it still held back, or, when [`leasing`] gave it back meanwhile,
/// the leased jobs held again.
pub(super) fn settle_lease(s: &Shared, still: usize, got: usize) {
    if still == 0 {
        hold(s, got);
    } else {
        unreserve(s, still - got);
    }
}

/// Gives back room: a reservation that leased nothing, or a job that finished.
pub(super) fn unreserve(s: &Shared, n: usize) {
    if n > 0 {
        s.pool.held.fetch_sub(n, Ordering::SeqCst);
        s.pool.gave_back(s.member, n);
        s.wake.notify_one();
        if s.pool.size() > 1 {
            s.pool.wake_all();
        }
    }
}

/// Slots free now: the jobs a claim made now would start at once (the rest wait in the buffer).
pub(super) fn free_slots(s: &Shared) -> usize {
    s.pool
        .concurrency
        .saturating_sub(s.pool.running.load(Ordering::SeqCst))
}

/// Takes leased, read jobs now, outside any claim order (a job an add handed over, leased no
/// earlier than `since`): see [`register`] and [`enqueue`].
pub(super) fn dispatch(s: &Arc<Shared>, jobs: Vec<(Job, String)>, reported: usize, since: Instant) {
    register(s, &jobs, reported, since);
    enqueue(s, jobs);
}

/// Registers leased, read jobs, leased by a call sent at `since`: their leases are renewed from
/// now on and released by `close`. The first `reported` were leased as started (their claim knew
/// they would start at once); a slot reports the start of any other when it takes it (see
/// `run_slot`).
pub(super) fn register(s: &Shared, jobs: &[(Job, String)], reported: usize, since: Instant) {
    if jobs.is_empty() {
        return;
    }
    let mut flights = s.flights.lock().expect("flights");
    let mut early = s.early_cancels.lock().expect("early cancels");
    for (i, (job, token)) in jobs.iter().enumerate() {
        flights.insert(
            job.id,
            Flight {
                token: token.clone(),
                lease_ms: job_lease_ms(s, job),
                lost: Arc::new(AtomicBool::new(false)),
                // The claim leased it for the worker's lease (a job's own lease comes with its
                // first renewal, see `run_slot`).
                until: since + s.opts.lease,
                span: s.opts.lease,
                abort: None,
                interrupt: None,
                cancel: early.remove(&job.id).map(|(reason, _)| reason),
                started: i < reported,
            },
        );
    }
}

/// Puts registered jobs in the buffer and starts slots for them while fewer than `concurrency`
/// run; the rest wait in the buffer (in order: see `order.rs`).
pub(super) fn enqueue(s: &Arc<Shared>, jobs: Vec<(Job, String)>) {
    if jobs.is_empty() {
        return;
    }
    Pool::push(&mut s.pool.ready.lock().expect("ready"), s.member, jobs);
    fill(s);
}

/// Starts slots for buffered jobs (of any of the pool's queues) while fewer than `concurrency`
/// run and the pool's order lets one start (see `pool.rs`).
pub(super) fn fill(s: &Shared) {
    let pool = &s.pool;
    let mut starting = Vec::new();
    {
        let mut ready = pool.ready.lock().expect("ready");
        // Once stopping, they wait here for `close` to release them.
        while ready.slots < pool.concurrency {
            let Some(next) = pool.pop(&mut ready) else {
                break;
            };
            ready.slots += 1;
            pool.running.store(ready.slots, Ordering::SeqCst);
            starting.push(next);
        }
    }
    // The starts of leased-ahead jobs that get a slot now go in one call for all of them, not one
    // call per slot (a job with strands reports its own before its handler runs, see `run_slot`).
    // (Per queue: each member reports its own jobs' starts.)
    let mut reports: Vec<(Arc<Shared>, Vec<Leased>)> = Vec::new();
    for (owner, job, token) in &starting {
        if job.strands == 0 && claim_report(owner, job.id) {
            match reports.iter_mut().find(|(o, _)| Arc::ptr_eq(o, owner)) {
                Some((_, r)) => r.push((job.id, token.clone())),
                None => reports.push((owner.clone(), vec![(job.id, token.clone())])),
            }
        }
    }
    for (owner, r) in reports {
        tokio::spawn(async move { report_started(&owner, &r).await });
    }
    for (owner, job, token) in starting {
        tokio::spawn(run_slot(owner, job, token));
    }
}

/// The next job from the buffer if there is one, of any of the pool's queues (the slot count is
/// left as it is).
pub(super) fn take_next(s: &Shared) -> Option<(Arc<Shared>, Job, String)> {
    let pool = &s.pool;
    let mut ready = pool.ready.lock().expect("ready");
    pool.pop(&mut ready)
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
pub(super) fn next_or_end(s: &Shared) -> Option<(Arc<Shared>, Job, String)> {
    let pool = &s.pool;
    let mut ready = pool.ready.lock().expect("ready");
    if let Some(next) = pool.pop(&mut ready) {
        return Some(next);
    }
    ready.slots -= 1;
    pool.running.store(ready.slots, Ordering::SeqCst);
    None
}

/// Jobs waiting in this queue's buffer.
pub(super) fn buffered(s: &Shared) -> usize {
    Pool::buffered(&s.pool.ready.lock().expect("ready"), s.member)
}

/// The part of a lease that must be left, as last confirmed, for a job leased ahead to start.
const START_WITH_LEASE_LEFT: u32 = 4;

/// True when job `id`, about to start from the buffer, must not: its lease was found lost, or has
/// less than a quarter of its length left as this worker last confirmed it. A worker renews every
/// third of a lease, so that happens only when its renewals failed or stood still (the datastore
/// out of reach, paused, restarting): the lease may have lapsed on the server's clock, and a sweep
/// given the job (and its group's slot) to another worker. Such a job is given back instead
/// (`release.lua`, which does nothing to a lease no longer this worker's).
pub(super) fn lapsed(s: &Shared, id: JobId) -> bool {
    let flights = s.flights.lock().expect("flights");
    flights.get(&id).is_some_and(|f| {
        f.lost.load(Ordering::Relaxed) || f.until < Instant::now() + f.span / START_WITH_LEASE_LEFT
    })
}

pub(super) fn job_lease_ms(s: &Shared, job: &Job) -> u64 {
    let own = job.job_options().lease_ms;
    if own > 0 {
        own
    } else {
        s.opts.lease.as_millis() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_prefetch_holds_bounded_work() {
        let floor_work = |job_us: u64| AHEAD_FLOOR as u64 * job_us;
        let hold = AHEAD_HOLD.as_micros() as u64;
        for c in [1, 2, 7, 8, 10, 31, 32, 100, 128, 200] {
            for job_us in [0, 1, 20, 500, 780, 1_000, 2_000, 3_125, 10_000, 50_000] {
                let ahead = default_ahead(c, job_us);
                // Never fewer than twice the concurrency (within 256) or the floor.
                assert!(
                    ahead >= (2 * c).clamp(AHEAD_FLOOR, 256),
                    "c {c}, {job_us} µs"
                );
                assert!(
                    ahead <= (2 * c).clamp(AHEAD_SHORT, 256),
                    "c {c}, {job_us} µs"
                );
                // Beyond twice the concurrency, the buffer holds no more work than the floor's
                // jobs or AHEAD_HOLD, whichever is more.
                if ahead > 2 * c {
                    assert!(
                        ahead as u64 * job_us <= floor_work(job_us).max(hold),
                        "c {c}, {job_us} µs: {ahead} ahead"
                    );
                }
                // Shorter jobs never get a smaller buffer.
                assert!(default_ahead(c, job_us / 2) >= ahead, "c {c}, {job_us} µs");
            }
        }
        // Short jobs at concurrency 1 get the larger buffer; jobs of 3 ms or more the floor.
        assert!(default_ahead(1, 20) > AHEAD_FLOOR);
        assert_eq!(default_ahead(1, 3_125), AHEAD_FLOOR);
        assert_eq!(default_ahead(1, 50_000), AHEAD_FLOOR);
    }
}
