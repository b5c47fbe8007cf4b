//! The worker registry: every running worker describes itself in its queue's slot and heartbeats
//! there on the server's clock, so a dashboard or `emq workers` can list the live workers.
//!
//! `emq:{q}:workers` (ZSET) holds each worker's id scored by when its registration lapses (server
//! ms); `emq:{q}:worker-info` (HASH) holds its description as JSON. `worker_beat.lua` writes both
//! (server now + [`TTL`]), keeps the first beat's `started_ms`, and prunes lapsed workers;
//! `worker_gone.lua` removes a closing worker; `workers_list.lua` reads the live ones against the
//! server's clock. A worker spawns [`heartbeat`] when it starts and calls [`leave`] when it closes
//! (or is dropped); a worker that dies simply lapses after [`TTL`].

use crate::error::Result;
use crate::queue::Queue;
use crate::script;
use crate::task::TaskHandle;
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;
use std::time::Duration;

/// How often a worker heartbeats.
pub const HEARTBEAT: Duration = Duration::from_secs(5);
/// How long a registration lasts without a heartbeat.
pub const TTL: Duration = Duration::from_secs(15);
/// Most workers one listing returns per queue.
pub const MAX_LISTED: u64 = 1_000;

static LANGUAGE: OnceLock<String> = OnceLock::new();

/// Names the language the workers of this process are driven from ("python", "node", …) in their
/// registrations; the first call wins. Without a call: "rust".
pub fn set_language(language: &str) {
    let _ = LANGUAGE.set(language.to_string());
}

fn language() -> &'static str {
    LANGUAGE.get().map(String::as_str).unwrap_or("rust")
}

fn hostname() -> String {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown".into())
}

/// One live worker, as registered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerInfo {
    /// Its id (unique per worker).
    #[serde(default)]
    pub id: String,
    /// The queue it serves.
    #[serde(default)]
    pub queue: String,
    /// The host it runs on.
    pub host: String,
    /// Its process id.
    pub pid: u32,
    /// The language driving it (see [`set_language`]).
    pub language: String,
    /// Its concurrency.
    pub concurrency: usize,
    /// Jobs it was running at its last heartbeat.
    pub running: usize,
    /// The emq version it runs.
    #[serde(default)]
    pub version: String,
    /// Its first heartbeat (server ms).
    #[serde(default)]
    pub started_ms: u64,
    /// Its last heartbeat (server ms).
    #[serde(default)]
    pub beat_ms: u64,
    /// When its registration lapses without another heartbeat (server ms).
    #[serde(default)]
    pub lapse_ms: u64,
}

/// The registry id of the worker whose `waiters` entry is `waiter` (`<hex>|<lease ms>`).
fn worker_id(waiter: &str) -> &str {
    waiter.split('|').next().unwrap_or(waiter)
}

/// Registers or heartbeats a worker: this process's host, pid and language, with `concurrency` and
/// `running`, for `ttl` from the server's now. Returns the server's (now, lapse) in ms.
pub async fn beat(
    queue: &Queue,
    id: &str,
    concurrency: usize,
    running: usize,
    ttl: Duration,
) -> Result<(u64, u64)> {
    let info = serde_json::json!({
        "host": hostname(),
        "pid": std::process::id(),
        "language": language(),
        "concurrency": concurrency,
        "running": running,
        "version": env!("CARGO_PKG_VERSION"),
    });
    let k = queue.keys();
    script::WORKER_BEAT
        .prepare()
        .key(&k.workers)
        .key(&k.worker_info)
        .arg(id)
        .arg(ttl.as_millis() as u64)
        .arg(info.to_string())
        .invoke(queue.store())
        .await
}

/// Removes a worker from the registry; true when it was registered.
pub async fn remove(queue: &Queue, id: &str) -> Result<bool> {
    let k = queue.keys();
    let n: i64 = script::WORKER_GONE
        .prepare()
        .key(&k.workers)
        .key(&k.worker_info)
        .arg(id)
        .invoke(queue.store())
        .await?;
    Ok(n == 1)
}

/// The heartbeat task of the worker whose `waiters` entry is `waiter`: beats at once, then every
/// [`HEARTBEAT`] for as long as the task lives (the worker stops it with its other tasks), and
/// writes the queue into the queue registry each time. `running` reads the jobs running now.
pub fn heartbeat<F>(queue: Queue, waiter: &str, concurrency: usize, running: F) -> TaskHandle
where
    F: Fn() -> usize + Send + Sync + 'static,
{
    let id = worker_id(waiter).to_string();
    TaskHandle::spawn(async move {
        let mut tick = tokio::time::interval(HEARTBEAT);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            // The queue first, so a reader that sees the worker listed finds its queue registered
            // (registering after the beat left a window a test hit).
            let _ = queue.register().await;
            // A failed beat (datastore away) is retried at the next tick; the registration lapses
            // meanwhile, which is the truth.
            if let Err(e) = beat(&queue, &id, concurrency, running(), TTL).await {
                tracing::debug!(queue = %queue.name(), error = %e, "worker heartbeat failed");
            }
        }
    })
}

/// Takes the worker whose `waiters` entry is `waiter` out of the registry (best effort, bounded to
/// 500 ms: a registration left behind lapses after [`TTL`]).
pub async fn leave(queue: &Queue, waiter: &str) {
    let _ =
        tokio::time::timeout(Duration::from_millis(500), remove(queue, worker_id(waiter))).await;
}

impl Queue {
    /// The live workers of this queue (registration not lapsed on the server's clock), at most
    /// [`MAX_LISTED`], soonest lapse first.
    ///
    /// On a partitioned queue: every partition's, each worker once (its members register under
    /// one id; `running` is the worker's, whichever partition it ran from), `queue` the logical
    /// name.
    pub async fn workers(&self) -> Result<Vec<WorkerInfo>> {
        if let Some(p) = &self.spread() {
            let all = crate::queue::partitioned::each(p, |m| Box::pin(m.workers_here())).await?;
            let mut seen = std::collections::HashSet::new();
            let mut out: Vec<WorkerInfo> = all
                .into_iter()
                .flatten()
                .filter(|w| seen.insert(w.id.clone()))
                .map(|mut w| {
                    w.queue = self.name().as_str().to_string();
                    w
                })
                .collect();
            out.sort_by_key(|w| w.lapse_ms);
            return Ok(out);
        }
        self.workers_here().await
    }

    /// [`Queue::workers`] of this queue's own slot.
    pub(crate) async fn workers_here(&self) -> Result<Vec<WorkerInfo>> {
        let k = self.keys();
        let flat: Vec<String> = script::WORKERS_LIST
            .prepare()
            .key(&k.workers)
            .key(&k.worker_info)
            .arg(MAX_LISTED)
            .invoke(self.store())
            .await?;
        let mut out = Vec::new();
        for pair in flat.get(1..).unwrap_or_default().chunks(2) {
            let [id, info] = pair else { continue };
            if let Ok(mut w) = serde_json::from_str::<WorkerInfo>(info) {
                w.id = id.clone();
                w.queue = self.name().as_str().to_string();
                out.push(w);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_id_is_the_waiter_entry_without_its_lease() {
        assert_eq!(super::worker_id("00ab12|30000"), "00ab12");
        assert_eq!(super::worker_id("plain"), "plain");
    }
}
