//! The slots a worker's queues share: one pool of `concurrency` running jobs and `prefetch` leased
//! ahead, a buffer per queue, and the order between the queues ([`QueueOrder`]).
//!
//! A worker on one queue is a pool of one member. A worker on several queues (`Worker::builder_many`)
//! runs one member per queue (each with its own claims, completions, renewals and sweep, all in
//! that queue's slot), and the pool decides two things across them:
//! - **what starts**: a free slot takes the next buffered job of the first queue that has one
//!   ([`QueueOrder::Strict`]), or of the queue whose share of starts is furthest behind its weight
//!   (stride scheduling over starts, [`QueueOrder::Weighted`]). With the weights a user gave, a
//!   queue whose buffer ran dry while jobs are on their way to it (a call that may lease them is
//!   in flight, see `order.rs`) keeps its turn: a slot then waits for them rather than start a
//!   queue that is ahead of its share, so the shares hold while both queues have work (a slot
//!   waits at most for that call: one that finds less than it asked, fails, or goes unanswered for
//!   `LEASING_CALL_HOLDS` lets the others start). A partitioned queue's members (equal weights)
//!   never wait so: any partition's job may start;
//! - **who may lease**: under `Strict`, a queue leases only while every queue before it found
//!   nothing to lease at its last claim, and a later queue never leases ahead (no more than the
//!   free slots), so a job of `b` never waits in the buffer ahead of `a`'s; under `Weighted`, a
//!   queue holds at most its weight's share of the pool while the others have work.
//!
//! A member's "nothing more" flag is set when a claim leases fewer jobs than it asked for, and
//! cleared when its queue's marker wakes it or a claim fills: the gate is as fresh as the last
//! claim, so a later queue's job can start in the few milliseconds before a wake-up arrives.

use super::*;
use std::collections::VecDeque;
use std::sync::{OnceLock, Weak};

/// A stride unit: a queue of weight w advances by `PASS / w` per start.
const PASS: u64 = 1_000_000;

/// What the pool knows of its members: their order, counters and buffers.
pub(super) struct Pool {
    pub(super) concurrency: usize,
    /// None: strict; else each member's stride.
    strides: Option<Vec<u64>>,
    weights: Vec<u64>,
    /// Weighted by the user: a slot waits for a queue's jobs on their way (see the module doc).
    exact: bool,
    /// Per member: calls that may lease jobs whose jobs have not reached the buffer yet.
    coming: Vec<AtomicUsize>,
    /// Leased jobs not finished yet, plus claims in flight (their reservations), all members.
    pub(super) held: AtomicUsize,
    held_by: Vec<AtomicUsize>,
    /// Slots running a job (mirrors `ready.slots` for lock-free reads).
    pub(super) running: AtomicUsize,
    /// Per member: its last claim leased fewer jobs than it asked for.
    drained: Vec<AtomicBool>,
    /// Weighted: per member, its last try to lease found no room it was allowed (it waits for a
    /// wake-up to try again), and the stride passes of leases (see [`Pool::allowed`]).
    wants: Vec<AtomicBool>,
    leases: Mutex<Passes>,
    pub(super) ready: Mutex<Ready>,
    members: OnceLock<Vec<Weak<Shared>>>,
}

/// Each member's pass over leases, and the pass of the last lease.
struct Passes {
    pass: Vec<u64>,
    vt: u64,
}

/// Jobs leased and read but not started yet (one buffer per member), and the slots running now;
/// one lock, so a job pushed here is always either taken by a running slot or given a new one.
pub(super) struct Ready {
    jobs: Vec<VecDeque<(Job, String)>>,
    pub(super) slots: usize,
    /// Weighted: each member's pass, and the pass of the last start.
    pass: Vec<u64>,
    vt: u64,
}

impl Pool {
    /// A pool for `names` (one member each, in this order), validated against `order`.
    pub(super) fn new(concurrency: usize, names: &[String], order: &QueueOrder) -> Result<Pool> {
        let n = names.len();
        let (strides, weights) = match order {
            QueueOrder::Strict => (None, vec![1; n]),
            QueueOrder::Weighted(w) => {
                for (name, weight) in w {
                    if !names.iter().any(|q| q == name) {
                        return Err(crate::Error::new(
                            ErrorCode::InvalidOption,
                            format!("weights names {name:?}, which is not one of the worker's queues ({})", names.join(", ")),
                        ));
                    }
                    if !(1..=MAX_QUEUE_WEIGHT).contains(weight) {
                        return Err(crate::Error::new(
                            ErrorCode::InvalidOption,
                            format!("the weight of queue {name:?} must be between 1 and {MAX_QUEUE_WEIGHT}, got {weight}"),
                        ));
                    }
                }
                let weights: Vec<u64> = names
                    .iter()
                    .map(|q| u64::from(*w.get(q).unwrap_or(&1)))
                    .collect();
                (Some(weights.iter().map(|w| PASS / w).collect()), weights)
            }
        };
        let mut pool = Pool::with_order(concurrency, strides, weights);
        pool.exact = pool.strides.is_some() && n > 1;
        Ok(pool)
    }

    /// A weighted pool with these (checked) weights, one per member.
    pub(super) fn weighted(concurrency: usize, weights: Vec<u64>) -> Pool {
        let strides = weights.iter().map(|w| (PASS / w.max(&1)).max(1)).collect();
        Pool::with_order(concurrency, Some(strides), weights)
    }

    /// The members' weights (1 each under strict order).
    pub(super) fn weights(&self) -> &[u64] {
        &self.weights
    }

    fn with_order(concurrency: usize, strides: Option<Vec<u64>>, weights: Vec<u64>) -> Pool {
        let n = weights.len();
        Pool {
            concurrency,
            strides,
            weights,
            exact: false,
            coming: (0..n).map(|_| AtomicUsize::new(0)).collect(),
            held: AtomicUsize::new(0),
            held_by: (0..n).map(|_| AtomicUsize::new(0)).collect(),
            running: AtomicUsize::new(0),
            drained: (0..n).map(|_| AtomicBool::new(false)).collect(),
            wants: (0..n).map(|_| AtomicBool::new(false)).collect(),
            leases: Mutex::new(Passes {
                pass: vec![0; n],
                vt: 0,
            }),
            ready: Mutex::new(Ready {
                jobs: (0..n).map(|_| VecDeque::new()).collect(),
                slots: 0,
                pass: vec![0; n],
                vt: 0,
            }),
            members: OnceLock::new(),
        }
    }

    pub(super) fn set_members(&self, members: &[Arc<Shared>]) {
        let _ = self
            .members
            .set(members.iter().map(Arc::downgrade).collect());
    }

    pub(super) fn size(&self) -> usize {
        self.held_by.len()
    }

    fn member(&self, i: usize) -> Option<Arc<Shared>> {
        self.members.get()?.get(i)?.upgrade()
    }

    /// Wakes every member's fetch loop (room was freed, or a member found its queue empty).
    pub(super) fn wake_all(&self) {
        if let Some(ms) = self.members.get() {
            for m in ms.iter().filter_map(Weak::upgrade) {
                m.wake.notify_one();
            }
        }
    }

    /// Tells every member's `close` that a slot ended.
    pub(super) fn idle_all(&self) {
        if let Some(ms) = self.members.get() {
            for m in ms.iter().filter_map(Weak::upgrade) {
                m.idle.notify_waiters();
            }
        }
    }

    /// Member `m`'s last claim leased `got` of the `asked` jobs.
    pub(super) fn claimed(&self, m: usize, asked: usize, got: usize) {
        if self.size() == 1 || asked == 0 {
            return;
        }
        self.wants[m].store(false, Ordering::SeqCst);
        let drained = got < asked;
        if self.drained[m].swap(drained, Ordering::SeqCst) != drained && drained {
            self.wake_all();
        }
    }

    /// A call of member `m` that may lease jobs was sent (`up`), or its jobs (if any) reached the
    /// buffer.
    pub(super) fn coming(&self, m: usize, up: bool) {
        if up {
            self.coming[m].fetch_add(1, Ordering::SeqCst);
        } else {
            self.coming[m].fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// True when a slot may wait for a queue's coming jobs (so a call that brings none must let
    /// the others' buffered jobs start).
    pub(super) fn waits_for_coming(&self) -> bool {
        self.exact
    }

    /// A call of member `m` that could lease failed: under weights its queue counts as having
    /// found nothing until a claim fills (the others do not yield room to a queue that cannot
    /// take it: its master may be down). Strict order holds the later queues meanwhile.
    pub(super) fn claim_failed(&self, m: usize) {
        if self.size() > 1
            && self.strides.is_some()
            && !self.drained[m].swap(true, Ordering::SeqCst)
        {
            self.wake_all();
        }
    }

    /// Member `m`'s queue has new work (its marker woke it).
    pub(super) fn woken(&self, m: usize) {
        if self.size() > 1 {
            self.drained[m].store(false, Ordering::SeqCst);
        }
    }

    /// How many of `n` leases member `m` may take now, with `cap` the pool's capacity.
    pub(super) fn allowed(&self, m: usize, n: usize, cap: usize) -> usize {
        if self.size() == 1 {
            return n;
        }
        match &self.strides {
            None => {
                if (0..m).any(|j| !self.drained[j].load(Ordering::SeqCst)) {
                    return 0;
                }
                if m == 0 {
                    n
                } else {
                    // A later queue leases only what starts at once.
                    n.min(
                        self.concurrency
                            .saturating_sub(self.held.load(Ordering::SeqCst)),
                    )
                }
            }
            Some(_) => {
                let n = n.min(
                    self.share(m, cap)
                        .saturating_sub(self.held_by[m].load(Ordering::SeqCst)),
                );
                // Room that frees goes first to the member furthest behind its weight in leases
                // among those waiting for room: else the member whose completion freed it, which
                // refills in the same call, would take it every time and the others, woken a
                // round trip later, would find none (seen with six partitions: two ran at a time).
                // With the user's weights, to any member behind with work and room in its share,
                // waiting yet or not (its loop, woken with this one, may not have tried yet).
                let yields = if self.exact {
                    self.behind_with_room(m, cap)
                } else {
                    self.behind_waiting(m)
                };
                if n > 0 && yields {
                    self.wants[m].store(true, Ordering::SeqCst);
                    return 0;
                }
                n
            }
        }
    }

    /// The most jobs member `m` may hold (weighted order), with `cap` the pool's capacity.
    fn share(&self, m: usize, cap: usize) -> usize {
        let weight: u64 = (0..self.size())
            .filter(|&j| j == m || !self.drained[j].load(Ordering::SeqCst))
            .map(|j| self.weights[j])
            .sum::<u64>()
            .max(1);
        let share = cap as u64 * self.weights[m];
        (if self.exact {
            // Rounded up: the shares add up to a little more than the pool, so that the leases
            // can follow the weights (the passes decide who takes room that frees) even when the
            // pool is small (no prefetch: long jobs) and every slot can run (5:1 over ten slots
            // is 8 and 2 at times, 9 and 1 at others).
            share.div_ceil(weight)
        } else {
            // Rounded down (at least one each), so the shares of the queues with work never add
            // up to more than the pool: a heavy queue cannot hold every slot and leave a light
            // one none to lease into.
            (share / weight).max(1)
        }) as usize
    }

    /// True when another member with work (its last claim filled), not stopping and below its
    /// share, is behind `m` in leases (the user's weights).
    fn behind_with_room(&self, m: usize, cap: usize) -> bool {
        let leases = self.leases.lock().expect("leases");
        let mine = self.lease_from(&leases, m);
        (0..self.size()).any(|j| {
            j != m
                && !self.drained[j].load(Ordering::SeqCst)
                && leases.pass[j] < mine
                && self.held_by[j].load(Ordering::SeqCst) < self.share(j, cap)
                && self
                    .member(j)
                    .map_or(true, |s| !s.stopping.load(Ordering::SeqCst))
        })
    }

    /// True when another member that waits for room, holding no job at all, is behind `m` in
    /// leases (weighted order).
    fn behind_waiting(&self, m: usize) -> bool {
        let leases = self.leases.lock().expect("leases");
        let mine = self.lease_from(&leases, m);
        (0..self.size()).any(|j| {
            j != m
                && self.wants[j].load(Ordering::SeqCst)
                && !self.drained[j].load(Ordering::SeqCst)
                && self.held_by[j].load(Ordering::SeqCst) == 0
                && leases.pass[j] < mine
        })
    }

    /// Member `m` found no room it may lease into: it waits for a wake-up (room freed).
    pub(super) fn wanted(&self, m: usize) {
        if self.size() > 1 && self.strides.is_some() {
            self.wants[m].store(true, Ordering::SeqCst);
        }
    }

    /// Where member `m`'s next lease starts its pass: its own, or for a member back from idle
    /// (its last claim found nothing) no earlier than the virtual time.
    fn lease_from(&self, leases: &Passes, m: usize) -> u64 {
        if self.drained[m].load(Ordering::SeqCst) {
            leases.pass[m].max(leases.vt)
        } else {
            leases.pass[m]
        }
    }

    /// Member `m` waits on its queue (for work, not room).
    pub(super) fn blocks(&self, m: usize) {
        self.wants[m].store(false, Ordering::SeqCst);
    }

    pub(super) fn took(&self, m: usize, n: usize) {
        self.held_by[m].fetch_add(n, Ordering::SeqCst);
        if let (Some(strides), true) = (&self.strides, self.size() > 1) {
            self.wants[m].store(false, Ordering::SeqCst);
            let mut leases = self.leases.lock().expect("leases");
            let from = self.lease_from(&leases, m);
            leases.pass[m] = from + strides[m] * n as u64;
            // The virtual time: the lowest pass of the members with work (a member back from
            // idle starts there, with no credit saved while it had nothing to lease).
            if let Some(low) = (0..self.size())
                .filter(|&j| !self.drained[j].load(Ordering::SeqCst))
                .map(|j| leases.pass[j])
                .min()
            {
                leases.vt = leases.vt.max(low);
            }
        }
    }

    pub(super) fn gave_back(&self, m: usize, n: usize) {
        self.held_by[m].fetch_sub(n, Ordering::SeqCst);
    }

    /// Buffers member `m`'s jobs in the order the server leased them (by their lease tokens,
    /// see [`lease_order`]): claims come back in the order they were sent (`order.rs`), but two
    /// sent at once by two tasks may reach the server the other way round, and then the later
    /// claim holds the earlier jobs. A job is put before the buffered ones leased after it.
    pub(super) fn push(ready: &mut Ready, m: usize, jobs: Vec<(Job, String)>) {
        let buf = &mut ready.jobs[m];
        for job in jobs {
            let key = lease_order(&job.1);
            let at = match (key, buf.back().and_then(|b| lease_order(&b.1))) {
                // Leased after the last one (the usual case), or not comparable: at the back.
                (None, _) | (_, None) => buf.len(),
                (Some(k), Some(last)) if k >= last => buf.len(),
                (Some(k), _) => buf
                    .iter()
                    .position(|b| lease_order(&b.1).is_some_and(|o| o > k))
                    .unwrap_or(buf.len()),
            };
            buf.insert(at, job);
        }
    }

    /// Jobs waiting in member `m`'s buffer.
    pub(super) fn buffered(ready: &Ready, m: usize) -> usize {
        ready.jobs[m].len()
    }

    /// The next job to start, of a member that is not stopping: see the module doc.
    pub(super) fn pop(&self, ready: &mut Ready) -> Option<(Arc<Shared>, Job, String)> {
        let open = |j: usize| -> Option<Arc<Shared>> {
            if ready.jobs[j].is_empty() {
                return None;
            }
            self.member(j)
                .filter(|s| !s.stopping.load(Ordering::SeqCst))
        };
        let (m, s) = match &self.strides {
            None => (0..self.size()).find_map(|j| open(j).map(|s| (j, s)))?,
            Some(strides) => {
                let mut best: Option<(u64, usize, Arc<Shared>)> = None;
                for j in 0..self.size() {
                    if let Some(s) = open(j) {
                        // A queue that found nothing at its last claim earns no credit while
                        // idle; one whose buffer only ran dry between claims keeps its place.
                        let p = if self.drained[j].load(Ordering::SeqCst) {
                            ready.pass[j].max(ready.vt)
                        } else {
                            ready.pass[j]
                        };
                        if best.as_ref().map_or(true, |(bp, _, _)| p < *bp) {
                            best = Some((p, j, s));
                        }
                    }
                }
                let (p, j, s) = best?;
                if self.exact && self.waits_for(ready, p) {
                    return None;
                }
                ready.vt = ready.vt.max(p);
                ready.pass[j] = p + strides[j];
                (j, s)
            }
        };
        let (job, token) = ready.jobs[m].pop_front()?;
        Some((s, job, token))
    }

    /// True when a member whose buffer is empty, with jobs on their way and work left at its last
    /// claim, is behind `pass` (the best pass among the buffered): its turn comes first.
    fn waits_for(&self, ready: &Ready, pass: u64) -> bool {
        (0..self.size()).any(|j| {
            ready.jobs[j].is_empty()
                && ready.pass[j] < pass
                && self.coming[j].load(Ordering::SeqCst) > 0
                && !self.drained[j].load(Ordering::SeqCst)
                && self
                    .member(j)
                    .is_some_and(|s| !s.stopping.load(Ordering::SeqCst))
        })
    }
}

/// Where a lease token (`<server µs>.<place in its claim>`) falls in the server's order of leases.
fn lease_order(token: &str) -> Option<(u64, u32)> {
    let (us, place) = token.split_once('.')?;
    Some((us.parse().ok()?, place.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn the_buffer_keeps_the_servers_lease_order() {
        let job = |n: u64| {
            let mut j = Job::from_record(
                JobId::from_parts(1_700_000_000_000, 1, n as u16),
                None,
                HashMap::new(),
            );
            j.name = format!("j{n}");
            j
        };
        let p = five_to_one();
        let mut ready = p.ready.lock().unwrap();
        // A claim leased at µs 200 comes back first, then one leased at µs 100 (sent later by
        // another task but run first by the server), then one at 300.
        Pool::push(
            &mut ready,
            0,
            vec![(job(3), "200.1".into()), (job(4), "200.2".into())],
        );
        Pool::push(
            &mut ready,
            0,
            vec![(job(1), "100.1".into()), (job(2), "100.2".into())],
        );
        Pool::push(&mut ready, 0, vec![(job(5), "300.1".into())]);
        let names: Vec<String> = ready.jobs[0].iter().map(|(j, _)| j.name.clone()).collect();
        assert_eq!(names, ["j1", "j2", "j3", "j4", "j5"]);
    }

    fn five_to_one() -> Pool {
        let names = ["a".to_string(), "b".to_string()];
        let order = QueueOrder::Weighted(BTreeMap::from([("a".into(), 5), ("b".into(), 1)]));
        Pool::new(10, &names, &order).unwrap()
    }

    /// Member `m` leases `n` (what `reserve` does once `allowed` let it).
    fn lease(p: &Pool, m: usize, n: usize) {
        p.held.fetch_add(n, Ordering::SeqCst);
        p.took(m, n);
    }

    #[test]
    fn room_goes_to_the_queue_behind_its_weight_until_its_claims_fail() {
        let p = five_to_one();
        lease(&p, 0, 2); // a's pass: 2 × 1/5
        lease(&p, 1, 1); // b's pass: 1
        assert_eq!(p.allowed(1, 1, 10), 0, "b is ahead of a: it yields");
        assert_eq!(p.allowed(0, 1, 10), 1, "a is behind: it takes the room");
        // a's claims fail (its master may be down): b must not wait for it.
        p.claim_failed(0);
        assert_eq!(p.allowed(1, 1, 10), 1, "a failed: b leases");
        // a claims again and its claim fills: it has work again.
        p.claimed(0, 1, 1);
        assert_eq!(
            p.allowed(1, 1, 10),
            0,
            "a is back and behind: b yields again"
        );
    }

    #[test]
    fn shares_round_up_under_the_users_weights_so_every_slot_can_run() {
        let p = five_to_one();
        assert_eq!((p.share(0, 10), p.share(1, 10)), (9, 2));
        // A queue whose last claim found nothing leaves its share to the other.
        p.claimed(1, 2, 0);
        assert_eq!(p.share(0, 10), 10);
    }

    #[test]
    fn partitions_share_by_rounding_down_and_yield_only_to_an_idle_waiter() {
        let p = Pool::weighted(10, vec![1, 1, 1]);
        assert_eq!(p.share(0, 10), 3);
        lease(&p, 0, 3);
        lease(&p, 1, 1);
        p.wanted(0);
        // 0 is ahead of 1 in passes and holds jobs: 1 does not yield to it, nor to 2 (not waiting).
        assert_eq!(p.allowed(1, 1, 10), 1);
    }

    #[test]
    fn a_failed_claim_leaves_strict_order_as_it_was() {
        let names = ["a".to_string(), "b".to_string()];
        let p = Pool::new(10, &names, &QueueOrder::Strict).unwrap();
        p.claim_failed(0);
        assert_eq!(
            p.allowed(1, 1, 10),
            0,
            "b waits while a is not known to be empty"
        );
    }
}
