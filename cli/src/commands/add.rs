//! `emq add <queue> <name> [--data JSON] [--delay-ms N] [--priority P] [--attempts A] [--dedup KEY
//! [--dedup-ttl-ms N]] [--group G]`: adds one job and prints its id on stdout (with a dedup key held
//! by another job, that job's id). The payload must be JSON (`invalid_payload`, exit 2, otherwise).

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

    /// A dedup key: while a job with it is waiting or active, the add returns that job's id.
    #[arg(long, value_name = "KEY")]
    pub dedup: Option<String>,

    /// With --dedup: hold the key this many ms after the add, whatever becomes of the job.
    #[arg(long, default_value_t = 0, value_name = "MS")]
    pub dedup_ttl_ms: u64,

    /// The job's group, for the queue's per-group rate limit.
    #[arg(long)]
    pub group: Option<String>,
}

/// Longest `--delay-ms` and `--dedup-ttl-ms`: the bound the core puts on a binding's duration
/// (`emq::options::millis`, 10^15 ms, about 31,700 years). A larger one (up to u64::MAX) would
/// overflow the server's clock arithmetic and park the job forever.
pub const MAX_MS: u64 = 1_000_000_000_000_000;

/// `invalid_option` naming the flag and its bound when `ms` is above it.
fn bounded(flag: &str, ms: u64) -> emq::Result<u64> {
    if ms > MAX_MS {
        return Err(emq::Error::new(
            emq::ErrorCode::InvalidOption,
            format!("{flag} must be at most {MAX_MS} ms (about 31,700 years), got {ms}"),
        ));
    }
    Ok(ms)
}

/// Runs `emq add`.
pub async fn run(urls: &[String], args: &Args) -> emq::Result<()> {
    bounded("--delay-ms", args.delay_ms)?;
    bounded("--dedup-ttl-ms", args.dedup_ttl_ms)?;
    serde_json::from_str::<serde::de::IgnoredAny>(&args.data)?;
    let opts = JobOptions {
        delay_ms: args.delay_ms,
        priority: args.priority,
        attempts: args.attempts,
        dedup: args.dedup.clone(),
        dedup_ttl_ms: args.dedup_ttl_ms,
        group: args.group.clone(),
        ..JobOptions::default()
    };
    opts.validate()?;
    let opened = open_queue(urls, &args.queue).await?;
    let id = opened.queue.add_json(&args.name, &args.data, opts).await?;
    outln!("{id}");
    Ok(())
}
