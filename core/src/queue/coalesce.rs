//! The coalescer of one queue handle's one-job adds (a "group commit", no timer): an add that
//! finds no add of the handle in flight is sent at once, alone (`add_one.lua` for a plain job, as
//! before); adds that arrive while one is in flight wait in the handle's line and go together, up
//! to [`ADD_BATCH`] per call of `add.lua`, as the next call when the one in flight returns, so a
//! busy web server's adds cost the datastore about what a bulk add does while a lone add waits for
//! nothing. The handle and its clones share one coalescer (`Queue::queue` opens another).
//!
//! Each caller keeps its own outcome. Its id was minted (or given) before it joined the line, its
//! options and payload were checked by then (a bad one fails alone, before anything is sent), and
//! the reply of the shared call is split by job: added, or the holder of its id or dedup key (the
//! caller then debounces, as a lone add does), or past its group's cap (`add.lua`'s refusal "j":
//! that job alone fails with `group_full`, the others are added; a lone add's call is refused whole,
//! as ever). An error of the call itself (the datastore unavailable past the retry window, a
//! durable add too few replicas acknowledged, a script error) fails every caller of that call with
//! the same code, its message naming each caller's own job (to add again with that id). The
//! retry of a shared call resends the same ids, so it cannot duplicate a job (`add.lua` changes
//! nothing for an id whose record exists). Durable adds coalesce too: the call's `WAIT` answers for
//! all of its jobs. Flows and `add_bulk` do not go through here.
//!
//! The call after the first is sent by a spawned task (the drain), which takes the line a batch at
//! a time until it is empty, so no caller waits for calls other than the one carrying its job and
//! the one in flight when it arrived; a caller that stops waiting (its future dropped) leaves its
//! job in the line, sent like the others.

use super::add::{unavailable_add, Refusal, ADD_BATCH};
use super::*;
use crate::error::{Error, ErrorCode, Result};
use crate::job_id::JobId;
use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Instant;
use tokio::sync::oneshot;

/// One add waiting in the line: its job, the payload's text, until when it resends while the
/// datastore is unavailable, and where its outcome goes (`None`: added; `Some`: the holder).
struct Waiting {
    id: JobId,
    job: NewJob,
    data: String,
    deadline: Instant,
    reply: oneshot::Sender<Result<Option<JobId>>>,
}

/// A queue handle's line of one-job adds and whether a call of them is in flight.
#[derive(Default)]
pub(crate) struct Coalescer {
    state: Mutex<Line>,
}

#[derive(Default)]
struct Line {
    in_flight: bool,
    waiting: VecDeque<Waiting>,
}

impl Coalescer {
    fn lock(&self) -> std::sync::MutexGuard<'_, Line> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Held while an add call of the handle is in flight; when it ends (the call returned, or its
/// caller stopped waiting), the waiting adds go as the next call (the drain), or the handle is idle.
struct InFlight<'a> {
    queue: &'a Queue,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.queue.hand_on();
    }
}

/// Held by the drain: should it end before the line is empty (its runtime shutting down), the
/// waiting adds are failed (their senders dropped) and the handle is idle again.
struct Draining {
    queue: Queue,
    done: bool,
}

impl Drop for Draining {
    fn drop(&mut self) {
        if !self.done {
            let mut line = self.queue.coalescer.lock();
            line.waiting.clear();
            line.in_flight = false;
        }
    }
}

impl Queue {
    /// Adds one job, coalesced with the handle's other one-job adds (see the module doc); returns
    /// `None` when it was added, or the id of the job that holds its id or dedup key.
    pub(super) async fn add_coalesced(
        &self,
        id: JobId,
        job: NewJob,
        data: String,
    ) -> Result<Option<JobId>> {
        let deadline = self.retry_deadline();
        let (job, data) = match self.join_line(id, job, data, deadline) {
            Ok(rx) => {
                return rx.await.unwrap_or_else(|_| {
                    Err(Error::new(
                        ErrorCode::Internal,
                        "the coalesced add call was dropped (its runtime shut down)",
                    ))
                })
            }
            Err(alone) => alone,
        };
        // Nothing in flight: this add goes alone, now.
        let _in_flight = InFlight { queue: self };
        let batch = [(id, &job, data)];
        // Boxed: the call's state (its retries) is most of an add's; an add future moved into a
        // task or a set of futures would otherwise copy it each time (issue 29's profile).
        let refused = Box::pin(self.add_call_refusing(&batch, deadline, Refusal::Call, None))
            .await
            .map_err(|e| unavailable_named(e, &batch))?;
        match refused.get(1) {
            Some(holder) => Ok(Some(JobId::parse(holder)?)),
            None => Ok(None),
        }
    }

    /// Puts the add in the line when a call is in flight (its outcome comes on the receiver);
    /// otherwise marks one in flight and gives the job back, to go alone. (A plain function: the
    /// lock is never held across an await, so the add's future stays `Send`.)
    #[allow(clippy::result_large_err)]
    fn join_line(
        &self,
        id: JobId,
        job: NewJob,
        data: String,
        deadline: Instant,
    ) -> std::result::Result<oneshot::Receiver<Result<Option<JobId>>>, (NewJob, String)> {
        let mut line = self.coalescer.lock();
        if !line.in_flight {
            line.in_flight = true;
            return Err((job, data));
        }
        let (reply, rx) = oneshot::channel();
        line.waiting.push_back(Waiting {
            id,
            job,
            data,
            deadline,
            reply,
        });
        Ok(rx)
    }

    /// The call in flight ended: the waiting adds go as the next call, from a spawned task, or
    /// the handle is idle.
    fn hand_on(&self) {
        let mut line = self.coalescer.lock();
        if line.waiting.is_empty() {
            line.in_flight = false;
            return;
        }
        drop(line);
        let drain = Draining {
            queue: self.clone(),
            done: false,
        };
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn(drain.run());
            }
            // No runtime to send from (the caller's went away): the waiting adds fail (Draining's
            // drop), as their runtime is gone too.
            Err(_) => drop(drain),
        }
    }
}

impl Draining {
    /// Sends the line, a batch at a time, until it is empty.
    async fn run(mut self) {
        loop {
            let batch: Vec<Waiting> = {
                let mut line = self.queue.coalescer.lock();
                if line.waiting.is_empty() {
                    line.in_flight = false;
                    self.done = true;
                    return;
                }
                let n = line.waiting.len().min(ADD_BATCH);
                line.waiting.drain(..n).collect()
            };
            self.queue.send_batch(batch).await;
        }
    }
}

impl Queue {
    /// One call of `add.lua` for the waiting adds of `batch` (refusal per job), each caller told
    /// its own outcome.
    async fn send_batch(&self, batch: Vec<Waiting>) {
        let deadline = batch.iter().map(|w| w.deadline).min();
        let deadline = deadline.unwrap_or_else(|| self.retry_deadline());
        let mut replies = Vec::with_capacity(batch.len());
        let mut owned = Vec::with_capacity(batch.len());
        for w in batch {
            replies.push(w.reply);
            owned.push((w.id, w.job, w.data));
        }
        let jobs: Vec<(JobId, &NewJob, String)> = owned
            .iter_mut()
            .map(|(id, job, data)| (*id, &*job, std::mem::take(data)))
            .collect();
        let mut outcomes: Vec<Result<Option<JobId>>> = (0..jobs.len()).map(|_| Ok(None)).collect();
        match self
            .add_call_refusing(&jobs, deadline, Refusal::Job, None)
            .await
        {
            Ok(refused) => {
                for pair in refused.chunks(2) {
                    if let [index, holder] = pair {
                        let Some(j) = index.parse::<usize>().ok().filter(|j| *j < jobs.len())
                        else {
                            continue;
                        };
                        outcomes[j] = refusal(holder, jobs[j].1);
                    }
                }
            }
            Err(e) => {
                let n = jobs.len();
                for (j, outcome) in outcomes.iter_mut().enumerate() {
                    *outcome = Err(match e.code() {
                        ErrorCode::ServerUnavailable => unavailable_add(e.clone(), &jobs[j..j + 1]),
                        // (the call's message names its first jobs; each caller learns its own)
                        code if n > 1 => Error::new(
                            code,
                            format!(
                                "{} (one call of {n} coalesced adds; this add's job: {})",
                                e.message(),
                                jobs[j].0
                            ),
                        ),
                        _ => e.clone(),
                    });
                }
            }
        }
        for (reply, outcome) in replies.into_iter().zip(outcomes) {
            // (a caller that stopped waiting: its job was sent all the same)
            let _ = reply.send(outcome);
        }
    }
}

/// One job's entry in `add.lua`'s reply: the holder of its id or dedup key, or its refusal past
/// its group's cap (`!group_full|<waiting>|<cap>`).
fn refusal(holder: &str, job: &NewJob) -> Result<Option<JobId>> {
    let Some(full) = holder.strip_prefix("!group_full|") else {
        return Ok(Some(JobId::parse(holder)?));
    };
    let (waiting, cap) = full.split_once('|').unwrap_or((full, "?"));
    Err(Error::new(
        ErrorCode::GroupFull,
        format!(
            "group {} has {waiting} jobs waiting and takes at most {cap}; adding this job would \
             pass it (it was not added)",
            job.options.group.as_deref().unwrap_or("")
        ),
    ))
}

/// A call's error for the callers of `jobs`: one still unavailable at its deadline names their ids.
fn unavailable_named(e: Error, jobs: &[(JobId, &NewJob, String)]) -> Error {
    match e.code() {
        ErrorCode::ServerUnavailable => unavailable_add(e, jobs),
        _ => e,
    }
}
