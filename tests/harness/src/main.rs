//! The `emq-harness` binary, for test suites in other languages.
//!
//! `emq-harness up [--standalone] [--cluster] [--tls] [--mtls] [--masters N]` starts the servers
//! (no flags means standalone and cluster), prints ONE JSON line on stdout:
//!
//! ```text
//! {"standalone":"redis://127.0.0.1:P","cluster":["redis://127.0.0.1:P1",...],
//!  "tls":{"url":"rediss://emq:emq-secret@127.0.0.1:P","ca":"/tmp/.../ca.crt",
//!         "cert":"/tmp/.../client.crt","key":"/tmp/.../client.key"},
//!  "mtls":{ the same fields },"pids":[...]}
//! ```
//!
//! `tls` does not ask for a client certificate; `mtls` requires one (`cert` / `key`, signed by
//! its `ca`).
//!
//! (on one line; keys not requested are omitted), then blocks until stdin
//! reaches EOF or SIGTERM/SIGINT/SIGHUP arrives, stops every server by pid
//! and exits 0. Callers spawn it with a pipe on stdin and close the pipe to
//! stop it.

use std::io::{self, Read, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use emq_harness::{RedisCluster, RedisServer, TlsServer};

const USAGE: &str =
    "usage: emq-harness up [--standalone] [--cluster] [--tls] [--mtls] [--masters N]\n\
  Starts real redis servers on 127.0.0.1, prints one JSON line with their urls,\n\
  and stops them when stdin reaches EOF or on SIGTERM/SIGINT.\n\
  No flags = --standalone --cluster.";

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

fn install_signal_handlers() {
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        // SAFETY: the handler only stores to an atomic (async-signal-safe).
        unsafe {
            libc::signal(
                sig,
                on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
            );
        }
    }
}

#[derive(Default)]
struct Wanted {
    standalone: bool,
    cluster: bool,
    tls: bool,
    mtls: bool,
    /// Masters of the cluster (`--masters N`, 3 by default; bench/partitions.sh takes more).
    masters: Option<usize>,
}

fn parse_args(args: &[String]) -> Result<Wanted, String> {
    match args.first().map(String::as_str) {
        Some("up") => {}
        Some("-h" | "--help" | "help") => return Err(String::new()),
        Some(other) => return Err(format!("unknown command {other:?}")),
        None => return Err("missing command".into()),
    }
    let mut w = Wanted::default();
    let mut rest = args[1..].iter();
    while let Some(a) = rest.next() {
        match a.as_str() {
            "--masters" => {
                let n = rest
                    .next()
                    .and_then(|n| n.parse::<usize>().ok())
                    .filter(|n| (1..=64).contains(n))
                    .ok_or("--masters takes a number from 1 to 64")?;
                w.masters = Some(n);
                w.cluster = true;
            }
            "--standalone" => w.standalone = true,
            "--cluster" => w.cluster = true,
            "--tls" => w.tls = true,
            "--mtls" => w.mtls = true,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown flag {other:?}")),
        }
    }
    if !(w.standalone || w.cluster || w.tls || w.mtls) {
        w.standalone = true;
        w.cluster = true;
    }
    Ok(w)
}

fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

struct Servers {
    standalone: Option<RedisServer>,
    cluster: Option<RedisCluster>,
    tls: Option<TlsServer>,
    mtls: Option<TlsServer>,
}

impl Servers {
    fn start(w: &Wanted) -> io::Result<Servers> {
        // Start in an order where a failure drops (= stops) what already runs.
        let standalone = w.standalone.then(RedisServer::start).transpose()?;
        let cluster = w
            .cluster
            .then(|| RedisCluster::start(w.masters.unwrap_or(3)))
            .transpose()?;
        let tls = w.tls.then(TlsServer::start).transpose()?;
        let mtls = w.mtls.then(TlsServer::start_mutual).transpose()?;
        Ok(Servers {
            standalone,
            cluster,
            tls,
            mtls,
        })
    }

    fn pids(&self) -> Vec<u32> {
        let mut pids = Vec::new();
        pids.extend(self.standalone.iter().map(RedisServer::pid));
        if let Some(c) = &self.cluster {
            pids.extend(c.nodes().iter().map(RedisServer::pid));
        }
        pids.extend(self.tls.iter().map(|t| t.server().pid()));
        pids.extend(self.mtls.iter().map(|t| t.server().pid()));
        pids
    }

    fn json(&self) -> String {
        let mut fields = Vec::new();
        if let Some(s) = &self.standalone {
            fields.push(format!("\"standalone\":{}", json_str(&s.url())));
        }
        if let Some(c) = &self.cluster {
            let urls: Vec<String> = c.urls().iter().map(|u| json_str(u)).collect();
            fields.push(format!("\"cluster\":[{}]", urls.join(",")));
        }
        for (name, server) in [("tls", &self.tls), ("mtls", &self.mtls)] {
            if let Some(t) = server {
                fields.push(format!(
                    "\"{name}\":{{\"url\":{},\"ca\":{},\"cert\":{},\"key\":{}}}",
                    json_str(&t.url()),
                    json_str(&t.ca_cert_path().to_string_lossy()),
                    json_str(&t.client_cert_path().to_string_lossy()),
                    json_str(&t.client_key_path().to_string_lossy())
                ));
            }
        }
        let pids: Vec<String> = self.pids().iter().map(u32::to_string).collect();
        fields.push(format!("\"pids\":[{}]", pids.join(",")));
        format!("{{{}}}", fields.join(","))
    }

    fn stop(&mut self) {
        if let Some(t) = &mut self.mtls {
            t.stop();
        }
        if let Some(t) = &mut self.tls {
            t.stop();
        }
        if let Some(c) = &mut self.cluster {
            c.stop();
        }
        if let Some(s) = &mut self.standalone {
            s.stop();
        }
    }
}

/// Blocks until stdin hits EOF (or errors) or a stop signal arrives.
fn wait_for_stop() {
    let (tx, rx) = mpsc::channel::<()>();
    thread::spawn(move || {
        let mut sink = [0u8; 4096];
        let mut stdin = io::stdin().lock();
        loop {
            match stdin.read(&mut sink) {
                Ok(0) => break,
                Ok(_) => continue,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        let _ = tx.send(());
    });
    while !STOP.load(Ordering::SeqCst) {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            _ => break,
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let wanted = match parse_args(&args) {
        Ok(w) => w,
        Err(msg) if msg.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(msg) => {
            eprintln!("emq-harness: {msg}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    install_signal_handlers();
    let mut servers = match Servers::start(&wanted) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("emq-harness: failed to start servers: {e}");
            return ExitCode::FAILURE;
        }
    };
    {
        let mut out = io::stdout().lock();
        // If nobody reads stdout any more we still wait for stdin/signals.
        let _ = writeln!(out, "{}", servers.json());
        let _ = out.flush();
    }
    if !STOP.load(Ordering::SeqCst) {
        wait_for_stop();
    }
    servers.stop();
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags() {
        let a = |v: &[&str]| parse_args(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        let w = a(&["up"]).unwrap();
        assert!(w.standalone && w.cluster && !w.tls);
        let w = a(&["up", "--tls"]).unwrap();
        assert!(!w.standalone && !w.cluster && w.tls);
        assert!(a(&["down"]).is_err());
        assert!(a(&["up", "--nope"]).is_err());
        let m = a(&["up", "--masters", "6"]).unwrap();
        assert!(m.cluster && !m.standalone && m.masters == Some(6));
        assert!(a(&["up", "--masters", "0"]).is_err());
        assert!(a(&["up", "--masters"]).is_err());
        assert!(a(&[]).is_err());
    }

    #[test]
    fn escapes_json() {
        assert_eq!(json_str("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
    }
}
