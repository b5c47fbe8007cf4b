//! `emq add <queue> <name> [--data JSON] [--delay-ms N] [--priority P] [--attempts A] [--dedup KEY
//! [--dedup-ttl-ms N]] [--group G] [--remove-on-complete R] [--remove-on-fail R]`: adds one job and
//! prints its id on stdout (with a dedup key held by another job, that job's id). The payload must
//! be JSON (`invalid_payload`, exit 2, otherwise).
//!
//! The options are filled into the core's [`JobSpec`] and converted by the core, which checks every
//! bound (`invalid_option` naming the option, exit 2). A retention `R` is read here from its text
//! only: `true` (delete the job as it finishes), `false` (the queue's retention), a count (`100`:
//! keep it while it is among the newest 100), an age as a human duration (`1d`, `12h`, `30m`,
//! `90s`, `1h30m`: keep it at most that long) or both as `count,age` (`100,1d`).

use crate::connect::open_queue_with;
use crate::human;
use clap::Args as ClapArgs;
use emq::spec::{JobSpec, Millis, RemovalSpec, RetentionSpec};
use emq::{Error, ErrorCode, JobOptions};

/// `emq add` options.
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The queue name.
    pub queue: String,

    /// The job's name (the kind of work).
    pub name: String,

    /// The payload, as JSON text.
    #[arg(long, default_value = "null", value_name = "JSON")]
    pub data: String,

    /// Run no sooner than this many ms from now (on the server's clock).
    #[arg(long, default_value_t = 0, value_name = "MS")]
    pub delay_ms: u64,

    /// 0 for none; lower runs first.
    #[arg(long, default_value_t = 0)]
    pub priority: u32,

    /// Most attempts.
    #[arg(long, default_value_t = 1)]
    pub attempts: u32,

    /// A dedup key: while a job with it is waiting or active, the add returns that job's id.
    #[arg(long, value_name = "KEY")]
    pub dedup: Option<String>,

    /// With --dedup: hold the key this many ms after the add, whatever becomes of the job.
    #[arg(long, default_value_t = 0, value_name = "MS")]
    pub dedup_ttl_ms: u64,

    /// The job's group: the queue serves its groups in turn, by weight (`emq groups`), and its
    /// per-group rate limit counts each group on its own. An add past the group's cap on waiting
    /// jobs fails with group_full.
    #[arg(long)]
    pub group: Option<String>,

    /// The job's dead-letter queue: once it fails for good it moves there, as a new job waiting
    /// (`emq dlq list`, `emq dlq replay`). Without it, the queue's own (`emq dlq set`), if any.
    #[arg(long, value_name = "QUEUE")]
    pub dead_letter: Option<String>,

    /// Once completed: `true` deletes the job at once, `false` leaves it to the queue's
    /// retention; a count (`100`), an age (`1d`, `12h`, `30m`) or both (`100,1d`) keep it while
    /// it is among the newest `count` completed jobs and younger than `age`.
    #[arg(long, value_name = "R", allow_hyphen_values = true)]
    pub remove_on_complete: Option<String>,

    /// Spread the queue over this many slots (1 to 256), stored as its count the first time; a
    /// queue stored with another count refuses it (invalid_option). Without it, the stored count.
    #[arg(long, value_name = "N")]
    pub partitions: Option<u16>,

    /// Once failed for good: as `--remove-on-complete`, for the failed jobs.
    #[arg(long, value_name = "R", allow_hyphen_values = true)]
    pub remove_on_fail: Option<String>,
}

/// Reads a retention's text (`true`, `false`, a count, an age, `count,age`) into the core's spec;
/// the core checks its values. Text that is none of those is `invalid_option` naming `flag`.
pub fn removal(flag: &str, text: &str) -> emq::Result<RemovalSpec> {
    let bad = || {
        Error::new(
            ErrorCode::InvalidOption,
            format!(
                "{flag} takes true, false, a count (100), an age (1d, 12h, 30m, 90s) or both as count,age (100,1d); got {text:?}"
            ),
        )
    };
    let t = text.trim();
    let count = |c: &str| c.trim().parse::<f64>().ok().filter(|n| !n.is_nan());
    let age = |a: &str| human::parse_duration(a).map(Millis);
    Ok(match t {
        "true" => RemovalSpec::Flag(true),
        "false" => RemovalSpec::Flag(false),
        _ => match t.split_once(',') {
            Some((c, a)) => RemovalSpec::Limits(RetentionSpec {
                count: Some(count(c).ok_or_else(bad)?),
                age: Some(age(a).ok_or_else(bad)?),
            }),
            None => match (count(t), age(t)) {
                (Some(n), _) => RemovalSpec::Count(n),
                (None, Some(a)) => RemovalSpec::Limits(RetentionSpec {
                    count: None,
                    age: Some(a),
                }),
                (None, None) => return Err(bad()),
            },
        },
    })
}

/// The job's options: the command line filled into the core's [`JobSpec`], converted (and every
/// bound checked) by the core.
pub fn job_options(args: &Args) -> emq::Result<JobOptions> {
    let spec = JobSpec {
        delay: Some(Millis(args.delay_ms as f64)),
        priority: Some(f64::from(args.priority)),
        attempts: Some(f64::from(args.attempts)),
        dedup: args.dedup.clone(),
        dedup_ttl: Some(Millis(args.dedup_ttl_ms as f64)),
        group: args.group.clone(),
        dead_letter: args.dead_letter.clone(),
        remove_on_complete: args
            .remove_on_complete
            .as_deref()
            .map(|t| removal("--remove-on-complete", t))
            .transpose()?,
        remove_on_fail: args
            .remove_on_fail
            .as_deref()
            .map(|t| removal("--remove-on-fail", t))
            .transpose()?,
        ..JobSpec::default()
    };
    JobOptions::try_from(spec)
}

/// Runs `emq add`.
pub async fn run(urls: &[String], args: &Args) -> emq::Result<()> {
    let opts = job_options(args)?;
    serde_json::from_str::<serde::de::IgnoredAny>(&args.data)?;
    let opened = open_queue_with(
        urls,
        &args.queue,
        emq::QueueOptions {
            partitions: args.partitions,
        },
    )
    .await?;
    let id = opened.queue.add_json(&args.name, &args.data, opts).await?;
    outln!("{id}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retention_texts_become_the_cores_spec() {
        let r = |t: &str| removal("--remove-on-complete", t).unwrap();
        assert_eq!(r("true"), RemovalSpec::Flag(true));
        assert_eq!(r("false"), RemovalSpec::Flag(false));
        assert_eq!(r("100"), RemovalSpec::Count(100.0));
        // Counts and ages are not checked here: the core names the bound.
        assert_eq!(r("-1"), RemovalSpec::Count(-1.0));
        assert_eq!(
            r("1d"),
            RemovalSpec::Limits(RetentionSpec {
                count: None,
                age: Some(Millis(86_400_000.0)),
            })
        );
        assert_eq!(
            r("100,12h"),
            RemovalSpec::Limits(RetentionSpec {
                count: Some(100.0),
                age: Some(Millis(43_200_000.0)),
            })
        );
        for bad in ["", "yes", "1x", "100,", ",1d", "1d,100", "nan"] {
            let e = removal("--remove-on-fail", bad).unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidOption, "{bad:?}");
            assert!(e.message().starts_with("--remove-on-fail takes"), "{e}");
        }
    }
}
