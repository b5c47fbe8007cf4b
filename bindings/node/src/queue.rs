//! [`NativeQueue`]: one queue's operations (wrapped by `Queue` in `node/src/queue.ts`): adds (one, a bulk
//! batch as one JSON string, a flow), reads, state changes, cleanup, schedulers and events (limits
//! and groups: `limits.rs`; dead letters: `dead_letters.rs`; children: `children.rs`).
//! Each method converts its arguments, calls the core, and converts the reply; values too rich for a
//! napi object cross as JSON text, which `node/src/queue.ts` parses.

use crate::add_line::AddLine;
use crate::events::{events_text, NativeEvents};
use crate::options::{
    invalid_option, job_options, parse_spec, payload, whole, BulkEntry, WorkerOpts,
};
use crate::worker::NativeWorker;
use crate::{throw, Result, Settled};
use emq::spec::{FlowSpec, ScheduleSpec};
use emq::{Job, JobId, JobOptions, JobState, NewJob, Queue, Schedule};
use napi::bindgen_prelude::Function;
use napi::Env;
use napi_derive::napi;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

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
pub(crate) fn job_json(j: &Job) -> Value {
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
        "parent": j.parent,
    })
}

fn state(text: &str) -> emq::Result<JobState> {
    JobState::parse(text).map_err(|_| {
        invalid_option(format!(
            "unknown job state {text:?}; one of {}",
            JobState::ALL.map(|s| s.as_str()).join(", ")
        ))
    })
}

pub(crate) fn parse_id(id: &str) -> Result<JobId> {
    JobId::parse(id).map_err(throw)
}

/// A handle on one queue.
#[napi]
pub struct NativeQueue {
    pub(crate) q: Queue,
    /// The way back of awaited one-job adds (`addStart`).
    adds: Arc<AddLine>,
}

impl NativeQueue {
    pub(crate) fn new(q: Queue) -> NativeQueue {
        NativeQueue {
            q,
            adds: Arc::default(),
        }
    }
}

#[napi]
impl NativeQueue {
    /// The queue's name.
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.q.name().to_string()
    }

    /// How many partitions the queue has (1: a plain queue).
    #[napi(getter)]
    pub fn partitions(&self) -> u32 {
        u32::from(self.q.partition_count())
    }

    /// Mints a job id now, to add later with `{ id }` (idempotent on that id).
    #[napi]
    pub fn mint_id(&self) -> Result<String> {
        Ok(self.q.mint_id().map_err(throw)?.to_string())
    }

    /// Where this queue's direct adds go (the core's `queue/direct.rs`): the host and port of a
    /// plain standalone server, or null.
    #[napi]
    pub fn direct_endpoint(&self) -> Option<crate::direct::DirectEndpoint> {
        self.q
            .direct_endpoint()
            .map(|(host, port)| crate::direct::DirectEndpoint {
                host,
                port: u32::from(port),
            })
    }

    /// The one call of a one-job add (payload JSON text, options as `addStart` takes them), for
    /// the JS event loop's own socket: `{ id, frame }`, or null when the add must go through
    /// `addStart` (the core decides). Bad input throws as `addStart` would.
    #[napi]
    pub fn direct_add(
        &self,
        name: String,
        data: String,
        opts: Option<String>,
    ) -> Result<Option<crate::direct::DirectCall>> {
        let options = job_options(opts.as_deref()).map_err(throw)?;
        let call = self.q.direct_add(&name, &data, &options).map_err(throw)?;
        Ok(call.map(|c| crate::direct::DirectCall {
            id: c.id.to_string(),
            frame: c.frame.into(),
        }))
    }

    /// Creates a batch in this queue's slot (`spec`: JSON text `{onComplete, onSuccess,
    /// description}`, each callback `{queue, name, data, opts}`).
    #[napi]
    pub async fn batch(&self, spec: String) -> Settled<crate::batch::NativeBatch> {
        Settled::of(async move {
            let options = crate::batch::batch_options(&spec).map_err(throw)?;
            let b = self.q.batch(options).await.map_err(throw)?;
            Ok(crate::batch::NativeBatch { b })
        })
        .await
    }

    /// A handle on batch `id` of `queue` (null: this queue).
    #[napi]
    pub fn open_batch(
        &self,
        id: String,
        queue: Option<String>,
    ) -> Result<crate::batch::NativeBatch> {
        crate::batch::open(&self.q, queue, &id)
    }

    /// Makes the handle's line for settled adds around `taker` (`node/src/add_line.ts`'s), which
    /// is called with a JSON array `[[seq, outcome], ...]`; once per handle, before `addStart`.
    #[napi]
    pub fn listen_adds(&self, taker: Function<'_, String, ()>) -> Result<()> {
        self.adds.listen(taker)
    }

    /// Starts adding a job whose payload is JSON text, its options (if any) the JSON of a
    /// `JobSpec` (as `addBulk` sends each job's); its outcome (id, or `!<code>:<message>`) comes
    /// back on the line under `seq`. Options are checked here, before anything is sent.
    #[napi(async_runtime)]
    pub fn add_start(
        &self,
        env: Env,
        seq: u32,
        name: String,
        data: String,
        opts: Option<String>,
    ) -> Result<()> {
        let options = job_options(opts.as_deref()).map_err(throw)?;
        self.adds.start(&env, &self.q, seq, name, data, options)
    }

    /// Adds the one-job adds that `Queue.add` collected in one turn of the JS event loop, in one
    /// crossing: each is its own `add` (same checks, own id, own outcome), started together so
    /// that the core's coalescer carries them to the datastore in shared calls. `opts[i]` is the
    /// JSON of job i's options, `""` for none. Outcome i is the job's id, or `!<code>:<message>`
    /// for a job that failed on its own (a job id never starts with `!`).
    #[napi]
    pub async fn add_many(
        &self,
        names: Vec<String>,
        data: Vec<String>,
        opts: Vec<String>,
    ) -> Settled<Vec<String>> {
        Settled::of(async move {
            if names.len() != data.len() || names.len() != opts.len() {
                return Err(throw(invalid_option(
                    "addMany: names, data and opts differ in length",
                )));
            }
            let adds = names
                .iter()
                .zip(&data)
                .zip(&opts)
                .map(|((name, data), opts)| async move {
                    let options = job_options((!opts.is_empty()).then_some(opts.as_str()))?;
                    self.q.add_json(name, data, options).await
                });
            let outcomes = futures::future::join_all(adds).await;
            Ok(outcomes
                .into_iter()
                .map(|o| match o {
                    Ok(id) => id.to_string(),
                    Err(e) => format!("!{}:{}", e.code().as_str(), e.message()),
                })
                .collect())
        })
        .await
    }

    /// Adds many jobs given as one JSON array of `{name, data, opts}`, in pipelined round trips;
    /// returns their ids in order, comma-separated.
    #[napi]
    pub async fn add_bulk_json(&self, jobs: String) -> Settled<String> {
        Settled::of(async move {
            // The payloads are held to the core's rule (`invalid_payload`): integers within 64 bits
            // here, depth and lone surrogates by the parse (the batch's array and object take two of
            // the 127 levels).
            emq::job::check_integer_widths("addBulk: a payload", &jobs).map_err(throw)?;
            let entries: Vec<BulkEntry> = parse_spec("addBulk", &jobs).map_err(throw)?;
            drop(jobs);
            let mut batch = Vec::with_capacity(entries.len());
            for (i, j) in entries.into_iter().enumerate() {
                batch.push(NewJob {
                    name: j.name,
                    data: payload(&format!("job {i}"), j.data).map_err(throw)?,
                    options: JobOptions::try_from(j.opts).map_err(throw)?,
                });
            }
            let ids = self.q.add_bulk(batch).await.map_err(throw)?;
            let mut out = String::with_capacity(ids.len() * 17);
            for (i, id) in ids.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&id.to_string());
            }
            Ok(out)
        })
        .await
    }

    /// Adds a flow (JSON of `{queue?, name, data, opts, children}`); returns its ids as JSON in
    /// the flow's shape.
    #[napi]
    pub async fn add_flow(&self, flow: String) -> Settled<String> {
        Settled::of(async move {
            emq::job::check_integer_widths("addFlow: a payload", &flow).map_err(throw)?;
            let spec: FlowSpec = parse_spec("addFlow", &flow).map_err(throw)?;
            let job = spec.into_flow(self.q.name().as_str()).map_err(throw)?;
            let ids = self.q.add_flow(job).await.map_err(throw)?;
            serde_json::to_string(&ids).map_err(|e| throw(e.into()))
        })
        .await
    }

    /// The results of a parent's children by `<queue>:<id>` (JSON object).
    #[napi]
    pub async fn children_results(&self, id: String) -> Settled<String> {
        Settled::of(async move {
            let id = parse_id(&id)?;
            let r = self.q.children_results(id).await.map_err(throw)?;
            serde_json::to_string(&r).map_err(|e| throw(e.into()))
        })
        .await
    }

    /// Reads a job: JSON text of the job, or null when there is no such job.
    #[napi]
    pub async fn get(&self, id: String) -> Settled<Option<String>> {
        Settled::of(async move {
            let job = self.q.get_str(&id).await.map_err(throw)?;
            Ok(job.map(|j| job_json(&j).to_string()))
        })
        .await
    }

    /// Jobs in one state, a page at a time (JSON array).
    #[napi]
    pub async fn list(&self, state_name: String, offset: f64, limit: f64) -> Settled<String> {
        Settled::of(async move {
            let st = state(&state_name).map_err(throw)?;
            let offset = whole("offset", offset, u32::MAX as u64).map_err(throw)?;
            let limit = whole("limit", limit, 100_000).map_err(throw)?;
            let jobs = self.q.list(st, offset, limit).await.map_err(throw)?;
            Ok(Value::Array(jobs.iter().map(job_json).collect()).to_string())
        })
        .await
    }

    /// Counts jobs per state.
    #[napi]
    pub async fn counts(&self) -> Settled<Counts> {
        Settled::of(async move {
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
        })
        .await
    }

    #[napi]
    pub async fn pause(&self) -> Settled<()> {
        Settled::of(async move { self.q.pause().await.map_err(throw) }).await
    }

    /// Grows the partitioned queue to `count` partitions, online (a whole number; its bounds are
    /// the core's).
    #[napi]
    pub async fn grow_partitions(&self, count: f64) -> Settled<u32> {
        Settled::of(async move {
            let n = if count < 0.0 && count.fract() == 0.0 && count.is_finite() {
                count as i128
            } else {
                i128::from(crate::options::whole("partitions", count, u64::MAX).map_err(throw)?)
            };
            Ok(u32::from(self.q.grow_partitions(n).await.map_err(throw)?))
        })
        .await
    }

    #[napi]
    pub async fn resume(&self) -> Settled<()> {
        Settled::of(async move { self.q.resume().await.map_err(throw) }).await
    }

    #[napi]
    pub async fn is_paused(&self) -> Settled<bool> {
        Settled::of(async move { self.q.is_paused().await.map_err(throw) }).await
    }

    /// Removes a job that is not active; true when it existed.
    #[napi]
    pub async fn remove(&self, id: String) -> Settled<bool> {
        Settled::of(async move {
            let id = parse_id(&id)?;
            self.q.remove(id).await.map(|m| m.is_moved()).map_err(throw)
        })
        .await
    }

    /// Sends a failed job back to wait; false when it is not failed.
    #[napi]
    pub async fn retry(&self, id: String) -> Settled<bool> {
        Settled::of(async move {
            let id = parse_id(&id)?;
            self.q.retry(id).await.map(|m| m.is_moved()).map_err(throw)
        })
        .await
    }

    /// Retries every failed job; returns how many.
    #[napi]
    pub async fn retry_failed(&self) -> Settled<f64> {
        Settled::of(async move { Ok(self.q.retry_failed().await.map_err(throw)? as f64) }).await
    }

    /// Runs a delayed job now; false when it is not delayed.
    #[napi]
    pub async fn promote(&self, id: String) -> Settled<bool> {
        Settled::of(async move {
            let id = parse_id(&id)?;
            self.q
                .promote(id)
                .await
                .map(|m| m.is_moved())
                .map_err(throw)
        })
        .await
    }

    /// Gives a job that has not finished a new priority (0: none); false when there is no such
    /// job or it has finished.
    #[napi]
    pub async fn change_priority(&self, id: String, priority: f64) -> Settled<bool> {
        Settled::of(async move {
            let id = parse_id(&id)?;
            let priority =
                crate::options::whole("priority", priority, u32::MAX as u64).map_err(throw)?;
            self.q
                .change_priority(id, priority as u32)
                .await
                .map(|m| m.is_moved())
                .map_err(throw)
        })
        .await
    }

    /// Removes every waiting, paused and prioritized job (and delayed ones with `delayed`).
    #[napi]
    pub async fn drain(&self, delayed: bool) -> Settled<f64> {
        Settled::of(async move { Ok(self.q.drain(delayed).await.map_err(throw)? as f64) }).await
    }

    /// Removes up to `limit` completed or failed jobs finished more than `grace` ms ago.
    #[napi]
    pub async fn clean(&self, state_name: String, grace: f64, limit: f64) -> Settled<f64> {
        Settled::of(async move {
            let st = state(&state_name).map_err(throw)?;
            let grace = emq::options::millis("grace", grace).map_err(throw)?;
            let limit = whole("limit", limit, u32::MAX as u64).map_err(throw)?;
            let n = self
                .q
                .clean(st, Duration::from_millis(grace), limit)
                .await
                .map_err(throw)?;
            Ok(n as f64)
        })
        .await
    }

    /// Deletes the whole queue; refuses while jobs are active unless `force`.
    #[napi]
    pub async fn obliterate(&self, force: bool) -> Settled<f64> {
        Settled::of(async move { Ok(self.q.obliterate(force).await.map_err(throw)? as f64) }).await
    }

    /// Records a job's progress (JSON text).
    #[napi]
    pub async fn update_progress(&self, id: String, progress: String) -> Settled<()> {
        Settled::of(async move {
            let id = parse_id(&id)?;
            let v: Value = serde_json::from_str(&progress).map_err(|e| throw(e.into()))?;
            self.q.update_progress(id, &v).await.map_err(throw)
        })
        .await
    }

    /// Appends a line to a job's log; returns the number of lines kept.
    #[napi]
    pub async fn log(&self, id: String, line: String) -> Settled<f64> {
        Settled::of(async move {
            let id = parse_id(&id)?;
            Ok(self.q.log(id, &line).await.map_err(throw)? as f64)
        })
        .await
    }

    /// A job's log lines, oldest first.
    #[napi]
    pub async fn logs(&self, id: String) -> Settled<Vec<String>> {
        Settled::of(async move {
            let id = parse_id(&id)?;
            self.q.logs(id).await.map_err(throw)
        })
        .await
    }

    /// Creates or replaces the scheduler `id` (spec as JSON); true when it was created.
    #[napi]
    pub async fn upsert_scheduler(&self, id: String, spec: String) -> Settled<bool> {
        Settled::of(async move {
            let s: ScheduleSpec = parse_spec("upsertScheduler", &spec).map_err(throw)?;
            let schedule = Schedule::try_from(s).map_err(throw)?;
            self.q.upsert_scheduler(&id, schedule).await.map_err(throw)
        })
        .await
    }

    /// Deletes the scheduler `id`; true when it existed.
    #[napi]
    pub async fn remove_scheduler(&self, id: String) -> Settled<bool> {
        Settled::of(async move { self.q.remove_scheduler(&id).await.map_err(throw) }).await
    }

    /// Every scheduler of the queue: a JSON array of the core's `SchedulerView` (ms, snake_case
    /// names; `node/src/queue.ts` gives them JavaScript's case).
    #[napi]
    pub async fn schedulers(&self) -> Settled<String> {
        Settled::of(async move {
            let all = self.q.schedulers().await.map_err(throw)?;
            let out: Vec<_> = all.iter().map(emq::SchedulerInfo::view).collect();
            serde_json::to_string(&out).map_err(|e| throw(e.into()))
        })
        .await
    }

    /// Follows the queue's events from now on (or after a stream id).
    #[napi]
    pub async fn events(&self, after: Option<String>) -> Settled<NativeEvents> {
        Settled::of(async move {
            let stream = self.q.events(after).await.map_err(throw)?;
            Ok(NativeEvents::new(stream))
        })
        .await
    }

    /// The newest `limit` events, oldest first (JSON array).
    #[napi]
    pub async fn recent_events(&self, limit: f64) -> Settled<String> {
        Settled::of(async move {
            let limit = whole("limit", limit, 100_000).map_err(throw)?;
            let events = self.q.recent_events(limit as usize).await.map_err(throw)?;
            Ok(events_text(&events))
        })
        .await
    }

    /// Copies the BullMQ (or EchoMQ 1.x) queue `<fromPrefix>:<sourceQueue>` into this queue (see
    /// `emq migrate`); the report as JSON (the core's `MigrateReport`).
    #[napi]
    pub async fn migrate_from_bullmq(
        &self,
        source_queue: String,
        from_prefix: String,
        dry_run: bool,
        completed: bool,
        delete_source: bool,
        batch: f64,
    ) -> Settled<String> {
        Settled::of(async move {
            let mut o = emq::migrate::MigrateOptions::new(from_prefix, source_queue);
            o.dry_run = dry_run;
            o.completed = completed;
            o.delete_source = delete_source;
            o.batch = whole("batch", batch, 10_000).map_err(throw)? as usize;
            let report = self.q.migrate_from_bullmq(&o).await.map_err(throw)?;
            serde_json::to_string(&report).map_err(|e| throw(e.into()))
        })
        .await
    }

    /// The queue's metrics (JSON).
    #[napi]
    pub async fn metrics(&self) -> Settled<String> {
        Settled::of(async move {
            let m = self.q.metrics().await.map_err(throw)?;
            let c = &m.counts;
            Ok(json!({
                "queue": m.queue,
                "counts": {
                    "waiting": c.waiting, "paused": c.paused, "active": c.active,
                    "delayed": c.delayed, "prioritized": c.prioritized, "completed": c.completed,
                    "failed": c.failed, "stalled": c.stalled, "waitingChildren": c.waiting_children,
                },
                "completedPerMinute": m.completed_per_minute,
                "failedPerMinute": m.failed_per_minute,
                "added": m.added,
                "deleted": m.deleted,
                "leaseLost": m.lease_lost,
                "stalled": m.stalled,
                "run": histogram(&m.run),
                "wait": histogram(&m.wait),
                "runPerMinute": m.run_per_minute.iter().map(|(at, h)| json!([at, histogram(h)])).collect::<Vec<_>>(),
                "waitPerMinute": m.wait_per_minute.iter().map(|(at, h)| json!([at, histogram(h)])).collect::<Vec<_>>(),
                "latencyBucketsMs": emq::latency::LATENCY_BUCKETS_MS,
            })
            .to_string())
        })
        .await
    }

    /// Cancels a job: 'cancelled' (it was waiting or delayed and will not run), 'requested' (it is
    /// running: its worker aborts the handler's signal, and the job ends failed with the code
    /// `cancelled`), 'finished' (too late) or 'not_found'.
    #[napi]
    pub async fn cancel(&self, id: String, reason: String) -> Settled<String> {
        Settled::of(async move {
            let id = parse_id(&id)?;
            self.q
                .cancel(id, &reason)
                .await
                .map(|o| o.as_str().to_string())
                .map_err(throw)
        })
        .await
    }

    /// Waits up to `timeout` ms for a job to finish: JSON `{"ok":true,"result":…}` or
    /// `{"ok":false,"failure":{code,message,stack}}`; a timeout throws with the code `timeout`.
    #[napi]
    pub async fn wait(&self, id: String, timeout: f64) -> Settled<String> {
        Settled::of(async move {
            let id = parse_id(&id)?;
            let t = emq::options::millis("timeout", timeout).map_err(throw)?;
            let out = match self
                .q
                .wait(id, Duration::from_millis(t))
                .await
                .map_err(throw)?
            {
                Ok(result) => json!({ "ok": true, "result": result }),
                Err(f) => json!({ "ok": false, "failure": f }),
            };
            Ok(out.to_string())
        })
        .await
    }

    /// The live workers of this queue, as JSON (camelCase keys).
    #[napi]
    pub async fn workers(&self) -> Settled<String> {
        Settled::of(async move {
            let list = self.q.workers().await.map_err(throw)?;
            let out: Vec<Value> = list
                .iter()
                .map(|w| {
                    json!({
                        "id": w.id,
                        "queue": w.queue,
                        "host": w.host,
                        "pid": w.pid,
                        "language": w.language,
                        "concurrency": w.concurrency,
                        "running": w.running,
                        "version": w.version,
                        "startedMs": w.started_ms,
                        "beatMs": w.beat_ms,
                        "lapseMs": w.lapse_ms,
                    })
                })
                .collect();
            Ok(Value::Array(out).to_string())
        })
        .await
    }

    /// Releases the queue's node-id lease.
    #[napi]
    pub async fn close(&self) -> Settled<()> {
        Settled::of(async move { self.q.close().await.map_err(throw) }).await
    }

    /// Starts a worker on this queue around `dispatcher` (`node/src/dispatcher.ts`'s, which takes a JSON array
    /// of jobs and settles each through the worker's `complete` / `fail`); the worker's events go
    /// to `on_events` (a JSON array of events at a time).
    #[napi(async_runtime)]
    pub fn worker(
        &self,
        dispatcher: Function<'_, String, ()>,
        on_events: Function<'_, String, ()>,
        opts: Option<WorkerOpts>,
    ) -> Result<NativeWorker> {
        crate::worker::start(vec![self.q.clone()], dispatcher, on_events, opts)
    }
}

/// A latency histogram as Node reads it: the counts per bucket of `latencyBucketsMs` (and one
/// above them) and the sum in ms.
fn histogram(h: &emq::latency::Histogram) -> serde_json::Value {
    json!({ "counts": h.counts, "sumMs": h.sum_ms })
}
