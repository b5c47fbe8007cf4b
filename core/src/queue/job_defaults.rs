//! A queue's job defaults as its handle sets and reads them (the type: `job_defaults.rs`): one
//! field of the queue's `meta` hash, on every partition of a partitioned queue.

use super::*;
use crate::job_defaults::{JobDefaults, FIELD};

impl Queue {
    /// Sets the queue's job defaults ([`JobDefaults`]), replacing the ones before; empty
    /// defaults remove them. On a partitioned queue, every partition's.
    pub async fn set_job_defaults(&self, defaults: &JobDefaults) -> Result<()> {
        if let Some(p) = &self.spread_now().await? {
            crate::queue::partitioned::each(p, |m| Box::pin(m.set_job_defaults_here(defaults)))
                .await?;
            return Ok(());
        }
        self.set_job_defaults_here(defaults).await
    }

    pub(crate) async fn set_job_defaults_here(&self, defaults: &JobDefaults) -> Result<()> {
        let mut conn = self.store().conn();
        let meta = &self.keys().meta;
        if defaults.is_empty() {
            let () = redis::cmd("HDEL")
                .arg(meta)
                .arg(FIELD)
                .query_async(&mut conn)
                .await?;
        } else {
            let () = redis::cmd("HSET")
                .arg(meta)
                .arg(FIELD)
                .arg(defaults.to_json().to_string())
                .query_async(&mut conn)
                .await?;
        }
        Ok(())
    }

    /// The queue's job defaults (none set: empty).
    pub async fn job_defaults(&self) -> Result<JobDefaults> {
        let here = match self.partitions() {
            Some(p) => p[0].clone(),
            None => self.clone(),
        };
        let text: Option<String> = redis::cmd("HGET")
            .arg(&here.keys().meta)
            .arg(FIELD)
            .query_async(&mut here.store().conn())
            .await?;
        Ok(JobDefaults::parse(text.as_deref()))
    }
}
