//! Integration tests for emq-harness against REAL redis-server processes:
//! standalone start/stop/restart, a 3-master cluster, the TLS+ACL server,
//! the shared servers + atexit cleanup, and the `emq-harness up` binary.
//! Every wait here is bounded.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, TcpStream};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use emq_harness::resp::Value;
use emq_harness::{
    key_slot, registry, shared_cluster, shared_standalone, RedisCluster, RedisServer,
    ServerOptions, TlsServer,
};

/// True while `pid` exists and is not a zombie.
fn pid_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            // "pid (comm) S ..." — the state follows the last ')'.
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.trim_start().chars().next());
            state != Some('Z')
        }
    }
}

fn wait_gone(pid: u32, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if !pid_alive(pid) {
            return true;
        }
        thread::sleep(Duration::from_millis(20));
    }
    !pid_alive(pid)
}

fn redis_cli_ping(port: u16) -> String {
    let out = Command::new(emq_harness::cli_program())
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "ping"])
        .stdin(Stdio::null())
        .output()
        .expect("run redis-cli");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn standalone_start_ping_stop() {
    let mut s = RedisServer::start().expect("start");
    let pid = s.pid();
    assert!(pid_alive(pid));
    assert_eq!(s.url(), format!("redis://127.0.0.1:{}", s.port()));
    assert_eq!(s.command(&["PING"]).unwrap(), Value::Simple("PONG".into()));
    assert_eq!(redis_cli_ping(s.port()), "PONG");
    // Persistence is off.
    assert_eq!(
        s.command(&["CONFIG", "GET", "appendonly"]).unwrap(),
        Value::Array(Some(vec![
            Value::Bulk(Some(b"appendonly".to_vec())),
            Value::Bulk(Some(b"no".to_vec()))
        ]))
    );
    assert!(registry::registered_pids().contains(&pid));
    s.stop();
    assert!(!pid_alive(pid), "pid {pid} still alive after stop");
    assert!(!registry::registered_pids().contains(&pid));
    s.stop(); // idempotent
    assert!(!s.is_running());
    assert!(s.command(&["PING"]).is_err());
}

/// The server the harness starts is the one `EMQ_SERVER_BIN` names: with `EMQ_EXPECT_SERVER=valkey`
/// (set by scripts/test-all for its Valkey runs) the suites must really be talking to Valkey, so a
/// PATH or variable mix-up cannot pass the Redis results off as the Valkey ones.
#[test]
fn the_server_is_the_one_asked_for() {
    let s = RedisServer::start().expect("start");
    let info = match s.command(&["INFO", "server"]).unwrap() {
        Value::Bulk(Some(b)) => String::from_utf8_lossy(&b).into_owned(),
        other => panic!("INFO server: {other:?}"),
    };
    let is_valkey = info.contains("server_name:valkey") || info.contains("valkey_version:");
    match std::env::var("EMQ_EXPECT_SERVER").as_deref() {
        Ok("valkey") => assert!(is_valkey, "asked for Valkey, got:\n{info}"),
        Ok("redis") | Err(_) => assert!(!is_valkey, "asked for Redis, got Valkey:\n{info}"),
        Ok(other) => panic!("EMQ_EXPECT_SERVER={other}: expected valkey or redis"),
    }
    let version = info
        .lines()
        .find(|l| l.starts_with("valkey_version:") || l.starts_with("redis_version:"))
        .unwrap_or("no version line");
    eprintln!(
        "harness server: {} ({version})",
        emq_harness::server_program()
    );
}

#[test]
fn drop_stops_the_server() {
    let s = RedisServer::start().expect("start");
    let pid = s.pid();
    let dir = s.dir().to_path_buf();
    drop(s);
    assert!(!pid_alive(pid));
    assert!(!dir.exists(), "temp dir should be removed on drop");
}

#[test]
fn restart_keeps_port_and_dir() {
    let mut s = RedisServer::start().expect("start");
    let (port, pid, url, dir) = (s.port(), s.pid(), s.url(), s.dir().to_path_buf());
    let sha = s
        .command(&["SCRIPT", "LOAD", "return 1"])
        .unwrap()
        .as_text()
        .unwrap();
    s.restart().expect("restart");
    assert_eq!(s.port(), port);
    assert_eq!(s.url(), url);
    assert_eq!(s.dir(), dir);
    assert_ne!(s.pid(), pid);
    assert!(!pid_alive(pid), "old pid {pid} still alive");
    assert!(pid_alive(s.pid()));
    assert_eq!(s.command(&["PING"]).unwrap(), Value::Simple("PONG".into()));
    // A restart really is a new process: the script cache is empty.
    match s.command(&["EVALSHA", &sha, "0"]).unwrap() {
        Value::Error(e) => assert!(e.starts_with("NOSCRIPT"), "{e}"),
        other => panic!("expected NOSCRIPT, got {other:?}"),
    }
    let new_pid = s.pid();
    drop(s);
    assert!(!pid_alive(new_pid));
}

#[test]
fn extra_args_are_applied() {
    let s = RedisServer::start_with(ServerOptions {
        extra_args: vec!["--maxmemory".into(), "12mb".into()],
        ..ServerOptions::default()
    })
    .expect("start");
    assert_eq!(
        s.cli(&["config", "get", "maxmemory"]).unwrap().trim(),
        "maxmemory\n12582912"
    );
}

#[test]
fn bad_args_fail_with_log_tail() {
    let err = RedisServer::start_with(ServerOptions {
        extra_args: vec!["--no-such-option".into(), "1".into()],
        ..ServerOptions::default()
    })
    .expect_err("must fail");
    let msg = err.to_string();
    assert!(msg.contains("did not come up"), "{msg}");
    assert!(msg.contains("no-such-option"), "log tail missing: {msg}");
}

#[test]
fn cluster_of_three_converges_and_maps_slots() {
    let mut c = RedisCluster::start(3).expect("cluster");
    assert_eq!(c.nodes().len(), 3);
    assert_eq!(c.urls().len(), 3);
    for n in c.nodes() {
        let info = n.cli(&["cluster", "info"]).unwrap();
        assert!(info.contains("cluster_state:ok"), "{info}");
        assert!(info.contains("cluster_known_nodes:3"), "{info}");
    }
    let a = c.node_for_slot(0);
    let b = c.node_for_slot(8000);
    let z = c.node_for_slot(16383);
    assert!(a != b && b != z && a != z, "{a} {b} {z}");
    for u in [&a, &b, &z] {
        assert!(c.urls().contains(u), "{u} not a seed url");
    }
    // key_slot agrees with the server's CLUSTER KEYSLOT.
    for key in ["foo", "emq:{q1}:jobs", "{}x", "a{b}c{d}"] {
        let server = c.nodes()[0].cli(&["cluster", "keyslot", key]).unwrap();
        assert_eq!(server.trim(), key_slot(key.as_bytes()).to_string(), "{key}");
    }
    // A write through the owning node succeeds (no MOVED).
    let owner = c.node_for_key("foo");
    let node = c.nodes().iter().find(|n| n.url() == owner).unwrap();
    assert_eq!(
        node.command(&["SET", "foo", "bar"]).unwrap(),
        Value::Simple("OK".into())
    );
    let pids: Vec<u32> = c.nodes().iter().map(RedisServer::pid).collect();
    c.stop();
    for pid in pids {
        assert!(!pid_alive(pid), "cluster node {pid} still alive");
    }
}

#[test]
fn cluster_of_one_owns_everything() {
    let c = RedisCluster::start(1).expect("cluster of one");
    let u = c.urls()[0].clone();
    assert_eq!(c.node_for_slot(0), u);
    assert_eq!(c.node_for_slot(16383), u);
}

#[test]
fn cluster_of_zero_is_rejected() {
    assert!(RedisCluster::start(0).is_err());
}

#[test]
fn tls_server_requires_tls_and_acl_user() {
    let t = TlsServer::start().expect("tls server");
    let port = t.server().port();
    assert_eq!(t.url(), format!("rediss://emq:emq-secret@127.0.0.1:{port}"));
    let ca = t.ca_cert_path();
    assert!(ca.is_file(), "{}", ca.display());
    let cli = |extra: &[&str]| {
        let out = Command::new("redis-cli")
            .arg("--tls")
            .arg("--cacert")
            .arg(ca)
            .args(["-h", "127.0.0.1", "-p", &port.to_string()])
            .args(extra)
            .stdin(Stdio::null())
            .output()
            .expect("redis-cli");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(
        cli(&[
            "--user",
            "emq",
            "--pass",
            "emq-secret",
            "--no-auth-warning",
            "ping"
        ]),
        "PONG"
    );
    // The default user is off: no PONG without the ACL user.
    let anon = cli(&["ping"]);
    assert!(anon.contains("NOAUTH"), "anonymous ping answered {anon:?}");
    let wrong = cli(&[
        "--user",
        "emq",
        "--pass",
        "nope",
        "--no-auth-warning",
        "ping",
    ]);
    assert_ne!(wrong, "PONG");
    // The cert is verified against the CA for host 127.0.0.1 (no --insecure).
    assert_eq!(t.server().cli(&["ping"]).unwrap().trim(), "PONG");

    // Plain TCP PING gets no PONG.
    assert_ne!(redis_cli_ping(port), "PONG");
    let mut s = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).expect("tcp connect");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = s.write_all(b"*1\r\n$4\r\nPING\r\n");
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf); // EOF, reset or timeout
    assert!(
        !String::from_utf8_lossy(&buf).contains("PONG"),
        "plain TCP got {buf:?}"
    );
    // No plain port at all.
    assert!(t.server().command(&["PING"]).is_err());
}

#[test]
fn shared_standalone_is_one_server() {
    let a = shared_standalone();
    let b = shared_standalone();
    assert_eq!(a.pid(), b.pid());
    assert_eq!(a.command(&["PING"]).unwrap(), Value::Simple("PONG".into()));
    assert!(registry::registered_pids().contains(&a.pid()));
}

#[test]
fn shared_cluster_is_one_cluster() {
    let a = shared_cluster();
    let b = shared_cluster();
    assert_eq!(a.urls(), b.urls());
    assert_eq!(a.nodes().len(), 3);
}

/// Runs only inside the child process spawned by
/// `atexit_handler_stops_shared_servers`: starts the shared standalone server,
/// prints its pid and returns, leaving the atexit handler to stop it.
#[test]
fn atexit_child_process() {
    if std::env::var_os("EMQ_HARNESS_ATEXIT_CHILD").is_none() {
        return;
    }
    let s = shared_standalone();
    println!("SHARED_PID={}", s.pid());
    println!("SHARED_DIR={}", s.dir().display());
}

#[test]
fn atexit_handler_stops_shared_servers() {
    let exe = std::env::current_exe().unwrap();
    let out = run_with_timeout(
        Command::new(exe)
            .args(["atexit_child_process", "--exact", "--nocapture"])
            .env("EMQ_HARNESS_ATEXIT_CHILD", "1"),
        Duration::from_secs(60),
    );
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "child failed: {stdout}");
    let field = |k: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(k))
            .unwrap_or_else(|| panic!("no {k} in {stdout}"))
            .to_string()
    };
    let pid: u32 = field("SHARED_PID=").parse().unwrap();
    let dir = field("SHARED_DIR=");
    assert!(
        wait_gone(pid, Duration::from_secs(5)),
        "shared server {pid} survived exit"
    );
    assert!(!std::path::Path::new(&dir).exists(), "{dir} left behind");
}

fn run_with_timeout(cmd: &mut Command, limit: Duration) -> std::process::Output {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            panic!("child {pid} did not finish within {limit:?}");
        }
    }
}

/// Reads one line from `r` within `limit`.
fn read_line_within(r: impl Read + Send + 'static, limit: Duration) -> String {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(r).read_line(&mut line);
        let _ = tx.send(line);
    });
    rx.recv_timeout(limit).expect("no JSON line in time")
}

fn wait_exit(child: &mut std::process::Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            panic!("emq-harness did not exit within {limit:?}");
        }
        thread::sleep(Duration::from_millis(20));
    }
}

fn pids_of(v: &serde_json::Value) -> Vec<u32> {
    v["pids"]
        .as_array()
        .expect("pids array")
        .iter()
        .map(|p| p.as_u64().unwrap() as u32)
        .collect()
}

#[test]
fn binary_up_default_stops_on_stdin_eof() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_emq-harness"))
        .arg("up")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn emq-harness");
    let line = read_line_within(child.stdout.take().unwrap(), Duration::from_secs(60));
    let v: serde_json::Value = serde_json::from_str(line.trim()).expect("JSON line");
    let standalone = v["standalone"].as_str().expect("standalone url");
    assert!(standalone.starts_with("redis://127.0.0.1:"), "{standalone}");
    let cluster = v["cluster"].as_array().expect("cluster urls");
    assert_eq!(cluster.len(), 3);
    assert!(v.get("tls").is_none(), "tls not requested: {v}");
    let pids = pids_of(&v);
    assert_eq!(pids.len(), 4);
    for &p in &pids {
        assert!(pid_alive(p), "pid {p} should be running");
    }
    let port: u16 = standalone.rsplit(':').next().unwrap().parse().unwrap();
    assert_eq!(redis_cli_ping(port), "PONG");

    drop(child.stdin.take()); // EOF
    let st = wait_exit(&mut child, Duration::from_secs(30));
    assert!(st.success(), "{st}");
    for p in pids {
        assert!(!pid_alive(p), "pid {p} survived emq-harness");
    }
}

#[test]
fn binary_up_tls_stops_on_sigterm() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_emq-harness"))
        .args(["up", "--tls"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn emq-harness");
    let line = read_line_within(child.stdout.take().unwrap(), Duration::from_secs(60));
    let v: serde_json::Value = serde_json::from_str(line.trim()).expect("JSON line");
    assert!(
        v.get("standalone").is_none() && v.get("cluster").is_none(),
        "{v}"
    );
    let url = v["tls"]["url"].as_str().expect("tls url");
    assert!(
        url.starts_with("rediss://emq:emq-secret@127.0.0.1:"),
        "{url}"
    );
    let ca = v["tls"]["ca"].as_str().expect("ca path");
    assert!(std::path::Path::new(ca).is_file());
    let pids = pids_of(&v);
    assert_eq!(pids.len(), 1);

    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let st = wait_exit(&mut child, Duration::from_secs(30));
    assert!(st.success(), "{st}");
    assert!(!pid_alive(pids[0]), "tls server survived");
    assert!(!std::path::Path::new(ca).exists(), "temp dir left behind");
}

#[test]
fn binary_rejects_unknown_flags() {
    let out = run_with_timeout(
        Command::new(env!("CARGO_BIN_EXE_emq-harness")).args(["up", "--bogus"]),
        Duration::from_secs(10),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
}
