//! The waits behind [`Queue::wait`](crate::Queue::wait) (`queue/wait.rs`): a producer waits for a job's result.
//!
//! Every wait of one queue handle (and its clones) shares one follower: a task that reads the
//! queue's events stream (XREAD BLOCK on one dedicated connection, see [`EventStream`]) and hands
//! each job's `completed`, `failed` and `removed` events to the waits registered for that job.
//! So a thousand concurrent waits cost one connection and one stream read, not a thousand, and a
//! wait after the first costs no connection set-up. The follower starts with the first wait and
//! ends after [`IDLE`] with none.
//!
//! **No lost wake-up.** A wait registers first, then reads the job's record; the follower's
//! stream position is pinned before the first registration is served. An outcome written before
//! the record read is in the record; one written after it is an event the follower reads after
//! the registration, so it is delivered. Each wait also re-reads the record every second (the
//! stream is capped, and a follower can lose its connection), so a wait never depends on one
//! event alone.

use crate::error::Result;
use crate::events::{Event, EventStream};
use crate::job_id::JobId;
use crate::keyspace::{Key, QueueName};
use crate::store::Store;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

/// How long the follower keeps reading with no wait registered before it ends.
pub const IDLE: Duration = Duration::from_secs(1);

/// Most events one follower read takes.
const BATCH: usize = 1_000;

/// The waits of one queue handle, by job.
#[derive(Default)]
pub(crate) struct Waiters {
    state: Mutex<State>,
    /// Held while a follower is being started, so two waits do not start two.
    starting: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct State {
    by_job: HashMap<JobId, Vec<mpsc::UnboundedSender<Event>>>,
    following: bool,
}

impl Waiters {
    /// Registers a wait for `id` and makes sure a follower is reading (its position pinned
    /// before this returns).
    pub(crate) async fn register(
        self: &Arc<Self>,
        store: &Store,
        events: &Key,
        queue: &QueueName,
        id: JobId,
    ) -> Result<mpsc::UnboundedReceiver<Event>> {
        let (tx, rx) = mpsc::unbounded_channel();
        {
            let mut st = self.state.lock().expect("waiters");
            st.by_job.entry(id).or_default().push(tx);
            if st.following {
                return Ok(rx);
            }
        }
        let _starting = self.starting.lock().await;
        if self.state.lock().expect("waiters").following {
            return Ok(rx);
        }
        let stream = EventStream::new(store.clone(), events.clone(), None).await?;
        self.state.lock().expect("waiters").following = true;
        tokio::spawn(follow(self.clone(), stream, queue.to_string()));
        Ok(rx)
    }

    /// Hands the events to their waits; drops the waits that ended. True when none is left.
    fn dispatch(&self, events: Vec<Event>) -> bool {
        let mut st = self.state.lock().expect("waiters");
        for ev in events {
            let Some(id) = ev.job_id else { continue };
            if !matches!(ev.kind.as_str(), "completed" | "failed" | "removed") {
                continue;
            }
            if let Some(txs) = st.by_job.get_mut(&id) {
                txs.retain(|tx| tx.send(ev.clone()).is_ok());
            }
        }
        st.by_job.retain(|_, txs| {
            txs.retain(|tx| !tx.is_closed());
            !txs.is_empty()
        });
        st.by_job.is_empty()
    }

    /// Ends following when no wait is registered (under the lock, so a registration either sees
    /// the follower running or starts a new one). Returns true when it ended.
    fn stop_if_idle(&self) -> bool {
        let mut st = self.state.lock().expect("waiters");
        if st.by_job.is_empty() {
            st.following = false;
            true
        } else {
            false
        }
    }

    /// Drops the ended waits of `id` (a wait that returned without an event for it; a wait whose
    /// future was dropped is dropped at the next dispatch).
    pub(crate) fn forget(&self, id: JobId) {
        let mut st = self.state.lock().expect("waiters");
        if let Some(txs) = st.by_job.get_mut(&id) {
            txs.retain(|tx| !tx.is_closed());
            if txs.is_empty() {
                st.by_job.remove(&id);
            }
        }
    }

    /// The follower failed: every wait is woken (its channel closes) and re-registers.
    fn fail_all(&self) {
        let mut st = self.state.lock().expect("waiters");
        st.by_job.clear();
        st.following = false;
    }
}

/// Reads the queue's events and hands them to the waits until none is left for [`IDLE`] (holding
/// the waits, not the queue handle).
async fn follow(waiters: Arc<Waiters>, mut stream: EventStream, queue: String) {
    let mut idle_since: Option<std::time::Instant> = None;
    loop {
        match stream.next_batch(IDLE / 2, BATCH).await {
            Ok(events) => {
                if waiters.dispatch(events) {
                    let since = *idle_since.get_or_insert_with(std::time::Instant::now);
                    if since.elapsed() >= IDLE && waiters.stop_if_idle() {
                        return;
                    }
                } else {
                    idle_since = None;
                }
            }
            Err(e) => {
                tracing::debug!(queue = %queue, error = %e, "wait follower: stream read failed");
                waiters.fail_all();
                return;
            }
        }
    }
}

impl Waiters {
    /// How many jobs have a wait registered, and whether a follower is reading.
    pub(crate) fn registered(&self) -> (usize, bool) {
        let st = self.state.lock().expect("waiters");
        (st.by_job.len(), st.following)
    }
}
