//! Shared by the CLI's test files: running the built `emq` binary, bounded in time.
#![allow(dead_code)]

use std::process::{Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// The binary under test.
pub const EMQ: &str = env!("CARGO_BIN_EXE_emq");

/// Runs `emq args…` with no `EMQ_URL` and no `EMQ_TEST_DEFAULT_URL` (plus `env`), killing it and
/// failing the test after `limit`.
pub fn run_emq(args: &[&str], env: &[(&str, &str)], limit: Duration) -> Output {
    let mut child = Command::new(EMQ)
        .args(args)
        .env_remove("EMQ_URL")
        .env_remove("EMQ_TEST_DEFAULT_URL")
        .env_remove("EMQ_TLS_CA")
        .env_remove("EMQ_TLS_CERT")
        .env_remove("EMQ_TLS_KEY")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn emq");
    let deadline = Instant::now() + limit;
    loop {
        if child.try_wait().expect("try_wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("emq {args:?} did not finish within {limit:?}");
        }
        thread::sleep(Duration::from_millis(10));
    }
}
