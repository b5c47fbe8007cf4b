//! A queue's job defaults (the core's `job_defaults.rs`) for Kotlin/Swift: `JobDefaults`, the
//! options a queue can default, in `JobOptions`' form (a null field, or `false`: not defaulted),
//! filled into the core's spec and checked by the core; and the two `Queue` methods.

use crate::error::EmqException;
use crate::options::{removal, Backoff, Retention};
use crate::queue::Queue;
use crate::runtime::on_runtime;
use emq::spec::JobSpec;

/// A queue's job defaults: stored once with the queue, not in every job; a job that leaves one
/// of these at its built-in default (1 attempt, no backoff, no jitter, kept) runs with the
/// queue's. Durations in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, uniffi::Record)]
pub struct JobDefaults {
    /// Most attempts (at least 1).
    #[uniffi(default = None)]
    pub attempts: Option<i32>,
    /// Wait between attempts.
    #[uniffi(default = None)]
    pub backoff: Option<Backoff>,
    /// Fraction (0..=1) of each backoff taken off at random.
    #[uniffi(default = None)]
    pub jitter: Option<f64>,
    /// Delete a job as soon as it completes.
    #[uniffi(default = false)]
    pub remove_on_complete: bool,
    /// Delete a job as soon as it finally fails.
    #[uniffi(default = false)]
    pub remove_on_fail: bool,
    /// Keep completed jobs within this.
    #[uniffi(default = None)]
    pub keep_completed: Option<Retention>,
    /// Keep finally failed jobs within this.
    #[uniffi(default = None)]
    pub keep_failed: Option<Retention>,
}

impl JobDefaults {
    fn to_core(&self) -> Result<emq::JobDefaults, EmqException> {
        let spec = JobSpec {
            attempts: self.attempts.map(f64::from),
            backoff: self.backoff.map(Backoff::to_spec),
            jitter: self.jitter,
            remove_on_complete: removal("complete", self.remove_on_complete, self.keep_completed)?,
            remove_on_fail: removal("fail", self.remove_on_fail, self.keep_failed)?,
            ..JobSpec::default()
        };
        Ok(emq::JobDefaults::from_spec(spec)?)
    }

    fn from_core(d: emq::JobDefaults) -> JobDefaults {
        let (remove_on_complete, keep_completed) = split(d.remove_on_complete);
        let (remove_on_fail, keep_failed) = split(d.remove_on_fail);
        JobDefaults {
            attempts: d.attempts.map(|a| a.min(i32::MAX as u32) as i32),
            backoff: d.backoff.and_then(Backoff::from_core),
            jitter: d.jitter,
            remove_on_complete,
            remove_on_fail,
            keep_completed,
            keep_failed,
        }
    }
}

/// A removal as `remove_on_*` and `keep_*`.
fn split(r: Option<emq::Removal>) -> (bool, Option<Retention>) {
    match r {
        None | Some(emq::Removal::Keep) => (false, None),
        Some(emq::Removal::Now) => (true, None),
        Some(emq::Removal::Within(k)) => (
            false,
            Some(Retention {
                count: k.count,
                age_ms: k.age_ms.map(|a| a as f64),
            }),
        ),
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl Queue {
    /// Replaces this queue's job defaults (all fields unset: removes them). Workers read them
    /// before their first job and every 2 s.
    pub async fn set_job_defaults(&self, defaults: JobDefaults) -> Result<(), EmqException> {
        let d = defaults.to_core()?;
        let q = self.inner.clone();
        on_runtime(async move { q.set_job_defaults(&d).await }).await
    }

    /// This queue's job defaults (none set: all fields unset).
    pub async fn job_defaults(&self) -> Result<JobDefaults, EmqException> {
        let q = self.inner.clone();
        on_runtime(async move { q.job_defaults().await })
            .await
            .map(JobDefaults::from_core)
    }
}
