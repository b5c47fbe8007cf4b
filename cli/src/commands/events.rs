//! `emq events <queue> [--follow] [--json] [--limit N]`: the queue's events. Without `--follow` it
//! prints the newest `--limit` events and exits; with it, it then waits for new ones until Ctrl-C or
//! SIGTERM. One line per event: `<time> (<how long ago>) <stream id> <kind> <job id>`, the time
//! being the stream id's, in ISO 8601 UTC (JSON with `--json`, as the core writes an `Event`).

use crate::connect::open_queue;
use crate::human::Clock;
use clap::Args as ClapArgs;
use emq::events::Event;
use std::time::Duration;
use tokio::signal::unix::{signal, SignalKind};

/// `emq events` options.
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The queue name.
    pub queue: String,

    /// Keep waiting for new events.
    #[arg(long)]
    pub follow: bool,

    /// Print JSON lines.
    #[arg(long)]
    pub json: bool,

    /// How many past events to show first.
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
}

fn print(e: &Event, json: bool, clock: &Clock) -> emq::Result<()> {
    if json {
        outln!("{}", serde_json::to_string(e).unwrap_or_default());
    } else {
        let id = e
            .job_id
            .map(|i| i.to_string())
            .unwrap_or_else(|| "-".into());
        // A stream id is `<server ms>-<sequence>`.
        let when = match e.stream_id.split('-').next().map(str::parse::<u64>) {
            Some(Ok(ms)) => clock.stamp(ms),
            _ => "-".to_string(),
        };
        outln!("{when} {} {} {}", e.stream_id, e.kind, id);
    }
    Ok(())
}

/// Runs `emq events`.
pub async fn run(urls: &[String], args: &Args) -> emq::Result<()> {
    let opened = open_queue(urls, &args.queue).await?;
    let q = &opened.queue;
    let clock = Clock::read(q.store()).await?;
    for e in q.recent_events(args.limit).await? {
        print(&e, args.json, &clock)?;
    }
    if !args.follow {
        return Ok(());
    }
    let mut stream = q.events(None).await?;
    let mut term = signal(SignalKind::terminate())
        .map_err(|e| emq::Error::new(emq::ErrorCode::Internal, e.to_string()))?;
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => return Ok(()),
            _ = term.recv() => return Ok(()),
            batch = stream.next_batch(Duration::from_secs(1), 100) => {
                for e in batch? {
                    print(&e, args.json, &clock)?;
                }
            }
        }
    }
}
