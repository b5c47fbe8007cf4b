//! `emq._emq.Worker`: a running worker (the native half of `emq.Worker`).

use crate::convert::json_loads;
use crate::dispatch::{self, Dispatch};
use crate::errors::core_err;
use crate::options::{self, seconds_ms};
use crate::queue::Queue;
use crate::runtime::{awaitable_methods, runtime, Out};
use crate::worker_events;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use std::sync::{Arc, Mutex};

/// A running worker (native half of `emq.Worker`).
#[pyclass(module = "emq._emq", frozen)]
pub(crate) struct Worker {
    handle: Mutex<Option<emq::WorkerHandle>>,
    aborter: emq::WorkerAborter,
    dispatch: Option<Arc<Dispatch>>,
    events: Arc<worker_events::EventQueue>,
    /// Its queues, in order (their names: a partitioned queue's partitions as its handle knows
    /// them now, so a grown queue's new ones too).
    queues: Vec<emq::Queue>,
    /// Per-queue counters taken as `close` began (the core's handle gives them while it runs).
    last_by_queue: Mutex<Option<Vec<(String, emq::WorkerStats)>>>,
}

/// A `Queue` or a list/tuple of them, as the core's queues (the core refuses an empty list and a
/// queue named twice).
fn queues_of(py: Python<'_>, v: &Bound<'_, PyAny>) -> PyResult<Vec<emq::Queue>> {
    if let Ok(q) = v.cast::<Queue>() {
        return Ok(vec![q.get().core(py)?]);
    }
    let bad = || {
        crate::code_err(
            py,
            emq::ErrorCode::InvalidOption,
            "a worker's queue must be a Queue or a list of Queues",
        )
    };
    if !(v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>()) {
        return Err(bad());
    }
    v.try_iter()?
        .map(|item| {
            let item = item?;
            let q = item.cast::<Queue>().map_err(|_| bad())?;
            q.get().core(py)
        })
        .collect()
}

fn stats_json(py: Python<'_>, stats: &emq::WorkerStats) -> PyResult<Py<PyAny>> {
    let text = serde_json::to_string(stats).unwrap_or_else(|_| "{}".into());
    Ok(json_loads(py, &text)?.unbind())
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.events.close();
    }
}

awaitable_methods! {
    impl Worker {
        /// `entry(call)` is called per job with an `emq._emq.Call` (threaded mode). With
        /// `batched`, jobs are queued for the event loop instead: it watches `wake_fd` and calls
        /// `take`.
        #[new]
        #[pyo3(signature = (queue, entry, event_loop=None, concurrency=None, lease=None, batched=false, shutdown_timeout=None, stalled_interval=None, max_stalls=None, remove_on_complete=None, remove_on_fail=None, strict=None, weights=None))]
        #[allow(clippy::too_many_arguments)]
        fn new(
            py: Python<'_>,
            queue: &Bound<'_, PyAny>,
            entry: Py<PyAny>,
            event_loop: Option<Py<PyAny>>,
            concurrency: Option<&Bound<'_, PyAny>>,
            lease: Option<&Bound<'_, PyAny>>,
            batched: bool,
            shutdown_timeout: Option<&Bound<'_, PyAny>>,
            stalled_interval: Option<&Bound<'_, PyAny>>,
            max_stalls: Option<&Bound<'_, PyAny>>,
            remove_on_complete: Option<&Bound<'_, PyAny>>,
            remove_on_fail: Option<&Bound<'_, PyAny>>,
            strict: Option<&Bound<'_, PyAny>>,
            weights: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<Worker> {
            let qs = queues_of(py, queue)?;
            let opts = options::worker_options(
                py,
                options::WorkerArgs {
                    concurrency,
                    lease,
                    shutdown_timeout,
                    stalled_interval,
                    max_stalls,
                    remove_on_complete,
                    remove_on_fail,
                    strict,
                    weights,
                },
            )?;
            let (handler, dispatch) = dispatch::new_handler(py, entry, event_loop, batched)?;
            let rt = runtime()?;
            let _guard = rt.enter();
            emq::worker_registry::set_language("python");
            let events = worker_events::EventQueue::new();
            let handle = emq::Worker::builder_many(qs.clone())
                .options(opts)
                .handler(handler)
                .on_event(events.hook())
                .run()
                .map_err(|e| core_err(py, &e))?;
            Ok(Worker {
                queues: qs,
                last_by_queue: Mutex::new(None),
                aborter: handle.aborter(),
                handle: Mutex::new(Some(handle)),
                dispatch,
                events,
            })
        }

        /// The fd the event loop watches for queued jobs (batched mode; None otherwise).
        #[getter]
        fn wake_fd(&self) -> Option<i32> {
            self.dispatch.as_ref().map(|d| d.wake_fd())
        }

        /// `(calls, abandoned ids)` queued for the loop since the last call (batched mode).
        fn take<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
            match &self.dispatch {
                Some(d) => d.take(py),
                None => PyTuple::new(py, [PyList::empty(py), PyList::empty(py)]),
            }
        }

        /// Keeps the worker's events for `events` from now on.
        fn listen(&self) {
            self.events.listen();
        }

        /// Stops at once (a second Ctrl-C): a close in progress stops waiting and releases
        /// nothing; the jobs come back through their leases.
        fn abort(&self) {
            self.aborter.abort();
        }

        /// Jobs completed, jobs failed for good, runs retried, outcomes refused for a lost lease,
        /// stalled jobs recovered. Also after `close`: the final figures.
        fn stats(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
            stats_json(py, &self.aborter.stats())
        }

        /// The names of its queues, in the order it was given them.
        #[getter]
        fn queues(&self) -> Vec<String> {
            self.queues
                .iter()
                .flat_map(emq::Queue::slot_queues)
                .map(|q| q.name().as_str().to_string())
                .collect()
        }

        /// `[(queue name, counters)]` per queue, in order (after `close`: as the close began).
        fn stats_by_queue(&self, py: Python<'_>) -> PyResult<Vec<(String, Py<PyAny>)>> {
            let live = self
                .handle
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_ref()
                .map(|h| h.stats_by_queue());
            let per = match live {
                Some(per) => per,
                None => self
                    .last_by_queue
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone()
                    .unwrap_or_default(),
            };
            per.iter()
                .map(|(q, s)| Ok((q.clone(), stats_json(py, s)?)))
                .collect()
        }
    }
    awaitable {
        /// Stops fetching, lets in-flight jobs finish (within the shutdown deadline), releases
        /// the rest; then ends the events (the last ones are still handed out).
        #[pyo3(signature = (blocking=false))]
        fn close(&self, py) {
            let handle = self.handle.lock().unwrap_or_else(|p| p.into_inner()).take();
            if let Some(h) = &handle {
                *self.last_by_queue.lock().unwrap_or_else(|p| p.into_inner()) =
                    Some(h.stats_by_queue());
            }
            let events = self.events.clone();
            Ok(Box::pin(async move {
                let r = match handle {
                    Some(h) => h.close().await.map(|_| ()),
                    None => Ok(()),
                };
                events.close();
                r.map(|_| Out::None)
            }))
        }

        /// The worker's next events (a list of dicts), waiting up to `wait` seconds for the
        /// first; `[]` when none came; None once the worker is closed and every event was taken.
        #[pyo3(signature = (wait, blocking=false))]
        fn events(&self, py, wait: &Bound<'_, PyAny>) {
            let wait = std::time::Duration::from_millis(seconds_ms(py, "wait", wait)?.max(1));
            let events = self.events.clone();
            Ok(Box::pin(async move { Ok(Out::OptJson(events.next(wait).await)) }))
        }
    }
}
