//! A worker's own events ([`emq::WorkerEvent`], the core's `WorkerBuilder::on_event` hook) on
//! their way to JS: `worker.on('completed' | 'failed' | 'progress' | 'stalled' | 'error')` in
//! `node/src/worker.ts`.
//!
//! The hook runs on the worker's tokio tasks: it queues the event (as JSON with camelCase keys) and,
//! when the queue was empty, asks the JS thread to run once through a threadsafe function; on the JS
//! thread the whole queue goes to `node/src/worker.ts` as one JSON array, which emits each event. Only the
//! kinds JS listens for are kept (`listen`, a bit per kind, set as listeners come and go); at most
//! [`CAP`] wait, the oldest dropped beyond. The threadsafe function is weak (it never keeps the
//! process alive) and released at close; what is still queued then is taken by `take`, which
//! `node/src/worker.ts` calls once the close has finished, before its `'closed'` event. No queue logic lives
//! here: the events are the core's.

use crate::queue::job_json;
use emq::{WorkerEvent, WorkerEventHook};
use napi::bindgen_prelude::Function;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, Weak};

/// The JS side: called with one argument, a JSON array of events. Weak: it never keeps the event
/// loop alive.
type EventsFn = ThreadsafeFunction<(), (), String, Status, false, true, 0>;

/// Most events that wait for JS.
pub const CAP: usize = 10_000;

/// The bit of an event kind in the listening mask (`node/src/worker.ts` uses the same order).
pub fn bit(kind: &str) -> u32 {
    match kind {
        "completed" => 1,
        "failed" => 2,
        "progress" => 4,
        "stalled" => 8,
        "error" => 16,
        _ => 0,
    }
}

#[derive(Default)]
struct Inner {
    events: VecDeque<Value>,
    /// The kinds JS listens for ([`bit`]).
    mask: u32,
    /// A call of the JS function is on its way (it takes everything queued until it runs).
    pending: bool,
    /// None once the worker is closed.
    tsfn: Option<Arc<EventsFn>>,
}

/// The events of one worker, waiting for JS.
#[derive(Default)]
pub(crate) struct WorkerEvents {
    inner: Mutex<Inner>,
}

/// An event as JS receives it.
fn event_json(e: &WorkerEvent) -> Value {
    let kind = e.kind();
    match e {
        WorkerEvent::Completed { job, result } => {
            json!({"kind": kind, "job": job_json(job), "result": result})
        }
        WorkerEvent::Failed {
            job,
            failure,
            will_retry,
        } => json!({
            "kind": kind, "job": job_json(job), "failure": failure, "willRetry": will_retry,
        }),
        WorkerEvent::Progress { job, value } => {
            json!({"kind": kind, "job": job_json(job), "value": value})
        }
        WorkerEvent::Stalled { job_id, to } => {
            json!({"kind": kind, "jobId": job_id.to_string(), "to": to})
        }
        WorkerEvent::Error { error } => json!({
            "kind": kind, "error": {"code": error.code().as_str(), "message": error.message()},
        }),
    }
}

impl WorkerEvents {
    /// Events for `on_events` (`node/src/worker.ts`'s, which takes a JSON array of events).
    pub fn new(on_events: Function<'_, String, ()>) -> napi::Result<Arc<WorkerEvents>> {
        let me = Arc::new(WorkerEvents::default());
        let weak: Weak<WorkerEvents> = Arc::downgrade(&me);
        let tsfn: EventsFn = on_events
            .build_threadsafe_function::<()>()
            .callee_handled::<false>()
            .weak::<true>()
            .build_callback(move |_ctx| {
                Ok(weak
                    .upgrade()
                    .map(|w| w.take())
                    .unwrap_or_else(|| "[]".to_string()))
            })?;
        me.lock().tsfn = Some(Arc::new(tsfn));
        Ok(me)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The hook the core calls with each event.
    pub fn hook(self: &Arc<WorkerEvents>) -> WorkerEventHook {
        let me = self.clone();
        Arc::new(move |e: WorkerEvent| me.push(e))
    }

    fn push(&self, e: WorkerEvent) {
        let call = {
            let mut g = self.lock();
            if g.mask & bit(e.kind()) == 0 || g.tsfn.is_none() {
                return;
            }
            if g.events.len() >= CAP {
                g.events.pop_front();
            }
            g.events.push_back(event_json(&e));
            if g.pending {
                None
            } else {
                g.pending = true;
                g.tsfn.clone()
            }
        };
        if let Some(tsfn) = call {
            if tsfn.call((), ThreadsafeFunctionCallMode::NonBlocking) != Status::Ok {
                // Being released (the worker is closing): `take` after the close gets them.
                self.lock().pending = false;
            }
        }
    }

    /// JS listens for the kinds in `mask` from now on (the others are no longer kept).
    pub fn listen(&self, mask: u32) {
        let mut g = self.lock();
        g.mask = mask;
        g.events
            .retain(|e| mask & bit(e.get("kind").and_then(Value::as_str).unwrap_or("")) != 0);
    }

    /// Everything queued, as a JSON array (on the JS thread).
    pub fn take(&self) -> String {
        let events = {
            let mut g = self.lock();
            g.pending = false;
            std::mem::take(&mut g.events)
        };
        Value::Array(events.into()).to_string()
    }

    /// The worker is closed: releases the JS function (what is queued stays for `take`).
    pub fn close(&self) {
        let tsfn = self.lock().tsfn.take();
        drop(tsfn);
    }
}
