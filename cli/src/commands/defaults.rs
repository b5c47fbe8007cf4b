//! `emq defaults <queue>`: a queue's job defaults (the core's `emq::job_defaults`: attempts,
//! backoff, jitter and retention stored once with the queue, filled into every job that leaves
//! them at the built-in defaults). Without `--set` or `--clear` it prints them, a line per option
//! or `--json`; `--set '<JSON>'` replaces them (the job-options form of `emq add`'s JSON and the
//! Node package, times in ms), `--clear` removes them. Every value is checked by the core
//! (`invalid_option`, exit 2).

use crate::connect::open_queue;
use clap::Args as ClapArgs;
use emq::spec::JobSpec;
use emq::JobDefaults;

/// `emq defaults` options.
#[derive(ClapArgs, Debug)]
#[command(after_help = "\
Examples:
  emq defaults emails                     # the queue's job defaults
  emq defaults emails --set '{\"attempts\": 3, \"backoff\": {\"type\": \"exponential\", \"delay\": 1000}, \"remove_on_complete\": true}'
  emq defaults emails --json              # {\"attempts\": 3, ...}, for scripts
  emq defaults emails --clear             # none: every job its own options

Only attempts, backoff, jitter, remove_on_complete and remove_on_fail can be defaulted. Workers
read the defaults before their first job and every 2 s; a job's own option wins where it differs
from the built-in default.")]
pub struct Args {
    /// The queue name.
    pub queue: String,

    /// Replace the defaults with these (JSON of job options, times in ms).
    #[arg(long, value_name = "JSON", conflicts_with = "clear")]
    pub set: Option<String>,

    /// Remove the defaults.
    #[arg(long)]
    pub clear: bool,

    /// Print the defaults as JSON (`{}`: none), in the form `--set` takes.
    #[arg(long)]
    pub json: bool,
}

/// Runs `emq defaults`.
pub async fn run(urls: &[String], args: &Args) -> emq::Result<()> {
    // The new defaults are checked before any connection.
    let new = match (&args.set, args.clear) {
        (Some(text), _) => {
            let spec: JobSpec = emq::spec::from_json_text("--set", text)?;
            Some(JobDefaults::from_spec(spec)?)
        }
        (None, true) => Some(JobDefaults::default()),
        (None, false) => None,
    };
    let opened = open_queue(urls, &args.queue).await?;
    let q = &opened.queue;
    if let Some(d) = &new {
        q.set_job_defaults(d).await?;
    }
    let now = q.job_defaults().await?.spec_json(false);
    if args.json {
        outln!("{}", super::to_json(&now)?);
        return Ok(());
    }
    let serde_json::Value::Object(fields) = now else {
        return Ok(());
    };
    if fields.is_empty() {
        outln!(
            "{}: no job defaults (every job runs with its own options)",
            args.queue
        );
        return Ok(());
    }
    outln!("{:<20} VALUE", "OPTION");
    for (k, v) in fields {
        outln!("{:<20} {}", k, v);
    }
    Ok(())
}
