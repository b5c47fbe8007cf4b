//! Shared test set-up: stores on the harness's real servers, always guarded.
#![allow(dead_code)]

use emq::{ConnectOptions, Store};

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
