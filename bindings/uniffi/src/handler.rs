//! The handler: a foreign-implemented async [`JobHandler`] wrapped into the core's [`emq::Handler`].

use crate::job::JobRecord;
use emq::{ErrorCode, HandlerError, JobContext};
use futures::future::BoxFuture;
use std::sync::Arc;

/// What a handler throws to fail a job. `Failed(reason, unrecoverable)`: the job fails with
/// `reason` as its failure message (code `handler_failed`), and is retried while attempts remain
/// unless `unrecoverable`. Any other exception a handler throws also fails the job (retryably),
/// with the exception's text as the message; it never stops the worker.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Error)]
pub enum HandlerFailure {
    Failed { reason: String, unrecoverable: bool },
}

impl std::fmt::Display for HandlerFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HandlerFailure::Failed { reason, .. } => f.write_str(reason),
        }
    }
}

impl std::error::Error for HandlerFailure {}

/// An exception the handler threw that is not a `HandlerFailure` (uniffi's unexpected-error path):
/// it fails the job like a retryable failure.
impl From<uniffi::UnexpectedUniFFICallbackError> for HandlerFailure {
    fn from(e: uniffi::UnexpectedUniFFICallbackError) -> HandlerFailure {
        HandlerFailure::Failed {
            reason: e.reason,
            unrecoverable: false,
        }
    }
}

/// Processes jobs; implemented in Kotlin or Swift. Returns the job's result as JSON text (an
/// empty string stores `null`), or throws `HandlerFailure` to fail it.
#[uniffi::export(with_foreign)]
#[async_trait::async_trait]
pub trait JobHandler: Send + Sync {
    async fn handle(&self, job: JobRecord) -> Result<String, HandlerFailure>;
}

/// The core handler around a foreign one.
pub(crate) struct ForeignHandler(pub(crate) Arc<dyn JobHandler>);

impl emq::Handler for ForeignHandler {
    fn handle(&self, ctx: JobContext) -> BoxFuture<'static, emq::HandlerResult> {
        let foreign = self.0.clone();
        let job = JobRecord::from(ctx.job());
        Box::pin(async move {
            match foreign.handle(job).await {
                Ok(text) if text.trim().is_empty() => Ok(serde_json::Value::Null),
                Ok(text) => serde_json::from_str(&text).map_err(|e| {
                    HandlerError::new(format!("the handler's result is not valid JSON: {e}"))
                        .with_code(ErrorCode::InvalidPayload.as_str())
                }),
                Err(HandlerFailure::Failed {
                    reason,
                    unrecoverable,
                }) => Err(if unrecoverable {
                    HandlerError::unrecoverable(reason)
                } else {
                    HandlerError::new(reason)
                }),
            }
        })
    }
}
