//! emq-node: the native addon of the npm package `emq`. A thin napi-rs layer over the core: it
//! adapts types (JS numbers in milliseconds to the core's options, jobs to plain JSON), errors (every
//! core error is thrown as `[emq:<code>] <message>`, which `node/index.js` turns into an `EmqError`
//! with `.code`), and the handler (the core's [`emq::Handler`] around a JS function, called through a
//! threadsafe function). No queue logic lives here.

use emq::{
    Backoff, ConnectOptions, Error, ErrorCode, Handler, HandlerError, HandlerResult, Job,
    JobContext, JobId, JobOptions, NewJob, Queue, WorkerHandle, WorkerOptions,
};
use futures::future::BoxFuture;
use napi::bindgen_prelude::Promise;
use napi::threadsafe_function::ThreadsafeFunction;
use napi::Status;
use napi_derive::napi;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

/// The one way a core error crosses into JS: the code in a parseable prefix.
fn throw(e: Error) -> napi::Error {
    napi::Error::from_reason(format!("[emq:{}] {}", e.code().as_str(), e.message()))
}

fn invalid_option(msg: impl Into<String>) -> Error {
    Error::new(ErrorCode::InvalidOption, msg)
}

/// A JS number that must be a whole count in `0..=max`.
fn whole(what: &str, v: f64, max: u64) -> emq::Result<u64> {
    if !v.is_finite() || v < 0.0 || v.fract() != 0.0 || v > max as f64 {
        return Err(invalid_option(format!(
            "{what} must be a whole number between 0 and {max}, got {v}"
        )));
    }
    Ok(v as u64)
}

fn ms(what: &str, v: Option<f64>) -> emq::Result<Option<u64>> {
    v.map(|v| emq::options::millis(what, v)).transpose()
}

/// `backoff` of a job: `{ type: 'fixed' | 'exponential', delay, max? }` (milliseconds).
#[napi(object)]
pub struct BackoffOptions {
    #[napi(js_name = "type")]
    pub kind: String,
    pub delay: Option<f64>,
    pub max: Option<f64>,
}

/// Options of one job (times in milliseconds).
#[napi(object)]
pub struct JobOpts {
    pub delay: Option<f64>,
    pub priority: Option<f64>,
    pub lifo: Option<bool>,
    pub attempts: Option<f64>,
    pub backoff: Option<BackoffOptions>,
    pub jitter: Option<f64>,
    pub lease: Option<f64>,
    pub timeout: Option<f64>,
    pub remove_on_complete: Option<bool>,
    pub remove_on_fail: Option<bool>,
    pub dedup: Option<String>,
    pub id: Option<String>,
}

fn job_options(o: Option<JobOpts>) -> emq::Result<JobOptions> {
    let mut out = JobOptions::default();
    let Some(o) = o else { return Ok(out) };
    if let Some(d) = ms("delay", o.delay)? {
        out.delay_ms = d;
    }
    if let Some(p) = o.priority {
        out.priority = whole("priority", p, u32::MAX as u64)? as u32;
    }
    if let Some(a) = o.attempts {
        out.attempts = whole("attempts", a, u32::MAX as u64)? as u32;
    }
    out.lifo = o.lifo.unwrap_or(false);
    if let Some(b) = o.backoff {
        let delay_ms = ms("backoff.delay", b.delay)?.unwrap_or(0);
        out.backoff = match b.kind.as_str() {
            "fixed" => Backoff::Fixed { delay_ms },
            "exponential" => Backoff::Exponential {
                delay_ms,
                max_ms: ms("backoff.max", b.max)?.unwrap_or(0),
            },
            "none" => Backoff::None,
            other => {
                return Err(invalid_option(format!(
                    "backoff.type must be 'fixed' or 'exponential', got {other:?}"
                )))
            }
        };
    }
    if let Some(j) = o.jitter {
        out.jitter = j;
    }
    if let Some(l) = ms("lease", o.lease)? {
        out.lease_ms = l;
    }
    if let Some(t) = ms("timeout", o.timeout)? {
        out.timeout_ms = t;
    }
    out.remove_on_complete = o.remove_on_complete.unwrap_or(false);
    out.remove_on_fail = o.remove_on_fail.unwrap_or(false);
    out.dedup = o.dedup;
    if let Some(id) = o.id {
        out.id = Some(JobId::parse(&id)?);
    }
    out.validate()?;
    Ok(out)
}

/// One job of `addBulk`: its payload is JSON text (serialised in JS).
#[napi(object)]
pub struct BulkJob {
    pub name: String,
    pub data: String,
    pub opts: Option<JobOpts>,
}

/// Number of jobs per state.
#[napi(object)]
pub struct Counts {
    pub waiting: f64,
    pub paused: f64,
    pub active: f64,
    pub delayed: f64,
    pub prioritized: f64,
    pub completed: f64,
    pub failed: f64,
    pub stalled: f64,
    pub waiting_children: f64,
}

/// A job as plain JSON with camelCase keys (what `queue.get` returns).
fn job_json(j: &Job) -> Value {
    json!({
        "id": j.id.to_string(),
        "name": j.name,
        "data": j.data,
        "state": j.state.map(|s| s.as_str()),
        "attemptsMade": j.attempts_made,
        "attempts": j.attempts,
        "stalls": j.stalls,
        "priority": j.priority,
        "createdMs": j.created_ms,
        "processedMs": j.processed_ms,
        "finishedMs": j.finished_ms,
        "progress": j.progress,
        "result": j.result,
        "failure": j.failure,
        "options": j.options,
    })
}

/// A handle on one queue (wrapped by `Queue` in `index.js`).
#[napi]
pub struct NativeQueue {
    q: Queue,
}

/// Connects to the datastore (one URL, or cluster seeds) and opens the queue `name`.
#[napi]
pub async fn connect(urls: Vec<String>, name: String) -> napi::Result<NativeQueue> {
    if urls.is_empty() {
        return Err(throw(invalid_option(
            "at least one datastore URL is needed",
        )));
    }
    let q = Queue::connect(ConnectOptions::seeds(urls), &name)
        .await
        .map_err(throw)?;
    Ok(NativeQueue { q })
}

#[napi]
impl NativeQueue {
    /// The queue's name.
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.q.name().to_string()
    }

    /// Adds a job whose payload is JSON text; returns its id.
    #[napi]
    pub async fn add(
        &self,
        name: String,
        data: String,
        opts: Option<JobOpts>,
    ) -> napi::Result<String> {
        let options = job_options(opts).map_err(throw)?;
        let id = self
            .q
            .add_json(&name, &data, options)
            .await
            .map_err(throw)?;
        Ok(id.to_string())
    }

    /// Adds many jobs in pipelined round trips; returns their ids in order.
    #[napi]
    pub async fn add_bulk(&self, jobs: Vec<BulkJob>) -> napi::Result<Vec<String>> {
        let mut batch = Vec::with_capacity(jobs.len());
        for j in jobs {
            let data: Value = serde_json::from_str(&j.data).map_err(|e| throw(e.into()))?;
            batch.push(NewJob {
                name: j.name,
                data,
                options: job_options(j.opts).map_err(throw)?,
            });
        }
        let ids = self.q.add_bulk(batch).await.map_err(throw)?;
        Ok(ids.iter().map(|id| id.to_string()).collect())
    }

    /// Reads a job: JSON text of the job, or null when there is no such job.
    #[napi]
    pub async fn get(&self, id: String) -> napi::Result<Option<String>> {
        let job = self.q.get_str(&id).await.map_err(throw)?;
        Ok(job.map(|j| job_json(&j).to_string()))
    }

    /// Counts jobs per state.
    #[napi]
    pub async fn counts(&self) -> napi::Result<Counts> {
        let c = self.q.counts().await.map_err(throw)?;
        Ok(Counts {
            waiting: c.waiting as f64,
            paused: c.paused as f64,
            active: c.active as f64,
            delayed: c.delayed as f64,
            prioritized: c.prioritized as f64,
            completed: c.completed as f64,
            failed: c.failed as f64,
            stalled: c.stalled as f64,
            waiting_children: c.waiting_children as f64,
        })
    }

    #[napi]
    pub async fn pause(&self) -> napi::Result<()> {
        self.q.pause().await.map_err(throw)
    }

    #[napi]
    pub async fn resume(&self) -> napi::Result<()> {
        self.q.resume().await.map_err(throw)
    }

    #[napi]
    pub async fn is_paused(&self) -> napi::Result<bool> {
        self.q.is_paused().await.map_err(throw)
    }

    /// Removes a job that is not active; true when it existed.
    #[napi]
    pub async fn remove(&self, id: String) -> napi::Result<bool> {
        let id = JobId::parse(&id).map_err(throw)?;
        self.q.remove(id).await.map_err(throw)
    }

    /// Records a job's progress (JSON text).
    #[napi]
    pub async fn update_progress(&self, id: String, progress: String) -> napi::Result<()> {
        let id = JobId::parse(&id).map_err(throw)?;
        let v: Value = serde_json::from_str(&progress).map_err(|e| throw(e.into()))?;
        self.q.update_progress(id, &v).await.map_err(throw)
    }

    /// Appends a line to a job's log; returns the number of lines kept.
    #[napi]
    pub async fn log(&self, id: String, line: String) -> napi::Result<f64> {
        let id = JobId::parse(&id).map_err(throw)?;
        Ok(self.q.log(id, &line).await.map_err(throw)? as f64)
    }

    /// Releases the queue's node-id lease.
    #[napi]
    pub async fn close(&self) -> napi::Result<()> {
        self.q.close().await.map_err(throw)
    }

    /// Starts a worker on this queue around `handler` (`index.js` passes an adapter that takes the
    /// job as JSON text and resolves to `{"ok": result}` or `{"error": {...}}` JSON text).
    #[napi(async_runtime)]
    pub fn worker(
        &self,
        handler: JsHandlerFn,
        opts: Option<WorkerOpts>,
    ) -> napi::Result<NativeWorker> {
        let options = worker_options(opts).map_err(throw)?;
        let tsfn = Arc::new(RwLock::new(Some(Arc::new(handler))));
        let handle = emq::Worker::builder(self.q.clone())
            .options(options)
            .handler(JsHandler { tsfn: tsfn.clone() })
            .run()
            .map_err(throw)?;
        Ok(NativeWorker {
            handle: Mutex::new(Some(handle)),
            tsfn,
        })
    }
}

/// The JS function a worker calls: job JSON text in, a promise of outcome JSON text out. Strong
/// (it keeps the event loop alive while the worker runs); released by `close`.
pub type JsHandlerFn = ThreadsafeFunction<String, Promise<String>, String, Status, false, false, 0>;

type SharedFn = Arc<RwLock<Option<Arc<JsHandlerFn>>>>;

/// The core's handler around the JS function.
struct JsHandler {
    tsfn: SharedFn,
}

fn outcome(text: &str) -> HandlerResult {
    let v: Value = serde_json::from_str(text)
        .map_err(|e| HandlerError::new(format!("the handler's outcome is not JSON: {e}")))?;
    if let Some(err) = v.get("error") {
        let message = err
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("the handler failed")
            .to_string();
        let mut he = if err.get("unrecoverable").and_then(Value::as_bool) == Some(true) {
            HandlerError::unrecoverable(message)
        } else {
            HandlerError::new(message)
        };
        if let Some(code) = err.get("code").and_then(Value::as_str) {
            he = he.with_code(code);
        }
        if let Some(stack) = err.get("stack").and_then(Value::as_str) {
            he = he.with_stack(stack);
        }
        return Err(he);
    }
    Ok(v.get("ok").cloned().unwrap_or(Value::Null))
}

impl Handler for JsHandler {
    fn handle(&self, job: JobContext) -> BoxFuture<'static, HandlerResult> {
        let tsfn = self.tsfn.read().ok().and_then(|g| g.clone());
        let j = job.job();
        let payload = json!({
            "id": j.id.to_string(),
            "name": j.name,
            "data": j.data,
            "attemptsMade": j.attempts_made,
            "attempts": j.attempts,
        })
        .to_string();
        Box::pin(async move {
            let Some(tsfn) = tsfn else {
                return Err(HandlerError::new("the worker is closed").with_code("closed"));
            };
            // A synchronous throw comes back as Err (never a fatal exception)...
            let promise = tsfn
                .call_async_catch(payload)
                .await
                .map_err(|e| HandlerError::new(e.reason.clone()))?;
            // ...and so does a rejection (the adapter in index.js normally resolves instead).
            let text = promise
                .await
                .map_err(|e| HandlerError::new(e.reason.clone()))?;
            drop(tsfn);
            outcome(&text)
        })
    }
}

/// Options of a worker (times in milliseconds).
#[napi(object)]
pub struct WorkerOpts {
    pub concurrency: Option<f64>,
    pub lease: Option<f64>,
    pub stalled_interval: Option<f64>,
    pub max_stalls: Option<f64>,
    pub block_timeout: Option<f64>,
    pub shutdown_timeout: Option<f64>,
}

fn worker_options(o: Option<WorkerOpts>) -> emq::Result<WorkerOptions> {
    let mut out = WorkerOptions::default();
    let Some(o) = o else { return Ok(out) };
    if let Some(c) = o.concurrency {
        let c = whole("concurrency", c, 100_000)?;
        if c == 0 {
            return Err(invalid_option("concurrency must be at least 1"));
        }
        out.concurrency = c as usize;
    }
    let dur = |what: &str, v: Option<f64>| -> emq::Result<Option<Duration>> {
        Ok(ms(what, v)?.map(Duration::from_millis))
    };
    if let Some(d) = dur("lease", o.lease)? {
        out.lease = d;
    }
    if let Some(d) = dur("stalledInterval", o.stalled_interval)? {
        out.stalled_interval = d;
    }
    if let Some(m) = o.max_stalls {
        out.max_stalls = whole("maxStalls", m, u32::MAX as u64)? as u32;
    }
    if let Some(d) = dur("blockTimeout", o.block_timeout)? {
        out.block_timeout = d.max(Duration::from_millis(1));
    }
    if let Some(d) = dur("shutdownTimeout", o.shutdown_timeout)? {
        out.shutdown_deadline = d;
    }
    Ok(out)
}

/// Counters of a worker.
#[napi(object)]
pub struct WorkerStats {
    pub completed: f64,
    pub failed: f64,
    pub lease_lost: f64,
    pub recovered: f64,
    pub running: f64,
}

/// A running worker (wrapped by `Worker` in `index.js`).
#[napi]
pub struct NativeWorker {
    handle: Mutex<Option<WorkerHandle>>,
    tsfn: SharedFn,
}

#[napi]
impl NativeWorker {
    /// Its counters (zeros once closed).
    #[napi]
    pub fn stats(&self) -> WorkerStats {
        let guard = self.handle.lock().expect("worker handle");
        let (s, running) = guard
            .as_ref()
            .map(|h| (h.stats(), h.running()))
            .unwrap_or_default();
        WorkerStats {
            completed: s.completed as f64,
            failed: s.failed as f64,
            lease_lost: s.lease_lost as f64,
            recovered: s.recovered as f64,
            running: running as f64,
        }
    }

    /// Stops fetching, waits up to `timeout` ms (default: the worker's shutdownTimeout) for
    /// in-flight jobs, gives the rest back to wait, then releases the JS function so that the
    /// worker no longer keeps the process alive. Returns how many jobs were given back.
    #[napi]
    pub async fn close(&self, timeout: Option<f64>) -> napi::Result<f64> {
        let deadline = ms("timeout", timeout).map_err(throw)?;
        let handle = self.handle.lock().expect("worker handle").take();
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
        // Release the threadsafe function (handlers still holding a clone drop theirs as they end).
        if let Ok(mut g) = self.tsfn.write() {
            g.take();
        }
        result
    }
}

/// Every stable error code, for `index.js` and tests.
#[napi]
pub fn error_codes() -> Vec<String> {
    ErrorCode::ALL
        .iter()
        .map(|c| c.as_str().to_string())
        .collect()
}
