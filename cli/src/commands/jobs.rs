//! `emq jobs <queue> --state S [--limit N] [--json]`: the jobs in one state.

use crate::connect::open_queue;
use crate::human::Clock;
use clap::Args as ClapArgs;
use emq::JobState;

/// `emq jobs` options.
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The queue name.
    pub queue: String,

    /// waiting, paused, active, delayed, prioritized, completed, failed, stalled, waiting-children.
    #[arg(long)]
    pub state: String,

    /// Most jobs to show.
    #[arg(long, default_value_t = 20)]
    pub limit: u64,

    /// Print a JSON array of jobs (each as `emq job --json` prints it).
    #[arg(long)]
    pub json: bool,
}

/// Runs `emq jobs`.
pub async fn run(urls: &[String], args: &Args) -> emq::Result<()> {
    // Checked before connecting: bad input never starts a server.
    let state = JobState::parse(&args.state)?;
    emq::QueueName::new(&args.queue)?;
    let opened = open_queue(urls, &args.queue).await?;
    let jobs = opened.queue.list(state, 0, args.limit).await?;
    if args.json {
        let values: Vec<serde_json::Value> = jobs.iter().map(|j| j.to_json()).collect();
        outln!("{}", super::to_json(&values)?);
    } else {
        let clock = Clock::read(opened.queue.store()).await?;
        outln!(
            "{:<18} {:<20} {:>8}  {}",
            "ID",
            "NAME",
            "ATTEMPTS",
            "CREATED"
        );
        for j in &jobs {
            outln!(
                "{:<18} {:<20} {:>8}  {}",
                j.id.to_string(),
                j.name,
                format!("{}/{}", j.attempts_made, j.attempts),
                clock.short_stamp(j.created_ms)
            );
        }
        eprintln!(
            "{} {} jobs shown (limit {})",
            jobs.len(),
            state.as_str(),
            args.limit
        );
    }
    Ok(())
}
