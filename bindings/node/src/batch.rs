//! [`NativeBatch`]: one batch's operations (core/src/batch/), wrapped by `Batch` in
//! `node/src/batch.ts`: adds (one, or a bulk as one JSON string), batches inside it, seal,
//! status, cancel. Each
//! method converts its arguments, calls the core, and converts the reply; the core checks them.

use crate::options::{job_options, parse_spec, payload, BulkEntry};
use crate::{throw, Result, Settled};
use emq::{BatchCallback, BatchOptions, JobOptions, NewJob};
use napi_derive::napi;

/// A callback as the package sends it: `{queue, name, data, opts}` (opts as `addBulk` takes them).
#[derive(serde::Deserialize)]
struct CallbackEntry {
    queue: String,
    #[serde(flatten)]
    job: BulkEntry,
}

/// `queue.batch`'s options as the package sends them (JSON text).
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct BatchSpec {
    #[serde(default)]
    on_complete: Option<CallbackEntry>,
    #[serde(default)]
    on_success: Option<CallbackEntry>,
    #[serde(default)]
    description: Option<String>,
}

fn callback(what: &str, c: Option<CallbackEntry>) -> emq::Result<Option<BatchCallback>> {
    let Some(c) = c else { return Ok(None) };
    Ok(Some(BatchCallback {
        queue: c.queue,
        name: c.job.name,
        data: payload(what, c.job.data)?,
        options: JobOptions::try_from(c.job.opts)?,
    }))
}

/// The core's batch options from `queue.batch`'s JSON text.
pub(crate) fn batch_options(text: &str) -> emq::Result<BatchOptions> {
    let s: BatchSpec = parse_spec("batch", text)?;
    Ok(BatchOptions {
        on_complete: callback("onComplete", s.on_complete)?,
        on_success: callback("onSuccess", s.on_success)?,
        description: s.description,
    })
}

/// A handle on one batch.
#[napi]
pub struct NativeBatch {
    pub(crate) b: emq::Batch,
}

#[napi]
impl NativeBatch {
    /// The batch's id.
    #[napi(getter)]
    pub fn id(&self) -> String {
        self.b.id().to_string()
    }

    /// The queue that created it.
    #[napi(getter)]
    pub fn queue(&self) -> String {
        self.b.queue().name().to_string()
    }

    /// Adds a job (its payload JSON text) to `queue` as part of the batch; returns its id.
    #[napi]
    pub async fn add(
        &self,
        queue: String,
        name: String,
        data: String,
        opts: Option<String>,
    ) -> Settled<String> {
        Settled::of(async move {
            let options = job_options(opts.as_deref()).map_err(throw)?;
            emq::job::check_integer_widths("the payload", &data).map_err(throw)?;
            let data: serde_json::Value =
                serde_json::from_str(&data).map_err(|e| throw(emq::Error::from(e)))?;
            let id = self
                .b
                .add(&queue, &name, data, options)
                .await
                .map_err(throw)?;
            Ok(id.to_string())
        })
        .await
    }

    /// Adds jobs given as one JSON array of `{name, data, opts}` to `queue` as part of the batch;
    /// returns their ids in order, comma-separated.
    #[napi]
    pub async fn add_bulk_json(&self, queue: String, jobs: String) -> Settled<String> {
        Settled::of(async move {
            emq::job::check_integer_widths("addBulk: a payload", &jobs).map_err(throw)?;
            let entries: Vec<BulkEntry> = parse_spec("addBulk", &jobs).map_err(throw)?;
            let mut batch = Vec::with_capacity(entries.len());
            for (i, j) in entries.into_iter().enumerate() {
                batch.push(NewJob {
                    name: j.name,
                    data: payload(&format!("job {i}"), j.data).map_err(throw)?,
                    options: JobOptions::try_from(j.opts).map_err(throw)?,
                });
            }
            let ids = self.b.add_bulk(&queue, batch).await.map_err(throw)?;
            Ok(ids
                .iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(","))
        })
        .await
    }

    /// Its creator added its jobs: the callbacks fall due once every job has its outcome.
    #[napi]
    pub async fn seal(&self) -> Settled<()> {
        Settled::of(async move { self.b.seal().await.map_err(throw) }).await
    }

    /// Its counts and one page of failed jobs, as JSON text.
    #[napi]
    pub async fn status(&self, offset: f64, limit: f64) -> Settled<String> {
        Settled::of(async move {
            let offset = emq::spec::whole("offset", offset, u32::MAX as u64).map_err(throw)?;
            let limit = emq::spec::whole("limit", limit, u32::MAX as u64).map_err(throw)?;
            let st = self.b.status(offset, limit).await.map_err(throw)?;
            Ok(serde_json::to_string(&st).unwrap_or_else(|_| "{}".into()))
        })
        .await
    }

    /// Creates a batch inside this one (`spec`: `queue.batch`'s JSON text).
    #[napi]
    pub async fn batch(&self, spec: String) -> Settled<NativeBatch> {
        Settled::of(async move {
            let options = batch_options(&spec).map_err(throw)?;
            let b = self.b.batch(options).await.map_err(throw)?;
            Ok(NativeBatch { b })
        })
        .await
    }

    /// Cancels the batch and its jobs without an outcome; how many were cancelled or told.
    #[napi]
    pub async fn cancel(&self) -> Settled<f64> {
        Settled::of(async move { Ok(self.b.cancel().await.map_err(throw)? as f64) }).await
    }
}

/// For `NativeQueue::open_batch`: a handle on batch `id` of `queue`.
pub(crate) fn open(q: &emq::Queue, queue: Option<String>, id: &str) -> Result<NativeBatch> {
    let q = match queue {
        Some(name) => q.queue(&name).map_err(throw)?,
        None => q.clone(),
    };
    Ok(NativeBatch {
        b: q.open_batch(id).map_err(throw)?,
    })
}
