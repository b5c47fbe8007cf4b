//! `emq job <queue> <id> [--json]`: one job, its state and record, and its log lines (the newest
//! 20 in the text; all of them as `"logs"` in the JSON).
//!
//! A malformed id exits 2 (`invalid_job_id`) without connecting; an id with no job exits 1
//! (`job_not_found`).

use crate::connect::open_queue;
use crate::human::{self, Clock};
use clap::Args as ClapArgs;
use emq::{Error, ErrorCode, JobId, QueueName};

/// Most log lines `emq job` prints (the newest; `--json` has them all).
const LOGS_SHOWN: usize = 20;

/// `emq job` options.
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The queue name.
    pub queue: String,

    /// The job's id.
    pub id: String,

    /// Print the job as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Checks a queue name and a job id before anything connects.
pub fn parse_target(queue: &str, id: &str) -> emq::Result<JobId> {
    QueueName::new(queue)?;
    JobId::parse(id)
}

/// The error for an id with no job.
pub fn not_found(queue: &str, id: JobId) -> Error {
    Error::new(
        ErrorCode::JobNotFound,
        format!("no job {id} in queue {queue}"),
    )
}

/// Runs `emq job`.
pub async fn run(urls: &[String], args: &Args) -> emq::Result<()> {
    let id = parse_target(&args.queue, &args.id)?;
    let opened = open_queue(urls, &args.queue).await?;
    let job = opened
        .queue
        .get(id)
        .await?
        .ok_or_else(|| not_found(opened.queue.name().as_str(), id))?;
    let logs = opened.queue.logs(job.id).await?;
    if args.json {
        let mut value = job.to_json();
        if let Some(obj) = value.as_object_mut() {
            obj.insert("logs".into(), serde_json::json!(logs));
        }
        outln!("{}", super::to_json(&value)?);
    } else {
        let clock = Clock::read(opened.queue.store()).await?;
        let state = job.state.map(|s| s.as_str()).unwrap_or("unknown");
        outln!("job {} in queue {}", job.id, opened.queue.name().as_str());
        outln!("  name      {}", job.name);
        if let Some(d) = job.options["description"].as_str() {
            outln!("  about     {d}");
        }
        outln!("  state     {state}");
        outln!("  attempts  {}/{}", job.attempts_made, job.attempts);
        outln!("  created   {}", clock.stamp(job.created_ms));
        if let Some(ms) = job.processed_ms {
            outln!("  processed {}", clock.stamp(ms));
        }
        if let Some(ms) = job.finished_ms {
            match job.processed_ms.filter(|p| *p <= ms) {
                Some(p) => outln!(
                    "  finished  {}, ran {}",
                    clock.stamp(ms),
                    human::duration(ms - p)
                ),
                None => outln!("  finished  {}", clock.stamp(ms)),
            }
        }
        outln!("  data      {}", job.data);
        if let Some(p) = &job.progress {
            outln!("  progress  {p}");
        }
        if let Some(r) = &job.result {
            outln!("  result    {r}");
        }
        if let Some(f) = &job.failure {
            // A message of several lines keeps the column.
            let message = f.message.replace('\n', "\n            ");
            outln!("  failure   [{}] {message}", f.code);
        }
        let shown = &logs[logs.len().saturating_sub(LOGS_SHOWN)..];
        match (logs.len(), shown.len()) {
            (0, _) => outln!("  logs      none"),
            (1, _) => outln!("  logs      1 line"),
            (n, s) if s == n => outln!("  logs      {n} lines"),
            (n, s) => outln!("  logs      {n} lines, the last {s} shown (all with --json)"),
        }
        for line in shown {
            outln!("    {line}");
        }
    }
    Ok(())
}
