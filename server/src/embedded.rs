//! A private `redis-server` for development, demos and first steps (`emq dev`, and `emq demo` when
//! no URL is given).
//!
//! [`EmbeddedServer::start`] runs `redis-server` from `PATH` as a child process, in standalone mode
//! (cluster mode off), with persistence off (`--save "" --appendonly no`), bound to `127.0.0.1` on a
//! free port, in a fresh temp dir that also holds its log (`redis.log`, the server's stdout and
//! stderr). It returns once the server answers `PING` (at most [`READY_TIMEOUT`]) and has shown, by
//! its `process_id`, that the answering server is the child just started and not some other process
//! that took the port first (then it retries on another port).
//!
//! [`EmbeddedServer::stop`], and so `Drop`, stops it by pid: `SIGTERM`, a bounded wait
//! ([`STOP_TIMEOUT`]), then `SIGKILL`; then the child is reaped and its dir removed. The server runs
//! in its own process group, so a Ctrl-C at the terminal reaches only the owner, which then stops it.
//! A process that is killed outright (`SIGKILL`) cannot run `Drop` and leaves the server behind.
//!
//! It is a convenience for development, demos and first steps: data lives in memory only and is gone
//! when the server stops. Production deployments pass the URL of a managed server.
//!
//! Everything here blocks (it sleeps while it polls); from async code call it through
//! `tokio::task::spawn_blocking` or before the runtime starts.

use crate::process::{free_port, log_tail, signal, terminate};
use crate::resp::{self, Value};
use std::ffi::OsStr;
use std::fs::OpenOptions;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// What [`EmbeddedServer::start`] returns: an `io::Error` whose message says what went wrong and
/// what to do (kind `NotFound` when `redis-server` is not on `PATH`).
pub type Result<T> = std::result::Result<T, io::Error>;

/// The program started from `PATH`.
pub const PROGRAM: &str = "redis-server";

/// How long a started server may take to answer `PING`.
pub const READY_TIMEOUT: Duration = Duration::from_secs(10);

/// How long [`EmbeddedServer::stop`] waits after `SIGTERM` before it sends `SIGKILL`.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// The log file in the server's dir (its stdout and stderr).
pub const LOG_FILE: &str = "redis.log";

/// Fresh ports tried when the chosen one turns out to be taken.
const START_ATTEMPTS: usize = 5;

/// The install hint of the "not found" error.
const INSTALL_HINT: &str = "install it with `apt-get install redis-server` (Debian/Ubuntu) or \
                            `brew install redis` (macOS), or give the URL of a running server";

/// A private `redis-server` child process on `127.0.0.1`, stopped (by pid) on drop.
#[derive(Debug)]
pub struct EmbeddedServer {
    child: Option<Child>,
    pid: u32,
    port: u16,
    dir_path: PathBuf,
    dir: Option<TempDir>,
}

impl EmbeddedServer {
    /// Starts `redis-server` from `PATH` on a free loopback port in a fresh temp dir, and waits
    /// until it answers `PING`.
    ///
    /// Errors: `redis-server` is not on `PATH` (kind `NotFound`; the message says how to install
    /// it), or it did not come up (the message carries its log's tail).
    pub fn start() -> Result<EmbeddedServer> {
        start_program(OsStr::new(PROGRAM))
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The port it listens on (on `127.0.0.1`).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The pid of the `redis-server` process.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Its working dir (removed by [`EmbeddedServer::stop`]).
    pub fn dir(&self) -> &Path {
        &self.dir_path
    }

    /// The file that receives its stdout and stderr (removed with the dir).
    pub fn log_path(&self) -> PathBuf {
        self.dir_path.join(LOG_FILE)
    }

    /// True while the process runs; false once it has exited (by itself or by [`stop`]).
    ///
    /// [`stop`]: EmbeddedServer::stop
    pub fn is_running(&mut self) -> bool {
        match &mut self.child {
            Some(child) => matches!(child.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// The last few KiB of its log (for an error message after it died).
    pub fn log_tail(&self) -> String {
        log_tail(&self.log_path(), 0)
    }

    /// Stops it: `SIGTERM` by pid, up to [`STOP_TIMEOUT`], then `SIGKILL`; reaps the child and
    /// removes its dir. Idempotent.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            terminate(&mut child, STOP_TIMEOUT);
        }
        if let Some(dir) = self.dir.take() {
            let _ = dir.close();
        }
    }
}

impl Drop for EmbeddedServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn unavailable(message: String) -> io::Error {
    io::Error::other(message)
}

/// [`EmbeddedServer::start`] with another program (the tests use a missing one).
fn start_program(program: &OsStr) -> Result<EmbeddedServer> {
    let dir = tempfile::Builder::new()
        .prefix("emq-embedded-")
        .tempdir()
        .map_err(|e| unavailable(format!("cannot create a temp dir for {PROGRAM}: {e}")))?;
    let mut last = None;
    for _ in 0..START_ATTEMPTS {
        let port = free_port()
            .map_err(|e| unavailable(format!("cannot find a free port on 127.0.0.1: {e}")))?;
        match launch(program, port, dir.path()) {
            Ok(child) => {
                return Ok(EmbeddedServer {
                    pid: child.id(),
                    child: Some(child),
                    port,
                    dir_path: dir.path().to_path_buf(),
                    dir: Some(dir),
                });
            }
            Err(Launch::PortTaken(why)) => last = Some(why),
            Err(Launch::Failed(e)) => return Err(e),
        }
    }
    Err(unavailable(format!(
        "{PROGRAM} could not get a free port in {START_ATTEMPTS} tries; last: {}",
        last.unwrap_or_default()
    )))
}

enum Launch {
    /// Someone else had the port: try another.
    PortTaken(String),
    /// Give up.
    Failed(io::Error),
}

fn launch(program: &OsStr, port: u16, dir: &Path) -> std::result::Result<Child, Launch> {
    let failed = |m: String| Launch::Failed(unavailable(m));
    let log_path = dir.join(LOG_FILE);
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .map_err(|e| failed(format!("cannot open {}: {e}", log_path.display())))?;
    let log_start = log.metadata().map(|m| m.len()).unwrap_or(0);
    let log_err = log
        .try_clone()
        .map_err(|e| failed(format!("cannot open {}: {e}", log_path.display())))?;
    let port_s = port.to_string();
    let mut child = Command::new(program)
        .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
        .args(["--cluster-enabled", "no", "--logfile", ""])
        .args(["--bind", "127.0.0.1", "--port", &port_s])
        .arg("--dir")
        .arg(dir)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        // Its own process group: a terminal's Ctrl-C reaches the owner, which stops it in order.
        .process_group(0)
        .spawn()
        .map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                Launch::Failed(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!(
                        "{} was not found on PATH; emq starts one as a private server for \
                         `emq dev` and `emq demo`: {INSTALL_HINT}",
                        program.to_string_lossy()
                    ),
                ))
            } else {
                failed(format!("cannot start {}: {e}", program.to_string_lossy()))
            }
        })?;
    match wait_ready(&mut child, port) {
        Ok(()) => Ok(child),
        Err(why) => {
            signal(child.id(), libc::SIGKILL);
            let _ = child.wait();
            let tail = log_tail(&log_path, log_start);
            if tail.contains("Address already in use") || why.contains("another process") {
                return Err(Launch::PortTaken(format!("port {port}: {why}")));
            }
            Err(failed(format!(
                "{} (port {port}) did not come up: {why}\n--- tail of its log ---\n{tail}",
                program.to_string_lossy()
            )))
        }
    }
}

/// Polls until the child answers `PING` and `INFO server` names its pid, or it exits, or time runs
/// out.
fn wait_ready(child: &mut Child, port: u16) -> std::result::Result<(), String> {
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("it exited early ({status})"));
        }
        let last = match resp::command(port, &["PING"], Duration::from_millis(500)) {
            Ok(Value::Simple(reply)) if reply == "PONG" => {
                let info = resp::command(port, &["INFO", "server"], Duration::from_secs(2))
                    .map_err(|e| format!("INFO server failed: {e}"))?
                    .as_text()
                    .unwrap_or_default();
                let pid = info
                    .lines()
                    .find_map(|l| l.trim().strip_prefix("process_id:"))
                    .and_then(|p| p.parse::<u32>().ok());
                return match pid {
                    Some(pid) if pid == child.id() => Ok(()),
                    _ => Err(format!(
                        "another process answers on the port (process_id {pid:?}, ours {})",
                        child.id()
                    )),
                };
            }
            Ok(other) => format!("{other:?}"),
            Err(e) => e.to_string(),
        };
        if Instant::now() >= deadline {
            return Err(format!("no PONG within {READY_TIMEOUT:?} (last: {last})"));
        }
        thread::sleep(Duration::from_millis(25));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::pid_exists;
    use std::io::{Read, Write};
    use std::net::TcpStream;

    #[test]
    fn starts_answers_ping_and_stops() {
        let mut server = EmbeddedServer::start().expect("redis-server starts");
        assert!(server.url().ends_with(&format!(":{}", server.port())));
        assert!(server.url().starts_with("redis://127.0.0.1:"));
        assert!(server.is_running());
        assert!(server.dir().join(LOG_FILE).exists());

        // A raw PING over TCP, not through this module's helper.
        let mut stream = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        stream.write_all(b"*1\r\n$4\r\nPING\r\n").unwrap();
        let mut reply = [0u8; 7];
        stream.read_exact(&mut reply).unwrap();
        assert_eq!(&reply, b"+PONG\r\n");
        drop(stream);

        // Cluster mode is off, and the answering server is our child.
        let info = resp::command(server.port(), &["INFO", "cluster"], Duration::from_secs(5))
            .unwrap()
            .as_text()
            .unwrap();
        assert!(info.contains("cluster_enabled:0"), "{info}");

        let pid = server.pid();
        let dir = server.dir().to_path_buf();
        assert!(pid_exists(pid));
        server.stop();
        assert!(!pid_exists(pid), "pid {pid} is still there after stop");
        assert!(!dir.exists(), "{} is still there after stop", dir.display());
        assert!(!server.is_running());
        server.stop(); // idempotent
    }

    #[test]
    fn drop_stops_it() {
        let server = EmbeddedServer::start().expect("redis-server starts");
        let (pid, dir) = (server.pid(), server.dir().to_path_buf());
        drop(server);
        assert!(!pid_exists(pid));
        assert!(!dir.exists());
    }

    #[test]
    fn missing_program_says_how_to_install() {
        let err = start_program(OsStr::new("emq-no-such-redis-server")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        let message = err.to_string();
        assert!(message.contains("not found on PATH"), "{err}");
        assert!(message.contains("apt-get install redis-server"), "{err}");
        assert!(message.contains("brew install redis"), "{err}");
    }
}
