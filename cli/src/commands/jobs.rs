//! `emq jobs <queue> --state S [--limit N] [--json]`: the jobs in one state.

use crate::connect::open_queue;
use crate::human::{self, Clock};
use clap::Args as ClapArgs;
use emq::JobState;

/// Most characters of a failed job's reason in the table.
const REASON_WIDTH: usize = 60;

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

    /// Print a JSON array of jobs (each as `emq job --json` prints it, less its `logs`).
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
        // Failed jobs get one more column: why, on one line, truncated (all of it with --json).
        let reason = |j: &emq::Job| match (&j.failure, state) {
            (Some(f), JobState::Failed) => format!(
                "  {}",
                human::one_line(&format!("[{}] {}", f.code, f.message), REASON_WIDTH)
            ),
            (None, JobState::Failed) => "  -".to_string(),
            _ => String::new(),
        };
        let header = if state == JobState::Failed {
            format!("{:<29}  REASON", "CREATED")
        } else {
            "CREATED".to_string()
        };
        outln!("{:<18} {:<20} {:>8}  {header}", "ID", "NAME", "ATTEMPTS");
        for j in &jobs {
            let created = clock.short_stamp(j.created_ms);
            let created = if state == JobState::Failed {
                format!("{created:<29}")
            } else {
                created
            };
            outln!(
                "{:<18} {:<20} {:>8}  {created}{}",
                j.id.to_string(),
                j.name,
                format!("{}/{}", j.attempts_made, j.attempts),
                reason(j)
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
