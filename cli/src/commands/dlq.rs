//! `emq dlq`: dead-letter queues (the core's `emq::dead_letter`). `list <dlq>` shows the
//! dead-lettered jobs a queue holds (origin queue and id, attempts made, last failure), `replay
//! <dlq> --ids a,b | --all` sends them back to their queues (attempts from zero; the core's
//! [`Queue::replay_dead_letters`]), `set <queue> <dlq|none>` sets or clears a queue's default
//! dead-letter queue ([`Queue::set_dead_letter`]). Each takes `--json`. Names and ids are checked
//! by the core (`invalid_queue_name`, `invalid_id`: exit 2).

use crate::connect::open_queue;
use clap::{Args as ClapArgs, Subcommand};
use emq::{JobId, Queue, QueueName};
use serde_json::{json, Value};

/// `emq dlq` options.
#[derive(ClapArgs, Debug)]
#[command(after_help = "\
Examples:
  emq dlq set emails emails-dlq          # jobs of emails that fail for good go to emails-dlq
  emq add emails send --dead-letter other-dlq   # one job's own dead-letter queue
  emq dlq list emails-dlq                # what failed, where, and why
  emq dlq replay emails-dlq --ids 0x1a2b,0x1a2c
  emq dlq replay emails-dlq --all --json
  emq dlq set emails none                # no default any more")]
pub struct Args {
    /// What to do.
    #[command(subcommand)]
    pub action: Action,
}

/// One dead-letter action.
#[derive(Subcommand, Debug)]
pub enum Action {
    /// The dead-lettered jobs waiting (or failed again) in a dead-letter queue.
    List {
        /// The dead-letter queue.
        queue: String,
        /// Most jobs shown.
        #[arg(long, default_value_t = 50)]
        limit: u64,
        /// Print a JSON array: `[{"id", "name", "state", "origin": {"queue", "id",
        /// "attempts_made", "stalls", "failure", "failed_ms", "options"}}]`.
        #[arg(long)]
        json: bool,
    },
    /// Send dead-lettered jobs back to their queues, attempts reset, and remove them here.
    Replay {
        /// The dead-letter queue.
        queue: String,
        /// The jobs, by their ids in the dead-letter queue, comma-separated.
        #[arg(
            long,
            value_delimiter = ',',
            conflicts_with = "all",
            required_unless_present = "all"
        )]
        ids: Vec<String>,
        /// Every dead-lettered job that is not running.
        #[arg(long)]
        all: bool,
        /// Print a JSON array: `[{"id", "queue", "origin_id"}]`.
        #[arg(long)]
        json: bool,
    },
    /// Set a queue's default dead-letter queue (`none` clears it); without one, print it.
    Set {
        /// The queue whose failed jobs move.
        queue: String,
        /// The dead-letter queue, or `none`.
        dlq: Option<String>,
        /// Print `{"queue", "dead_letter"}`.
        #[arg(long)]
        json: bool,
    },
}

/// A dead-lettered job as `list --json` prints it.
pub fn letter_json(job: &emq::Job) -> Value {
    json!({
        "id": job.id,
        "name": job.name,
        "state": job.state.map(|s| s.as_str()),
        "origin": job.dead_letter_origin(),
    })
}

/// Runs `emq dlq`.
pub async fn run(urls: &[String], args: &Args) -> emq::Result<()> {
    match &args.action {
        Action::List { queue, limit, json } => {
            let opened = open_queue(urls, queue).await?;
            let jobs = opened.queue.dead_letters(*limit).await?;
            if *json {
                let v: Vec<Value> = jobs.iter().map(letter_json).collect();
                outln!("{}", super::to_json(&v)?);
                return Ok(());
            }
            outln!(
                "{:<20} {:<12} {:<24} {:<20} {:>5}  FAILURE",
                "ID",
                "STATE",
                "FROM",
                "ORIGIN ID",
                "ATTS"
            );
            for j in &jobs {
                let Some(o) = j.dead_letter_origin() else {
                    continue;
                };
                let failure = format!(
                    "{}: {}",
                    o.failure["code"].as_str().unwrap_or("?"),
                    o.failure["message"].as_str().unwrap_or("")
                );
                outln!(
                    "{:<20} {:<12} {:<24} {:<20} {:>5}  {}",
                    j.id.to_string(),
                    j.state.map(|s| s.as_str()).unwrap_or("-"),
                    o.queue,
                    o.id,
                    o.attempts_made,
                    failure.chars().take(120).collect::<String>()
                );
            }
            Ok(())
        }
        Action::Replay {
            queue,
            ids,
            all,
            json,
        } => {
            QueueName::new(queue)?;
            let parsed: Vec<JobId> = ids
                .iter()
                .map(|t| JobId::parse(t.trim()))
                .collect::<emq::Result<_>>()?;
            let opened = open_queue(urls, queue).await?;
            let q: &Queue = &opened.queue;
            let done = if *all {
                q.replay_dead_letters(None).await?
            } else {
                q.replay_dead_letters(Some(&parsed)).await?
            };
            if *json {
                outln!("{}", super::to_json(&done)?);
            } else {
                for r in &done {
                    outln!("{} -> {} {}", r.id, r.queue, r.origin_id);
                }
                outln!("replayed {}", done.len());
            }
            Ok(())
        }
        Action::Set { queue, dlq, json } => {
            QueueName::new(queue)?;
            let opened = open_queue(urls, queue).await?;
            match dlq.as_deref() {
                Some(t) if t.eq_ignore_ascii_case("none") => {
                    opened.queue.set_dead_letter(None).await?
                }
                Some(t) => opened.queue.set_dead_letter(Some(t)).await?,
                None => {}
            }
            let now = opened.queue.dead_letter().await?;
            if *json {
                outln!(
                    "{}",
                    super::to_json(&json!({"queue": queue, "dead_letter": now}))?
                );
            } else {
                outln!("{}", now.as_deref().unwrap_or("none"));
            }
            Ok(())
        }
    }
}
