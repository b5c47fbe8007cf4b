//! The demo's Python, Node and Kotlin child workers: where each is found, the probe that says it
//! is built, the launch, the lines it prints (`ready`, `done <n>`, `final {…}`) and its bounded end.

use super::*;
use serde_json::{json, Value};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::process::{Child, ChildStdin};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::process::Command;
use tokio::sync::oneshot;

// -------------------------------------------------------------------------------------------------
// The Python, Node and Kotlin children

/// A worker language other than Rust.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Lang {
    Python,
    Node,
    Kotlin,
}

impl Lang {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Lang::Python => "python",
            Lang::Node => "node",
            Lang::Kotlin => "kotlin",
        }
    }
}

/// How to start one language's worker, once its probe passed.
pub(super) struct Launch {
    pub(super) lang: Lang,
    pub(super) program: String,
    pub(super) args: Vec<String>,
    pub(super) env: Vec<(String, String)>,
}

/// The repository root: the first ancestor of the binary's location, else of the current
/// directory, that holds `node/package.json` and `Cargo.toml`.
pub(super) fn repo_root() -> Option<PathBuf> {
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
pub(super) async fn probe(
    program: &str,
    args: &[&str],
    env: &[(String, String)],
) -> Result<(), String> {
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
pub(super) async fn python_launch() -> Result<Launch, String> {
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
pub(super) async fn node_launch() -> Result<Launch, String> {
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
pub(super) async fn kotlin_launch() -> Result<Launch, String> {
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

/// What a child reported on stdout.
#[derive(Default)]
pub(super) struct Reports {
    pub(super) done: AtomicU64,
    pub(super) last: Mutex<Option<Value>>,
}

/// A running child worker. Dropping it kills the process if it still runs.
pub(super) struct ChildWorker {
    pub(super) lang: Lang,
    pub(super) child: Child,
    pub(super) stdin: Option<ChildStdin>,
    pub(super) reports: Arc<Reports>,
    pub(super) reader: Option<std::thread::JoinHandle<()>>,
}

/// What a child left when it stopped.
pub(super) struct ChildEnd {
    pub(super) lang: Lang,
    /// The `final` report (counters and the ids it ran), if it printed one.
    pub(super) last: Option<Value>,
    /// What went wrong while it stopped, if anything.
    pub(super) problem: Option<String>,
}

/// Polls `child` until it exits or `limit` passes (None: still running).
pub(super) async fn wait_bounded(
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
    pub(super) async fn start(
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

    pub(super) fn done(&self) -> u64 {
        self.reports.done.load(Ordering::Relaxed)
    }

    /// Tells it to stop: closes its stdin.
    pub(super) fn close_stdin(&mut self) {
        drop(self.stdin.take());
    }

    /// Closes its stdin and waits (bounded) for it to close its workers, report and exit.
    pub(super) async fn stop(mut self) -> ChildEnd {
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
