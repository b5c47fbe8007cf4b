//! The built `emq` binary, run as a user would. Every wait is bounded.

use emq::key_slot;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

mod common;

use common::EMQ;

/// How long one short command may take.
const RUN_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs `emq args…` with no `EMQ_URL`, bounded by [`RUN_TIMEOUT`].
fn emq(args: &[&str]) -> Output {
    common::run_emq(args, &[], RUN_TIMEOUT)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn keyspace_text_shows_both_spellings_and_the_slot() {
    let out = emq(&["keyspace", "payments"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(stdout.contains("emq:{payments}:wait"), "{stdout}");
    assert!(stdout.contains("emq:payments:wait"), "{stdout}");
    let slot = key_slot("{payments}").to_string();
    assert!(stdout.contains(&slot), "slot {slot} missing:\n{stdout}");
    assert!(
        stdout.contains(&format!(
            "share tag {{payments}} → slot {slot}; core keys share tag {{emq}} → slot {}",
            key_slot("{emq}")
        )),
        "{stdout}"
    );
    assert!(stdout.contains("emq:payments:<jobId>:lock"), "{stdout}");
    // No server is needed, and none is started.
    assert!(
        !text(&out.stderr).contains("redis-server"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn keyspace_json_slots_match_the_keys() {
    let out = emq(&["keyspace", "payments", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    assert_eq!(v["queue"], "payments");
    let keys = v["keys"].as_array().expect("keys");
    assert!(keys.len() >= emq::Family::ALL.len() + emq::JobPart::ALL.len());
    for k in keys {
        let v2 = k["v2"].as_str().expect("v2");
        assert_eq!(k["slot"].as_u64(), Some(u64::from(key_slot(v2))), "{k}");
        assert_eq!(k["tag"], "payments", "{k}");
        for field in ["family", "type", "v1"] {
            assert!(k[field].is_string(), "{field} in {k}");
        }
        assert_eq!(k.as_object().unwrap().len(), 6, "{k}");
    }
    for f in emq::Family::ALL {
        let q = emq::QueueName::new("payments").unwrap();
        assert!(
            keys.iter()
                .any(|k| k["v2"] == q.key(f).as_str() && k["v1"] == q.v1_key(f)),
            "{f:?} missing"
        );
    }
    let core = v["core"].as_array().expect("core");
    assert_eq!(core.len(), emq::CoreKey::ALL.len());
    for c in core {
        let key = c["key"].as_str().expect("key");
        assert_eq!(c["tag"], "emq", "{c}");
        assert_eq!(c["slot"].as_u64(), Some(u64::from(key_slot(key))), "{c}");
    }
    assert_eq!(v.as_object().unwrap().len(), 3);
}

#[test]
fn keyspace_rejects_invalid_names_with_exit_2() {
    for name in ["a:b", "emq", "{emq}", ""] {
        let out = emq(&["keyspace", name]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name:?}: {out:?}");
        assert!(
            stderr.starts_with("error[invalid_queue_name]: "),
            "{name:?}: {stderr}"
        );
        assert!(out.stdout.is_empty(), "{name:?}");
    }
}

#[test]
fn help_works_everywhere() {
    for args in [
        &["--help"][..],
        &["-h"],
        &["help"],
        &["keyspace", "--help"],
        &["dev", "--help"],
        &["help", "keyspace"],
        &["help", "dev"],
    ] {
        let out = emq(args);
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{args:?}: {out:?}");
        assert!(stdout.contains("Usage: emq"), "{args:?}: {stdout}");
    }
    let top = text(&emq(&["--help"]).stdout);
    for word in ["keyspace", "dev", "--url", "EMQ_URL"] {
        assert!(top.contains(word), "{word} missing from --help:\n{top}");
    }
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(emq(&[]).status.code(), Some(2));
    assert_eq!(emq(&["keyspace"]).status.code(), Some(2));
    assert_eq!(emq(&["no-such-command"]).status.code(), Some(2));
    let out = emq(&["--url", "redis://127.0.0.1:1", "dev"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(text(&out.stderr).starts_with("error[invalid_option]: "));
}

/// Sends one command over raw TCP and reads one reply. A simple string comes back as sent
/// (`+PONG`), a bulk string as its text, an array as its elements' texts, one per line.
fn raw(port: u16, args: &[&str]) -> std::io::Result<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    s.set_write_timeout(Some(Duration::from_secs(5)))?;
    let mut req = format!("*{}\r\n", args.len());
    for a in args {
        req.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    s.write_all(req.as_bytes())?;
    read_reply(&mut BufReader::new(s))
}

fn read_reply(r: &mut BufReader<TcpStream>) -> std::io::Result<String> {
    let mut line = String::new();
    r.read_line(&mut line)?;
    let line = line.trim_end().to_string();
    if let Some(len) = line.strip_prefix('$') {
        let len: usize = len.parse().expect("bulk length");
        let mut body = vec![0; len + 2];
        r.read_exact(&mut body)?;
        body.truncate(len);
        return Ok(String::from_utf8_lossy(&body).into_owned());
    }
    if let Some(n) = line.strip_prefix('*') {
        let n: usize = n.parse().expect("array length");
        let items = (0..n)
            .map(|_| read_reply(r))
            .collect::<std::io::Result<Vec<_>>>()?;
        return Ok(items.join("\n"));
    }
    Ok(line)
}

fn pid_exists(pid: i32) -> bool {
    // SAFETY: signal 0 only asks whether the pid exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

/// Kills (by pid) whatever a failed test left running.
struct Cleanup {
    child: Option<Child>,
    server_pid: Option<i32>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        if let Some(pid) = self.server_pid.take() {
            if pid_exists(pid) {
                // SAFETY: the redis-server this test saw answer with this process_id.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
    }
}

#[test]
fn dev_serves_until_sigterm_then_stops_its_server() {
    let mut child = Command::new(EMQ)
        .arg("dev")
        .env_remove("EMQ_URL")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn emq dev");
    let stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let mut guard = Cleanup {
        child: Some(child),
        server_pid: None,
    };

    // The first stdout line, within 20 s.
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let url = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("emq dev printed no URL within 20 s");
    let url = url.trim();
    let port: u16 = url
        .strip_prefix("redis://127.0.0.1:")
        .unwrap_or_else(|| panic!("unexpected URL {url:?}"))
        .parse()
        .expect("a port");

    assert_eq!(raw(port, &["PING"]).unwrap(), "+PONG");
    let info = raw(port, &["INFO", "server"]).unwrap();
    let pid: i32 = info
        .lines()
        .find_map(|l| l.trim().strip_prefix("process_id:"))
        .expect("process_id in INFO server")
        .parse()
        .unwrap();
    guard.server_pid = Some(pid);
    let dir = raw(port, &["CONFIG", "GET", "dir"]).unwrap();
    assert!(pid_exists(pid));

    let emq_pid = guard.child.as_ref().unwrap().id() as i32;
    // SAFETY: the emq child this test spawned and has not reaped.
    assert_eq!(unsafe { libc::kill(emq_pid, libc::SIGTERM) }, 0);

    let deadline = Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(s) = guard.child.as_mut().unwrap().try_wait().unwrap() {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "emq dev still runs 15 s after SIGTERM"
        );
        thread::sleep(Duration::from_millis(20));
    };
    guard.child = None;
    let mut err = String::new();
    let _ = stderr.read_to_string(&mut err);
    assert!(status.success(), "{status}: {err}");

    // emq reaped its server before exiting, so the pid is gone now; allow a moment regardless.
    let deadline = Instant::now() + Duration::from_secs(5);
    while pid_exists(pid) && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
    }
    assert!(!pid_exists(pid), "redis-server pid {pid} outlived emq dev");
    guard.server_pid = None;
    // `CONFIG GET dir` answers `dir` and the path; the server's temp dir is removed too.
    let dir = dir.lines().last().unwrap_or_default().to_string();
    assert!(dir.starts_with('/'), "CONFIG GET dir: {dir:?}");
    assert!(!std::path::Path::new(&dir).exists(), "{dir} is still there");
    assert!(err.contains("stopped redis-server"), "{err}");
}
