//! `emq migrate --from-prefix bull --queue payments [--to-queue X] [--dry-run] [--completed]
//! [--delete-source] [--batch N] [--json]`: copies one BullMQ queue (prefix `bull` by default in
//! BullMQ) or EchoMQ 1.x queue (prefix `emq`) into an emq queue, and prints what it read, wrote and
//! skipped, per state (see `emq::migrate` for what maps, and why a run killed midway can simply be
//! run again).
//!
//! `EMQ_TEST_MIGRATE_PAUSE_MS`, for tests only: sleep this long after each batch of adds, before
//! it is marked copied, so a test can SIGKILL a migration in that window.

use crate::connect::open_queue;
use crate::human;
use clap::Args as ClapArgs;
use emq::migrate::MigrateOptions;
use std::time::Duration;

/// For tests only: the pause after each batch written (ms).
pub const TEST_PAUSE_ENV: &str = "EMQ_TEST_MIGRATE_PAUSE_MS";

/// `emq migrate` options.
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The source's key prefix: `bull` (BullMQ's default) or `emq` (EchoMQ 1.x).
    #[arg(long, default_value = "bull", value_name = "PREFIX")]
    pub from_prefix: String,

    /// The source queue's name.
    #[arg(long, value_name = "NAME")]
    pub queue: String,

    /// The emq queue to copy into [default: the source queue's name].
    #[arg(long, value_name = "NAME")]
    pub to_queue: Option<String>,

    /// Read and count only: write nothing anywhere.
    #[arg(long, conflicts_with = "delete_source")]
    pub dry_run: bool,

    /// Copy completed jobs too (otherwise they are counted and left).
    #[arg(long)]
    pub completed: bool,

    /// Delete each source job once its copy exists (migrated schedulers too).
    #[arg(long)]
    pub delete_source: bool,

    /// Jobs read and written per step.
    #[arg(long, default_value_t = 500, value_name = "N")]
    pub batch: usize,

    /// Print the report as JSON: `{"source", "target", "dry_run", "states": [{"state", "read",
    /// "written", "already", "skipped"}], "reasons", "skipped", "not_mapped", "source_deleted",
    /// "log_lines", "notes", "elapsed_ms"}`.
    #[arg(long)]
    pub json: bool,
}

/// Runs `emq migrate`.
pub async fn run(urls: &[String], args: &Args) -> emq::Result<()> {
    let mut options = MigrateOptions::new(&args.from_prefix, &args.queue);
    options.dry_run = args.dry_run;
    options.completed = args.completed;
    options.delete_source = args.delete_source;
    options.batch = args.batch;
    if let Some(ms) = std::env::var(TEST_PAUSE_ENV)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        options.pause_per_batch = Duration::from_millis(ms);
    }
    options.validate()?;
    let target = args.to_queue.as_deref().unwrap_or(&args.queue);
    let opened = open_queue(urls, target).await?;
    let report = opened.queue.migrate_from_bullmq(&options).await?;
    if args.json {
        outln!("{}", super::to_json(&report)?);
        return Ok(());
    }
    let verb = if report.dry_run {
        "would copy"
    } else {
        "copied"
    };
    outln!(
        "{} {} -> emq queue {} ({verb}, {})",
        if report.dry_run {
            "dry run:"
        } else {
            "migrated"
        },
        report.source,
        report.target,
        human::duration(report.elapsed_ms)
    );
    outln!(
        "{:<18} {:>10} {:>10} {:>10} {:>10}",
        "STATE",
        "READ",
        if report.dry_run { "WOULD" } else { "WRITTEN" },
        "ALREADY",
        "SKIPPED"
    );
    for s in &report.states {
        outln!(
            "{:<18} {:>10} {:>10} {:>10} {:>10}",
            s.state,
            s.read,
            s.written,
            s.already,
            s.skipped
        );
    }
    if !report.reasons.is_empty() {
        outln!("skipped:");
        for (reason, n) in &report.reasons {
            outln!("  {n:>8}  {reason}");
        }
    }
    if !report.not_mapped.is_empty() {
        outln!("options with no emq equivalent (jobs copied without them):");
        for (what, n) in &report.not_mapped {
            outln!("  {n:>8}  {what}");
        }
    }
    if report.log_lines > 0 {
        outln!("job log lines copied: {}", report.log_lines);
    }
    if report.source_deleted > 0 {
        outln!("source jobs deleted: {}", report.source_deleted);
    }
    for note in &report.notes {
        outln!("note: {note}");
    }
    Ok(())
}
