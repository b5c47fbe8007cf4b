//! Job schedulers from the command line: `emq schedule <queue> <id> --name N (--every-ms MS |
//! --cron EXPR [--tz ZONE]) [--data JSON] [--limit N]` creates or replaces one, `emq schedulers
//! <queue> [--json]` lists them, `emq unschedule <queue> <id>` deletes one (a no-op, said so, when
//! there is none). Workers on the queue
//! enqueue the runs; the scheduler id is data, never a key.

use crate::connect::open_queue;
use crate::human;
use clap::Args as ClapArgs;
use emq::spec::{Millis, ScheduleSpec};
use emq::{Error, ErrorCode, Schedule};

/// `emq schedule` options.
#[derive(ClapArgs, Debug)]
pub struct UpsertArgs {
    /// The queue name.
    pub queue: String,
    /// The scheduler's id.
    pub id: String,
    /// The name of each run's job.
    #[arg(long)]
    pub name: String,
    /// Each run's payload, as JSON text.
    #[arg(long, default_value = "null", value_name = "JSON")]
    pub data: String,
    /// Run every this many ms.
    #[arg(long, value_name = "MS", conflicts_with = "cron")]
    pub every_ms: Option<u64>,
    /// Run at each occurrence of this cron expression (5 fields, or 6 with seconds first).
    #[arg(long, value_name = "EXPR")]
    pub cron: Option<String>,
    /// The cron expression's IANA time zone.
    #[arg(long, default_value = "UTC", value_name = "ZONE")]
    pub tz: String,
    /// Stop after this many runs.
    #[arg(long)]
    pub limit: Option<u64>,
}

/// `emq schedulers` options.
#[derive(ClapArgs, Debug)]
pub struct ListArgs {
    /// The queue name.
    pub queue: String,
    /// One JSON object per line instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `emq unschedule` options.
#[derive(ClapArgs, Debug)]
pub struct RemoveArgs {
    /// The queue name.
    pub queue: String,
    /// The scheduler's id.
    pub id: String,
}

/// Runs `emq schedule`.
pub async fn upsert(urls: &[String], args: &UpsertArgs) -> emq::Result<()> {
    if args.every_ms.is_none() == args.cron.is_none() {
        return Err(Error::new(
            ErrorCode::InvalidOption,
            "give --every-ms or --cron",
        ));
    }
    // The flags as the core's spec, converted (and every value checked) by the core, as every
    // binding's options are.
    let spec = ScheduleSpec {
        name: args.name.clone(),
        data: Some(emq::job::payload_from_text(
            "the scheduled job's data",
            &args.data,
        )?),
        every: args.every_ms.map(|ms| Millis(ms as f64)),
        cron: args.cron.clone(),
        tz: Some(args.tz.clone()),
        limit: args.limit.map(|l| l as f64),
        ..ScheduleSpec::default()
    };
    let schedule = Schedule::try_from(spec)?;
    let opened = open_queue(urls, &args.queue).await?;
    let created = opened.queue.upsert_scheduler(&args.id, schedule).await?;
    outln!(
        "{} scheduler {} on {}",
        if created { "created" } else { "updated" },
        args.id,
        args.queue
    );
    Ok(())
}

/// Runs `emq schedulers`.
pub async fn list(urls: &[String], args: &ListArgs) -> emq::Result<()> {
    let opened = open_queue(urls, &args.queue).await?;
    let all = opened.queue.schedulers().await?;
    if args.json {
        for s in &all {
            outln!("{}", serde_json::to_string(s)?);
        }
        return Ok(());
    }
    outln!(
        "{:<24} {:<28} {:>7} {:>7} {:>12}  name",
        "id",
        "repeat",
        "runs",
        "limit",
        "next"
    );
    for s in &all {
        let repeat = match (&s.cron, &s.tz) {
            (Some(c), Some(tz)) => format!("{c} ({tz})"),
            _ => format!("every {}", human::duration(s.every_ms)),
        };
        let next = s
            .next_in_ms
            .map(|n| match n {
                0 => "now".to_string(),
                n => format!("in {}", human::duration(n)),
            })
            .unwrap_or_else(|| "-".into());
        let limit = if s.limit == 0 {
            "-".to_string()
        } else {
            s.limit.to_string()
        };
        outln!(
            "{:<24} {:<28} {:>7} {:>7} {:>12}  {}",
            s.id,
            repeat,
            s.count,
            limit,
            next,
            s.name
        );
    }
    Ok(())
}

/// Runs `emq unschedule`.
pub async fn remove(urls: &[String], args: &RemoveArgs) -> emq::Result<()> {
    let opened = open_queue(urls, &args.queue).await?;
    if opened.queue.remove_scheduler(&args.id).await? {
        outln!("removed scheduler {} from {}", args.id, args.queue);
    } else {
        outln!("no scheduler {} on {}", args.id, args.queue);
    }
    Ok(())
}
