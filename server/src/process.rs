//! The pieces every redis-server supervisor here needs: a free loopback port, signals by pid (never
//! by name), a bounded stop, and the tail of a log.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::net::{Ipv4Addr, TcpListener};
use std::path::Path;
use std::process::{Child, ExitStatus};
use std::thread;
use std::time::{Duration, Instant};

/// How much of a log [`log_tail`] returns at most.
pub const LOG_TAIL_BYTES: u64 = 4096;

/// A port that was free a moment ago (bind 127.0.0.1:0 and let it go).
pub fn free_port() -> io::Result<u16> {
    Ok(TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
        .local_addr()?
        .port())
}

/// `kill(pid, sig)` for a positive pid; errors (the process is gone) are ignored.
pub fn signal(pid: u32, sig: libc::c_int) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        if pid > 0 {
            // SAFETY: plain kill(2) on a positive pid the caller started.
            unsafe {
                libc::kill(pid, sig);
            }
        }
    }
}

/// True while a process with this pid exists (a zombie counts).
pub fn pid_exists(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the pid exists.
    pid > 0 && unsafe { libc::kill(pid, 0) == 0 }
}

/// Stops `child` by pid: `SIGTERM`, up to `grace` for it to exit, then `SIGKILL`; reaps it.
/// Its exit status, when it could be read.
pub fn terminate(child: &mut Child, grace: Duration) -> Option<ExitStatus> {
    if let Ok(Some(status)) = child.try_wait() {
        return Some(status);
    }
    signal(child.id(), libc::SIGTERM);
    let deadline = Instant::now() + grace;
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

/// The last [`LOG_TAIL_BYTES`] of the file at `path`, from byte `from` on at the earliest (a
/// server restarted on the same log passes where its run began); `(no log)` if it cannot be read.
pub fn log_tail(path: &Path, from: u64) -> String {
    let Ok(mut f) = File::open(path) else {
        return String::from("(no log)");
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = from.max(len.saturating_sub(LOG_TAIL_BYTES));
    let mut buf = Vec::new();
    if f.seek(SeekFrom::Start(start)).is_ok() {
        let _ = f.read_to_end(&mut buf);
    }
    String::from_utf8_lossy(&buf).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::process::Command;

    #[test]
    fn log_tail_reads_from_the_start_mark_and_at_most_the_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        assert_eq!(log_tail(&path, 0), "(no log)");
        let mut f = File::create(&path).unwrap();
        f.write_all(b"first run\nsecond run\n").unwrap();
        assert_eq!(log_tail(&path, 0), "first run\nsecond run\n");
        assert_eq!(log_tail(&path, 10), "second run\n");
        f.write_all(&vec![b'x'; 10_000]).unwrap();
        assert_eq!(log_tail(&path, 0).len() as u64, LOG_TAIL_BYTES);
    }

    #[test]
    fn terminate_stops_a_child_by_pid() {
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let pid = child.id();
        assert!(pid_exists(pid));
        let status = terminate(&mut child, Duration::from_secs(5)).expect("a status");
        assert!(!status.success());
        assert!(!pid_exists(pid), "pid {pid} outlived terminate");
    }

    #[test]
    fn a_free_port_can_be_bound() {
        let port = free_port().unwrap();
        assert!(port > 0);
        TcpListener::bind((Ipv4Addr::LOCALHOST, port)).expect("still free");
    }
}
