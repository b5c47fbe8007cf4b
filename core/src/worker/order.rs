//! Claim order: a worker starts the jobs it leased in the order its claims leased them.
//!
//! A worker claims from several places (the fetch loop, the completer's refill in `complete.lua`,
//! a marker that names a job), and each claim's jobs reach the buffer only after their records are
//! read: a later claim's reply can arrive first. Each claim takes a [`Ticket`] just before it is
//! sent; its jobs are registered at once (their leases renewed, released by `close`) but go to the
//! buffer only after every earlier ticket's jobs did. A ticket dropped without jobs (a failed
//! claim, an empty one, a task aborted) lets the later ones through, so no claim can hold the others.
//! With `concurrency: 1`, a queue's jobs then start in the order the queue hands them out.
//!
//! A ticket taken for a call that may lease (it reserved room) counts as jobs on their way to the
//! member's buffer until it is let through ([`Pool::coming`](super::pool::Pool)): a pool with
//! weights waits for them rather than start a queue that is ahead of its share.

use super::*;
use std::collections::BTreeMap;

/// Tickets handed out and the jobs of those that came back ahead of an earlier one.
#[derive(Default)]
pub(super) struct ClaimOrder {
    /// The ticket the next one handed out gets.
    issued: u64,
    /// The oldest ticket whose jobs have not reached the buffer.
    next: u64,
    /// Jobs of later tickets, waiting for `next` (and whether each ticket's call could lease).
    early: BTreeMap<u64, (Vec<(Job, String)>, bool)>,
}

/// A claim's place in its worker's order; see the module doc.
pub(super) struct Ticket {
    s: Arc<Shared>,
    n: u64,
    done: bool,
    leases: bool,
    /// When it was taken: its call's leases hold from no earlier.
    sent: Instant,
}

impl Ticket {
    /// Takes the next ticket: call it right before sending the claim; `leases` when the call
    /// reserved room (it may lease jobs).
    pub(super) fn take(s: &Arc<Shared>, leases: bool) -> Ticket {
        let mut o = s.order.lock().expect("claim order");
        let n = o.issued;
        o.issued += 1;
        if leases {
            s.pool.coming(s.member, true);
        }
        Ticket {
            s: s.clone(),
            n,
            done: false,
            leases,
            sent: Instant::now(),
        }
    }

    /// Registers the claim's jobs (the first `reported` were leased as started) and hands them to
    /// the buffer in their turn.
    pub(super) fn deliver(mut self, jobs: Vec<(Job, String)>, reported: usize) {
        register(&self.s, &jobs, reported, self.sent);
        self.done = true;
        arrive(&self.s, self.n, jobs, self.leases);
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        // A claim that leased nothing (or was dropped midway) lets the later ones through; off a
        // runtime (the process is ending) nothing can start: the leases expire.
        if !self.done && tokio::runtime::Handle::try_current().is_ok() {
            arrive(&self.s, self.n, Vec::new(), self.leases);
        }
    }
}

/// Ticket `n`'s jobs arrive: they and every later ticket's already here go to the buffer while
/// they are next in line, all of them before any slot starts one (the buffer puts them in the
/// server's lease order, `Pool::push`).
fn arrive(s: &Arc<Shared>, n: u64, jobs: Vec<(Job, String)>, leases: bool) {
    let mut o = s.order.lock().expect("claim order");
    o.early.insert(n, (jobs, leases));
    let mut due: Vec<(Job, String)> = Vec::new();
    let mut none_coming = false;
    loop {
        let next = o.next;
        let Some((jobs, leases)) = o.early.remove(&next) else {
            break;
        };
        o.next += 1;
        if leases {
            s.pool.coming(s.member, false);
        }
        // What another queue's jobs waited for is not coming: let them start.
        none_coming |= jobs.is_empty() && leases && s.pool.waits_for_coming();
        due.extend(jobs);
    }
    if !due.is_empty() {
        enqueue(s, due);
    } else if none_coming {
        fill(s);
    }
}
