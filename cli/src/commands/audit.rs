//! `emq audit <queue> [--json]`: checks the queue's invariants; exits 1 if any is broken.
//!
//! Run it on a quiet queue (no worker or producer between its reads).

use crate::connect::open_queue;
use clap::Args as ClapArgs;
use emq::{Error, ErrorCode};

/// `emq audit` options.
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The queue name.
    pub queue: String,

    /// Print JSON: `{"queue", "ok", "jobs", "stalled_pending", "problems": […]}`.
    #[arg(long)]
    pub json: bool,
}

/// Runs `emq audit`.
pub async fn run(urls: &[String], args: &Args) -> emq::Result<()> {
    let opened = open_queue(urls, &args.queue).await?;
    let report = opened.queue.audit().await?;
    let name = opened.queue.name().as_str().to_string();
    if args.json {
        let v = serde_json::json!({
            "queue": name,
            "ok": report.ok(),
            "jobs": report.jobs,
            "stalled_pending": report.stalled_pending,
            "problems": report.problems,
        });
        outln!("{}", super::to_json(&v)?);
    } else {
        outln!(
            "queue {name}: {} jobs, {} stalled-pending",
            report.jobs,
            report.stalled_pending
        );
        if report.ok() {
            outln!("audit: ok");
        } else {
            for p in &report.problems {
                outln!("  - {p}");
            }
        }
    }
    if report.ok() {
        Ok(())
    } else {
        Err(Error::new(
            ErrorCode::InvalidState,
            format!(
                "the audit of {name} found {} problems",
                report.problems.len()
            ),
        ))
    }
}
