//! Shared test set-up: stores on the harness's real servers, always guarded.
#![allow(dead_code)]

use emq::{ConnectOptions, JobOptions, NewJob, Queue, Store};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A guarded store on the shared standalone server.
pub async fn standalone() -> Store {
    let url = emq_harness::shared_standalone().url();
    Store::connect(ConnectOptions::new(url).guarded(true))
        .await
        .expect("connect standalone")
}

/// A guarded store on the shared 3-master cluster.
pub async fn cluster() -> Store {
    let urls = emq_harness::shared_cluster().urls();
    Store::connect(ConnectOptions::seeds(urls).guarded(true))
        .await
        .expect("connect cluster")
}

/// Both topologies, named, for tests that must pass on each.
pub async fn both() -> Vec<(&'static str, Store)> {
    vec![
        ("standalone", standalone().await),
        ("cluster", cluster().await),
    ]
}

/// A queue name unique to this test run.
pub fn unique(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// A queue with a unique name on `store`, with its own id minter.
pub async fn queue_on(store: &Store, prefix: &str) -> Queue {
    let minter = Arc::new(emq::IdMinter::start(store.clone()).await.unwrap());
    Queue::with_store(store.clone(), minter, &unique(prefix)).unwrap()
}

/// Polls `f` every 20 ms until it holds, failing the test after `limit`.
pub async fn wait_until<F, Fut>(what: &str, limit: Duration, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let until = Instant::now() + limit;
    while !f().await {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Fails the test unless the queue's audit passes.
pub async fn audit_ok(q: &Queue) {
    let r = q.audit().await.unwrap();
    assert!(r.ok(), "audit of {}: {:?}", q.name(), r.problems);
}

/// `n` jobs named `name` with default options and the payloads 0..n.
pub fn jobs(name: &str, n: usize) -> Vec<NewJob> {
    (0..n)
        .map(|i| NewJob {
            name: name.into(),
            data: serde_json::json!(i),
            options: JobOptions::default(),
        })
        .collect()
}
