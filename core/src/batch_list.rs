//! The batches a queue created, newest first ([`Queue::batches`]): what the CLI's `emq batches`
//! and the dashboard's Batches page read. A batch itself (its counts, its failed jobs, cancel)
//! is `batch.rs`'s [`Batch`].

use crate::batch::BatchStatus;
use crate::error::{Error, ErrorCode, Result};
use crate::job_id::JobId;
use crate::queue::Queue;
use serde::Serialize;

/// Most batches one page lists.
pub const MAX_BATCH_PAGE: u64 = 500;

/// One batch of a page: when it was created (server ms) and its state, without its failed jobs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BatchListed {
    /// When it was created, in the server's ms.
    pub created_ms: u64,
    /// Its counts and flags ([`BatchStatus::failed_jobs`] is empty here).
    #[serde(flatten)]
    pub status: BatchStatus,
}

/// One page of a queue's batches.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BatchPage {
    /// Batches the queue holds in all.
    pub total: u64,
    /// This page, newest first.
    pub batches: Vec<BatchListed>,
}

impl Queue {
    /// The batches this queue created, newest first: `limit` (1 to [`MAX_BATCH_PAGE`]) from
    /// `offset`, each with its counts (a partitioned queue's from every partition, merged by
    /// creation time). `invalid_option` for a limit outside those bounds.
    pub async fn batches(&self, offset: u64, limit: u64) -> Result<BatchPage> {
        if limit == 0 || limit > MAX_BATCH_PAGE {
            return Err(Error::new(
                ErrorCode::InvalidOption,
                format!("a page of batches holds 1 to {MAX_BATCH_PAGE}, not {limit}"),
            ));
        }
        let (total, page) = match &self.spread() {
            None => self.batch_ids(offset, limit).await?,
            Some(p) => {
                // Each partition's first `offset + limit`, merged newest first.
                let want = offset.saturating_add(limit);
                let pages = crate::queue::partitioned::each(p, |m| {
                    Box::pin(async move { m.batch_ids(0, want).await })
                })
                .await?;
                let total = pages.iter().map(|(t, _)| t).sum();
                let mut all: Vec<(String, f64)> = pages.into_iter().flat_map(|(_, p)| p).collect();
                all.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
                let page = all
                    .into_iter()
                    .skip(offset as usize)
                    .take(limit as usize)
                    .collect();
                (total, page)
            }
        };
        let mut batches = Vec::with_capacity(page.len());
        for (id, created) in page {
            let Ok(id) = JobId::parse(&id) else { continue };
            match self.open_batch(&id.to_string())?.status(0, 0).await {
                Ok(status) => batches.push(BatchListed {
                    created_ms: created as u64,
                    status,
                }),
                // Listed but gone (an obliterate under way): not shown.
                Err(e) if e.code() == ErrorCode::JobNotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(BatchPage { total, batches })
    }

    /// This slot's batch count and a page of its batch ids with their creation times, newest
    /// first.
    async fn batch_ids(&self, offset: u64, limit: u64) -> Result<(u64, Vec<(String, f64)>)> {
        let mut conn = self.store().conn();
        Ok(redis::pipe()
            .cmd("ZCARD")
            .arg(&self.keys().batches)
            .cmd("ZREVRANGE")
            .arg(&self.keys().batches)
            .arg(offset.min(i64::MAX as u64))
            .arg(offset.saturating_add(limit.max(1) - 1).min(i64::MAX as u64))
            .arg("WITHSCORES")
            .query_async(&mut conn)
            .await?)
    }
}
