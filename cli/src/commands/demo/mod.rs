//! `emq demo [--jobs N] [--concurrency C]`: a throughput demo that checks itself.
//!
//! Empties the queues `demo-emails`, `demo-images` and `demo-reports`, starts one Rust
//! [`emq::Worker`] per queue, and — where they are built — a Python, a Node and a Kotlin child
//! process that run one worker per queue each on the same queues at once. Every handler returns
//! `{"lang": "rust"|"python"|"node"|"kotlin", "id": <job id>}`. Then it adds N jobs spread over the three
//! queues with `add_bulk` in chunks, and shows progress on stderr: a bar with the jobs completed
//! per language, redrawn in place on a terminal, else one line a second.
//!
//! The children are the scripts in `demo_workers/`, embedded in the binary and run as
//! `$EMQ_PYTHON -c <script>` (default `python3`; used when `import emq` works with it) and
//! `node -e <script>` with `EMQ_NODE_PACKAGE` (default `<repo>/node`, the repository found from
//! the binary's location or else the current directory; used when `require` of it works), and
//! `java -Djna.library.path=$EMQ_KOTLIN_LIBRARY_PATH -cp $EMQ_KOTLIN_CLASSPATH DemoWorkerKt`
//! (`demo_workers/kotlin`, which scripts/demo compiles where java and mvn are on PATH). A
//! language that is not built is skipped with the reason on stderr. Each child prints `ready`, then
//! `done <n>` as it completes jobs, and, once the demo closes its stdin, closes its workers and
//! prints `final {…}` (its counters and the ids it ran) and exits; every wait on it is bounded.
//!
//! At the end it prints a table (one row per worker language: jobs, share and jobs/s, counted from the
//! jobs' results, read back with pipelined reads) and audits every queue: every added job must be
//! completed by exactly one handler run (the Rust handlers and each child record the ids they ran;
//! an id run twice, in one language or in two, is a failure), each result must name its job, the
//! queue's invariants (`Queue::audit`) must hold and the completed count must equal the jobs added.
//! The Python, Node and Kotlin workers keep the binding's default retention (the newest 1,000
//! completed jobs per queue): a completed job that their retention already deleted is counted from
//! the handler's own record instead of its result, and said so on stderr. The summary line names
//! the languages that ran ("by 1 worker language (rust)", "by 4 worker languages at once (rust,
//! python, node, kotlin)"). Exits 0 only if the audit passes.
//!
//! The files: this one the run; `children.rs` the Python, Node and Kotlin child workers (found,
//! probed, started, read and stopped, every wait bounded); `report.rs` the results read back,
//! the table's numbers and the progress bar.

use crate::connect::connect_or_embedded;
use clap::Args as ClapArgs;
use emq::{
    Error, ErrorCode, IdMinter, JobContext, JobId, JobOptions, NewJob, Queue, Retention, Worker,
    WorkerHandle, WorkerOptions,
};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::io::IsTerminal;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod children;
mod report;

use children::*;
use report::*;

/// The demo's queues.
pub const QUEUES: [&str; 3] = ["demo-emails", "demo-images", "demo-reports"];

/// Jobs per `add_bulk` call.
pub(super) const CHUNK: usize = 5_000;

/// Job ids per pipelined read of results.
pub(super) const READ_CHUNK: usize = 1_000;

/// Give up when no job completes for this long.
pub(super) const NO_PROGRESS_LIMIT: Duration = Duration::from_secs(60);

/// How long a probe (`import emq`, `require(...)`) may take.
pub(super) const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a child may take to start its workers and print `ready`.
pub(super) const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a child may take to close its workers and exit once its stdin is closed.
pub(super) const EXIT_TIMEOUT: Duration = Duration::from_secs(30);

/// The interpreter for the Python worker.
pub const PYTHON_ENV: &str = "EMQ_PYTHON";

/// The Node package the Node worker loads.
pub const NODE_PACKAGE_ENV: &str = "EMQ_NODE_PACKAGE";

/// The class path of the Kotlin worker (its classes, the generated bindings, their dependencies).
pub const KOTLIN_CLASSPATH_ENV: &str = "EMQ_KOTLIN_CLASSPATH";

/// The folder holding `libemq_uniffi.so` for the Kotlin worker (JNA's `jna.library.path`).
pub const KOTLIN_LIBRARY_ENV: &str = "EMQ_KOTLIN_LIBRARY_PATH";

/// The Kotlin worker's main class (`demo_workers/kotlin/src/main/kotlin/DemoWorker.kt`).
pub(super) const KOTLIN_MAIN: &str = "DemoWorkerKt";

/// The Python worker's script.
pub(super) const PYTHON_WORKER: &str = include_str!("../demo_workers/worker.py");

/// The Node worker's script.
pub(super) const NODE_WORKER: &str = include_str!("../demo_workers/worker.js");

/// The Kotlin worker's source (compiled by scripts/demo; here for the protocol test).
#[cfg(test)]
pub(super) const KOTLIN_WORKER: &str =
    include_str!("../demo_workers/kotlin/src/main/kotlin/DemoWorker.kt");

/// `emq demo` options.
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// Jobs to run in all, spread over the three demo queues.
    #[arg(long, default_value_t = 100_000)]
    pub jobs: u64,

    /// Jobs run at once by each queue's worker (in each language).
    #[arg(long, default_value_t = 32)]
    pub concurrency: usize,
}

/// Runs `emq demo`. `urls` are the global `--url` options.
pub async fn run(urls: &[String], args: &Args) -> emq::Result<()> {
    if args.jobs == 0 {
        return Err(Error::new(
            ErrorCode::InvalidOption,
            "--jobs must be at least 1",
        ));
    }
    if args.concurrency == 0 {
        return Err(Error::new(
            ErrorCode::InvalidOption,
            "--concurrency must be at least 1",
        ));
    }
    let connected = connect_or_embedded(urls).await?;
    let store = connected.store().clone();
    let minter = Arc::new(IdMinter::start(store.clone()).await?);
    let mut queues = Vec::new();
    for name in QUEUES {
        let q = Queue::with_store(store.clone(), minter.clone(), name)?;
        // A clean slate, so the counts below are this run's alone.
        q.obliterate(true).await?;
        q.resume().await?;
        queues.push(q);
    }

    // The Python, Node and Kotlin workers, where built; each is probed and started at once.
    let child_urls = store.options().urls.clone();
    let (py, node, kotlin) = tokio::join!(
        async {
            match python_launch().await {
                Ok(l) => ChildWorker::start(l, &child_urls, args.concurrency).await,
                Err(e) => Err(e),
            }
        },
        async {
            match node_launch().await {
                Ok(l) => ChildWorker::start(l, &child_urls, args.concurrency).await,
                Err(e) => Err(e),
            }
        },
        async {
            match kotlin_launch().await {
                Ok(l) => ChildWorker::start(l, &child_urls, args.concurrency).await,
                Err(e) => Err(e),
            }
        }
    );
    let mut children: Vec<ChildWorker> = Vec::new();
    for started in [py, node, kotlin] {
        match started {
            Ok(c) => {
                eprintln!("demo: {} worker started", c.lang.as_str());
                children.push(c);
            }
            Err(why) => eprintln!("{why}; skipped"),
        }
    }

    let seen = Arc::new(Seen::default());
    let mut workers: Vec<WorkerHandle> = Vec::new();
    for q in &queues {
        let seen = seen.clone();
        let handler = move |job: JobContext| {
            let seen = seen.clone();
            async move {
                seen.runs.fetch_add(1, Ordering::Relaxed);
                let id = job.id();
                let first = seen.ids.lock().expect("seen lock").insert(id);
                if !first {
                    seen.duplicates.lock().expect("dup lock").push(id);
                }
                Ok(json!({ "lang": "rust", "id": id.to_string() }))
            }
        };
        let handle = Worker::builder(q.clone())
            .options(WorkerOptions {
                concurrency: args.concurrency,
                block_timeout: Duration::from_millis(500),
                completed: Retention::KEEP_ALL,
                ..WorkerOptions::default()
            })
            .handler(handler)
            .run()?;
        workers.push(handle);
    }

    let started = Instant::now();
    let total = args.jobs;
    let mut added: Vec<Vec<JobId>> = vec![Vec::new(); queues.len()];
    let completed_now = |workers: &[WorkerHandle], children: &[ChildWorker]| -> u64 {
        workers.iter().map(|w| w.stats().completed).sum::<u64>()
            + children.iter().map(ChildWorker::done).sum::<u64>()
    };
    // On a terminal the bar redraws in place; otherwise (a log, a pipe) one line a second.
    let tty = std::io::stderr().is_terminal();
    let report_every = if tty {
        Duration::from_millis(200)
    } else {
        Duration::from_secs(1)
    };
    let progress = |workers: &[WorkerHandle], children: &[ChildWorker], last: bool| {
        let rust: u64 = workers.iter().map(|w| w.stats().completed).sum();
        let mut done = rust;
        let mut per = vec![format!("rust {rust}")];
        for c in children {
            done += c.done();
            per.push(format!("{} {}", c.lang.as_str(), c.done()));
        }
        let line = format!(
            "demo: [{}] {done}/{total} completed ({} jobs/s) {}",
            progress_bar(done, total, 30),
            human_rate(rate(done, started.elapsed())),
            per.join(" · ")
        );
        if tty {
            eprint!("\r\x1b[2K{line}{}", if last { "\n" } else { "" });
        } else {
            eprintln!("{line}");
        }
    };

    // Add in chunks, round robin over the queues, reporting about once a second.
    let mut last_report = Instant::now();
    let mut seq = 0u64;
    let wants: Vec<u64> = (0..queues.len())
        .map(|i| share(total, i, queues.len()))
        .collect();
    loop {
        let mut any = false;
        for (i, q) in queues.iter().enumerate() {
            let have = added[i].len() as u64;
            if have >= wants[i] {
                continue;
            }
            any = true;
            let n = (wants[i] - have).min(CHUNK as u64);
            let batch: Vec<NewJob> = (0..n)
                .map(|_| {
                    seq += 1;
                    NewJob {
                        name: q.name().as_str().trim_start_matches("demo-").to_string(),
                        data: json!({ "n": seq }),
                        options: JobOptions {
                            remove_on_complete: emq::Removal::Keep,
                            ..JobOptions::default()
                        },
                    }
                })
                .collect();
            let ids = q.add_bulk(batch).await?;
            added[i].extend(ids);
            if last_report.elapsed() >= report_every {
                progress(&workers, &children, false);
                last_report = Instant::now();
            }
        }
        if !any {
            break;
        }
    }
    eprintln!(
        "{}demo: added {total} jobs in {:.2}s",
        if tty { "\r\x1b[2K" } else { "" },
        started.elapsed().as_secs_f64()
    );

    // Wait for the workers, reporting about once a second.
    let mut last_done = completed_now(&workers, &children);
    let mut last_change = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(50));
    let mut stalled = false;
    loop {
        tick.tick().await;
        let done = completed_now(&workers, &children);
        if done != last_done {
            last_done = done;
            last_change = Instant::now();
        }
        if done >= total {
            break;
        }
        if last_report.elapsed() >= report_every {
            progress(&workers, &children, false);
            last_report = Instant::now();
        }
        if last_change.elapsed() >= NO_PROGRESS_LIMIT {
            eprintln!(
                "{}demo: no job completed for {}s; giving up",
                if tty { "\r\x1b[2K" } else { "" },
                NO_PROGRESS_LIMIT.as_secs()
            );
            stalled = true;
            break;
        }
    }
    let elapsed = started.elapsed();
    let done = completed_now(&workers, &children);
    progress(&workers, &children, true);
    let rust_failed: u64 = workers.iter().map(|w| w.stats().failed).sum();
    // Stop everything before reading back, so nothing changes under the audit.
    for c in &mut children {
        c.close_stdin();
    }
    for w in workers {
        if let Err(e) = w.close().await {
            eprintln!("demo: closing a rust worker: {e}");
        }
    }
    let mut ends = Vec::new();
    for c in children {
        ends.push(c.stop().await);
    }

    // What each handler says it ran: id → language; a second run of an id is a duplicate.
    let mut problems: Vec<String> = Vec::new();
    let mut ran_by: HashMap<JobId, &'static str> = HashMap::new();
    let mut duplicates: Vec<String> = seen
        .duplicates
        .lock()
        .expect("dup lock")
        .iter()
        .map(|id| format!("{id} (rust twice)"))
        .collect();
    for id in seen.ids.lock().expect("seen lock").iter() {
        ran_by.insert(*id, "rust");
    }
    let mut runs = seen.runs.load(Ordering::Relaxed);
    let mut languages: Vec<&'static str> = vec!["rust"];
    if stalled {
        problems.push(format!("only {done} of {total} jobs completed"));
    }
    if rust_failed > 0 {
        problems.push(format!("{rust_failed} rust handler runs failed"));
    }
    for end in &ends {
        let lang = end.lang.as_str();
        languages.push(lang);
        if let Some(p) = &end.problem {
            problems.push(p.clone());
        }
        let Some(last) = &end.last else { continue };
        let failed = last.get("failed").and_then(Value::as_u64).unwrap_or(0);
        if failed > 0 {
            problems.push(format!("{failed} {lang} handler runs failed"));
        }
        runs += last.get("runs").and_then(Value::as_u64).unwrap_or(0);
        for id in last
            .get("ids")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(id) = id.as_str().and_then(|s| JobId::parse(s).ok()) else {
                problems.push(format!("{lang} reported a malformed job id {id}"));
                continue;
            };
            if let Some(before) = ran_by.insert(id, lang) {
                duplicates.push(format!("{id} ({before} and {lang})"));
            }
        }
    }

    // The audit, and the jobs per language read back from the results.
    let mut per_lang: BTreeMap<&str, u64> = BTreeMap::new();
    let mut trimmed_total = 0u64;
    for (i, q) in queues.iter().enumerate() {
        let name = q.name().as_str();
        let report = q.audit().await?;
        for p in &report.problems {
            problems.push(format!("{name}: {p}"));
        }
        let stored = read_stored(q, &added[i]).await?;
        let (mut trimmed, mut never, mut unfinished, mut bad) = (0u64, 0u64, 0u64, Vec::new());
        for (id, s) in added[i].iter().zip(&stored) {
            let handler_lang = ran_by.get(id).copied();
            if s.completed {
                match s.result.as_deref().and_then(result_lang_id) {
                    Some((lang, rid)) if rid == id.to_string() => {
                        if handler_lang.is_some_and(|h| h != lang) {
                            bad.push(format!(
                                "{id}: result says {lang}, handler {handler_lang:?}"
                            ));
                        }
                        *per_lang.entry(leak_lang(&lang)).or_default() += 1;
                    }
                    other => bad.push(format!("{id}: result {other:?} / {:?}", s.result)),
                }
            } else if !s.exists {
                // Deleted: by a worker's retention after it completed, or never run at all.
                match handler_lang {
                    Some(lang) => {
                        trimmed += 1;
                        *per_lang.entry(lang).or_default() += 1;
                    }
                    None => never += 1,
                }
            } else {
                unfinished += 1;
            }
        }
        let counts = q.counts().await?;
        let want = added[i].len() as u64;
        if counts.completed + trimmed != want {
            problems.push(format!(
                "{name}: {} completed (+{trimmed} deleted by retention after completing), {want} added",
                counts.completed
            ));
        }
        if never > 0 {
            problems.push(format!("{name}: {never} added jobs are gone and never ran"));
        }
        if unfinished > 0 {
            problems.push(format!("{name}: {unfinished} added jobs did not complete"));
        }
        if !bad.is_empty() {
            problems.push(format!(
                "{name}: {} results do not match their jobs (e.g. {})",
                bad.len(),
                bad[0]
            ));
        }
        trimmed_total += trimmed;
    }
    if trimmed_total > 0 {
        eprintln!(
            "demo: {trimmed_total} completed jobs were already deleted by the child workers' default retention (newest 1000 per queue); counted from their handlers' own records"
        );
    }
    if !duplicates.is_empty() {
        problems.push(format!(
            "{} jobs ran more than once (e.g. {})",
            duplicates.len(),
            duplicates
                .iter()
                .take(5)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if runs != total {
        problems.push(format!("{runs} handler runs for {total} jobs"));
    }
    for lang in per_lang.keys() {
        if !languages.contains(lang) {
            problems.push(format!(
                "results from a language that was not started: {lang}"
            ));
        }
    }

    // One row per worker language: the jobs it ran, its share, and its rate over the whole run
    // (every language works the same three queues at once, so the rows add up to the total).
    outln!(
        "{:<10} {:>10} {:>7} {:>10}   WORKERS",
        "LANGUAGE",
        "JOBS",
        "SHARE",
        "JOBS/S"
    );
    let counted: u64 = per_lang.values().sum();
    for lang in &languages {
        let jobs = per_lang.get(lang).copied().unwrap_or(0);
        let share = if counted > 0 {
            100.0 * jobs as f64 / counted as f64
        } else {
            0.0
        };
        outln!(
            "{:<10} {:>10} {:>6.1}% {:>10}   {} queues x concurrency {}",
            lang,
            jobs,
            share,
            human_rate(rate(jobs, elapsed)),
            queues.len(),
            args.concurrency
        );
    }
    eprintln!(
        "demo: {counted} of {total} jobs in {:.2}s ({} jobs/s) on {} queues, by {}",
        elapsed.as_secs_f64(),
        human_rate(rate(counted, elapsed)),
        queues.len(),
        languages_phrase(&languages)
    );
    drop(queues);
    drop(minter);
    drop(connected);

    if problems.is_empty() {
        outln!(
            "audit: ok (each of the {total} jobs ran exactly once, its result names its job, the queues' invariants hold)"
        );
        Ok(())
    } else {
        outln!("audit: {} problems", problems.len());
        for p in &problems {
            outln!("  - {p}");
        }
        Err(Error::new(
            ErrorCode::InvalidState,
            format!("the demo's audit found {} problems", problems.len()),
        ))
    }
}
