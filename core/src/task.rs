//! [`TaskHandle`]: a spawned tokio task that is aborted when its handle is dropped.

use tokio::task::JoinHandle;

/// Owns a background task; dropping the handle aborts the task.
#[derive(Debug)]
pub struct TaskHandle(Option<JoinHandle<()>>);

impl TaskHandle {
    /// Spawns `fut` on the current runtime.
    pub fn spawn<F>(fut: F) -> TaskHandle
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        TaskHandle(Some(tokio::spawn(fut)))
    }

    /// Aborts the task now and waits for it to end.
    pub async fn stop(mut self) {
        if let Some(h) = self.0.take() {
            h.abort();
            let _ = h.await;
        }
    }

    /// Waits up to `limit` for the task to end by itself, then aborts it; true when it ended.
    pub async fn join_within(mut self, limit: std::time::Duration) -> bool {
        let Some(mut h) = self.0.take() else {
            return true;
        };
        match tokio::time::timeout(limit, &mut h).await {
            Ok(_) => true,
            Err(_) => {
                h.abort();
                let _ = h.await;
                false
            }
        }
    }

    /// True once the task has ended.
    pub fn is_finished(&self) -> bool {
        self.0.as_ref().map(|h| h.is_finished()).unwrap_or(true)
    }
}

impl Drop for TaskHandle {
    fn drop(&mut self) {
        if let Some(h) = self.0.take() {
            h.abort();
        }
    }
}
