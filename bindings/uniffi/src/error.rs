//! Errors: [`EmqException`], whose `code` field is the core's own [`ErrorCode`] (exported by the
//! core's `uniffi` feature, so Kotlin's `ErrorCode` enum and Swift's are generated from the core's
//! table), and a job's failure with the failure's code, message and stack as fields of their own.
//! No code is ever read back out of a message's text.

use emq::ErrorCode;

/// An emq error. Kotlin sees a sealed exception class, Swift an `Error` enum, with two cases:
///
/// - `Failed(code, reason)`: a call was refused or failed. `code` is the stable core code
///   (Kotlin `ErrorCode.INVALID_OPTION`, Swift `.invalidOption`), `reason` says what happened and
///   what to do.
/// - `JobFailed(code, failureCode, reason, stack)`: the job `Queue.wait` waited on failed. `code`
///   is `HandlerFailed`; `failureCode` is the failure's own code (`handler_failed`, `cancelled`,
///   `timeout`, `invalid_payload`…), `reason` its message, `stack` its stack when the handler that
///   failed it gave one (a Python or Node worker), else null.
///
/// Kotlin and Swift read `e.code` on either (extensions: kotlin/…/CoreTypes.kt,
/// packaging/swift/Sources/EmqUniffi/Errors.swift). The text field is `reason`, not
/// `message`: a Kotlin exception field named `message` would clash with `Throwable.message`.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Error)]
pub enum EmqException {
    Failed {
        code: ErrorCode,
        reason: String,
    },
    JobFailed {
        code: ErrorCode,
        failure_code: String,
        reason: String,
        stack: Option<String>,
    },
}

impl EmqException {
    /// The core code of this error.
    pub fn error_code(&self) -> ErrorCode {
        match self {
            EmqException::Failed { code, .. } | EmqException::JobFailed { code, .. } => *code,
        }
    }

    /// The message, without the code.
    pub fn message(&self) -> &str {
        match self {
            EmqException::Failed { reason, .. } | EmqException::JobFailed { reason, .. } => reason,
        }
    }
}

impl From<emq::Error> for EmqException {
    fn from(e: emq::Error) -> EmqException {
        EmqException::Failed {
            code: e.code(),
            reason: e.message().to_string(),
        }
    }
}

impl std::fmt::Display for EmqException {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EmqException::Failed { code, reason } => write!(f, "{code}: {reason}"),
            EmqException::JobFailed {
                code,
                failure_code,
                reason,
                stack,
            } => {
                write!(f, "{code}: {failure_code}: {reason}")?;
                match stack {
                    Some(stack) if !stack.is_empty() => write!(f, "\n{stack}"),
                    _ => Ok(()),
                }
            }
        }
    }
}

impl std::error::Error for EmqException {}

/// Every stable error code's snake_case text (`invalid_queue_name`, …), in the core's order: the
/// codes other languages see (`ErrorCode.entries` lists the same codes as the enum).
#[uniffi::export]
pub fn error_codes() -> Vec<String> {
    ErrorCode::ALL
        .iter()
        .map(|c| c.as_str().to_string())
        .collect()
}

/// The snake_case text of `code` (`ErrorCode.INVALID_OPTION` → `invalid_option`), as Python, Node
/// and the scripts spell it.
#[uniffi::export]
pub fn error_code_name(code: ErrorCode) -> String {
    code.as_str().to_string()
}

/// A job's failure as the caller's error (`Queue.wait`): `JobFailed`, the failure's code, message
/// and stack as fields.
pub(crate) fn job_failed(f: emq::Failure) -> EmqException {
    EmqException::JobFailed {
        code: ErrorCode::HandlerFailed,
        failure_code: f.code,
        reason: f.message,
        stack: f.stack.filter(|s| !s.is_empty()),
    }
}

pub(crate) fn failed(code: ErrorCode, reason: impl Into<String>) -> EmqException {
    EmqException::Failed {
        code,
        reason: reason.into(),
    }
}

pub(crate) fn invalid_option(reason: impl Into<String>) -> EmqException {
    failed(ErrorCode::InvalidOption, reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_crosses_as_itself() {
        for code in ErrorCode::ALL {
            let e = EmqException::from(emq::Error::new(code, "m"));
            assert_eq!(e, failed(code, "m"));
            assert_eq!(e.error_code(), code);
            assert_eq!(e.to_string(), format!("{}: m", code.as_str()));
            assert_eq!(error_code_name(code), code.as_str());
        }
        assert_eq!(error_codes().len(), ErrorCode::ALL.len());
    }

    #[test]
    fn a_message_naming_another_code_keeps_its_own() {
        // The code is a field: text that starts with another code's name changes nothing.
        let e = EmqException::from(emq::Error::new(
            ErrorCode::InvalidJobId,
            "job_not_found: [emq:not_found] is not an id",
        ));
        assert_eq!(e.error_code(), ErrorCode::InvalidJobId);
        assert_eq!(e.message(), "job_not_found: [emq:not_found] is not an id");
    }

    #[test]
    fn a_job_failure_is_job_failed_with_code_message_and_stack_as_fields() {
        let e = job_failed(emq::Failure {
            code: "cancelled".into(),
            message: "timeout: the job was cancelled: bye".into(),
            stack: Some("at Foo.bar".into()),
        });
        assert_eq!(
            e,
            EmqException::JobFailed {
                code: ErrorCode::HandlerFailed,
                failure_code: "cancelled".into(),
                reason: "timeout: the job was cancelled: bye".into(),
                stack: Some("at Foo.bar".into()),
            }
        );
        assert_eq!(
            e.to_string(),
            "handler_failed: cancelled: timeout: the job was cancelled: bye\nat Foo.bar"
        );
        let no_stack = job_failed(emq::Failure {
            code: "handler_failed".into(),
            message: "boom".into(),
            stack: Some(String::new()),
        });
        assert!(matches!(
            no_stack,
            EmqException::JobFailed { stack: None, .. }
        ));
    }
}
