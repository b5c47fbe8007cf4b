//! The embedded default datastore: a private `redis-server` started by the core when no URL is given.
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

use crate::error::{Error, ErrorCode, Result};
use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};
use tempfile::TempDir;

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
    /// Errors have code [`ErrorCode::ServerUnavailable`]: `redis-server` is not on `PATH` (the
    /// message says how to install it), or it did not come up (the message carries its log's tail).
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
            terminate(&mut child);
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

fn unavailable(message: String) -> Error {
    Error::new(ErrorCode::ServerUnavailable, message)
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
    Failed(Error),
}

/// A port that was free a moment ago (bind 127.0.0.1:0 and let it go).
fn free_port() -> io::Result<u16> {
    Ok(TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
        .local_addr()?
        .port())
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
                failed(format!(
                    "{} was not found on PATH; emq starts one as its embedded default datastore \
                     when no URL is given: {INSTALL_HINT}",
                    program.to_string_lossy()
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
        let last = match command(port, &["PING"], Duration::from_millis(500)) {
            Ok(reply) if reply == "PONG" => {
                let info = command(port, &["INFO", "server"], Duration::from_secs(2))
                    .map_err(|e| format!("INFO server failed: {e}"))?;
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
            Ok(other) => other,
            Err(e) => e.to_string(),
        };
        if Instant::now() >= deadline {
            return Err(format!("no PONG within {READY_TIMEOUT:?} (last: {last})"));
        }
        thread::sleep(Duration::from_millis(25));
    }
}

/// Sends one command over plain TCP and reads one reply: a simple string, an error (as `-…`) or a
/// bulk string. Enough for `PING` and `INFO`.
fn command(port: u16, args: &[&str], timeout: Duration) -> io::Result<String> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    let mut req = format!("*{}\r\n", args.len());
    for a in args {
        req.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    stream.write_all(req.as_bytes())?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let line = line.trim_end_matches(['\r', '\n']);
    let bad = || io::Error::new(io::ErrorKind::InvalidData, format!("bad reply {line:?}"));
    match line.as_bytes().first() {
        Some(b'+') => Ok(line[1..].to_string()),
        Some(b'-') => Ok(line.to_string()),
        Some(b'$') => {
            let len: usize = line[1..].parse().map_err(|_| bad())?;
            let mut body = vec![0; len + 2];
            reader.read_exact(&mut body)?;
            body.truncate(len);
            Ok(String::from_utf8_lossy(&body).into_owned())
        }
        _ => Err(bad()),
    }
}

fn signal(pid: u32, sig: libc::c_int) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        // SAFETY: kill(2) on the pid of our own, not yet reaped child.
        unsafe {
            libc::kill(pid, sig);
        }
    }
}

fn terminate(child: &mut Child) -> Option<ExitStatus> {
    if let Ok(Some(status)) = child.try_wait() {
        return Some(status);
    }
    signal(child.id(), libc::SIGTERM);
    let deadline = Instant::now() + STOP_TIMEOUT;
    while Instant::now() < deadline {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) => thread::sleep(Duration::from_millis(10)),
            Err(_) => return None,
        }
    }
    signal(child.id(), libc::SIGKILL);
    child.wait().ok()
}

fn log_tail(path: &Path, from: u64) -> String {
    const MAX: u64 = 4096;
    let Ok(mut f) = File::open(path) else {
        return String::from("(no log)");
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = from.max(len.saturating_sub(MAX));
    let mut buf = Vec::new();
    if f.seek(SeekFrom::Start(start)).is_ok() {
        let _ = f.read_to_end(&mut buf);
    }
    String::from_utf8_lossy(&buf).into_owned()
}

/// True while a process with this pid exists (a zombie counts).
#[cfg(test)]
fn pid_exists(pid: u32) -> bool {
    let pid = libc::pid_t::try_from(pid).expect("pid fits");
    // SAFETY: signal 0 only checks that the pid exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let info = command(server.port(), &["INFO", "cluster"], Duration::from_secs(5)).unwrap();
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
        assert_eq!(err.code(), ErrorCode::ServerUnavailable);
        assert!(err.message().contains("not found on PATH"), "{err}");
        assert!(
            err.message().contains("apt-get install redis-server"),
            "{err}"
        );
        assert!(err.message().contains("brew install redis"), "{err}");
    }
}
