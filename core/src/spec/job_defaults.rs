//! [`JobDefaults::from_spec`]: a queue's job defaults as a binding passes them, in its job-options
//! form ([`JobSpec`]), checked as a job's own options are.

use super::JobSpec;
use crate::error::{Error, ErrorCode, Result};
use crate::job_defaults::JobDefaults;
use crate::options::JobOptions;

impl JobDefaults {
    /// The defaults a binding passes in its job-options form (durations in ms): every value is
    /// checked as a job's own option is; any other option is `invalid_option`.
    pub fn from_spec(spec: JobSpec) -> Result<JobDefaults> {
        let others = JobSpec {
            attempts: None,
            backoff: None,
            jitter: None,
            remove_on_complete: None,
            remove_on_fail: None,
            ..spec.clone()
        };
        if others != JobSpec::default() {
            return Err(Error::new(
                ErrorCode::InvalidOption,
                format!(
                    "a queue's job defaults take only {}; other options are the job's own",
                    Self::FIELDS.join(", ")
                ),
            ));
        }
        let given = (
            spec.attempts.is_some(),
            spec.backoff.is_some(),
            spec.jitter.is_some(),
            spec.remove_on_complete.is_some(),
            spec.remove_on_fail.is_some(),
        );
        let o = JobOptions::try_from(spec)?;
        o.validate()?;
        Ok(JobDefaults {
            attempts: given.0.then_some(o.attempts),
            backoff: given.1.then_some(o.backoff),
            jitter: given.2.then_some(o.jitter),
            remove_on_complete: given.3.then_some(o.remove_on_complete),
            remove_on_fail: given.4.then_some(o.remove_on_fail),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::{Backoff, Removal};
    use crate::spec::{BackoffSpec, Millis, RemovalSpec};

    #[test]
    fn defaults_are_checked_as_job_options_and_refuse_others() {
        let spec = JobSpec {
            attempts: Some(3.0),
            backoff: Some(BackoffSpec {
                kind: "exponential".into(),
                delay: Some(Millis(1000.0)),
                max: None,
            }),
            remove_on_complete: Some(RemovalSpec::Flag(true)),
            ..Default::default()
        };
        let d = JobDefaults::from_spec(spec).unwrap();
        assert_eq!(d.attempts, Some(3));
        assert_eq!(
            d.backoff,
            Some(Backoff::Exponential {
                delay_ms: 1000,
                max_ms: 0
            })
        );
        assert_eq!(d.remove_on_complete, Some(Removal::Now));
        assert_eq!(d.jitter, None);
        let back: JobDefaults = serde_json::from_value(d.to_json()).unwrap();
        assert_eq!(back, d, "reads back exactly");
        for seconds in [false, true] {
            let spec: JobSpec = serde_json::from_value(d.spec_json(seconds)).unwrap();
            let spec = if seconds { spec.from_seconds() } else { spec };
            assert_eq!(
                JobDefaults::from_spec(spec).unwrap(),
                d,
                "the spec form, seconds {seconds}"
            );
        }
        assert_eq!(
            d.spec_json(true),
            serde_json::json!({"attempts": 3, "backoff": {"type": "exponential", "delay": 1.0},
                "remove_on_complete": true})
        );

        let bad = JobSpec {
            attempts: Some(0.0),
            ..Default::default()
        };
        assert_eq!(
            JobDefaults::from_spec(bad).unwrap_err().code(),
            ErrorCode::InvalidOption
        );
        let other = JobSpec {
            priority: Some(2.0),
            ..Default::default()
        };
        let e = JobDefaults::from_spec(other).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidOption);
        assert!(e.message().contains("attempts, backoff"), "{}", e.message());
    }
}
