//! Errors: one [`EmqException`] variant per core [`ErrorCode`], and the code helpers.

use emq::ErrorCode;

/// An emq error. One variant per stable core error code: the variant name is the code in
/// UpperCamelCase (`InvalidQueueName` is `invalid_queue_name`), and the message starts with the
/// code (`invalid_queue_name: …`). Kotlin sees a sealed exception class, Swift an `Error` enum.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Error)]
#[uniffi(flat_error)]
pub enum EmqException {
    InvalidQueueName { message: String },
    InvalidJobId { message: String },
    InvalidOption { message: String },
    InvalidPayload { message: String },
    ServerUnavailable { message: String },
    AuthFailed { message: String },
    PermissionDenied { message: String },
    IncompatibleVersion { message: String },
    CrossSlot { message: String },
    UndeclaredKey { message: String },
    ScriptError { message: String },
    LeaseLost { message: String },
    NodeLeaseLost { message: String },
    JobNotFound { message: String },
    InvalidState { message: String },
    Timeout { message: String },
    NotReplicated { message: String },
    Closed { message: String },
    HandlerFailed { message: String },
    Internal { message: String },
}

impl EmqException {
    /// The core code of this error.
    pub fn error_code(&self) -> ErrorCode {
        use EmqException::*;
        match self {
            InvalidQueueName { .. } => ErrorCode::InvalidQueueName,
            InvalidJobId { .. } => ErrorCode::InvalidJobId,
            InvalidOption { .. } => ErrorCode::InvalidOption,
            InvalidPayload { .. } => ErrorCode::InvalidPayload,
            ServerUnavailable { .. } => ErrorCode::ServerUnavailable,
            AuthFailed { .. } => ErrorCode::AuthFailed,
            PermissionDenied { .. } => ErrorCode::PermissionDenied,
            IncompatibleVersion { .. } => ErrorCode::IncompatibleVersion,
            CrossSlot { .. } => ErrorCode::CrossSlot,
            UndeclaredKey { .. } => ErrorCode::UndeclaredKey,
            ScriptError { .. } => ErrorCode::ScriptError,
            LeaseLost { .. } => ErrorCode::LeaseLost,
            NodeLeaseLost { .. } => ErrorCode::NodeLeaseLost,
            JobNotFound { .. } => ErrorCode::JobNotFound,
            InvalidState { .. } => ErrorCode::InvalidState,
            Timeout { .. } => ErrorCode::Timeout,
            NotReplicated { .. } => ErrorCode::NotReplicated,
            Closed { .. } => ErrorCode::Closed,
            HandlerFailed { .. } => ErrorCode::HandlerFailed,
            Internal { .. } => ErrorCode::Internal,
        }
    }

    /// The message, without the code.
    pub fn message(&self) -> &str {
        use EmqException::*;
        match self {
            InvalidQueueName { message }
            | InvalidJobId { message }
            | InvalidOption { message }
            | InvalidPayload { message }
            | ServerUnavailable { message }
            | AuthFailed { message }
            | PermissionDenied { message }
            | IncompatibleVersion { message }
            | CrossSlot { message }
            | UndeclaredKey { message }
            | ScriptError { message }
            | LeaseLost { message }
            | NodeLeaseLost { message }
            | JobNotFound { message }
            | InvalidState { message }
            | Timeout { message }
            | NotReplicated { message }
            | Closed { message }
            | HandlerFailed { message }
            | Internal { message } => message,
        }
    }
}

impl From<emq::Error> for EmqException {
    fn from(e: emq::Error) -> EmqException {
        use EmqException::*;
        let message = e.message().to_string();
        match e.code() {
            ErrorCode::InvalidQueueName => InvalidQueueName { message },
            ErrorCode::InvalidJobId => InvalidJobId { message },
            ErrorCode::InvalidOption => InvalidOption { message },
            ErrorCode::InvalidPayload => InvalidPayload { message },
            ErrorCode::ServerUnavailable => ServerUnavailable { message },
            ErrorCode::AuthFailed => AuthFailed { message },
            ErrorCode::PermissionDenied => PermissionDenied { message },
            ErrorCode::IncompatibleVersion => IncompatibleVersion { message },
            ErrorCode::CrossSlot => CrossSlot { message },
            ErrorCode::UndeclaredKey => UndeclaredKey { message },
            ErrorCode::ScriptError => ScriptError { message },
            ErrorCode::LeaseLost => LeaseLost { message },
            ErrorCode::NodeLeaseLost => NodeLeaseLost { message },
            ErrorCode::JobNotFound => JobNotFound { message },
            ErrorCode::InvalidState => InvalidState { message },
            ErrorCode::Timeout => Timeout { message },
            ErrorCode::NotReplicated => NotReplicated { message },
            ErrorCode::Closed => Closed { message },
            ErrorCode::HandlerFailed => HandlerFailed { message },
            ErrorCode::Internal => Internal { message },
        }
    }
}

impl std::fmt::Display for EmqException {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.error_code().as_str(), self.message())
    }
}

impl std::error::Error for EmqException {}

/// The stable code (`invalid_queue_name`, …) of an error message produced by this binding: the
/// text before the first `:`. Foreign code that prefers a string to the exception's class uses
/// this (Kotlin: `errorCode(e.message!!)`).
#[uniffi::export]
pub fn error_code(message: String) -> String {
    let head = message.split(':').next().unwrap_or("").trim();
    ErrorCode::parse(head)
        .unwrap_or(ErrorCode::Internal)
        .as_str()
        .to_string()
}

/// Every stable error code, in the core's order.
#[uniffi::export]
pub fn error_codes() -> Vec<String> {
    ErrorCode::ALL
        .iter()
        .map(|c| c.as_str().to_string())
        .collect()
}

/// A job's failure as the caller's error (`Queue.wait`): `HandlerFailed` whose message is the
/// failure's code and message, then its stack (when it has one) on the next lines.
pub(crate) fn job_failed(f: emq::Failure) -> EmqException {
    let message = match &f.stack {
        Some(stack) if !stack.is_empty() => format!("{}: {}\n{stack}", f.code, f.message),
        _ => format!("{}: {}", f.code, f.message),
    };
    EmqException::HandlerFailed { message }
}

pub(crate) fn invalid_option(message: impl Into<String>) -> EmqException {
    EmqException::InvalidOption {
        message: message.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_maps_to_one_variant_and_back() {
        for code in ErrorCode::ALL {
            let e = EmqException::from(emq::Error::new(code, "m"));
            assert_eq!(e.error_code(), code);
            assert_eq!(e.to_string(), format!("{}: m", code.as_str()));
            assert_eq!(error_code(e.to_string()), code.as_str());
        }
        assert_eq!(error_codes().len(), ErrorCode::ALL.len());
    }

    #[test]
    fn a_job_failure_is_handler_failed_with_code_message_and_stack() {
        let e = job_failed(emq::Failure {
            code: "cancelled".into(),
            message: "the job was cancelled: bye".into(),
            stack: Some("at Foo.bar".into()),
        });
        assert_eq!(e.error_code(), ErrorCode::HandlerFailed);
        assert_eq!(
            e.to_string(),
            "handler_failed: cancelled: the job was cancelled: bye\nat Foo.bar"
        );
    }
}
