//! `emq batches`: the batches a queue created (the core's [`Queue::batches`] and [`emq::Batch`]).
//! Without an id: one page of them, newest first, as a table (created, description, progress,
//! state) or `--json`. With an id: that batch's counts and a page of its failed jobs; with
//! `--cancel`, it is cancelled first. Names and ids are checked by the core
//! (`invalid_queue_name`, `invalid_job_id`: exit 2).

use crate::connect::{open_queue, server_time_ms};
use crate::human;
use clap::Args as ClapArgs;
use emq::{BatchStatus, QueueName};
use serde_json::json;

/// `emq batches` options.
#[derive(ClapArgs, Debug)]
#[command(after_help = "\
Examples:
  emq batches imports                     # newest first: created, progress, state
  emq batches imports 0x0a1b2c3d4e5f6071  # one batch: counts and its failed jobs
  emq batches imports 0x0a1b2c3d4e5f6071 --cancel
  emq batches imports --json --limit 200")]
pub struct Args {
    /// The queue that created the batches.
    pub queue: String,
    /// One batch's id: show its counts and failed jobs.
    pub id: Option<String>,
    /// Cancel that batch (its jobs without an outcome are cancelled; no callback falls due).
    #[arg(long, requires = "id")]
    pub cancel: bool,
    /// Batches (or failed jobs of one batch) to skip.
    #[arg(long, default_value_t = 0)]
    pub offset: u64,
    /// Most batches (or failed jobs of one batch) shown (1 to 500).
    #[arg(long, default_value_t = 50)]
    pub limit: u64,
    /// Print JSON: a page `{"total", "batches": [{"id", "created_ms", "description", "total",
    /// "pending", "completed", "failed", "sealed", "cancelled", "done"}]}`, or one batch's status
    /// with `failed_jobs` (and `cancelled_jobs` after `--cancel`).
    #[arg(long)]
    pub json: bool,
}

/// A batch's state in a word: cancelled, done, sealed (its jobs running) or open (jobs may
/// still be added by its creator).
pub fn state_word(s: &BatchStatus) -> &'static str {
    if s.cancelled {
        "cancelled"
    } else if s.done {
        "done"
    } else if s.sealed {
        "running"
    } else {
        "open"
    }
}

/// "completed/total (failed)" with the share done, for people.
fn progress(s: &BatchStatus) -> String {
    let pct = ((s.completed + s.failed) * 100)
        .checked_div(s.total)
        .unwrap_or(0);
    format!(
        "{}/{} done, {} failed ({pct}%)",
        s.completed + s.failed,
        s.total,
        s.failed
    )
}

/// Runs `emq batches`.
pub async fn run(urls: &[String], args: &Args) -> emq::Result<()> {
    QueueName::new(&args.queue)?;
    let opened = open_queue(urls, &args.queue).await?;
    let q = &opened.queue;
    let Some(id) = &args.id else {
        let page = q.batches(args.offset, args.limit).await?;
        if args.json {
            outln!("{}", super::to_json(&page)?);
            return Ok(());
        }
        let now = server_time_ms(q.store()).await?;
        outln!(
            "{:<20} {:<22} {:<10} {:<32} DESCRIPTION",
            "ID",
            "CREATED",
            "STATE",
            "PROGRESS"
        );
        for b in &page.batches {
            outln!(
                "{:<20} {:<22} {:<10} {:<32} {}",
                b.status.id.to_string(),
                human::relative(b.created_ms, now),
                state_word(&b.status),
                progress(&b.status),
                human::one_line(b.status.description.as_deref().unwrap_or("-"), 60)
            );
        }
        let shown = page.batches.len() as u64;
        outln!(
            "{} of {} batch{}{}",
            shown,
            page.total,
            if page.total == 1 { "" } else { "es" },
            if args.offset + shown < page.total {
                format!(" (next: --offset {})", args.offset + shown)
            } else {
                String::new()
            }
        );
        return Ok(());
    };
    let batch = q.open_batch(id.trim())?;
    let cancelled = if args.cancel {
        Some(batch.cancel().await?)
    } else {
        None
    };
    let s = batch.status(args.offset, args.limit).await?;
    if args.json {
        let mut v = json!(s);
        if let Some(n) = cancelled {
            v["cancelled_jobs"] = json!(n);
        }
        outln!("{}", super::to_json(&v)?);
        return Ok(());
    }
    if let Some(n) = cancelled {
        outln!("cancelled; {n} of its jobs cancelled or told");
    }
    outln!("batch      {}", s.id);
    outln!(
        "described  {}",
        s.description
            .as_deref()
            .map(|d| human::one_line(d, 100))
            .unwrap_or_else(|| "-".into())
    );
    outln!("state      {}", state_word(&s));
    outln!("progress   {}", progress(&s));
    outln!(
        "jobs       {} in all: {} pending, {} completed, {} failed",
        s.total,
        s.pending,
        s.completed,
        s.failed
    );
    if !s.failed_jobs.is_empty() {
        outln!("failed jobs (from {}):", args.offset);
        for j in &s.failed_jobs {
            outln!("  {} {}", j.queue, j.id);
        }
    }
    Ok(())
}
