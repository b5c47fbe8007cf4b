//! Batches for Kotlin and Swift (the core's `core/src/batch/`): `Queue.batch(options)` creates one,
//! `Queue.openBatch(id)` opens one this queue created; a [`Batch`] adds jobs on any queue, seals,
//! reads its status and cancels. The core's own records cross as they are (`BatchStatus`,
//! `BatchJob`, `BatchRef`, `BatchDone`: uniffi derives behind its `uniffi` feature); payloads are
//! JSON text; every value is checked by the core.

use crate::error::EmqException;
use crate::options::{json, JobOptions, NewJob};
use crate::queue::Queue;
use crate::runtime::on_runtime;
use std::sync::Arc;

/// A batch's callback: the job added once it falls due.
#[derive(Debug, Clone, PartialEq, uniffi::Record)]
pub struct BatchCallback {
    /// The queue it is added to (any queue on the same server).
    pub queue: String,
    pub name: String,
    /// The payload as JSON text.
    pub data_json: String,
    /// Its options (its id is the one the batch pins).
    #[uniffi(default = None)]
    pub options: Option<JobOptions>,
}

impl BatchCallback {
    fn to_core(&self) -> Result<emq::BatchCallback, EmqException> {
        Ok(emq::BatchCallback {
            queue: self.queue.clone(),
            name: self.name.clone(),
            data: json(&self.data_json)?,
            options: self.options.clone().unwrap_or_default().to_core()?,
        })
    }
}

/// What `Queue.batch` creates.
#[derive(Debug, Clone, Default, PartialEq, uniffi::Record)]
pub struct BatchOptions {
    /// Added once, when every job of the sealed batch has its outcome.
    #[uniffi(default = None)]
    pub on_complete: Option<BatchCallback>,
    /// Added once, when every job of the sealed batch has completed.
    #[uniffi(default = None)]
    pub on_success: Option<BatchCallback>,
    /// Words for people (at most 1,024 bytes).
    #[uniffi(default = None)]
    pub description: Option<String>,
}

/// A handle on one batch.
#[derive(uniffi::Object)]
pub struct Batch {
    inner: emq::Batch,
}

#[uniffi::export(async_runtime = "tokio")]
impl Batch {
    /// The batch's id.
    pub fn id(&self) -> String {
        self.inner.id().to_string()
    }

    /// Adds a job (JSON payload text) to `queue` (any queue) as part of the batch; its id.
    #[uniffi::method(default(options = None))]
    pub async fn add(
        &self,
        queue: String,
        name: String,
        data_json: String,
        options: Option<JobOptions>,
    ) -> Result<String, EmqException> {
        let data = json(&data_json)?;
        let opts = options.unwrap_or_default().to_core()?;
        let b = self.inner.clone();
        let id = on_runtime(async move { b.add(&queue, &name, data, opts).await }).await?;
        Ok(id.to_string())
    }

    /// Adds many jobs to `queue` as part of the batch; their ids in order.
    pub async fn add_bulk(
        &self,
        queue: String,
        jobs: Vec<NewJob>,
    ) -> Result<Vec<String>, EmqException> {
        let jobs = jobs
            .iter()
            .map(NewJob::to_core)
            .collect::<Result<Vec<_>, _>>()?;
        let b = self.inner.clone();
        let ids = on_runtime(async move { b.add_bulk(&queue, jobs).await }).await?;
        Ok(ids.iter().map(|id| id.to_string()).collect())
    }

    /// Says its creator added what it had to: the callbacks fall due once every job counted in
    /// has its outcome.
    pub async fn seal(&self) -> Result<(), EmqException> {
        let b = self.inner.clone();
        on_runtime(async move { b.seal().await }).await
    }

    /// Its counts and one page of its failed jobs, oldest failure first (`limit` 0: counts only).
    #[uniffi::method(default(offset = 0, limit = 100))]
    pub async fn status(&self, offset: u64, limit: u64) -> Result<emq::BatchStatus, EmqException> {
        let b = self.inner.clone();
        on_runtime(async move { b.status(offset, limit).await }).await
    }

    /// Creates a batch inside this one (in its queue's slot): it counts here as one job,
    /// completed when every job of it completed, failed otherwise.
    #[uniffi::method(default(options = None))]
    pub async fn batch(&self, options: Option<BatchOptions>) -> Result<Arc<Batch>, EmqException> {
        let core = BatchOptions::to_core(options)?;
        let b = self.inner.clone();
        let inner = on_runtime(async move { b.batch(core).await }).await?;
        Ok(Arc::new(Batch { inner }))
    }

    /// Cancels it: its waiting jobs are cancelled and no callback is added; the jobs cancelled.
    pub async fn cancel(&self) -> Result<u64, EmqException> {
        let b = self.inner.clone();
        on_runtime(async move { b.cancel().await }).await
    }
}

impl BatchOptions {
    fn to_core(options: Option<BatchOptions>) -> Result<emq::BatchOptions, EmqException> {
        let o = options.unwrap_or_default();
        Ok(emq::BatchOptions {
            on_complete: o
                .on_complete
                .as_ref()
                .map(BatchCallback::to_core)
                .transpose()?,
            on_success: o
                .on_success
                .as_ref()
                .map(BatchCallback::to_core)
                .transpose()?,
            description: o.description,
        })
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl Queue {
    /// Creates a batch held by this queue (its keys in this queue's slot).
    #[uniffi::method(default(options = None))]
    pub async fn batch(&self, options: Option<BatchOptions>) -> Result<Arc<Batch>, EmqException> {
        let core = BatchOptions::to_core(options)?;
        let q = self.inner.clone();
        let inner = on_runtime(async move { q.batch(core).await }).await?;
        Ok(Arc::new(Batch { inner }))
    }

    /// Opens the batch `id` that this queue created (`JobRecord.batch` names it).
    pub fn open_batch(&self, id: String) -> Result<Arc<Batch>, EmqException> {
        Ok(Arc::new(Batch {
            inner: self.inner.open_batch(&id)?,
        }))
    }
}
