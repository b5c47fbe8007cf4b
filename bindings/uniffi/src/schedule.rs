//! Job schedulers: a `Schedule` in, `SchedulerInfo` out (the core's own type, exported through
//! its `uniffi` feature).

use crate::error::EmqException;
use crate::options::JobOptions;
use emq::spec::Millis;
pub use emq::SchedulerInfo;

/// What a job scheduler enqueues and when: every `every_ms`, or at each occurrence of `cron` (5
/// fields, or 6 with seconds first) in the IANA zone `tz` (default UTC). Durations in ms.
#[derive(Debug, Clone, PartialEq, uniffi::Record)]
pub struct Schedule {
    /// The job's name.
    pub name: String,
    /// The job's payload (JSON text).
    pub data_json: String,
    /// Run every this long (set this or `cron`).
    #[uniffi(default = None)]
    pub every_ms: Option<f64>,
    /// A cron expression (set this or `every_ms`).
    #[uniffi(default = None)]
    pub cron: Option<String>,
    /// The cron expression's time zone.
    #[uniffi(default = None)]
    pub tz: Option<String>,
    /// Start this long after the upsert.
    #[uniffi(default = 0.0)]
    pub first_after_ms: f64,
    /// Stop after this many runs.
    #[uniffi(default = None)]
    pub limit: Option<u64>,
    /// Stop this long after the upsert.
    #[uniffi(default = None)]
    pub end_after_ms: Option<f64>,
    /// Options of each run's job.
    #[uniffi(default = None)]
    pub options: Option<JobOptions>,
}

impl Schedule {
    /// The core's schedule (checked by the core: exactly one of every/cron, the zone, bounds).
    pub(crate) fn to_core(&self) -> Result<emq::Schedule, EmqException> {
        let spec = emq::spec::ScheduleSpec {
            name: self.name.clone(),
            data: Some(crate::options::json(&self.data_json)?),
            every: self.every_ms.map(Millis),
            cron: self.cron.clone(),
            tz: self.tz.clone(),
            first_after: Some(Millis(self.first_after_ms)),
            end_after: self.end_after_ms.map(Millis),
            limit: self.limit.map(|l| l as f64),
            options: self.options.clone().unwrap_or_default().to_spec()?,
        };
        Ok(emq::Schedule::try_from(spec)?)
    }
}
