//! `emq add <queue> <name> [--data JSON] [--delay-ms N] [--priority P] [--attempts A]`: adds one job
//! and prints its id on stdout. The payload must be JSON (`invalid_payload`, exit 2, otherwise).

use crate::connect::open_queue;
use clap::Args as ClapArgs;
use emq::JobOptions;

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
}

/// Runs `emq add`.
pub async fn run(urls: &[String], args: &Args) -> emq::Result<()> {
    serde_json::from_str::<serde::de::IgnoredAny>(&args.data)?;
    let opts = JobOptions {
        delay_ms: args.delay_ms,
        priority: args.priority,
        attempts: args.attempts,
        ..JobOptions::default()
    };
    opts.validate()?;
    let opened = open_queue(urls, &args.queue).await?;
    let id = opened.queue.add_json(&args.name, &args.data, opts).await?;
    println!("{id}");
    Ok(())
}
