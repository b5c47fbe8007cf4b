//! Events: a subscriber on a queue's events stream ([`EventStream`]) and its [`Event`]s (the
//! core's own type, exported through its `uniffi` feature).

use crate::error::EmqException;
use crate::runtime::on_runtime;
pub use emq::events::Event;
use std::sync::Arc;
use std::time::Duration;

/// A subscriber on a queue's events (`Queue.events`): reads them in order, each read waiting up
/// to a bound. `close()` (Kotlin: `shutdown()`) ends it, and a read in progress returns `[]` at
/// once.
#[derive(uniffi::Object)]
pub struct EventStream {
    stream: Arc<tokio::sync::Mutex<emq::events::EventStream>>,
    closed: tokio::sync::watch::Sender<bool>,
}

impl EventStream {
    pub(crate) fn new(stream: emq::events::EventStream) -> EventStream {
        EventStream {
            stream: Arc::new(tokio::sync::Mutex::new(stream)),
            closed: tokio::sync::watch::channel(false).0,
        }
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl EventStream {
    /// The next events (at most `count`), waiting up to `wait_ms` for the first; empty when none
    /// came, or once closed.
    #[uniffi::method(default(wait_ms = 1000.0, count = 100))]
    pub async fn next(&self, wait_ms: f64, count: u32) -> Result<Vec<Event>, EmqException> {
        let wait = Duration::from_millis(emq::options::millis("wait_ms", wait_ms)?.max(1));
        let count = (count as usize).max(1);
        let stream = self.stream.clone();
        let mut closed = self.closed.subscribe();
        on_runtime(async move {
            if *closed.borrow() {
                return Ok(Vec::new());
            }
            let mut stream = tokio::select! {
                s = stream.lock() => s,
                _ = closed.wait_for(|c| *c) => return Ok(Vec::new()),
            };
            tokio::select! {
                r = stream.next_batch(wait, count) => r,
                _ = closed.wait_for(|c| *c) => Ok(Vec::new()),
            }
        })
        .await
    }

    /// Ends the subscription (a read in progress returns `[]`). Kotlin names it `shutdown()`.
    pub fn close(&self) {
        self.closed.send_replace(true);
    }
}
