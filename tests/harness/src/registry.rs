//! Process-global registry of the redis-server pids this process started, and
//! the `atexit` handler that stops whatever is still registered when the
//! process exits.
//!
//! Statics (`shared_standalone`, `shared_cluster`) are never dropped, and the
//! Rust test harness leaves through `process::exit`/return-from-main, both of
//! which run C `atexit` handlers. Every spawned server is registered here and
//! unregistered when it is stopped normally, so at exit only the leftovers are
//! signalled: SIGTERM by pid, a short bounded wait, then SIGKILL. Their temp
//! dirs (which a never-dropped `TempDir` would leak) are removed afterwards.

pub(crate) use emq_server_process::process::signal;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, Once};
use std::thread;
use std::time::{Duration, Instant};

struct Entry {
    pid: u32,
    dir: PathBuf,
}

static ENTRIES: Mutex<Vec<Entry>> = Mutex::new(Vec::new());
static INSTALL: Once = Once::new();

/// How long the exit handler waits for SIGTERMed servers before SIGKILL.
const EXIT_GRACE: Duration = Duration::from_secs(3);

fn entries() -> MutexGuard<'static, Vec<Entry>> {
    // A panic while holding the lock must not disable cleanup.
    ENTRIES.lock().unwrap_or_else(|e| e.into_inner())
}

/// Records a running server (pid + the temp dir to remove if it is still
/// running at process exit) and installs the exit handler on first use.
pub(crate) fn register(pid: u32, dir: &Path) {
    INSTALL.call_once(|| {
        // SAFETY: `stop_all_at_exit` is an `extern "C" fn()` with no
        // arguments, as atexit requires.
        let rc = unsafe { libc::atexit(stop_all_at_exit) };
        if rc != 0 {
            eprintln!(
                "emq-harness: atexit registration failed; leftover redis servers may survive"
            );
        }
    });
    entries().push(Entry {
        pid,
        dir: dir.to_path_buf(),
    });
}

/// Forgets a server that was stopped (and reaped) normally.
pub(crate) fn unregister(pid: u32) {
    entries().retain(|e| e.pid != pid);
}

/// Pids currently registered (started by this process and not yet stopped).
pub fn registered_pids() -> Vec<u32> {
    entries().iter().map(|e| e.pid).collect()
}

/// Stops every registered server by pid (SIGTERM, bounded wait, SIGKILL) and
/// removes their temp dirs. Used by the atexit handler; safe to call earlier.
pub fn stop_all_registered() {
    let taken: Vec<Entry> = std::mem::take(&mut *entries());
    if taken.is_empty() {
        return;
    }
    for e in &taken {
        signal(e.pid, libc::SIGTERM);
    }
    let deadline = Instant::now() + EXIT_GRACE;
    let mut remaining: Vec<&Entry> = taken.iter().collect();
    while !remaining.is_empty() && Instant::now() < deadline {
        remaining.retain(|e| !reaped_or_gone(e.pid));
        if !remaining.is_empty() {
            thread::sleep(Duration::from_millis(20));
        }
    }
    for e in &remaining {
        signal(e.pid, libc::SIGKILL);
    }
    let deadline = Instant::now() + Duration::from_secs(1);
    while !remaining.is_empty() && Instant::now() < deadline {
        remaining.retain(|e| !reaped_or_gone(e.pid));
        if !remaining.is_empty() {
            thread::sleep(Duration::from_millis(10));
        }
    }
    for e in &taken {
        let _ = std::fs::remove_dir_all(&e.dir);
    }
}

extern "C" fn stop_all_at_exit() {
    // Never unwind across the FFI boundary.
    let _ = std::panic::catch_unwind(stop_all_registered);
}

/// Reaps `pid` if it is our exited child; true once it no longer exists.
fn reaped_or_gone(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return true;
    };
    let mut status: libc::c_int = 0;
    // SAFETY: non-blocking waitpid on a specific pid.
    let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    if r == pid {
        return true;
    }
    if r < 0 {
        // ECHILD: not our child (or already reaped elsewhere): check existence.
        // SAFETY: signal 0 only probes for existence.
        let alive = unsafe { libc::kill(pid, 0) } == 0;
        return !alive;
    }
    false
}
