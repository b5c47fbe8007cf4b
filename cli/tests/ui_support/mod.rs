//! Shared by the dashboard's tests: an `emq ui` child on a free loopback port (killed on drop), and
//! a tiny HTTP/1.1 client over a TCP stream (the CLI's tests carry no HTTP library).
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `emq ui`.
pub struct Ui {
    child: Child,
    /// `127.0.0.1:<port>`.
    pub addr: String,
    stderr_path: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

/// A free port on loopback (bound, then released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Ui {
    /// Starts `emq --url … ui --listen 127.0.0.1:<free> extra…` and waits until it answers.
    pub fn start(urls: &[String], extra: &[&str], env: &[(&str, &str)]) -> Ui {
        Ui::start_bin(env!("CARGO_BIN_EXE_emq"), urls, extra, env)
    }

    /// [`Ui::start`] with another `emq` binary (the benchmark's baseline).
    pub fn start_bin(bin: &str, urls: &[String], extra: &[&str], env: &[(&str, &str)]) -> Ui {
        let port = free_port();
        let addr = format!("127.0.0.1:{port}");
        let dir = tempfile::tempdir().unwrap();
        let stderr_path = dir.path().join("stderr");
        let mut cmd = Command::new(bin);
        for u in urls {
            cmd.args(["--url", u]);
        }
        cmd.args(["ui", "--listen", &addr])
            .args(extra)
            .env_remove("EMQ_URL")
            .env_remove("EMQ_UI_TOKEN")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr_path).unwrap());
        let child = cmd.spawn().expect("spawn emq ui");
        let mut ui = Ui {
            child,
            addr,
            stderr_path,
            _dir: dir,
        };
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            if TcpStream::connect(&ui.addr).is_ok() {
                return ui;
            }
            if let Some(status) = ui.child.try_wait().unwrap() {
                panic!("emq ui exited ({status}): {}", ui.stderr());
            }
            assert!(
                Instant::now() < until,
                "emq ui never listened: {}",
                ui.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// What it wrote on stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }

    /// One request; (status, headers, body).
    pub fn request(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
        request(&self.addr, method, path, headers, body)
    }
}

impl Drop for Ui {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP reply.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl Reply {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

/// One HTTP/1.1 request with `Connection: close`, bounded to 10 s.
pub fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Reply {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: {addr}\r\n"));
    }
    if !body.is_empty() {
        req.push_str("Content-Type: application/json\r\n");
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    Reply {
        status,
        head: head.to_string(),
        body: body.to_string(),
    }
}
