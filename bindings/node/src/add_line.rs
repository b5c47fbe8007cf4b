//! [`AddLine`]: the awaited one-job add's way back to JS. napi makes a promise, a deferred (with an
//! error object for its stack) and a threadsafe function for every `async` method call; an add
//! instead goes out as a plain call, `NativeQueue.addStart(seq, ...)`, with a sequence number
//! `node/src/add_line.ts` chose, and comes back through one threadsafe function per queue handle,
//! made at its first add and kept. The core's outcome (the job's id, or `!<code>:<message>`; a job
//! id never starts with `!`) is put on the line; only the first outcome on an empty line calls JS,
//! which takes every outcome waiting then (one JS wake for all the adds settled meanwhile).
//!
//! The function keeps Node's event loop alive only while adds are pending: it is made weak, and
//! referenced from the first pending add until the last is taken (both on the JS thread).

use crate::{napi_failure, Result};
use emq::{JobOptions, Queue};
use napi::bindgen_prelude::Function;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Status};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// JS's taker: called with one argument, the JSON array `[[seq, outcome], ...]` of settled adds.
type SettleFn = ThreadsafeFunction<(), (), String, Status, false, true, 0>;

/// One queue handle's line of settled adds.
#[derive(Default)]
pub(crate) struct AddLine {
    state: Mutex<LineState>,
}

#[derive(Default)]
struct LineState {
    /// JS's taker, once `listen` has run.
    taker: Option<SettleFn>,
    /// Adds started and not yet taken by JS; while there are some, the taker holds the event
    /// loop open.
    pending: u32,
    /// Outcomes waiting for JS, in the order they settled.
    settled: Vec<(u32, String)>,
}

impl AddLine {
    fn lock(&self) -> MutexGuard<'_, LineState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Makes the line's threadsafe function around JS's `taker` (once per handle).
    pub(crate) fn listen(self: &Arc<Self>, taker: Function<'_, String, ()>) -> Result<()> {
        let weak: Weak<AddLine> = Arc::downgrade(self);
        let tsfn: SettleFn = taker
            .build_threadsafe_function::<()>()
            .callee_handled::<false>()
            .weak::<true>()
            .build_callback(move |ctx| {
                Ok(weak
                    .upgrade()
                    .map(|line| line.take(&ctx.env))
                    .unwrap_or_else(|| "[]".to_string()))
            })
            .map_err(napi_failure)?;
        self.lock().taker = Some(tsfn);
        Ok(())
    }

    /// Starts the add of job `name` (payload `data`, JSON text) on the runtime; its outcome comes
    /// back under `seq`. Called on the JS thread.
    pub(crate) fn start(
        self: &Arc<Self>,
        env: &Env,
        queue: &Queue,
        seq: u32,
        name: String,
        data: String,
        options: JobOptions,
    ) -> Result<()> {
        {
            let mut guard = self.lock();
            let st = &mut *guard;
            let Some(taker) = st.taker.as_mut() else {
                return Err(napi_failure(napi::Error::from_reason(
                    "addStart before listenAdds",
                )));
            };
            if st.pending == 0 {
                #[allow(deprecated)] // napi's way to ref a threadsafe function's loop handle
                taker.refer(env).map_err(napi_failure)?;
            }
            st.pending += 1;
        }
        let line = self.clone();
        let queue = queue.clone();
        napi::bindgen_prelude::spawn(async move {
            let outcome = match queue.add_json(&name, &data, options).await {
                Ok(id) => id.to_string(),
                Err(e) => format!("!{}:{}", e.code().as_str(), e.message()),
            };
            line.settle(seq, outcome);
        });
        Ok(())
    }

    /// Puts an outcome on the line, calling JS when the line was empty.
    fn settle(&self, seq: u32, outcome: String) {
        let mut st = self.lock();
        let first = st.settled.is_empty();
        st.settled.push((seq, outcome));
        if first {
            if let Some(taker) = st.taker.as_ref() {
                taker.call((), ThreadsafeFunctionCallMode::NonBlocking);
            }
        }
    }

    /// What JS's taker is called with: every outcome waiting (on the JS thread). Lets the loop
    /// go when nothing is pending any more.
    fn take(&self, env: &Env) -> String {
        let mut st = self.lock();
        let taken = std::mem::take(&mut st.settled);
        let was_pending = st.pending;
        st.pending = st.pending.saturating_sub(taken.len() as u32);
        if was_pending > 0 && st.pending == 0 {
            if let Some(taker) = st.taker.as_mut() {
                #[allow(deprecated)]
                let _ = taker.unref(env);
            }
        }
        serde_json::to_string(&taken).unwrap_or_else(|_| "[]".to_string())
    }
}
