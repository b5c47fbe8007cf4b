//! emq-node: the native addon of the npm package `emq`. A thin napi-rs layer over the core: it
//! adapts types (JS numbers in milliseconds to the core's options, batches and rich values as JSON
//! text), errors (every core error is thrown as `[emq:<code>] <message>`, which `node/index.js`
//! turns into an `EmqError` with `.code`), and the handler (the core's [`emq::Handler`] handing jobs
//! to JS in batches, see [`worker`]). No queue logic lives here.
//!
//! - [`options`]: job, worker, bulk, flow and scheduler options and their conversion;
//! - [`queue`]: `NativeQueue`, one queue's operations;
//! - [`worker`]: `NativeWorker` and the batched hand-off of jobs to JS;
//! - [`worker_events`]: the worker's events (the core's hook) on their way to JS;
//! - [`events`]: `NativeEvents`, a subscriber on a queue's events.

mod events;
mod options;
mod queue;
mod worker;
mod worker_events;

use emq::{ConnectOptions, Error, ErrorCode, Pem, Queue, TlsConfig};
use napi::bindgen_prelude::{Buffer, Either};
use napi_derive::napi;

pub use events::NativeEvents;
pub use queue::NativeQueue;
pub use worker::NativeWorker;

/// The one way a core error crosses into JS: the code in a parseable prefix.
pub(crate) fn throw(e: Error) -> napi::Error {
    napi::Error::from_reason(format!("[emq:{}] {}", e.code().as_str(), e.message()))
}

/// TLS files for `rediss://`: each a path or PEM text (a string), or the PEM as a `Buffer`.
#[napi(object)]
pub struct ConnectTls {
    /// A private CA to trust (else the system's roots).
    pub ca_cert: Option<Either<String, Buffer>>,
    /// A client certificate for mutual TLS (with `client_key`).
    pub client_cert: Option<Either<String, Buffer>>,
    /// The client certificate's private key.
    pub client_key: Option<Either<String, Buffer>>,
}

fn pem(v: Option<Either<String, Buffer>>) -> Option<Pem> {
    v.map(|v| match v {
        Either::A(s) => Pem::guess(&s),
        Either::B(b) => Pem::Text(b.to_vec()),
    })
}

/// Connects to the datastore (one URL, or cluster seeds) and opens the queue `name`; `tls` as
/// the core's `TlsConfig` (read and checked there).
#[napi]
pub async fn connect(
    urls: Vec<String>,
    name: String,
    durable: Option<Vec<f64>>,
    tls: Option<ConnectTls>,
) -> napi::Result<NativeQueue> {
    if urls.is_empty() {
        return Err(throw(options::invalid_option(
            "at least one datastore URL is needed",
        )));
    }
    let tls = tls.map_or_else(TlsConfig::default, |t| TlsConfig {
        ca_cert: pem(t.ca_cert),
        client_cert: pem(t.client_cert),
        client_key: pem(t.client_key),
    });
    let mut opts = ConnectOptions::seeds(urls).tls(tls).map_err(throw)?;
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
