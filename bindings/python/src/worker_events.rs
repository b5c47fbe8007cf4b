//! A worker's own events ([`emq::WorkerEvent`]) on their way to Python: the core's hook queues
//! each one (as JSON, on the worker's tokio task; nothing takes the GIL there) and `emq.Worker`
//! pulls them in batches (`Worker.events`), on its event loop or on a thread of its own, and
//! calls its listeners. Nothing is kept until Python listens (`Worker.listen`, from the first
//! `worker.on(...)`); at most [`CAP`] events wait, the oldest dropped beyond. Once the worker is
//! closed and every event was taken, a pull gives None, which ends the pulling.

use emq::{WorkerEvent, WorkerEventHook};
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

/// Most events that wait for Python.
pub const CAP: usize = 10_000;

/// Most events one pull returns.
const BATCH: usize = 1_000;

#[derive(Default)]
struct Inner {
    events: VecDeque<Value>,
    listening: bool,
    closed: bool,
}

/// The events of one worker, waiting for Python.
#[derive(Default)]
pub struct EventQueue {
    inner: Mutex<Inner>,
    notify: Notify,
}

impl EventQueue {
    pub fn new() -> Arc<EventQueue> {
        Arc::new(EventQueue::default())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The hook the core calls with each event.
    pub fn hook(self: &Arc<EventQueue>) -> WorkerEventHook {
        let me = self.clone();
        Arc::new(move |e: WorkerEvent| me.push(e))
    }

    fn push(&self, e: WorkerEvent) {
        {
            let mut inner = self.lock();
            if !inner.listening || inner.closed {
                return;
            }
            if inner.events.len() >= CAP {
                inner.events.pop_front();
            }
            inner.events.push_back(e.to_json());
        }
        self.notify.notify_waiters();
    }

    /// Python listens from now on.
    pub fn listen(&self) {
        self.lock().listening = true;
    }

    /// The worker is closed: what waits is still handed out, then pulls give None.
    pub fn close(&self) {
        self.lock().closed = true;
        self.notify.notify_waiters();
    }

    /// The next events (JSON array text), waiting up to `wait` for the first; `Some("[]")` when
    /// none came; None once closed and empty.
    pub async fn next(&self, wait: Duration) -> Option<String> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            // Created before the check, so a push or close after it wakes this wait.
            let notified = self.notify.notified();
            {
                let mut inner = self.lock();
                if !inner.events.is_empty() {
                    let n = inner.events.len().min(BATCH);
                    let batch: Vec<Value> = inner.events.drain(..n).collect();
                    return Some(Value::Array(batch).to_string());
                }
                if inner.closed {
                    return None;
                }
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return Some("[]".into());
            }
        }
    }
}
