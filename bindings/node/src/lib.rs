//! emq-node: the native addon of the npm package `emq`. A thin napi-rs layer over the core: it
//! adapts types (JS numbers in milliseconds to the core's options, batches and rich values as JSON
//! text), errors (every core error is thrown as `[emq:<code>] <message>`, which `node/index.js`
//! turns into an `EmqError` with `.code`), and the handler (the core's [`emq::Handler`] handing jobs
//! to JS in batches, see [`worker`]). No queue logic lives here.
//!
//! - [`options`]: job, worker, bulk, flow and scheduler options and their conversion;
//! - [`queue`]: `NativeQueue`, one queue's operations;
//! - [`worker`]: `NativeWorker` and the batched hand-off of jobs to JS;
//! - [`events`]: `NativeEvents`, a subscriber on a queue's events.

mod events;
mod options;
mod queue;
mod worker;

use emq::{ConnectOptions, Error, ErrorCode, Queue};
use napi_derive::napi;

pub use events::NativeEvents;
pub use queue::NativeQueue;
pub use worker::NativeWorker;

/// The one way a core error crosses into JS: the code in a parseable prefix.
pub(crate) fn throw(e: Error) -> napi::Error {
    napi::Error::from_reason(format!("[emq:{}] {}", e.code().as_str(), e.message()))
}

/// Connects to the datastore (one URL, or cluster seeds) and opens the queue `name`.
#[napi]
pub async fn connect(
    urls: Vec<String>,
    name: String,
    durable: Option<Vec<f64>>,
) -> napi::Result<NativeQueue> {
    if urls.is_empty() {
        return Err(throw(options::invalid_option(
            "at least one datastore URL is needed",
        )));
    }
    let mut opts = ConnectOptions::seeds(urls);
    if let Some(d) = durable {
        // [replicas, timeoutMs]; the core checks the bounds.
        let n =
            |i: usize, what: &str| options::whole(what, d.get(i).copied().unwrap_or(0.0), u64::MAX);
        opts = opts.durable_counts(
            n(0, "durable replicas").map_err(throw)?,
            n(1, "durable timeout").map_err(throw)?,
        );
    }
    let q = Queue::connect(opts, &name).await.map_err(throw)?;
    Ok(NativeQueue { q })
}

/// Every stable error code, for `index.js` and tests.
#[napi]
pub fn error_codes() -> Vec<String> {
    ErrorCode::ALL
        .iter()
        .map(|c| c.as_str().to_string())
        .collect()
}
