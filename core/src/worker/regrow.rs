//! A worker on a partitioned queue that grows (`Queue::grow_partitions`, `queue/grow.rs`) takes up
//! the new partitions by restarting itself over the grown queue, inside its handle: every
//! [`LAYOUT_POLL`] it reads the stored layout of each of its partitioned queues; once one has
//! more partitions than the worker was started with, it closes the worker as
//! [`WorkerHandle::close`] would (no new claims; running handlers get `shutdown_deadline` to
//! finish, then are interrupted; jobs still held go back uncounted) and starts it again with the
//! same handler, options and worker id. The handle, its counters and its aborter carry over; its
//! concurrency is never exceeded (the new start begins once the old one is closed).
//!
//! A close or an abort of the handle during a restart lets the restart's close finish and starts
//! nothing more.

use super::handle::Live;
use super::*;

/// How often a worker on a partitioned queue reads whether the queue grew.
pub(super) const LAYOUT_POLL: Duration = Duration::from_secs(1);

/// What it takes to start a worker again: its queues (handles whose partitions follow the stored
/// layout), options, handler, hook and id.
pub(super) struct Restart {
    pub(super) queues: Vec<Queue>,
    pub(super) opts: WorkerOptions,
    pub(super) handler: Arc<dyn Handler>,
    pub(super) events: Option<WorkerEventHook>,
    pub(super) waiter: String,
}

impl Restart {
    fn counts(&self) -> Vec<u16> {
        self.queues.iter().map(|q| q.partition_count()).collect()
    }
}

/// Restarts the worker of `live` each time one of its partitioned queues has grown.
pub(super) async fn regrow_loop(live: Arc<Live>, r: Arc<Restart>) {
    let mut started = r.counts();
    loop {
        // Spread over a second, so the workers of one queue do not restart all at once.
        let jitter = Duration::from_millis(rand::random::<u64>() % 250);
        tokio::time::sleep(LAYOUT_POLL + jitter).await;
        if live.ended.load(Ordering::SeqCst) {
            return;
        }
        for q in r.queues.iter().filter(|q| q.partitions().is_some()) {
            if let Err(e) = q.read_layout().await {
                tracing::warn!(queue = %q.name(), error = %e, "emq: reading the queue's partitions failed");
            }
        }
        let now = r.counts();
        if now.iter().zip(&started).all(|(n, s)| n <= s) {
            continue;
        }
        let _swap = live.swap.lock().await;
        if live.ended.load(Ordering::SeqCst) {
            return;
        }
        let old = {
            let mut st = live.state.lock().expect("worker state");
            let old = st.now.take();
            st.closing = old.as_ref().map(|o| o.aborter());
            old
        };
        let Some(old) = old else { return };
        tracing::info!(
            queues = ?r.queues.iter().map(|q| q.name().as_str().to_string()).collect::<Vec<_>>(),
            partitions = ?now,
            "emq: a queue of the worker grew; restarting the worker over its partitions"
        );
        if let Err(e) = old.close().await {
            tracing::warn!(error = %e, "emq: closing the worker before its restart failed");
        }
        if live.ended.load(Ordering::SeqCst) {
            return;
        }
        let next = match super::builder::start(&r) {
            Ok(next) => next,
            Err(e) => {
                tracing::error!(error = %e, "emq: restarting the worker over its grown queue failed");
                return;
            }
        };
        let mut st = live.state.lock().expect("worker state");
        if let Some(c) = st.closing.take() {
            st.before = st.before.plus(c.stats());
        }
        st.now = Some(next);
        started = now;
    }
}
