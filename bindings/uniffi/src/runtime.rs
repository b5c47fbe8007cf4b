//! The binding's tokio runtime. Every async export runs its core future here ([`on_runtime`]), so
//! calls work from any foreign thread (JVM threads, Kotlin coroutines, Swift tasks); the future
//! that uniffi polls only awaits the spawned task. Inside a JVM, the runtime's threads are attached
//! to it once, as daemons ([`crate::jvm`]), so the JNA callbacks they make skip the per-call attach.

use crate::error::EmqException;
use crate::jvm;
use std::sync::OnceLock;

/// The binding's tokio runtime, started on first use and kept for the life of the process: a fixed
/// set of worker threads (one per core) plus tokio's blocking threads, each attached to the JVM
/// while it lives when the library runs in one ([`jvm`]).
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_name("emq-uniffi")
            .on_thread_start(jvm::attach_current_thread)
            .on_thread_stop(jvm::detach_current_thread)
            .build()
            .expect("cannot start the emq tokio runtime")
    })
}

/// Runs `fut` on the binding's runtime and awaits it from whatever executor polls the caller.
pub(crate) async fn on_runtime<T, F>(fut: F) -> Result<T, EmqException>
where
    T: Send + 'static,
    F: std::future::Future<Output = emq::Result<T>> + Send + 'static,
{
    match runtime().spawn(fut).await {
        Ok(r) => r.map_err(EmqException::from),
        Err(e) => Err(crate::error::failed(
            emq::ErrorCode::Internal,
            format!("the emq task did not finish: {e}"),
        )),
    }
}
