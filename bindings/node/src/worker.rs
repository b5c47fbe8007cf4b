//! The worker's hand-off between the core and JS, batched so that a busy worker pays one JS hop per
//! batch of jobs rather than one per job.
//!
//! The core calls [`Handler::handle`] once per job and awaits its future; that stays as it is. Here
//! `handle` appends the job (as JSON, written on the core's thread) to a shared batch together with
//! a sequence number, parks a oneshot sender under that number, and asks the JS thread to run only
//! when the batch was empty (one threadsafe-function call is then pending for everything appended
//! until JS picks the batch up). On the JS thread the batch goes to `node/src/dispatcher.ts`'s dispatcher as one
//! JSON array; it runs the user's handler per job and reports outcomes back with `complete` (many
//! successes in one call) and `fail` (one failure), which only look up the parked senders and send.
//! A job whose future the core drops (timeout, close) unparks itself; a late outcome for it is
//! ignored. No queue logic lives here.
//!
//! The worker's events (`worker.on(...)` in `node/src/worker.ts`) are the core's, through its
//! `WorkerBuilder::on_event` hook ([`crate::worker_events`]). A handler's `job.updateProgress`
//! goes through the run's [`JobContext`] (`progress`), so the core reports it as a `progress` event.

use crate::options::{ms, worker_options, WorkerOpts};
use crate::worker_events::WorkerEvents;
use crate::{napi_failure, throw, Result, Settled};
use emq::{
    Handler, HandlerError, HandlerResult, Interrupt, JobContext, JobId, WorkerAborter, WorkerHandle,
};
use futures::channel::oneshot;
use futures::future::{BoxFuture, Either};
use napi::bindgen_prelude::Function;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use napi_derive::napi;
use serde_json::Value;
use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// The JS dispatcher: called with one argument, a JSON array of jobs. Strong (it keeps the event
/// loop alive while the worker runs); released by `close`.
type DispatchFn = ThreadsafeFunction<(), (), String, Status, false, false, 0>;

/// Sequence numbers stay below 2^30, so they are small integers in V8.
const SEQ_MASK: u32 = (1 << 30) - 1;

#[derive(Default)]
struct State {
    next_seq: u32,
    /// Senders of the jobs handed to JS (or about to be), by sequence number.
    parked: HashMap<u32, oneshot::Sender<HandlerResult>>,
    /// The runs' contexts, by sequence number, while they are parked (for `progress`).
    contexts: HashMap<u32, JobContext>,
    /// The pending batch: `[` and comma-separated job objects, without the closing `]`; empty when
    /// no call of the dispatcher is pending.
    batch: Vec<u8>,
    /// Sequence numbers of the pending batch.
    batch_seqs: Vec<u32>,
    /// Sequence numbers of the batch the dispatcher is running (to fail them if it throws).
    in_call: Vec<u32>,
    /// None once the worker is closed.
    tsfn: Option<Arc<DispatchFn>>,
}

/// Shared by the core's handler and the native worker.
pub(crate) struct Dispatch {
    state: Mutex<State>,
}

fn closed() -> HandlerError {
    HandlerError::new("the worker is closed").with_code("closed")
}

impl Dispatch {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// On the JS thread: takes the pending batch as a JSON array.
    fn take_batch(&self) -> String {
        let mut st = self.lock();
        let mut batch = std::mem::take(&mut st.batch);
        st.in_call = std::mem::take(&mut st.batch_seqs);
        drop(st);
        if batch.is_empty() {
            return "[]".to_string();
        }
        batch.push(b']');
        // Only `serde_json` and ASCII were written into it.
        String::from_utf8(batch).unwrap_or_else(|_| "[]".to_string())
    }

    /// On the JS thread, after the dispatcher returned: a throw fails the jobs of its batch that it
    /// did not settle first.
    fn after_call(&self, result: napi::Result<()>) {
        let in_call = std::mem::take(&mut self.lock().in_call);
        if let Err(e) = result {
            let message = format!("the worker's dispatcher threw: {}", e.reason);
            for seq in in_call {
                self.settle(seq, Err(HandlerError::new(message.clone())));
            }
        }
    }

    fn settle(&self, seq: u32, outcome: HandlerResult) {
        let tx = {
            let mut st = self.lock();
            st.contexts.remove(&seq);
            st.parked.remove(&seq)
        };
        if let Some(tx) = tx {
            let _ = tx.send(outcome);
        }
    }

    fn unpark(&self, seq: u32) {
        let mut st = self.lock();
        st.parked.remove(&seq);
        st.contexts.remove(&seq);
    }

    /// The context of the run `seq`, while it is parked.
    fn context(&self, seq: u32) -> Option<JobContext> {
        self.lock().contexts.get(&seq).cloned()
    }

    /// Stops handing out jobs: releases the JS function (once every clone is dropped) and ends every
    /// job still parked with a `closed` failure.
    fn close(&self) {
        let (tsfn, parked) = {
            let mut st = self.lock();
            st.batch.clear();
            st.batch_seqs.clear();
            st.contexts.clear();
            (st.tsfn.take(), std::mem::take(&mut st.parked))
        };
        for (_, tx) in parked {
            let _ = tx.send(Err(closed()));
        }
        drop(tsfn);
    }
}

/// One job as the dispatcher receives it: `{"s":seq,"q":queue name,"id":…,"name":…,"data":…,
/// "attemptsMade":n,"attempts":n,"fence":n[,"batch":{queue,id}][,"trace":{traceparent,tracestate}]}` (the fence, µs since the epoch, is below 2^53: a JS
/// number holds it; the queue name picks the job's queue in a worker on several).
fn write_job(out: &mut Vec<u8>, seq: u32, ctx: &JobContext) {
    let j = ctx.job();
    let _ = write!(out, "{{\"s\":{seq},\"q\":");
    let _ = serde_json::to_writer(&mut *out, ctx.queue().name().as_str());
    let _ = write!(out, ",\"id\":\"{}\",\"name\":", j.id);
    let _ = serde_json::to_writer(&mut *out, &j.name);
    out.extend_from_slice(b",\"data\":");
    let _ = serde_json::to_writer(&mut *out, &j.data);
    let _ = write!(
        out,
        ",\"attemptsMade\":{},\"attempts\":{},\"fence\":{}",
        j.attempts_made,
        j.attempts,
        ctx.fence()
    );
    // A job of a batch (core/src/batch/): its batch, for `job.batch`.
    if let Some(b) = j.options.get("batch") {
        out.extend_from_slice(b",\"batch\":");
        let _ = serde_json::to_writer(&mut *out, b);
    }
    // A traced job (core/src/trace.rs): its W3C context, for the run's span.
    if let Some(t) = j.options.get("trace") {
        out.extend_from_slice(b",\"trace\":");
        let _ = serde_json::to_writer(&mut *out, t);
    }
    out.push(b'}');
}

/// Unparks a job whose future was dropped before JS settled it.
struct Parked {
    dispatch: Arc<Dispatch>,
    seq: u32,
    armed: bool,
}

impl Drop for Parked {
    fn drop(&mut self) {
        if self.armed {
            self.dispatch.unpark(self.seq);
        }
    }
}

/// The core's handler around the JS dispatcher.
struct JsHandler {
    dispatch: Arc<Dispatch>,
}

impl Dispatch {
    /// Appends `entry` to the pending batch (with `job_seq`, a job the dispatcher must fail if it
    /// throws) and wakes JS when the batch was empty. False when the worker is closed or JS can
    /// no longer be called.
    fn enqueue(self: &Arc<Self>, entry: &[u8], job_seq: Option<u32>) -> bool {
        let call = {
            let mut st = self.lock();
            let Some(tsfn) = st.tsfn.clone() else {
                return false;
            };
            let first = st.batch.is_empty();
            st.batch.push(if first { b'[' } else { b',' });
            st.batch.extend_from_slice(entry);
            if let Some(seq) = job_seq {
                st.batch_seqs.push(seq);
            }
            first.then_some(tsfn)
        };
        if let Some(tsfn) = call {
            let weak = Arc::downgrade(self);
            let status = tsfn.call_with_return_value(
                (),
                ThreadsafeFunctionCallMode::NonBlocking,
                move |r: napi::Result<()>, _env| {
                    if let Some(d) = weak.upgrade() {
                        d.after_call(r);
                    }
                    Ok(())
                },
            );
            if status != Status::Ok {
                // The function is being released (the worker is closing): nothing will run it.
                return false;
            }
        }
        true
    }

    /// Tells JS to abort the signal of the job `seq` (`{"s":seq,"abort":"timeout","reason":…}`).
    fn abort(self: &Arc<Self>, seq: u32, why: &Interrupt) {
        let mut entry = Vec::with_capacity(96);
        let _ = write!(
            entry,
            "{{\"s\":{seq},\"abort\":\"{}\",\"reason\":",
            why.as_str()
        );
        let _ = serde_json::to_writer(&mut entry, &why.message());
        entry.push(b'}');
        if !self.enqueue(&entry, None) {
            // JS cannot be told (the worker is closing): end the run here.
            self.settle(seq, Err(closed()));
        }
    }
}

impl Handler for JsHandler {
    fn handle(&self, job: JobContext) -> BoxFuture<'static, HandlerResult> {
        let (tx, rx) = oneshot::channel();
        let mut entry = Vec::with_capacity(128);
        let seq = {
            let mut st = self.dispatch.lock();
            if st.tsfn.is_none() {
                return Box::pin(async { Err(closed()) });
            }
            let seq = st.next_seq;
            st.next_seq = (seq + 1) & SEQ_MASK;
            st.parked.insert(seq, tx);
            st.contexts.insert(seq, job.clone());
            seq
        };
        write_job(&mut entry, seq, &job);
        if !self.dispatch.enqueue(&entry, Some(seq)) {
            self.dispatch.settle(seq, Err(closed()));
        }
        let guard = Parked {
            dispatch: self.dispatch.clone(),
            seq,
            armed: true,
        };
        let dispatch = self.dispatch.clone();
        Box::pin(async move {
            let mut guard = guard;
            let mut rx = rx;
            // An interrupt (cancel, timeout, shutdown) aborts the job's signal in JS; the run ends
            // only once the JS handler's promise has settled (cooperative_cancel), so no retry of
            // the job can overlap it.
            let outcome = {
                let cancelled = job.cancelled();
                futures::pin_mut!(cancelled);
                match futures::future::select(&mut rx, cancelled).await {
                    Either::Left((o, _)) => o,
                    Either::Right((why, _)) => {
                        dispatch.abort(seq, &why);
                        rx.await
                    }
                }
            };
            guard.armed = false;
            outcome.unwrap_or_else(|_| Err(closed()))
        })
    }

    fn cooperative_cancel(&self) -> bool {
        true
    }
}

/// Counters of one of a worker's queues (see `QueueStats` in node/src/types.ts).
#[napi(object)]
pub struct QueueStats {
    pub queue: String,
    pub completed: f64,
    pub failed: f64,
    pub retried: f64,
    pub lease_lost: f64,
    pub recovered: f64,
}

/// Counters of a worker (see `WorkerStats` in node/src/types.ts).
#[napi(object)]
pub struct WorkerStats {
    /// Jobs completed.
    pub completed: f64,
    /// Jobs failed for good (their last attempt, or an unrecoverable error).
    pub failed: f64,
    /// Runs that failed and went back for another attempt.
    pub retried: f64,
    pub lease_lost: f64,
    pub recovered: f64,
    pub running: f64,
}

/// A running worker (wrapped by `Worker` in `node/src/worker.ts`).
#[napi]
pub struct NativeWorker {
    handle: Mutex<Option<WorkerHandle>>,
    aborter: WorkerAborter,
    dispatch: Arc<Dispatch>,
    events: Arc<WorkerEvents>,
    /// Its queues, in order (the first for a progress whose queue is not named).
    queues: Vec<emq::Queue>,
}

/// Starts a worker on `queues` (one or several; the core refuses none and a queue twice) around
/// the JS dispatcher; its events go to `on_events`.
pub(crate) fn start(
    queues: Vec<emq::Queue>,
    dispatcher: Function<'_, String, ()>,
    on_events: Function<'_, String, ()>,
    opts: Option<WorkerOpts>,
) -> Result<NativeWorker> {
    let options = worker_options(opts).map_err(throw)?;
    let events = WorkerEvents::new(on_events).map_err(napi_failure)?;
    let dispatch = Arc::new(Dispatch {
        state: Mutex::new(State::default()),
    });
    let weak: Weak<Dispatch> = Arc::downgrade(&dispatch);
    let tsfn: DispatchFn = dispatcher
        .build_threadsafe_function::<()>()
        .callee_handled::<false>()
        .weak::<false>()
        .build_callback(move |_ctx| {
            Ok(weak
                .upgrade()
                .map(|d| d.take_batch())
                .unwrap_or_else(|| "[]".to_string()))
        })
        .map_err(napi_failure)?;
    dispatch.lock().tsfn = Some(Arc::new(tsfn));
    emq::worker_registry::set_language("node");
    let started = emq::Worker::builder_many(queues.clone())
        .options(options)
        .on_event(events.hook())
        .handler(JsHandler {
            dispatch: dispatch.clone(),
        })
        .run();
    let handle = match started {
        Ok(h) => h,
        Err(e) => {
            dispatch.close();
            events.close();
            return Err(throw(e));
        }
    };
    Ok(NativeWorker {
        aborter: handle.aborter(),
        handle: Mutex::new(Some(handle)),
        dispatch,
        events,
        queues,
    })
}

fn result_value(text: Option<String>) -> HandlerResult {
    match text {
        None => Ok(Value::Null),
        Some(t) => serde_json::from_str(&t)
            .map_err(|e| HandlerError::new(format!("the handler's result is not JSON: {e}"))),
    }
}

#[napi]
impl NativeWorker {
    /// Settles jobs that succeeded: `seqs[i]` with the JSON text `results[i]` (null: a null result).
    #[napi]
    pub fn complete(&self, seqs: Vec<u32>, results: Vec<Option<String>>) {
        let mut results = results.into_iter();
        let senders: Vec<_> = {
            let mut st = self.dispatch.lock();
            seqs.iter()
                .map(|s| {
                    st.contexts.remove(s);
                    st.parked.remove(s)
                })
                .collect()
        };
        for tx in senders {
            let text = results.next().flatten();
            if let Some(tx) = tx {
                let _ = tx.send(result_value(text));
            }
        }
    }

    /// Settles a job that failed.
    #[napi]
    pub fn fail(
        &self,
        seq: u32,
        message: String,
        code: Option<String>,
        stack: Option<String>,
        unrecoverable: Option<bool>,
    ) {
        let mut he = if unrecoverable == Some(true) {
            HandlerError::unrecoverable(message)
        } else {
            HandlerError::new(message)
        };
        if let Some(code) = code {
            he = he.with_code(code);
        }
        if let Some(stack) = stack {
            he = he.with_stack(stack);
        }
        self.dispatch.settle(seq, Err(he));
    }

    /// Settles a job whose handler put it back to delayed for `ms` (a `DelayedError`); the core
    /// validates the duration.
    #[napi]
    pub fn delay(&self, seq: u32, ms: f64, count_attempt: Option<bool>) {
        let he = HandlerError::delay_millis(ms).counting_attempt(count_attempt == Some(true));
        self.dispatch.settle(seq, Err(he));
    }

    /// Records progress (JSON text) of the run `seq` of job `id` through its context, so the core
    /// reports a `progress` event; once the run is settled, on its queue (`queue`, by name; the
    /// first when not named) alone (no event).
    #[napi]
    pub async fn progress(
        &self,
        seq: u32,
        id: String,
        progress: String,
        queue: Option<String>,
    ) -> Settled<()> {
        Settled::of(async move {
            let v: Value = serde_json::from_str(&progress).map_err(|e| throw(e.into()))?;
            match self.dispatch.context(seq) {
                Some(ctx) => ctx.progress(v).await.map_err(throw),
                None => {
                    let id = JobId::parse(&id).map_err(throw)?;
                    let q = queue
                        .and_then(|n| self.queues.iter().find(|q| q.name().as_str() == n))
                        .unwrap_or(&self.queues[0]);
                    q.update_progress(id, &v).await.map_err(throw)
                }
            }
        })
        .await
    }

    /// Adds a child (JSON payload text, options as a `JobSpec`'s JSON) to `queue` for the run
    /// `seq`, through its context (`JobContext::add_child`): the job waits for it when the run
    /// returns. `invalid_state` once the run has settled.
    #[napi]
    pub async fn add_child(
        &self,
        seq: u32,
        queue: String,
        name: String,
        data: String,
        opts: Option<String>,
    ) -> Settled<String> {
        Settled::of(async move {
            let options = crate::options::job_options(opts.as_deref()).map_err(throw)?;
            emq::job::check_integer_widths("the payload", &data).map_err(throw)?;
            let data: Value = serde_json::from_str(&data).map_err(|e| throw(e.into()))?;
            let ctx = self.dispatch.context(seq).ok_or_else(|| {
                throw(emq::Error::new(
                    emq::ErrorCode::InvalidState,
                    "the run has ended: a job adds children while its handler runs",
                ))
            })?;
            let id = ctx
                .add_child(&queue, &name, data, options)
                .await
                .map_err(throw)?;
            Ok(id.to_string())
        })
        .await
    }

    /// Keeps the events of the kinds in `mask` for JS (a bit each: completed 1, failed 2,
    /// progress 4, stalled 8, error 16); the others are dropped as they happen.
    #[napi]
    pub fn listen(&self, mask: u32) {
        self.events.listen(mask);
    }

    /// The events queued and not handed to JS yet, as a JSON array (`node/src/worker.ts` calls it once the
    /// close has finished, so the last ones come before `'closed'`).
    #[napi]
    pub fn take_events(&self) -> String {
        self.events.take()
    }

    /// The names of the queues it serves, in order (a partitioned queue's partitions, as the
    /// core's handle names them).
    #[napi(getter)]
    pub fn queues(&self) -> Vec<String> {
        self.queues
            .iter()
            .flat_map(emq::Queue::slot_queues)
            .map(|q| q.name().as_str().to_string())
            .collect()
    }

    /// Its counters per queue, in order, while it runs (`[]` once closed).
    #[napi]
    pub fn stats_by_queue(&self) -> Vec<QueueStats> {
        let guard = self.handle.lock().unwrap_or_else(|p| p.into_inner());
        guard
            .as_ref()
            .map(|h| h.stats_by_queue())
            .unwrap_or_default()
            .into_iter()
            .map(|(queue, s)| QueueStats {
                queue,
                completed: s.completed as f64,
                failed: s.failed as f64,
                retried: s.retried as f64,
                lease_lost: s.lease_lost as f64,
                recovered: s.recovered as f64,
            })
            .collect()
    }

    /// Its counters (once closed: the final figures, running 0).
    #[napi]
    pub fn stats(&self) -> WorkerStats {
        let guard = self.handle.lock().unwrap_or_else(|p| p.into_inner());
        let (s, running) = match guard.as_ref() {
            Some(h) => (h.stats(), h.running()),
            // Closed (or closing): the worker's final figures, which keep counting the jobs that
            // finish during the close (a copy taken when the close began missed them, so
            // `emq-worker` now and then said "0 completed" for a job it had completed).
            None => (self.aborter.stats(), 0),
        };
        WorkerStats {
            completed: s.completed as f64,
            failed: s.failed as f64,
            retried: s.retried as f64,
            lease_lost: s.lease_lost as f64,
            recovered: s.recovered as f64,
            running: running as f64,
        }
    }

    /// Stops fetching, waits up to `timeout` ms (default: the worker's shutdownTimeout) for
    /// in-flight jobs, gives the rest back to wait, then releases the JS function so that the
    /// worker no longer keeps the process alive. Returns how many jobs were given back.
    #[napi]
    pub async fn close(&self, timeout: Option<f64>) -> Settled<f64> {
        Settled::of(async move {
            let deadline = ms("timeout", timeout).map_err(throw)?;
            let handle = {
                let mut guard = self.handle.lock().unwrap_or_else(|p| p.into_inner());
                guard.take()
            };
            let result = match handle {
                None => Ok(0.0),
                Some(h) => {
                    let r = match deadline {
                        Some(d) => h.close_within(Duration::from_millis(d)).await,
                        None => h.close().await,
                    };
                    r.map(|rep| rep.released as f64).map_err(throw)
                }
            };
            self.dispatch.close();
            self.events.close();
            result
        })
        .await
    }

    /// Stops at once (a second Ctrl-C): a close in progress stops waiting and releases nothing;
    /// running handlers are dropped (their jobs come back through their leases, as after a
    /// crash). Call `close` after it to release the JS side.
    #[napi]
    pub fn abort(&self) {
        self.aborter.abort();
    }
}
