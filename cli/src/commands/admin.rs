//! The commands that change a queue: `retry`, `promote`, `remove`, `priority`, `cancel` (one job),
//! `retry-failed`, `pause`, `resume`, `drain` and `clean`. Each prints one line saying what it did.

use crate::commands::job::{not_found, parse_target};
use crate::connect::open_queue;
use clap::Args as ClapArgs;
use emq::{Error, ErrorCode, JobState, QueueName};
use std::time::Duration;

/// Options of the commands on one job.
#[derive(ClapArgs, Debug)]
pub struct JobArgs {
    /// The queue name.
    pub queue: String,
    /// The job's id.
    pub id: String,
}

/// `emq priority` options.
#[derive(ClapArgs, Debug)]
pub struct PriorityArgs {
    #[command(flatten)]
    pub job: JobArgs,
    /// The new priority: 0 for none, otherwise lower runs first (1 is the most urgent).
    pub priority: u32,
}

/// Options of the commands on a whole queue.
#[derive(ClapArgs, Debug)]
pub struct QueueArgs {
    /// The queue name.
    pub queue: String,
}

/// `emq drain` options.
#[derive(ClapArgs, Debug)]
pub struct DrainArgs {
    /// The queue name.
    pub queue: String,
    /// Remove the delayed jobs too.
    #[arg(long)]
    pub delayed: bool,
}

/// `emq grow` options.
#[derive(ClapArgs, Debug)]
pub struct GrowArgs {
    /// The partitioned queue's name.
    pub queue: String,
    /// The count of partitions to grow it to (more than it has, at most 256).
    #[arg(long)]
    pub partitions: u16,
}

/// `emq clean` options.
#[derive(ClapArgs, Debug)]
pub struct CleanArgs {
    /// The queue name.
    pub queue: String,
    /// completed or failed.
    #[arg(long)]
    pub state: String,
    /// Only jobs that finished more than this many ms ago.
    #[arg(long, default_value_t = 0)]
    pub grace_ms: u64,
    /// Most jobs to remove.
    #[arg(long, default_value_t = 1_000)]
    pub limit: u64,
}

/// What to do to one job.
#[derive(Clone, Copy, Debug)]
pub enum JobAction {
    /// Move a failed job back to waiting.
    Retry,
    /// Make a delayed job ready now.
    Promote,
    /// Delete a job that is not active.
    Remove,
    /// Give a job that has not finished a new priority.
    Priority(u32),
}

/// Runs `emq retry|promote|remove <queue> <id>` and `emq priority <queue> <id> <priority>`.
pub async fn run_job(urls: &[String], action: JobAction, args: &JobArgs) -> emq::Result<()> {
    let id = parse_target(&args.queue, &args.id)?;
    let opened = open_queue(urls, &args.queue).await?;
    let q = &opened.queue;
    let name = q.name().as_str();
    let (outcome, verb, need) = match action {
        JobAction::Retry => (q.retry(id).await?, "retried", "failed"),
        JobAction::Promote => (q.promote(id).await?, "promoted", "delayed"),
        JobAction::Remove => (q.remove(id).await?, "removed", "not active"),
        JobAction::Priority(p) => (
            q.change_priority(id, p).await?,
            "reprioritized",
            "unfinished",
        ),
    };
    outcome.require(name, id, verb, need)?;
    outln!("{verb} job {id} in queue {name}");
    Ok(())
}

/// What to do to a whole queue.
#[derive(Clone, Copy, Debug)]
pub enum QueueAction {
    /// Move every failed job back to waiting.
    RetryFailed,
    /// Stop handing out jobs.
    Pause,
    /// Hand out jobs again.
    Resume,
}

/// Runs `emq retry-failed|pause|resume <queue>`.
pub async fn run_queue(urls: &[String], action: QueueAction, args: &QueueArgs) -> emq::Result<()> {
    let opened = open_queue(urls, &args.queue).await?;
    let q = &opened.queue;
    let name = q.name().as_str();
    match action {
        QueueAction::RetryFailed => {
            let n = q.retry_failed().await?;
            outln!("retried {n} failed jobs in queue {name}");
        }
        QueueAction::Pause => {
            q.pause().await?;
            outln!("paused queue {name}");
        }
        QueueAction::Resume => {
            q.resume().await?;
            outln!("resumed queue {name}");
        }
    }
    Ok(())
}

/// Runs `emq grow`: the partitioned queue grows online (`Queue::grow_partitions`).
pub async fn run_grow(urls: &[String], args: &GrowArgs) -> emq::Result<()> {
    let opened = open_queue(urls, &args.queue).await?;
    let q = &opened.queue;
    let was = q.partition_count();
    let now = q.grow_partitions(args.partitions).await?;
    outln!(
        "grew queue {} from {was} to {now} partitions (its workers take up the new ones within about a second)",
        q.name().as_str()
    );
    Ok(())
}

/// Runs `emq drain`.
pub async fn run_drain(urls: &[String], args: &DrainArgs) -> emq::Result<()> {
    let opened = open_queue(urls, &args.queue).await?;
    let n = opened.queue.drain(args.delayed).await?;
    let what = if args.delayed {
        "waiting, paused, prioritized and delayed"
    } else {
        "waiting, paused and prioritized"
    };
    outln!(
        "drained {n} {what} jobs from queue {}",
        opened.queue.name().as_str()
    );
    Ok(())
}

/// Runs `emq clean`.
pub async fn run_clean(urls: &[String], args: &CleanArgs) -> emq::Result<()> {
    QueueName::new(&args.queue)?;
    let state = JobState::parse(&args.state)?;
    if !matches!(state, JobState::Completed | JobState::Failed) {
        return Err(Error::new(
            ErrorCode::InvalidOption,
            format!(
                "--state must be completed or failed, not {}",
                state.as_str()
            ),
        ));
    }
    let opened = open_queue(urls, &args.queue).await?;
    let n = opened
        .queue
        .clean(state, Duration::from_millis(args.grace_ms), args.limit)
        .await?;
    outln!(
        "removed {n} {} jobs from queue {}",
        state.as_str(),
        opened.queue.name().as_str()
    );
    Ok(())
}

/// `emq cancel` options.
#[derive(ClapArgs, Debug)]
pub struct CancelArgs {
    #[command(flatten)]
    pub job: JobArgs,
    /// Why (kept in the job's failure).
    #[arg(long, default_value = "")]
    pub reason: String,
}

/// Runs `emq cancel <queue> <id> [--reason R]`: a job that has not run ends cancelled (failed,
/// code `cancelled`); a running one's worker is told to stop it.
pub async fn run_cancel(urls: &[String], args: &CancelArgs) -> emq::Result<()> {
    let id = parse_target(&args.job.queue, &args.job.id)?;
    let opened = open_queue(urls, &args.job.queue).await?;
    let q = &opened.queue;
    let name = q.name().as_str();
    match q.cancel(id, &args.reason).await? {
        emq::CancelOutcome::Cancelled => println!("cancelled job {id} in queue {name}"),
        emq::CancelOutcome::Requested => {
            println!("job {id} in queue {name} is running; its worker was told to cancel it")
        }
        emq::CancelOutcome::Finished => {
            return Err(Error::new(
                ErrorCode::InvalidState,
                format!("job {id} in queue {name} has finished; there is nothing to cancel"),
            ))
        }
        emq::CancelOutcome::NotFound => return Err(not_found(name, id)),
    }
    Ok(())
}
