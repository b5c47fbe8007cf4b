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

use crate::connect::connect_or_embedded;
use clap::Args as ClapArgs;
use emq::{
    Error, ErrorCode, IdMinter, JobContext, JobId, JobOptions, JobPart, NewJob, Queue, Retention,
    Worker, WorkerHandle, WorkerOptions,
};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, IsTerminal};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::process::{Child, ChildStdin};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::process::Command;
use tokio::sync::oneshot;

/// The demo's queues.
pub const QUEUES: [&str; 3] = ["demo-emails", "demo-images", "demo-reports"];

/// Jobs per `add_bulk` call.
const CHUNK: usize = 5_000;

/// Job ids per pipelined read of results.
const READ_CHUNK: usize = 1_000;

/// Give up when no job completes for this long.
const NO_PROGRESS_LIMIT: Duration = Duration::from_secs(60);

/// How long a probe (`import emq`, `require(...)`) may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a child may take to start its workers and print `ready`.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a child may take to close its workers and exit once its stdin is closed.
const EXIT_TIMEOUT: Duration = Duration::from_secs(30);

/// The interpreter for the Python worker.
pub const PYTHON_ENV: &str = "EMQ_PYTHON";

/// The Node package the Node worker loads.
pub const NODE_PACKAGE_ENV: &str = "EMQ_NODE_PACKAGE";

/// The class path of the Kotlin worker (its classes, the generated bindings, their dependencies).
pub const KOTLIN_CLASSPATH_ENV: &str = "EMQ_KOTLIN_CLASSPATH";

/// The folder holding `libemq_uniffi.so` for the Kotlin worker (JNA's `jna.library.path`).
pub const KOTLIN_LIBRARY_ENV: &str = "EMQ_KOTLIN_LIBRARY_PATH";

/// The Kotlin worker's main class (`demo_workers/kotlin/src/main/kotlin/DemoWorker.kt`).
const KOTLIN_MAIN: &str = "DemoWorkerKt";

/// The Python worker's script.
const PYTHON_WORKER: &str = include_str!("demo_workers/worker.py");

/// The Node worker's script.
const NODE_WORKER: &str = include_str!("demo_workers/worker.js");

/// The Kotlin worker's source (compiled by scripts/demo; here for the protocol test).
#[cfg(test)]
const KOTLIN_WORKER: &str = include_str!("demo_workers/kotlin/src/main/kotlin/DemoWorker.kt");

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

/// What the Rust handlers saw: every job id once, and how many ids came back a second time.
#[derive(Default)]
struct Seen {
    ids: Mutex<HashSet<JobId>>,
    duplicates: Mutex<Vec<JobId>>,
    runs: AtomicU64,
}

/// How many of `total` jobs go to queue `i` of `n`.
fn share(total: u64, i: usize, n: usize) -> u64 {
    let n = n as u64;
    total / n + u64::from((i as u64) < total % n)
}

fn rate(jobs: u64, elapsed: Duration) -> f64 {
    let secs = elapsed.as_secs_f64();
    if secs > 0.0 {
        jobs as f64 / secs
    } else {
        0.0
    }
}

fn human_rate(r: f64) -> String {
    if r >= 1000.0 {
        format!("{:.1}k", r / 1000.0)
    } else {
        format!("{r:.0}")
    }
}

// -------------------------------------------------------------------------------------------------
// The Python, Node and Kotlin children

/// A worker language other than Rust.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lang {
    Python,
    Node,
    Kotlin,
}

impl Lang {
    fn as_str(self) -> &'static str {
        match self {
            Lang::Python => "python",
            Lang::Node => "node",
            Lang::Kotlin => "kotlin",
        }
    }
}

/// How to start one language's worker, once its probe passed.
struct Launch {
    lang: Lang,
    program: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

/// The repository root: the first ancestor of the binary's location, else of the current
/// directory, that holds `node/package.json` and `Cargo.toml`.
fn repo_root() -> Option<PathBuf> {
    let is_root =
        |d: &Path| d.join("node").join("package.json").is_file() && d.join("Cargo.toml").is_file();
    let from_exe = std::env::current_exe()
        .ok()
        .and_then(|p| p.canonicalize().ok());
    let from_cwd = std::env::current_dir().ok();
    [from_exe, from_cwd]
        .into_iter()
        .flatten()
        .find_map(|start| {
            start
                .ancestors()
                .find(|d| is_root(d))
                .map(Path::to_path_buf)
        })
}

/// Runs a probe command, bounded: Ok on exit 0, else the last line it printed on stderr.
async fn probe(program: &str, args: &[&str], env: &[(String, String)]) -> Result<(), String> {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot run `{program}`: {e}"))?;
    match tokio::time::timeout(PROBE_TIMEOUT, child.wait_with_output()).await {
        Err(_) => Err(format!("`{program}` took longer than {PROBE_TIMEOUT:?}")),
        Ok(Err(e)) => Err(format!("`{program}`: {e}")),
        Ok(Ok(out)) if out.status.success() => Ok(()),
        Ok(Ok(out)) => {
            // The error line (Python's and Node's end with it, or Node's is followed by its
            // version), else the last line.
            let stderr = String::from_utf8_lossy(&out.stderr);
            let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
            let line = lines
                .iter()
                .rev()
                .find(|l| l.contains("Error"))
                .or(lines.last())
                .map_or("no message", |l| l.trim());
            Err(line.to_string())
        }
    }
}

/// The Python worker's launch, or why it is skipped.
async fn python_launch() -> Result<Launch, String> {
    let python = std::env::var(PYTHON_ENV)
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "python3".to_string());
    probe(&python, &["-c", "import emq"], &[]).await.map_err(|why| {
        format!(
            "python: `import emq` failed with {python} ({why}) — scripts/demo builds it; or run bash python/ci.sh or pip install ./python, and point {PYTHON_ENV} at that interpreter"
        )
    })?;
    Ok(Launch {
        lang: Lang::Python,
        program: python,
        args: vec!["-c".into(), PYTHON_WORKER.into()],
        env: vec![],
    })
}

/// The Node worker's launch, or why it is skipped.
async fn node_launch() -> Result<Launch, String> {
    let package = match std::env::var(NODE_PACKAGE_ENV).ok().filter(|s| !s.is_empty()) {
        Some(p) => p,
        None => match repo_root() {
            Some(root) => root.join("node").to_string_lossy().into_owned(),
            None => {
                return Err(format!(
                    "node: no emq repository found above the binary or the current directory — set {NODE_PACKAGE_ENV} to the node/ package"
                ))
            }
        },
    };
    let env = vec![(NODE_PACKAGE_ENV.to_string(), package.clone())];
    probe(
        "node",
        &["-e", "require(process.env.EMQ_NODE_PACKAGE)"],
        &env,
    )
    .await
    .map_err(|why| {
        format!("node: `require('{package}')` failed ({why}) — scripts/demo builds it; or run bash node/build.sh, or set {NODE_PACKAGE_ENV}")
    })?;
    Ok(Launch {
        lang: Lang::Node,
        program: "node".into(),
        args: vec!["-e".into(), NODE_WORKER.into()],
        env,
    })
}

/// The Kotlin worker's launch, or why it is skipped.
async fn kotlin_launch() -> Result<Launch, String> {
    let Some(classpath) = std::env::var(KOTLIN_CLASSPATH_ENV)
        .ok()
        .filter(|s| !s.is_empty())
    else {
        return Err(format!(
            "kotlin: not built — scripts/demo builds it where java and mvn are on PATH (or set {KOTLIN_CLASSPATH_ENV} and {KOTLIN_LIBRARY_ENV})"
        ));
    };
    probe("java", &["-version"], &[])
        .await
        .map_err(|why| format!("kotlin: `java -version` failed ({why})"))?;
    let mut args = Vec::new();
    if let Some(lib) = std::env::var(KOTLIN_LIBRARY_ENV)
        .ok()
        .filter(|s| !s.is_empty())
    {
        args.push(format!("-Djna.library.path={lib}"));
    }
    args.extend(["-cp".to_string(), classpath, KOTLIN_MAIN.to_string()]);
    Ok(Launch {
        lang: Lang::Kotlin,
        program: "java".into(),
        args,
        env: vec![],
    })
}

/// "1 worker language (rust)", "3 worker languages at once (rust, python, node)".
fn languages_phrase(languages: &[&str]) -> String {
    let names = languages.join(", ");
    match languages.len() {
        1 => format!("1 worker language ({names})"),
        n => format!("{n} worker languages at once ({names})"),
    }
}

/// What a child reported on stdout.
#[derive(Default)]
struct Reports {
    done: AtomicU64,
    last: Mutex<Option<Value>>,
}

/// A running child worker. Dropping it kills the process if it still runs.
struct ChildWorker {
    lang: Lang,
    child: Child,
    stdin: Option<ChildStdin>,
    reports: Arc<Reports>,
    reader: Option<std::thread::JoinHandle<()>>,
}

/// What a child left when it stopped.
struct ChildEnd {
    lang: Lang,
    /// The `final` report (counters and the ids it ran), if it printed one.
    last: Option<Value>,
    /// What went wrong while it stopped, if anything.
    problem: Option<String>,
}

/// Polls `child` until it exits or `limit` passes (None: still running).
async fn wait_bounded(
    child: &mut Child,
    limit: Duration,
) -> std::io::Result<Option<std::process::ExitStatus>> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

impl ChildWorker {
    /// Starts the child and waits (bounded) for its `ready`.
    async fn start(
        launch: Launch,
        urls: &[String],
        concurrency: usize,
    ) -> Result<ChildWorker, String> {
        let lang = launch.lang.as_str();
        let mut child = std::process::Command::new(&launch.program)
            .args(&launch.args)
            .envs(launch.env.iter().map(|(k, v)| (k, v)))
            .env("EMQ_DEMO_URLS", json!(urls).to_string())
            .env("EMQ_DEMO_QUEUES", json!(QUEUES).to_string())
            .env("EMQ_DEMO_CONCURRENCY", concurrency.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("{lang}: cannot start the worker: {e}"))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout is piped");
        let reports = Arc::new(Reports::default());
        let (ready_tx, ready_rx) = oneshot::channel::<()>();
        let reader = {
            let reports = reports.clone();
            std::thread::spawn(move || {
                let mut ready_tx = Some(ready_tx);
                for line in std::io::BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    if line == "ready" {
                        if let Some(tx) = ready_tx.take() {
                            let _ = tx.send(());
                        }
                    } else if let Some(n) = line.strip_prefix("done ") {
                        if let Ok(n) = n.trim().parse() {
                            reports.done.store(n, Ordering::Relaxed);
                        }
                    } else if let Some(text) = line.strip_prefix("final ") {
                        if let Ok(v) = serde_json::from_str(text) {
                            *reports.last.lock().expect("reports lock") = Some(v);
                        }
                    }
                }
            })
        };
        let mut worker = ChildWorker {
            lang: launch.lang,
            child,
            stdin,
            reports,
            reader: Some(reader),
        };
        match tokio::time::timeout(READY_TIMEOUT, ready_rx).await {
            Ok(Ok(())) => Ok(worker),
            Ok(Err(_)) => {
                let status = wait_bounded(&mut worker.child, Duration::from_secs(5)).await;
                Err(format!(
                    "{lang}: the worker exited before it was ready ({})",
                    match status {
                        Ok(Some(s)) => s.to_string(),
                        _ => "still running; killed".into(),
                    }
                ))
            }
            Err(_) => Err(format!(
                "{lang}: the worker was not ready within {READY_TIMEOUT:?}; killed it"
            )),
        }
    }

    fn done(&self) -> u64 {
        self.reports.done.load(Ordering::Relaxed)
    }

    /// Tells it to stop: closes its stdin.
    fn close_stdin(&mut self) {
        drop(self.stdin.take());
    }

    /// Closes its stdin and waits (bounded) for it to close its workers, report and exit.
    async fn stop(mut self) -> ChildEnd {
        let lang = self.lang.as_str();
        self.close_stdin();
        let mut problem = None;
        match wait_bounded(&mut self.child, EXIT_TIMEOUT).await {
            Ok(Some(status)) if status.success() => {}
            Ok(Some(status)) => problem = Some(format!("{lang} worker exited with {status}")),
            Ok(None) => {
                let _ = self.child.kill();
                let _ = self.child.wait();
                problem = Some(format!(
                    "{lang} worker did not exit within {EXIT_TIMEOUT:?} of its stdin closing; killed it"
                ));
            }
            Err(e) => problem = Some(format!("{lang} worker: {e}")),
        }
        // The process is gone, so its stdout reaches EOF and the reader ends.
        if let Some(reader) = self.reader.take() {
            let _ = tokio::task::spawn_blocking(move || reader.join()).await;
        }
        let last = self.reports.last.lock().expect("reports lock").take();
        if last.is_none() && problem.is_none() {
            problem = Some(format!("{lang} worker printed no final report"));
        }
        ChildEnd {
            lang: self.lang,
            last,
            problem,
        }
    }
}

impl Drop for ChildWorker {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

// -------------------------------------------------------------------------------------------------
// Reading the results back

/// What the store holds for one added job.
struct Stored {
    /// Its score in the completed set (None: not completed, or deleted).
    completed: bool,
    /// Its `result` field, as stored (None: no result, or no record).
    result: Option<String>,
    /// Whether its record exists.
    exists: bool,
}

/// Reads, for every id, whether it is completed, its result and whether its record exists: three
/// pipelines per [`READ_CHUNK`] ids, so 100k jobs take a few hundred round trips, not 100k.
async fn read_stored(q: &Queue, ids: &[JobId]) -> emq::Result<Vec<Stored>> {
    let mut out = Vec::with_capacity(ids.len());
    let completed_key = &q.keys().completed;
    let mut conn = q.store().conn();
    for chunk in ids.chunks(READ_CHUNK) {
        let mut scores = redis::pipe();
        let mut results = redis::pipe();
        let mut exists = redis::pipe();
        for id in chunk {
            let record = q.name().job_key(*id, JobPart::Record);
            scores.cmd("ZSCORE").arg(completed_key).arg(*id);
            results.cmd("HGET").arg(&record).arg("result");
            exists.cmd("EXISTS").arg(&record);
        }
        let scores: Vec<Option<f64>> = scores.query_async(&mut conn).await?;
        let results: Vec<Option<String>> = results.query_async(&mut conn).await?;
        let exists: Vec<bool> = exists.query_async(&mut conn).await?;
        for ((score, result), exists) in scores.into_iter().zip(results).zip(exists) {
            out.push(Stored {
                completed: score.is_some(),
                result,
                exists,
            });
        }
    }
    Ok(out)
}

/// The `lang` and `id` of a stored result.
fn result_lang_id(text: &str) -> Option<(String, String)> {
    let v: Value = serde_json::from_str(text).ok()?;
    Some((
        v.get("lang")?.as_str()?.to_string(),
        v.get("id")?.as_str()?.to_string(),
    ))
}

// -------------------------------------------------------------------------------------------------
// The demo

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

/// The static name of a language a result names (unknown ones are kept, as "other:<name>" would
/// hide them). An unknown name is leaked once, the first time it is seen, and found again after:
/// the leak is bounded by the distinct names, not the jobs.
fn leak_lang(lang: &str) -> &'static str {
    static UNKNOWN: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
    match lang {
        "rust" => "rust",
        "python" => "python",
        "node" => "node",
        "kotlin" => "kotlin",
        other => {
            let mut seen = UNKNOWN.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(name) = seen.iter().find(|n| **n == other) {
                return name;
            }
            let name: &'static str = Box::leak(other.to_string().into_boxed_str());
            seen.push(name);
            name
        }
    }
}

/// A text progress bar `#####-----` of `width` cells for `done` of `total`.
fn progress_bar(done: u64, total: u64, width: usize) -> String {
    let filled = if total == 0 {
        width
    } else {
        ((done.min(total) as u128 * width as u128) / total as u128) as usize
    };
    format!("{}{}", "#".repeat(filled), "-".repeat(width - filled))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_language_is_leaked_once_per_name() {
        assert_eq!(leak_lang("python"), "python");
        let first = leak_lang("cobol-demo-test");
        for _ in 0..3 {
            assert!(
                std::ptr::eq(first, leak_lang("cobol-demo-test")),
                "a second job of the same unknown language leaked its name again"
            );
        }
        let other = leak_lang("fortran-demo-test");
        assert_eq!(other, "fortran-demo-test");
        assert!(!std::ptr::eq(first, other));
    }

    #[test]
    fn shares_add_up() {
        for total in [1u64, 2, 3, 500, 3000, 100_001] {
            let sum: u64 = (0..3).map(|i| share(total, i, 3)).sum();
            assert_eq!(sum, total);
        }
        assert_eq!(human_rate(38_123.0), "38.1k");
        assert_eq!(human_rate(950.0), "950");
    }

    #[test]
    fn results_name_their_language_and_job() {
        assert_eq!(
            result_lang_id(r#"{"lang":"node","id":"j0000000000000001"}"#),
            Some(("node".into(), "j0000000000000001".into()))
        );
        assert_eq!(result_lang_id(r#"{"ok":true}"#), None);
        assert_eq!(result_lang_id("not json"), None);
    }

    #[test]
    fn the_summary_names_the_languages_in_the_right_number() {
        assert_eq!(languages_phrase(&["rust"]), "1 worker language (rust)");
        assert_eq!(
            languages_phrase(&["rust", "python"]),
            "2 worker languages at once (rust, python)"
        );
        assert_eq!(
            languages_phrase(&["rust", "python", "node", "kotlin"]),
            "4 worker languages at once (rust, python, node, kotlin)"
        );
    }

    #[test]
    fn the_worker_scripts_speak_the_protocol() {
        for script in [PYTHON_WORKER, NODE_WORKER, KOTLIN_WORKER] {
            for needle in [
                "EMQ_DEMO_URLS",
                "EMQ_DEMO_QUEUES",
                "ready",
                "done ",
                "final ",
            ] {
                assert!(script.contains(needle), "{needle}");
            }
        }
        assert!(NODE_WORKER.contains("EMQ_NODE_PACKAGE"));
    }

    #[test]
    fn bar_fills_in_proportion() {
        assert_eq!(progress_bar(0, 10, 10), "----------");
        assert_eq!(progress_bar(5, 10, 10), "#####-----");
        assert_eq!(progress_bar(10, 10, 10), "##########");
        assert_eq!(progress_bar(99, 10, 4), "####");
    }
}
