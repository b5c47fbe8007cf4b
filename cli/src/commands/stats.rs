//! `emq stats <queue> [--json]`: jobs per state, and the age of the oldest waiting job.
//!
//! The age is measured on the datastore's clock (`TIME`) against the job's `created_ms`.

use crate::connect::open_queue;
use crate::human;
use clap::Args as ClapArgs;
use emq::{Counts, JobState};
use serde::Serialize;

/// `emq stats` options.
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The queue name.
    pub queue: String,

    /// Print JSON: `{"queue", "counts": {<state>: n, …}, "total", "oldest_waiting_age_ms"}`.
    #[arg(long)]
    pub json: bool,
}

/// The `--json` output.
#[derive(Serialize, Debug)]
pub struct Stats {
    /// The bare queue name.
    pub queue: String,
    /// Jobs per state.
    pub counts: Counts,
    /// Jobs in all states.
    pub total: u64,
    /// Age of the oldest waiting job in ms (null when none waits).
    pub oldest_waiting_age_ms: Option<u64>,
}

/// Runs `emq stats`.
pub async fn run(urls: &[String], args: &Args) -> emq::Result<()> {
    let opened = open_queue(urls, &args.queue).await?;
    let q = &opened.queue;
    let counts = q.counts().await?;
    let oldest = q.list(JobState::Waiting, 0, 1).await?;
    let oldest_waiting_age_ms = match oldest.first() {
        Some(job) => {
            let now = q.server_time_ms().await?;
            Some(now.saturating_sub(job.created_ms))
        }
        None => None,
    };
    let stats = Stats {
        queue: q.name().as_str().to_string(),
        total: counts.total(),
        counts,
        oldest_waiting_age_ms,
    };
    if args.json {
        outln!("{}", super::to_json(&stats)?);
    } else {
        outln!("queue {}", stats.queue);
        for state in JobState::ALL {
            outln!("  {:<17} {:>10}", state.as_str(), stats.counts.get(state));
        }
        outln!("  {:<17} {:>10}", "total", stats.total);
        match (stats.oldest_waiting_age_ms, oldest.first()) {
            (Some(ms), Some(job)) => outln!(
                "oldest waiting job: {} old (added {})",
                human::duration(ms),
                human::iso_ms(job.created_ms)
            ),
            _ => outln!("oldest waiting job: none waiting"),
        }
    }
    Ok(())
}
