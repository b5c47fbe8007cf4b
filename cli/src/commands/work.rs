//! `emq work <queue> --echo [--fail-name NAME] [--max-jobs N] [--concurrency C]`: a Rust worker
//! in its own process, for tests in other languages (the cross-language suite in `tests/cross/`).
//! Hidden from `--help` and the README: it exists to be driven by test suites.
//!
//! With `--echo` (the only handler so far) every job completes with
//! `{"lang": "rust", "id": <job id>, "name": <job name>, "data": <job data>}`, except jobs named
//! `--fail-name`, which fail with the message `data.message` when the payload is an object with a
//! string `message`, else `job <id> failed on request`. The worker keeps every finished job (no
//! retention trim), so callers can read them back. It runs until it has handled `--max-jobs` jobs
//! (completed or failed), or until SIGINT/SIGTERM; then it closes the worker and prints one JSON
//! line on stdout: `{"completed": N, "failed": M, "retried": R}` (jobs completed, jobs failed for
//! good, runs that failed and were retried).

use crate::connect::open_queue;
use clap::Args as ClapArgs;
use emq::{
    Error, ErrorCode, HandlerError, HandlerResult, JobContext, Retention, Worker, WorkerOptions,
};
use serde_json::{json, Value};
use std::time::Duration;
use tokio::signal::unix::{signal, SignalKind};

/// `emq work` options.
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The queue name.
    pub queue: String,

    /// Complete each job with {"lang": "rust", "id", "name", "data"} (required: the only handler).
    #[arg(long)]
    pub echo: bool,

    /// Fail the jobs with this name (message: `data.message`, else `job <id> failed on request`).
    #[arg(long, value_name = "NAME")]
    pub fail_name: Option<String>,

    /// Stop after handling this many jobs (completed or failed); 0 runs until a signal.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub max_jobs: u64,

    /// Jobs run at once.
    #[arg(long, default_value_t = 1)]
    pub concurrency: usize,
}

/// The echo handler's outcome for one job.
pub fn echo(id: &str, name: &str, data: &Value, fail_name: Option<&str>) -> HandlerResult {
    if fail_name == Some(name) {
        let message = data
            .get("message")
            .and_then(Value::as_str)
            .map(String::from)
            .unwrap_or_else(|| format!("job {id} failed on request"));
        return Err(HandlerError::new(message));
    }
    Ok(json!({ "lang": "rust", "id": id, "name": name, "data": data }))
}

fn internal(what: &str, e: impl std::fmt::Display) -> Error {
    Error::new(ErrorCode::Internal, format!("{what}: {e}"))
}

/// Runs `emq work`.
pub async fn run(urls: &[String], args: &Args) -> emq::Result<()> {
    if !args.echo {
        return Err(Error::new(
            ErrorCode::InvalidOption,
            "`emq work` needs --echo (the only handler it has)",
        ));
    }
    if args.concurrency == 0 {
        return Err(Error::new(
            ErrorCode::InvalidOption,
            "--concurrency must be at least 1",
        ));
    }
    let mut interrupt =
        signal(SignalKind::interrupt()).map_err(|e| internal("cannot handle SIGINT", e))?;
    let mut terminate =
        signal(SignalKind::terminate()).map_err(|e| internal("cannot handle SIGTERM", e))?;
    let opened = open_queue(urls, &args.queue).await?;
    let fail_name = args.fail_name.clone();
    let handler = move |job: JobContext| {
        let outcome = echo(
            &job.id().to_string(),
            &job.job().name,
            job.data(),
            fail_name.as_deref(),
        );
        async move { outcome }
    };
    let worker = Worker::builder(opened.queue.clone())
        .options(WorkerOptions {
            concurrency: args.concurrency,
            block_timeout: Duration::from_millis(500),
            completed: Retention::KEEP_ALL,
            failed: Retention::KEEP_ALL,
            ..WorkerOptions::default()
        })
        .handler(handler)
        .run()?;
    eprintln!("emq work: working on {}", opened.queue.name().as_str());
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    loop {
        tokio::select! {
            _ = interrupt.recv() => break,
            _ = terminate.recv() => break,
            _ = tick.tick() => {
                let s = worker.stats();
                if args.max_jobs > 0 && s.completed + s.failed >= args.max_jobs {
                    break;
                }
            }
        }
    }
    let stats = worker.stats();
    worker.close().await?;
    outln!(
        "{}",
        json!({ "completed": stats.completed, "failed": stats.failed, "retried": stats.retried })
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_completes_with_the_job_and_fails_by_name() {
        let data = json!({ "a": [1, "ü"], "message": "boom ✗" });
        assert_eq!(
            echo("j1", "send", &data, Some("fail")).unwrap(),
            json!({ "lang": "rust", "id": "j1", "name": "send", "data": data })
        );
        assert_eq!(
            echo("j1", "fail", &data, Some("fail")).unwrap_err().message,
            "boom ✗"
        );
        let err = echo("j2", "fail", &json!(null), Some("fail")).unwrap_err();
        assert_eq!(err.message, "job j2 failed on request");
        assert_eq!(err.code, "handler_failed");
        assert!(echo("j3", "fail", &json!(1), None).is_ok());
    }
}
