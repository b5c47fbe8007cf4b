//! [`WorkerSpec`]: a worker's options as a binding or the CLI fills them, and their one
//! conversion into [`WorkerOptions`] (bounds, the queue order of a worker on several queues,
//! queue-wide retention).

use super::*;
use crate::worker::{QueueOrder, WorkerOptions, MAX_QUEUE_WEIGHT};

/// Options of a worker (see [`WorkerOptions`]); retention is queue-wide here.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkerSpec {
    pub concurrency: Option<f64>,
    pub lease: Option<Millis>,
    #[serde(alias = "stalledInterval")]
    pub stalled_interval: Option<Millis>,
    #[serde(alias = "maxStalls")]
    pub max_stalls: Option<f64>,
    #[serde(alias = "blockTimeout")]
    pub block_timeout: Option<Millis>,
    /// The shutdown grace period ([`WorkerOptions::shutdown_deadline`]).
    #[serde(alias = "shutdownTimeout")]
    pub shutdown_timeout: Option<Millis>,
    /// Retention of completed jobs, queue-wide: `true` keeps none, `false` all.
    #[serde(alias = "removeOnComplete")]
    pub remove_on_complete: Option<RemovalSpec>,
    /// Retention of failed jobs, queue-wide.
    #[serde(alias = "removeOnFail")]
    pub remove_on_fail: Option<RemovalSpec>,
    #[serde(alias = "trimInterval")]
    pub trim_interval: Option<Millis>,
    pub prefetch: Option<f64>,
    /// A worker on several queues: no job of a later queue starts while an earlier one has a
    /// ready job ([`QueueOrder::Strict`]).
    pub strict: Option<bool>,
    /// A worker on several queues: starts shared by weight, keyed by queue name (1 to
    /// [`MAX_QUEUE_WEIGHT`]; a queue not named has 1).
    pub weights: Option<std::collections::BTreeMap<String, f64>>,
}

/// The queue order a spec asks for: `strict` and `weights` exclude each other.
fn queue_order(s: &WorkerSpec) -> Result<QueueOrder> {
    match (s.strict.unwrap_or(false), &s.weights) {
        (true, Some(_)) => Err(invalid(
            "strict and weights exclude each other: strict orders the queues, weights share them"
                .to_string(),
        )),
        (true, None) => Ok(QueueOrder::Strict),
        (false, None) => Ok(QueueOrder::default()),
        (false, Some(w)) => w
            .iter()
            .map(|(q, n)| {
                whole(
                    &format!("the weight of queue {q:?}"),
                    *n,
                    MAX_QUEUE_WEIGHT.into(),
                )
                .map(|n| (q.clone(), n as u32))
            })
            .collect::<Result<_>>()
            .map(QueueOrder::Weighted),
    }
}

impl TryFrom<WorkerSpec> for WorkerOptions {
    type Error = Error;
    fn try_from(s: WorkerSpec) -> Result<WorkerOptions> {
        let d = WorkerOptions::default();
        use crate::options::worker_bounds::{MAX_CONCURRENCY, MAX_PREFETCH, MAX_STALLS};
        // Each count against its own bounds, so NaN, a fraction or a negative is refused naming
        // them and the value as given (validate() holds the converted values to the same bounds).
        let count = |what: &str, v: Option<f64>, min: u64, max: u64| -> Result<Option<u64>> {
            match v {
                None => Ok(None),
                Some(n)
                    if n.is_finite() && n.fract() == 0.0 && n >= min as f64 && n <= max as f64 =>
                {
                    Ok(Some(n as u64))
                }
                Some(n) => Err(invalid(format!(
                    "{what} must be a whole number between {min} and {max}, got {n}"
                ))),
            }
        };
        let o = WorkerOptions {
            concurrency: count("concurrency", s.concurrency, 1, MAX_CONCURRENCY as u64)?
                .map(|c| c as usize)
                .unwrap_or(d.concurrency),
            lease: opt_dur("lease", s.lease)?.unwrap_or(d.lease),
            stalled_interval: opt_dur("stalled_interval", s.stalled_interval)?
                .unwrap_or(d.stalled_interval),
            max_stalls: count("max_stalls", s.max_stalls, 0, MAX_STALLS.into())?
                .map(|m| m as u32)
                .unwrap_or(d.max_stalls),
            block_timeout: opt_dur("block_timeout", s.block_timeout)?.unwrap_or(d.block_timeout),
            shutdown_deadline: opt_dur("shutdown_timeout", s.shutdown_timeout)?
                .unwrap_or(d.shutdown_deadline),
            completed: s
                .remove_on_complete
                .map(|r| r.into_retention("remove_on_complete"))
                .transpose()?
                .unwrap_or(d.completed),
            failed: s
                .remove_on_fail
                .map(|r| r.into_retention("remove_on_fail"))
                .transpose()?
                .unwrap_or(d.failed),
            trim_interval: opt_dur("trim_interval", s.trim_interval)?.unwrap_or(d.trim_interval),
            prefetch: count("prefetch", s.prefetch, 0, MAX_PREFETCH as u64)?
                .map(|p| p as usize)
                .or(d.prefetch),
            queue_order: queue_order(&s)?,
        };
        o.validate()?;
        Ok(o)
    }
}
