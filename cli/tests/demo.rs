//! `emq demo`: runs jobs through Rust workers — and Python, Node and Kotlin workers where they are
//! built — and passes its own audit, against a given server and against the embedded default; its
//! summary names the languages that ran, in the right number.

use emq_harness::RedisServer;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

mod common;

use common::EMQ;

/// The demo runs real work; a debug build on a busy machine needs a while.
const DEMO_TIMEOUT: Duration = Duration::from_secs(180);

/// Runs `emq args…` with no `EMQ_URL` and the given environment, bounded by [`DEMO_TIMEOUT`].
fn emq_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    common::run_emq(args, env, DEMO_TIMEOUT)
}

/// Points the demo at a Python and a Node package that do not exist, and at no Kotlin build: the
/// Rust-only path.
const RUST_ONLY: [(&str, &str); 3] = [
    ("EMQ_PYTHON", "/nonexistent/python3"),
    ("EMQ_NODE_PACKAGE", "/nonexistent/node-package"),
    ("EMQ_KOTLIN_CLASSPATH", ""),
];

/// Runs `emq args…` on the Rust-only path.
fn emq(args: &[&str]) -> Output {
    emq_env(args, &RUST_ONLY)
}

/// The table's rows: language → jobs.
fn rows(stdout: &str) -> Vec<(String, u64)> {
    stdout
        .lines()
        .skip_while(|l| !l.starts_with("LANGUAGE"))
        .skip(1)
        .take_while(|l| !l.starts_with("audit:"))
        .map(|l| {
            let cells: Vec<&str> = l.split_whitespace().collect();
            (cells[0].to_string(), cells[1].parse().expect("a job count"))
        })
        .collect()
}

fn check_passed(out: &Output, jobs: u64) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("audit: ok"), "{stdout}");
    assert_eq!(rows(&stdout), vec![("rust".to_string(), jobs)], "{stdout}");
    assert!(
        stderr.contains("python: `import emq` failed")
            && stderr.contains("run bash python/ci.sh or pip install ./python"),
        "{stderr}"
    );
    assert!(
        stderr.contains("node: `require('/nonexistent/node-package')` failed"),
        "{stderr}"
    );
    assert!(
        stderr
            .contains("kotlin: not built — scripts/demo builds it where java and mvn are on PATH"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("] {jobs}/{jobs} completed")) && stderr.contains("demo: [###"),
        "{stderr}"
    );
    // One language: singular, and named.
    assert!(
        stderr.contains("on 3 queues, by 1 worker language (rust)\n"),
        "{stderr}"
    );
}

#[test]
fn demo_on_a_given_server_passes_its_audit() {
    let server = RedisServer::start().expect("redis-server");
    let out = emq(&["demo", "--url", &server.url(), "--jobs", "3000"]);
    check_passed(&out, 3000);
    // A second run starts from empty queues, so it passes too.
    let again = emq(&[
        "--url",
        &server.url(),
        "demo",
        "--jobs",
        "300",
        "--concurrency",
        "4",
    ]);
    check_passed(&again, 300);
}

#[test]
fn demo_on_the_cluster_passes_its_audit() {
    // The demo queues sit in slots 3727, 9461 and 996: two masters of the harness's cluster.
    let cluster = emq_harness::shared_cluster();
    let urls = cluster.urls();
    let out = emq(&["--url", &urls[0], "demo", "--jobs", "1500"]);
    check_passed(&out, 1500);
}

#[test]
fn demo_on_the_embedded_server_passes_its_audit() {
    let out = emq(&["demo", "--jobs", "500"]);
    check_passed(&out, 500);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("started a private redis-server"),
        "{stderr}"
    );
}

#[test]
fn demo_rejects_zero_jobs() {
    let out = emq(&["demo", "--jobs", "0", "--url", "redis://127.0.0.1:1"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("error[invalid_option]"));
}

use emq_harness::builds::skip_unless_ci;

/// The repository root.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the repository root")
        .to_path_buf()
}

/// A Python interpreter that imports emq: `EMQ_PYTHON`, else `$EMQ_PY_VENV/bin/python`, else
/// `python3`; or why there is none.
fn python_with_emq() -> Result<String, String> {
    let python = emq_harness::builds::python("EMQ_PYTHON");
    let ok = Command::new(&python)
        .args(["-c", "import emq"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        Ok(python)
    } else {
        Err(format!(
            "`import emq` fails with {python} (run bash python/ci.sh with EMQ_PY_VENV set, then set EMQ_PY_VENV or EMQ_PYTHON)"
        ))
    }
}

/// The Node package, if `require` of it works.
fn node_package() -> Result<String, String> {
    let package = std::env::var("EMQ_NODE_PACKAGE")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| repo().join("node").to_string_lossy().into_owned());
    let ok = Command::new("node")
        .args(["-e", "require(process.env.EMQ_NODE_PACKAGE)"])
        .env("EMQ_NODE_PACKAGE", &package)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        Ok(package)
    } else {
        Err(format!(
            "`require('{package}')` fails (run bash node/build.sh)"
        ))
    }
}

#[test]
fn demo_runs_rust_python_and_node_workers_at_once() {
    let (python, package) = match (python_with_emq(), node_package()) {
        (Ok(p), Ok(n)) => (p, n),
        (p, n) => {
            let why: Vec<String> = [p.err(), n.err()].into_iter().flatten().collect();
            skip_unless_ci(
                "demo_runs_rust_python_and_node_workers_at_once",
                &why.join("; "),
            );
            return;
        }
    };
    let server = RedisServer::start().expect("redis-server");
    let out = emq_env(
        &["demo", "--url", &server.url(), "--jobs", "3000"],
        &[
            ("EMQ_PYTHON", &python),
            ("EMQ_NODE_PACKAGE", &package),
            ("EMQ_KOTLIN_CLASSPATH", ""),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("audit: ok"), "{stdout}");
    let rows = rows(&stdout);
    let langs: Vec<&str> = rows.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(langs, ["rust", "python", "node"], "{stdout}");
    for (lang, jobs) in &rows {
        assert!(*jobs > 0, "{lang} ran no job:\n{stdout}\n{stderr}");
    }
    assert_eq!(rows.iter().map(|(_, j)| j).sum::<u64>(), 3000, "{stdout}");
    assert!(stderr.contains("demo: python worker started"), "{stderr}");
    assert!(stderr.contains("demo: node worker started"), "{stderr}");
    assert!(
        stderr.contains("by 3 worker languages at once (rust, python, node)"),
        "{stderr}"
    );
}

/// The Kotlin worker's build, as scripts/demo leaves it: (class path, library folder). The library
/// folder is `EMQ_KOTLIN_LIBRARY_PATH` when set (scripts/test-all: target/debug, the library
/// `bindings/uniffi/ci.sh` builds anyway), else target/release (what scripts/demo builds).
fn kotlin_build() -> Result<(String, String), String> {
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| repo().join("target"));
    let out = target.join("demo").join("kotlin");
    let cp = std::fs::read_to_string(out.join("cp.txt")).map_err(|_| {
        format!(
            "no {} (run scripts/demo where java and mvn are, or scripts/demo --build-kotlin-only with EMQ_DEMO_UNIFFI_PROFILE=debug and EMQ_KOTLIN_LIBRARY_PATH=target/debug)",
            out.join("cp.txt").display()
        )
    })?;
    let lib = std::env::var("EMQ_KOTLIN_LIBRARY_PATH")
        .ok()
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| target.join("release"));
    if !lib.join("libemq_uniffi.so").is_file() {
        return Err(format!("no {}", lib.join("libemq_uniffi.so").display()));
    }
    let classes = out.join("classes");
    Ok((
        format!("{}:{}", classes.display(), cp.trim()),
        lib.to_string_lossy().into_owned(),
    ))
}

#[test]
fn demo_runs_a_kotlin_worker_where_it_is_built() {
    let (classpath, lib) = match kotlin_build() {
        Ok(b) => b,
        Err(why) => {
            skip_unless_ci("demo_runs_a_kotlin_worker_where_it_is_built", &why);
            return;
        }
    };
    let server = RedisServer::start().expect("redis-server");
    let out = emq_env(
        &["demo", "--url", &server.url(), "--jobs", "3000"],
        &[
            ("EMQ_PYTHON", "/nonexistent/python3"),
            ("EMQ_NODE_PACKAGE", "/nonexistent/node-package"),
            ("EMQ_KOTLIN_CLASSPATH", &classpath),
            ("EMQ_KOTLIN_LIBRARY_PATH", &lib),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("audit: ok"), "{stdout}");
    let rows = rows(&stdout);
    let langs: Vec<&str> = rows.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(langs, ["rust", "kotlin"], "{stdout}");
    assert!(rows[1].1 > 0, "kotlin ran no job:\n{stdout}\n{stderr}");
    assert_eq!(rows.iter().map(|(_, j)| j).sum::<u64>(), 3000, "{stdout}");
    assert!(stderr.contains("demo: kotlin worker started"), "{stderr}");
    assert!(
        stderr.contains("by 2 worker languages at once (rust, kotlin)"),
        "{stderr}"
    );
}

#[test]
fn the_node_package_defaults_to_the_repository_of_the_binary() {
    // No EMQ_NODE_PACKAGE: the demo finds <repo>/node from target/debug/emq, from any directory.
    if let Err(why) = node_package() {
        skip_unless_ci(
            "the_node_package_defaults_to_the_repository_of_the_binary",
            &why,
        );
        return;
    }
    let server = RedisServer::start().expect("redis-server");
    let mut child = Command::new(EMQ)
        .args(["demo", "--url", &server.url(), "--jobs", "300"])
        .env_remove("EMQ_URL")
        .env_remove("EMQ_NODE_PACKAGE")
        .env_remove("EMQ_KOTLIN_CLASSPATH")
        .env("EMQ_PYTHON", "/nonexistent/python3")
        .current_dir(std::env::temp_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn emq");
    let deadline = Instant::now() + DEMO_TIMEOUT;
    while child.try_wait().expect("try_wait").is_none() {
        assert!(Instant::now() < deadline, "emq demo did not finish");
        thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stderr.contains("demo: node worker started"), "{stderr}");
    assert!(rows(&stdout).iter().any(|(l, _)| l == "node"), "{stdout}");
}
