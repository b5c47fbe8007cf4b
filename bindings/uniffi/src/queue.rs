//! A handle on one queue: every queue operation, each converting its arguments into the core's
//! types and running the core's call on the binding's runtime.

use crate::connect::TlsFiles;
use crate::error::{invalid_option, EmqException};
use crate::events::{Event, EventStream};
use crate::flow::{FlowIds, FlowJob};
use crate::handler::JobHandler;
use crate::job::{Counts, JobRecord, JobState};
use crate::metrics::QueueMetrics;
use crate::options::{json, JobOptions, NewJob, RateLimit, Retention};
use crate::runtime::{on_runtime, runtime};
use crate::schedule::{Schedule, SchedulerInfo};
use crate::worker::{WorkerHandle, WorkerInfo};
pub use emq::GroupInfo;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// A handle on one queue.
#[derive(uniffi::Object)]
pub struct Queue {
    pub(crate) inner: emq::Queue,
}

#[uniffi::export(async_runtime = "tokio")]
impl Queue {
    /// Connects to the datastore at `url` and opens the queue `name`; `tls` for `rediss://` (a
    /// private CA, a client certificate for mutual TLS); `partitions` (1 to 256) spreads the
    /// queue over that many slots, stored as the queue's count the first time (without it: the
    /// stored count, else a plain queue).
    #[uniffi::constructor(default(tls = None, partitions = None))]
    pub async fn connect(
        url: String,
        name: String,
        tls: Option<TlsFiles>,
        partitions: Option<i64>,
    ) -> Result<Arc<Queue>, EmqException> {
        Queue::connect_seeds(vec![url], name, tls, partitions).await
    }

    /// Connects to a cluster through several seed URLs (or to one URL) and opens the queue `name`.
    #[uniffi::constructor(default(tls = None, partitions = None))]
    pub async fn connect_seeds(
        urls: Vec<String>,
        name: String,
        tls: Option<TlsFiles>,
        partitions: Option<i64>,
    ) -> Result<Arc<Queue>, EmqException> {
        // The name and the options are checked first, so a bad one fails without a server.
        emq::QueueName::new(&name)?;
        if urls.is_empty() {
            return Err(invalid_option("at least one datastore URL is needed"));
        }
        let queue = emq::QueueOptions::with_partitions(partitions.map(i128::from))?;
        let options = crate::connect::options(urls, tls)?;
        let inner =
            on_runtime(async move { emq::Queue::connect_with(options, &name, queue).await })
                .await?;
        Ok(Arc::new(Queue { inner }))
    }

    /// The queue's name.
    pub fn name(&self) -> String {
        self.inner.name().to_string()
    }

    /// How many partitions the queue has (1: a plain queue).
    pub fn partitions(&self) -> u16 {
        self.inner.partition_count()
    }

    /// Adds a job with a JSON payload; returns its id.
    #[uniffi::method(default(options = None))]
    pub async fn add(
        &self,
        name: String,
        data_json: String,
        options: Option<JobOptions>,
    ) -> Result<String, EmqException> {
        let opts = options.unwrap_or_default().to_core()?;
        let q = self.inner.clone();
        let id = on_runtime(async move { q.add_json(&name, &data_json, opts).await }).await?;
        Ok(id.to_string())
    }

    /// Adds many jobs (a few hundred per script call, the calls pipelined); returns their ids in
    /// order (a deduplicated job's id is the holder's).
    pub async fn add_bulk(&self, jobs: Vec<NewJob>) -> Result<Vec<String>, EmqException> {
        let jobs = jobs
            .iter()
            .map(NewJob::to_core)
            .collect::<Result<Vec<_>, _>>()?;
        let q = self.inner.clone();
        let ids = on_runtime(async move { q.add_bulk(jobs).await }).await?;
        Ok(ids.iter().map(|id| id.to_string()).collect())
    }

    /// Adds a flow: the parent waits (in `WaitingChildren`) until every child is done, then runs.
    /// Idempotent per id. Returns the ids in the flow's shape.
    pub async fn add_flow(&self, flow: FlowJob) -> Result<FlowIds, EmqException> {
        let flow = flow.to_core(self.inner.name().as_str())?;
        let q = self.inner.clone();
        on_runtime(async move { q.add_flow(flow).await }).await
    }

    /// Adds a child job (JSON payload text) to `queue` for `parent`, a job of this queue waiting
    /// for its children (a flow's parent, or a job whose run added children): it waits for this
    /// one too. Returns the child's id. `InvalidState` when the parent is not waiting for children
    /// (the child is not added), `JobNotFound` when there is no such job, `InvalidOption` for a
    /// dedup key.
    #[uniffi::method(default(options = None))]
    pub async fn add_child(
        &self,
        parent: String,
        queue: String,
        name: String,
        data_json: String,
        options: Option<JobOptions>,
    ) -> Result<String, EmqException> {
        let parent = emq::JobId::parse(&parent)?;
        let opts = options.unwrap_or_default().to_core()?;
        let data: serde_json::Value = serde_json::from_str(&data_json)
            .map_err(|e| EmqException::from(emq::Error::from(e)))?;
        let q = self.inner.clone();
        let id =
            on_runtime(async move { q.add_child(parent, &queue, &name, data, opts).await }).await?;
        Ok(id.to_string())
    }

    /// The results of a parent's children as JSON text, by `<queue>:<id>` (a failed child under
    /// the `Ignore` policy reads as `{"failed": …}`).
    pub async fn children_results(
        &self,
        parent: String,
    ) -> Result<HashMap<String, String>, EmqException> {
        let parent = emq::JobId::parse(&parent)?;
        let q = self.inner.clone();
        let results = on_runtime(async move { q.children_results(parent).await }).await?;
        Ok(results
            .into_iter()
            .map(|(k, v)| (k, v.to_string()))
            .collect())
    }

    /// Records a job's progress (JSON text) and announces it on the events stream;
    /// `JobNotFound` when there is no such job.
    pub async fn update_progress(
        &self,
        id: String,
        progress_json: String,
    ) -> Result<(), EmqException> {
        let id = emq::JobId::parse(&id)?;
        let progress = json(&progress_json)?;
        // A run of this process's workers: through its context, which also reports the progress
        // to the worker's events (crate::handler::running).
        if let Some(ctx) = crate::handler::running(id) {
            return on_runtime(async move { ctx.progress(progress).await }).await;
        }
        let q = self.inner.clone();
        on_runtime(async move { q.update_progress(id, &progress).await }).await
    }

    /// Appends a line to a job's log; returns the number of lines kept. `JobNotFound` when there
    /// is no such job.
    pub async fn log(&self, id: String, line: String) -> Result<u64, EmqException> {
        let id = emq::JobId::parse(&id)?;
        let q = self.inner.clone();
        on_runtime(async move { q.log(id, &line).await }).await
    }

    /// The queue's metrics: counts, jobs finished per minute, lifetime counters.
    pub async fn metrics(&self) -> Result<QueueMetrics, EmqException> {
        let q = self.inner.clone();
        Ok(on_runtime(async move { q.metrics().await }).await?.into())
    }

    /// Follows the queue's events from now on, or after the stream id `after`.
    #[uniffi::method(default(after = None))]
    pub async fn events(&self, after: Option<String>) -> Result<Arc<EventStream>, EmqException> {
        let q = self.inner.clone();
        let stream = on_runtime(async move { q.events(after).await }).await?;
        Ok(Arc::new(EventStream::new(stream)))
    }

    /// The newest `limit` events, oldest first, without waiting.
    #[uniffi::method(default(limit = 100))]
    pub async fn recent_events(&self, limit: u32) -> Result<Vec<Event>, EmqException> {
        let q = self.inner.clone();
        on_runtime(async move { q.recent_events(limit as usize).await }).await
    }

    /// Releases the queue's node-id lease: it (and the queues opened from it) can add no more
    /// jobs. Kotlin names it `shutdown()`: its objects are `AutoCloseable`, whose `close()`
    /// destroys the handle.
    pub async fn close(&self) -> Result<(), EmqException> {
        let q = self.inner.clone();
        on_runtime(async move { q.close().await }).await
    }

    /// Mints a job id now, to add later with `JobOptions(id = …)`: adding the same id twice adds
    /// one job, so an add retried after a crash or a lost reply cannot duplicate it.
    pub fn mint_id(&self) -> Result<String, EmqException> {
        let _guard = runtime().enter();
        Ok(self.inner.mint_id()?.to_string())
    }

    /// Cancels a job. One that has not run yet (waiting, delayed, prioritized, paused, …) does not
    /// run: it is failed at once with the failure code `cancelled` and the reason in its message,
    /// not retried (`"cancelled"`). A running one's handler coroutine is cancelled at once, and
    /// once it has stopped the job is failed the same way (`"requested"`). Returns `"finished"`
    /// for a job that had completed or failed (left as it is), `"not_found"` when there is none.
    #[uniffi::method(default(reason = ""))]
    pub async fn cancel(&self, id: String, reason: String) -> Result<String, EmqException> {
        let id = emq::JobId::parse(&id)?;
        let q = self.inner.clone();
        on_runtime(async move { q.cancel(id, &reason).await.map(|o| o.as_str().to_string()) }).await
    }

    /// Waits up to `timeout_ms` for a job to finish, also one that finished before the call:
    /// returns its result as JSON text; throws `JobFailed` when it failed for good (code
    /// `HandlerFailed`; the failure's code, message and stack — when the handler's language gave
    /// one — as the fields `failureCode`, `reason` and `stack`; a cancelled job's failure code is
    /// `cancelled`), `Failed` with code `Timeout` when it did not finish in time, `JobNotFound`
    /// when there is no such job.
    pub async fn wait(&self, id: String, timeout_ms: f64) -> Result<String, EmqException> {
        let id = emq::JobId::parse(&id)?;
        let timeout = Duration::from_millis(emq::options::millis("timeout_ms", timeout_ms)?);
        let q = self.inner.clone();
        match on_runtime(async move { q.wait(id, timeout).await }).await? {
            Ok(result) => Ok(result.to_string()),
            Err(failure) => Err(crate::error::job_failed(failure)),
        }
    }

    /// The live workers of this queue, in every language, soonest registration lapse first.
    pub async fn workers(&self) -> Result<Vec<WorkerInfo>, EmqException> {
        let q = self.inner.clone();
        let list = on_runtime(async move { q.workers().await }).await?;
        Ok(list.into_iter().map(WorkerInfo::from).collect())
    }

    /// Reads a job; null when there is no such job.
    pub async fn get(&self, id: String) -> Result<Option<JobRecord>, EmqException> {
        let q = self.inner.clone();
        let job = on_runtime(async move { q.get_str(&id).await }).await?;
        Ok(job.as_ref().map(JobRecord::from))
    }

    /// Counts jobs per state.
    pub async fn counts(&self) -> Result<Counts, EmqException> {
        let q = self.inner.clone();
        on_runtime(async move { q.counts().await }).await
    }

    /// Sends a failed job back to wait with its attempts reset; false when it is not failed.
    pub async fn retry(&self, id: String) -> Result<bool, EmqException> {
        let id = emq::JobId::parse(&id)?;
        let q = self.inner.clone();
        on_runtime(async move { q.retry(id).await.map(|m| m.is_moved()) }).await
    }

    /// Runs a delayed job now; false when it is not delayed.
    pub async fn promote(&self, id: String) -> Result<bool, EmqException> {
        let id = emq::JobId::parse(&id)?;
        let q = self.inner.clone();
        on_runtime(async move { q.promote(id).await.map(|m| m.is_moved()) }).await
    }

    /// Deletes a job that is not active; false when there is no such job.
    pub async fn remove(&self, id: String) -> Result<bool, EmqException> {
        let id = emq::JobId::parse(&id)?;
        let q = self.inner.clone();
        on_runtime(async move { q.remove(id).await.map(|m| m.is_moved()) }).await
    }

    /// Gives a job that has not finished a new priority (0: none, lower runs first); false when
    /// there is no such job or it has finished. A waiting job moves at once; a delayed one when due.
    pub async fn change_priority(&self, id: String, priority: i32) -> Result<bool, EmqException> {
        let id = emq::JobId::parse(&id)?;
        let priority = emq::spec::whole("priority", priority as f64, u32::MAX as u64)? as u32;
        let q = self.inner.clone();
        on_runtime(async move { q.change_priority(id, priority).await.map(|m| m.is_moved()) }).await
    }

    /// A job's log lines, oldest first.
    pub async fn logs(&self, id: String) -> Result<Vec<String>, EmqException> {
        let id = emq::JobId::parse(&id)?;
        let q = self.inner.clone();
        on_runtime(async move { q.logs(id).await }).await
    }

    /// Jobs in one state, a page at a time (waiting states oldest first; completed and failed
    /// newest first).
    #[uniffi::method(default(offset = 0, limit = 100))]
    pub async fn list(
        &self,
        state: JobState,
        offset: u64,
        limit: u64,
    ) -> Result<Vec<JobRecord>, EmqException> {
        let q = self.inner.clone();
        let jobs = on_runtime(async move { q.list(state, offset, limit).await }).await?;
        Ok(jobs.iter().map(JobRecord::from).collect())
    }

    /// Sets (or with null clears) this queue's default dead-letter queue: its jobs without a
    /// `deadLetter` option of their own move there, as new waiting jobs, once they fail for good.
    pub async fn set_dead_letter(&self, queue: Option<String>) -> Result<(), EmqException> {
        let q = self.inner.clone();
        on_runtime(async move { q.set_dead_letter(queue.as_deref()).await }).await
    }

    /// This queue's default dead-letter queue, or null.
    pub async fn dead_letter(&self) -> Result<Option<String>, EmqException> {
        let q = self.inner.clone();
        on_runtime(async move { q.dead_letter().await }).await
    }

    /// The dead-lettered jobs this queue holds, as JSON text: `[{id, name, state, origin}]`.
    #[uniffi::method(default(limit = 100))]
    pub async fn dead_letters_json(&self, limit: u64) -> Result<String, EmqException> {
        let q = self.inner.clone();
        on_runtime(async move {
            let jobs = q.dead_letters(limit).await?;
            let out: Vec<serde_json::Value> = jobs
                .iter()
                .map(|j| {
                    serde_json::json!({
                        "id": j.id, "name": j.name, "state": j.state.map(|s| s.as_str()),
                        "origin": j.dead_letter_origin(),
                    })
                })
                .collect();
            Ok(serde_json::Value::Array(out).to_string())
        })
        .await
    }

    /// Sends dead-lettered jobs (`ids`, or with null every one) back to their queues with their
    /// attempts reset, and removes them here.
    #[uniffi::method(default(ids = None))]
    pub async fn replay_dead_letters(
        &self,
        ids: Option<Vec<String>>,
    ) -> Result<Vec<emq::Replayed>, EmqException> {
        let q = self.inner.clone();
        on_runtime(async move {
            let ids = ids
                .map(|v| {
                    v.iter()
                        .map(|i| emq::JobId::parse(i))
                        .collect::<emq::Result<Vec<_>>>()
                })
                .transpose()?;
            q.replay_dead_letters(ids.as_deref()).await
        })
        .await
    }

    /// Retries every failed job; returns how many.
    pub async fn retry_failed(&self) -> Result<u64, EmqException> {
        let q = self.inner.clone();
        on_runtime(async move { q.retry_failed().await }).await
    }

    /// Removes every waiting, paused and prioritized job (and the delayed ones with `delayed`);
    /// returns how many.
    #[uniffi::method(default(delayed = false))]
    pub async fn drain(&self, delayed: bool) -> Result<u64, EmqException> {
        let q = self.inner.clone();
        on_runtime(async move { q.drain(delayed).await }).await
    }

    /// Removes up to `limit` completed or failed jobs that finished more than `grace_ms` ago;
    /// returns how many. Any other state is an `InvalidOption`.
    #[uniffi::method(default(grace_ms = 0.0, limit = 1000))]
    pub async fn clean(
        &self,
        state: JobState,
        grace_ms: f64,
        limit: u64,
    ) -> Result<u64, EmqException> {
        let grace = Duration::from_millis(emq::options::millis("grace_ms", grace_ms)?);
        let q = self.inner.clone();
        on_runtime(async move { q.clean(state, grace, limit).await }).await
    }

    /// Deletes the whole queue, every job and key; refuses (`InvalidState`) while jobs are active
    /// unless `force`. Returns how many jobs it removed.
    #[uniffi::method(default(force = false))]
    pub async fn obliterate(&self, force: bool) -> Result<u64, EmqException> {
        let q = self.inner.clone();
        on_runtime(async move { q.obliterate(force).await }).await
    }

    /// Grows this partitioned queue to `count` partitions while producers and workers run;
    /// returns the count now. Jobs with a group, a dedup key or an id of their own keep their
    /// partition; each worker restarts itself over the grown queue within about a second.
    /// `InvalidOption` for a plain queue, or a count not above the present one or above 256.
    pub async fn grow_partitions(&self, count: i64) -> Result<u16, EmqException> {
        let q = self.inner.clone();
        on_runtime(async move { q.grow_partitions(count).await }).await
    }

    /// Stops handing out jobs (adds still land, in paused).
    pub async fn pause(&self) -> Result<(), EmqException> {
        let q = self.inner.clone();
        on_runtime(async move { q.pause().await }).await
    }

    /// True while paused.
    pub async fn is_paused(&self) -> Result<bool, EmqException> {
        let q = self.inner.clone();
        on_runtime(async move { q.is_paused().await }).await
    }

    /// Hands out jobs again.
    pub async fn resume(&self) -> Result<(), EmqException> {
        let q = self.inner.clone();
        on_runtime(async move { q.resume().await }).await
    }

    /// At most `max` jobs of this queue active at once across all workers (null lifts it).
    pub async fn set_global_concurrency(&self, max: Option<u32>) -> Result<(), EmqException> {
        let q = self.inner.clone();
        on_runtime(async move { q.set_global_concurrency(max).await }).await
    }

    /// At most `max` jobs start per `window_ms` (null lifts it).
    pub async fn set_rate_limit(&self, limit: Option<RateLimit>) -> Result<(), EmqException> {
        let limit: Option<emq::RateLimit> =
            limit.map(|l| l.to_spec()).unwrap_or_default().try_into()?;
        let q = self.inner.clone();
        on_runtime(async move { q.set_rate_limit(limit).await }).await
    }

    /// Each job group (the `group` option) starts at most `max` jobs per `window_ms`, every group
    /// on its own (null lifts it).
    pub async fn set_group_rate_limit(&self, limit: Option<RateLimit>) -> Result<(), EmqException> {
        let limit: Option<emq::GroupRateLimit> =
            limit.map(|l| l.to_spec()).unwrap_or_default().try_into()?;
        let q = self.inner.clone();
        on_runtime(async move { q.set_group_rate_limit(limit).await }).await
    }

    /// Sets a group's weight, 1 to 1000 (every group's is 1 unless set): while groups have work,
    /// one of weight 3 runs three jobs for each job of a group of weight 1.
    pub async fn set_group_weight(&self, group: String, weight: u32) -> Result<(), EmqException> {
        let q = self.inner.clone();
        on_runtime(async move { q.set_group_weight(&group, weight).await }).await
    }

    /// At most `limit` jobs of `group` (null: by default, of every group) running at once across
    /// all workers; a group's own cap wins over the default. A null `limit` lifts it.
    #[uniffi::method(default(group = None))]
    pub async fn set_group_concurrency(
        &self,
        limit: Option<u32>,
        group: Option<String>,
    ) -> Result<(), EmqException> {
        let q = self.inner.clone();
        on_runtime(async move { q.set_group_concurrency(limit, group.as_deref()).await }).await
    }

    /// At most `limit` jobs of `group` (null: by default, of every group) waiting to run; an add
    /// past it fails with the code `GROUP_FULL` and writes nothing. A null `limit` lifts it.
    #[uniffi::method(default(group = None))]
    pub async fn set_group_max_waiting(
        &self,
        limit: Option<u64>,
        group: Option<String>,
    ) -> Result<(), EmqException> {
        let q = self.inner.clone();
        on_runtime(async move { q.set_group_max_waiting(limit, group.as_deref()).await }).await
    }

    /// Stops handing out jobs of `group`; its jobs keep waiting (and adds still land) while the
    /// rest of the queue runs.
    pub async fn pause_group(&self, group: String) -> Result<(), EmqException> {
        let q = self.inner.clone();
        on_runtime(async move { q.pause_group(&group).await }).await
    }

    /// Hands out jobs of a paused group again.
    pub async fn resume_group(&self, group: String) -> Result<(), EmqException> {
        let q = self.inner.clone();
        on_runtime(async move { q.resume_group(&group).await }).await
    }

    /// One page of the queue's groups, ordered by name: `limit` (at most 10,000) after the first
    /// `offset`. A group is listed while it has jobs waiting or running or a setting of its own.
    #[uniffi::method(default(offset = 0, limit = 100))]
    pub async fn groups(&self, offset: u64, limit: u64) -> Result<Vec<GroupInfo>, EmqException> {
        let q = self.inner.clone();
        on_runtime(async move { q.groups(offset, limit).await }).await
    }

    /// Creates or replaces the job scheduler `id` (data, never a key); true when created.
    pub async fn upsert_scheduler(
        &self,
        id: String,
        schedule: Schedule,
    ) -> Result<bool, EmqException> {
        let schedule = schedule.to_core()?;
        let q = self.inner.clone();
        on_runtime(async move { q.upsert_scheduler(&id, schedule).await }).await
    }

    /// Deletes the job scheduler `id`; true when it existed.
    pub async fn remove_scheduler(&self, id: String) -> Result<bool, EmqException> {
        let q = self.inner.clone();
        on_runtime(async move { q.remove_scheduler(&id).await }).await
    }

    /// The queue's job schedulers.
    pub async fn schedulers(&self) -> Result<Vec<SchedulerInfo>, EmqException> {
        let q = self.inner.clone();
        on_runtime(async move { q.schedulers().await }).await
    }

    /// Starts a worker running `handler` on this queue, `concurrency` jobs at once, with leases of
    /// `lease_ms`. `shutdown_timeout_ms`: the grace period of a graceful close (running handlers
    /// may finish within it; then they are cancelled and their jobs go back to waiting, the
    /// attempt not counted). `stalled_interval_ms`: how often the stalled-job sweep runs;
    /// `max_stalls`: stalls a job may have before it fails; `block_timeout_ms`: the longest
    /// single wait for work; `completed` / `failed`: the queue-wide retention of finished jobs
    /// (null: the newest 1,000 completed for a day, 10,000 failed for 7 days). The core checks every bound (`InvalidOption`). Keep the returned
    /// handle: dropping (or destroying) it stops the worker at once; its `close()` (Kotlin:
    /// `shutdown()`) stops it gracefully.
    #[uniffi::method(default(
        concurrency = 1,
        lease_ms = 30000.0,
        shutdown_timeout_ms = 10000.0,
        stalled_interval_ms = 15000.0,
        max_stalls = 1,
        block_timeout_ms = 5000.0,
        completed = None,
        failed = None
    ))]
    #[allow(clippy::too_many_arguments)]
    pub fn start_worker(
        &self,
        handler: Arc<dyn JobHandler>,
        concurrency: i32,
        lease_ms: f64,
        shutdown_timeout_ms: f64,
        stalled_interval_ms: f64,
        max_stalls: u32,
        block_timeout_ms: f64,
        completed: Option<Retention>,
        failed: Option<Retention>,
    ) -> Result<Arc<WorkerHandle>, EmqException> {
        let opts = emq::WorkerOptions::try_from(crate::worker::worker_spec(
            concurrency,
            lease_ms,
            shutdown_timeout_ms,
            stalled_interval_ms,
            max_stalls,
            block_timeout_ms,
            completed,
            failed,
        ))?;
        crate::worker::start(vec![self.inner.clone()], handler, opts)
    }
}
