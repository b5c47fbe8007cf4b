//! emq-node: the native addon of the npm package `emq`. A thin napi-rs layer over the core: it
//! adapts types (JS numbers in milliseconds to the core's options, batches and rich values as JSON
//! text), errors (every core error is thrown or rejected as a JS `Error` whose `code` is the core's
//! error code, carried as napi's error status ([`Code`]); `node/src/errors.ts` turns it into the
//! `EmqError` subclass of that code), and the handler (the core's [`emq::Handler`] handing jobs
//! to JS in batches, see [`worker`]). No queue logic lives here.
//!
//! - [`options`]: job, worker, bulk, flow and scheduler options and their conversion;
//! - [`queue`]: `NativeQueue`, one queue's operations;
//! - [`worker`]: `NativeWorker` and the batched hand-off of jobs to JS;
//! - [`worker_events`]: the worker's events (the core's hook) on their way to JS;
//! - [`events`]: `NativeEvents`, a subscriber on a queue's events;
//! - [`direct`]: the reply side of a direct add (a one-job add on the event loop's own socket).

mod add_line;
mod batch;
mod children;
mod dead_letters;
mod direct;
mod events;
mod job_defaults;
mod limits;
mod options;
mod queue;
mod worker;
mod worker_events;

use emq::{ConnectOptions, Error, ErrorCode, Pem, Queue, TlsConfig};
use napi::bindgen_prelude::{Buffer, Either, ToNapiValue};
use napi::{sys, Unknown};
use napi_derive::napi;

pub use direct::{direct_reply_len, direct_settle};
pub use events::NativeEvents;
pub use queue::NativeQueue;
pub use worker::NativeWorker;

/// A core error code as napi's error status: napi sets it as the JS error's `code` property, so
/// the code crosses as a value of its own and the message is the core's message alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Code(pub ErrorCode);

impl AsRef<str> for Code {
    fn as_ref(&self) -> &str {
        self.0.as_str()
    }
}

/// An error of this addon: a JS `Error` with the core's `code`.
pub(crate) type NodeError = napi::Error<Code>;

/// What the addon's synchronous methods return: a typed error is thrown with its `code`.
pub(crate) type Result<T> = std::result::Result<T, NodeError>;

/// The one way a core error crosses into JS: its code as the error's status, its message as is.
pub(crate) fn throw(e: Error) -> NodeError {
    napi::Error::new(Code(e.code()), e.message())
}

/// A failure of napi itself (a threadsafe function that could not be made): `internal`.
pub(crate) fn napi_failure(e: napi::Error) -> NodeError {
    napi::Error::new(Code(ErrorCode::Internal), e.reason)
}

/// What the addon's `async` methods return. napi settles an async method's promise with a plain
/// `napi::Error` (its status one of napi's own), so a typed error travels inside the resolved
/// value instead: converting it on the JS thread builds the JS error with the core's `code`
/// (exactly as a thrown [`NodeError`]), and napi rejects the promise with that very object.
pub struct Settled<T>(pub Result<T>);

impl<T> Settled<T> {
    /// Runs `fut` (the method's body) and holds its outcome.
    pub(crate) async fn of(fut: impl std::future::Future<Output = Result<T>>) -> Settled<T> {
        Settled(fut.await)
    }
}

impl<T: ToNapiValue> ToNapiValue for Settled<T> {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        match val.0 {
            Ok(v) => unsafe { T::to_napi_value(env, v) },
            Err(e) => {
                // The JS error napi builds for a thrown NodeError, held by a reference: napi
                // rejects the promise with the value it references.
                let js = unsafe { NodeError::to_napi_value(env, e)? };
                Err(napi::Error::from(unsafe {
                    Unknown::from_raw_unchecked(env, js)
                }))
            }
        }
    }
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
    partitions: Option<f64>,
) -> Settled<NativeQueue> {
    Settled::of(connect_queue(urls, name, durable, tls, partitions)).await
}

async fn connect_queue(
    urls: Vec<String>,
    name: String,
    durable: Option<Vec<f64>>,
    tls: Option<ConnectTls>,
    partitions: Option<f64>,
) -> Result<NativeQueue> {
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
    // A whole number here; its bounds are the core's (`QueueOptions::with_partitions`).
    let partitions = match partitions {
        None => None,
        Some(n) if n < 0.0 && n.fract() == 0.0 && n.is_finite() => Some(n as i128),
        Some(n) => Some(i128::from(
            options::whole("partitions", n, u64::MAX).map_err(throw)?,
        )),
    };
    let queue = emq::QueueOptions::with_partitions(partitions).map_err(throw)?;
    let q = Queue::connect_with(opts, &name, queue)
        .await
        .map_err(throw)?;
    Ok(NativeQueue::new(q))
}

/// Every stable error code, for tests.
#[napi]
pub fn error_codes() -> Vec<String> {
    ErrorCode::ALL
        .iter()
        .map(|c| c.as_str().to_string())
        .collect()
}

/// Starts one worker on several queues (in this order; `opts.strict` or `opts.weights` orders
/// them), as `NativeQueue.worker` does for one.
#[napi(async_runtime)]
pub fn start_worker_many(
    queues: Vec<napi::bindgen_prelude::ClassInstance<'_, queue::NativeQueue>>,
    dispatcher: napi::bindgen_prelude::Function<'_, String, ()>,
    on_events: napi::bindgen_prelude::Function<'_, String, ()>,
    opts: Option<options::WorkerOpts>,
) -> Result<worker::NativeWorker> {
    let queues = queues.iter().map(|q| q.q.clone()).collect();
    crate::worker::start(queues, dispatcher, on_events, opts)
}
