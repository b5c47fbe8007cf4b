//! `emq`: the command line of EchoMQ 2.0.
//!
//! Layout, for whoever adds the next subcommand:
//! - `main.rs`: the clap definition ([`Cli`], [`Command`]) and the dispatch ([`run`]);
//! - `commands/<name>.rs`: one file per subcommand, with its clap `Args` and a `run` that returns
//!   `emq::Result<()>` (async when it talks to the datastore);
//! - `connect.rs`: `--url` (repeatable) / `EMQ_URL` / `redis://127.0.0.1:6379` → an `emq::Store`
//!   (`demo` falls back to a private `EmbeddedServer` instead, kept alive as long as the store);
//! - `exit.rs`: an `emq::Error` → `error[<code>]: <message>` on stderr and the exit code
//!   (2 for invalid input, 1 otherwise; clap's own usage errors exit 2 too).

#[macro_use]
mod out;
mod commands;
mod connect;
mod exit;
mod human;

use clap::{Parser, Subcommand};
use commands::admin;
use std::process::ExitCode;

/// emq — EchoMQ 2.0, a background-job queue on Redis-protocol datastores.
#[derive(Parser, Debug)]
#[command(name = "emq", version, propagate_version = true)]
struct Cli {
    /// Datastore URL; repeat for cluster seeds [default: $EMQ_URL, else redis://127.0.0.1:6379]
    ///
    /// `redis://[user:password@]host:port[/db]` or `rediss://…` for TLS; give it several times to
    /// name several seed nodes of a cluster (one node of a cluster is enough too). Without it,
    /// `EMQ_URL` is used (one URL, or seeds separated by commas); without both, redis://127.0.0.1:6379,
    /// and a command fails with server_unavailable when nothing answers there (no server is started
    /// behind your back). Only `demo` starts a private redis-server when no URL is given (stopped
    /// when it exits). `keyspace` needs no datastore and ignores it; `dev` starts its own server
    /// and refuses it.
    #[arg(long = "url", value_name = "URL", global = true)]
    urls: Vec<String>,

    /// A private CA (PEM file) to trust for rediss:// [default: $EMQ_TLS_CA]
    ///
    /// Without it, the server's certificate must be signed by a CA of the system's roots. The
    /// environment variables may hold the PEM text itself instead of a path.
    #[arg(long = "tls-ca", value_name = "FILE", global = true)]
    tls_ca: Option<String>,

    /// A client certificate (PEM file) for mutual TLS, with --tls-key [default: $EMQ_TLS_CERT]
    #[arg(long = "tls-cert", value_name = "FILE", global = true)]
    tls_cert: Option<String>,

    /// The client certificate's private key (PEM file) [default: $EMQ_TLS_KEY]
    #[arg(long = "tls-key", value_name = "FILE", global = true)]
    tls_key: Option<String>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Show a queue's keys: v1 and v2 spelling, datastore type, hash tag and cluster slot.
    ///
    /// Needs no server: the figure is computed from the keyspace rules of this emq.
    Keyspace(commands::keyspace::Args),

    /// Run a private redis-server in the foreground and print its URL on stdout.
    ///
    /// The server listens on 127.0.0.1 on a free port, keeps its data in memory only, and is
    /// stopped (and its temp dir removed) on Ctrl-C or SIGTERM. Point other programs at it with
    /// `EMQ_URL=<the printed URL>`.
    Dev,

    /// Run N jobs over three demo queues with Rust workers, print the throughput, and audit.
    ///
    /// Empties `demo-emails`, `demo-images` and `demo-reports` first. With no --url or EMQ_URL it
    /// runs on a private redis-server it starts (and stops) itself. Exits 0 only if every job
    /// completed exactly once and every queue's audit passes.
    Demo(commands::demo::Args),

    /// Add one job (JSON payload); prints its id.
    Add(commands::add::Args),

    /// Show the queue's events; with --follow, keep printing new ones.
    Events(commands::events::Args),

    /// Jobs per state, and the age of the oldest waiting job.
    Stats(commands::stats::Args),

    /// List the jobs in one state.
    Jobs(commands::jobs::Args),

    /// Show one job.
    Job(commands::job::Args),

    /// Move a failed job back to waiting.
    Retry(commands::admin::JobArgs),

    /// Make a delayed job ready now.
    Promote(commands::admin::JobArgs),

    /// Delete a job that is not active.
    Remove(commands::admin::JobArgs),

    /// Give a job that has not finished a new priority (0: none; lower runs first).
    Priority(commands::admin::PriorityArgs),

    /// Cancel a job: one not running yet never runs; a running one's worker stops it.
    Cancel(commands::admin::CancelArgs),

    /// Move every failed job back to waiting.
    RetryFailed(commands::admin::QueueArgs),

    /// Pause a queue: workers take no new jobs from it.
    Pause(commands::admin::QueueArgs),

    /// Resume a paused queue.
    Resume(commands::admin::QueueArgs),

    /// Grow a partitioned queue to --partitions N while producers and workers run.
    ///
    /// Jobs stay where they are; jobs with a group, dedup key or id of their own keep their
    /// partition. Each worker restarts itself over the grown queue within about a second.
    /// Shrinking is not supported.
    Grow(commands::admin::GrowArgs),

    /// Remove the waiting (and with --delayed, the delayed) jobs.
    Drain(commands::admin::DrainArgs),

    /// Remove completed or failed jobs that finished more than --grace-ms ago.
    Clean(commands::admin::CleanArgs),

    /// Check a queue's invariants; exits 1 if any is broken.
    Audit(commands::audit::Args),

    /// Queue metrics in the Prometheus text format, printed once or served with --listen.
    Metrics(commands::metrics::Args),

    /// Create or replace a job scheduler (every N ms, or a cron expression in a time zone).
    Schedule(commands::schedule::UpsertArgs),

    /// List a queue's job schedulers.
    Schedulers(commands::schedule::ListArgs),

    /// Delete a job scheduler.
    Unschedule(commands::schedule::RemoveArgs),

    /// Every queue in use, with its jobs per state (the core's queue registry).
    Queues(commands::queues::QueuesArgs),

    /// The live workers, with host, pid, language and concurrency (the core's worker registry).
    Workers(commands::queues::WorkersArgs),

    /// A queue's fair groups (backlog, running, weight, caps, paused); pause, resume, weigh, cap.
    ///
    /// Without an action: the groups as a table, largest backlog first (`--sort`, `--offset`,
    /// `--limit`, `--json`). With one: `pause <group>`, `resume <group>`, `weight <group> <n>`,
    /// `concurrency [<group>] <n|none>`, `max-waiting [<group>] <n|none>` (no group: the default
    /// of every group).
    Groups(commands::groups::Args),

    /// A queue's job defaults (attempts, backoff, jitter, retention): printed, `--set '<JSON>'`
    /// (job options, times in ms) or `--clear`.
    Defaults(commands::defaults::Args),

    /// Dead-letter queues: `list <dlq>` the jobs that failed for good elsewhere and wait there,
    /// `replay <dlq> --ids a,b | --all` them back to their queues, `set <queue> <dlq|none>` a
    /// queue's default dead-letter queue.
    Dlq(commands::dlq::Args),

    /// The batches a queue created, newest first (created, state, progress); with an id, one
    /// batch's counts and failed jobs, and `--cancel` to cancel it.
    Batches(commands::batches::Args),

    /// Serve the web dashboard (overview, queues, jobs, workers; live; loopback by default).
    Ui(commands::ui::Args),

    /// Copy a BullMQ (or EchoMQ 1.x) queue into an emq queue, crash-safe; prints a report.
    Migrate(commands::migrate::Args),

    /// Run a Rust echo worker on one queue (for cross-language test suites; see `commands/work.rs`).
    #[command(hide = true)]
    Work(commands::work::Args),
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        // The reader of stdout has gone (`| head`): nothing more to say, and no one to say it to.
        Err(_) if out::closed() => ExitCode::SUCCESS,
        Err(e) => exit::report(&e),
    }
}

/// Runs one parsed command line. Every value a command owns (a store, an embedded server) is
/// dropped before this returns, so nothing is left running when `main` exits.
async fn run(cli: Cli) -> emq::Result<()> {
    connect::set_tls(connect::resolve_tls(
        [&cli.tls_ca, &cli.tls_cert, &cli.tls_key],
        |name| std::env::var(name).ok(),
    ));
    match cli.command {
        Command::Keyspace(args) => commands::keyspace::run(&args),
        Command::Dev => commands::dev::run(&cli.urls).await,
        Command::Demo(args) => commands::demo::run(&cli.urls, &args).await,
        Command::Add(args) => commands::add::run(&cli.urls, &args).await,
        Command::Schedule(args) => commands::schedule::upsert(&cli.urls, &args).await,
        Command::Schedulers(args) => commands::schedule::list(&cli.urls, &args).await,
        Command::Unschedule(args) => commands::schedule::remove(&cli.urls, &args).await,
        Command::Events(args) => commands::events::run(&cli.urls, &args).await,
        Command::Stats(args) => commands::stats::run(&cli.urls, &args).await,
        Command::Jobs(args) => commands::jobs::run(&cli.urls, &args).await,
        Command::Job(args) => commands::job::run(&cli.urls, &args).await,
        Command::Retry(args) => admin::run_job(&cli.urls, admin::JobAction::Retry, &args).await,
        Command::Promote(args) => admin::run_job(&cli.urls, admin::JobAction::Promote, &args).await,
        Command::Remove(args) => admin::run_job(&cli.urls, admin::JobAction::Remove, &args).await,
        Command::Priority(args) => {
            let action = admin::JobAction::Priority(args.priority);
            admin::run_job(&cli.urls, action, &args.job).await
        }
        Command::Cancel(args) => admin::run_cancel(&cli.urls, &args).await,
        Command::RetryFailed(args) => {
            admin::run_queue(&cli.urls, admin::QueueAction::RetryFailed, &args).await
        }
        Command::Pause(args) => admin::run_queue(&cli.urls, admin::QueueAction::Pause, &args).await,
        Command::Resume(args) => {
            admin::run_queue(&cli.urls, admin::QueueAction::Resume, &args).await
        }
        Command::Grow(args) => admin::run_grow(&cli.urls, &args).await,
        Command::Drain(args) => admin::run_drain(&cli.urls, &args).await,
        Command::Clean(args) => admin::run_clean(&cli.urls, &args).await,
        Command::Audit(args) => commands::audit::run(&cli.urls, &args).await,
        Command::Metrics(args) => commands::metrics::run(&cli.urls, &args).await,
        Command::Queues(args) => commands::queues::run_queues(&cli.urls, &args).await,
        Command::Workers(args) => commands::queues::run_workers(&cli.urls, &args).await,
        Command::Groups(args) => commands::groups::run(&cli.urls, &args).await,
        Command::Defaults(args) => commands::defaults::run(&cli.urls, &args).await,
        Command::Dlq(args) => commands::dlq::run(&cli.urls, &args).await,
        Command::Batches(args) => commands::batches::run(&cli.urls, &args).await,
        Command::Ui(args) => commands::ui::run(&cli.urls, &args).await,
        Command::Migrate(args) => commands::migrate::run(&cli.urls, &args).await,
        Command::Work(args) => commands::work::run(&cli.urls, &args).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn groups_takes_an_optional_group_before_a_cap() {
        use commands::groups::Action;
        let parse = |args: &[&str]| match Cli::parse_from(args).command {
            Command::Groups(g) => g,
            other => panic!("{other:?}"),
        };
        let g = parse(&["emq", "groups", "q", "concurrency", "5"]);
        assert!(
            matches!(&g.action, Some(Action::Concurrency { group: None, limit }) if limit == "5"),
            "{g:?}"
        );
        let g = parse(&["emq", "groups", "q", "max-waiting", "t1", "none"]);
        assert!(
            matches!(&g.action, Some(Action::MaxWaiting { group: Some(t), limit }) if t == "t1" && limit == "none"),
            "{g:?}"
        );
        let g = parse(&["emq", "groups", "q", "--sort", "name", "--limit", "3"]);
        assert!(g.action.is_none());
        assert_eq!((g.sort, g.limit), (commands::groups::Sort::Name, 3));
    }

    #[test]
    fn url_is_global_and_repeatable() {
        let want = ["redis://a:1", "redis://b:2"];
        let before = Cli::parse_from(["emq", "--url", want[0], "--url", want[1], "dev"]);
        assert_eq!(before.urls, want);
        let after = Cli::parse_from(["emq", "keyspace", "q", "--url", want[0], "--url", want[1]]);
        assert_eq!(after.urls, want);
    }
}
