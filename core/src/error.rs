//! The one error type of emq, with a stable code per kind of failure.
//!
//! Every binding maps [`ErrorCode`] to its own error classes (a Python exception subclass, a Node
//! `Error` with `.code`, a Kotlin sealed exception). The code strings are part of the public wire
//! contract: scripts raise them as the first word of an error reply, and they never change meaning.

use std::fmt;

/// Stable error codes. `as_str` gives the snake_case form every language sees. With the `uniffi`
/// feature this enum itself crosses to Kotlin and Swift (bindings/uniffi's `EmqException` carries
/// it as its `code` field), so their code enums are generated from this one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Enum))]
pub enum ErrorCode {
    /// A queue name broke a keyspace rule (empty, `:` `{` `}`, reserved `emq`, length, whitespace…).
    InvalidQueueName,
    /// A string that the core did not mint was offered as a job id.
    InvalidJobId,
    /// A job or worker option is out of range (negative delay, zero attempts…).
    InvalidOption,
    /// A payload or result is not valid JSON.
    InvalidPayload,
    /// The datastore cannot be reached, the connection dropped, or the server is not ready yet
    /// (LOADING its data after a restart, cluster down, a failover under way): retry later.
    ServerUnavailable,
    /// The datastore refused the credentials (wrong user or password, or none given: NOAUTH).
    AuthFailed,
    /// The datastore's ACL refuses this user the command or key (NOPERM), e.g. a user limited to
    /// another tenant's queues.
    PermissionDenied,
    /// The keyspace was written by an incompatible emq wire version.
    IncompatibleVersion,
    /// A script call would span more than one cluster slot.
    CrossSlot,
    /// A guarded script touched a key that is not in its `KEYS`.
    UndeclaredKey,
    /// A script failed for another reason (a bug, or the datastore refused it).
    ScriptError,
    /// A job's lease token no longer matches: another worker owns the job, or it was recovered.
    LeaseLost,
    /// This process lost its node-id lease and cannot mint job ids until it gets a new one.
    NodeLeaseLost,
    /// No job with that id exists in the queue.
    JobNotFound,
    /// The job is not in a state that allows the operation.
    InvalidState,
    /// A call did not finish within its deadline.
    Timeout,
    /// A durable add (`ConnectOptions::durable`) was written on the master, but fewer replicas
    /// than asked acknowledged it in time: it can be lost in a failover. Adding again with the
    /// same id is idempotent (and waits again).
    NotReplicated,
    /// The queue or worker was closed.
    Closed,
    /// A handler failed (used for failure records, not raised to callers).
    HandlerFailed,
    /// Something emq did not expect; a bug report is welcome.
    Internal,
    /// An add would put more jobs in a group's backlog than its cap allows
    /// (`Queue::set_group_max_waiting`): nothing was written; add again once the group has drained.
    GroupFull,
}

impl ErrorCode {
    /// Every code, for bindings that generate their exception classes.
    pub const ALL: [ErrorCode; 21] = [
        ErrorCode::InvalidQueueName,
        ErrorCode::InvalidJobId,
        ErrorCode::InvalidOption,
        ErrorCode::InvalidPayload,
        ErrorCode::ServerUnavailable,
        ErrorCode::AuthFailed,
        ErrorCode::PermissionDenied,
        ErrorCode::IncompatibleVersion,
        ErrorCode::CrossSlot,
        ErrorCode::UndeclaredKey,
        ErrorCode::ScriptError,
        ErrorCode::LeaseLost,
        ErrorCode::NodeLeaseLost,
        ErrorCode::JobNotFound,
        ErrorCode::InvalidState,
        ErrorCode::Timeout,
        ErrorCode::NotReplicated,
        ErrorCode::Closed,
        ErrorCode::HandlerFailed,
        ErrorCode::Internal,
        ErrorCode::GroupFull,
    ];

    /// The stable snake_case code.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidQueueName => "invalid_queue_name",
            ErrorCode::InvalidJobId => "invalid_job_id",
            ErrorCode::InvalidOption => "invalid_option",
            ErrorCode::InvalidPayload => "invalid_payload",
            ErrorCode::ServerUnavailable => "server_unavailable",
            ErrorCode::AuthFailed => "auth_failed",
            ErrorCode::PermissionDenied => "permission_denied",
            ErrorCode::IncompatibleVersion => "incompatible_version",
            ErrorCode::CrossSlot => "cross_slot",
            ErrorCode::UndeclaredKey => "undeclared_key",
            ErrorCode::ScriptError => "script_error",
            ErrorCode::LeaseLost => "lease_lost",
            ErrorCode::NodeLeaseLost => "node_lease_lost",
            ErrorCode::JobNotFound => "job_not_found",
            ErrorCode::InvalidState => "invalid_state",
            ErrorCode::Timeout => "timeout",
            ErrorCode::NotReplicated => "not_replicated",
            ErrorCode::Closed => "closed",
            ErrorCode::HandlerFailed => "handler_failed",
            ErrorCode::Internal => "internal",
            ErrorCode::GroupFull => "group_full",
        }
    }

    /// Parses a code string (as raised by a script or carried across a binding).
    pub fn parse(s: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.iter().copied().find(|c| c.as_str() == s)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An emq error: a stable code and a message that says what happened and what to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    code: ErrorCode,
    message: String,
}

/// The result type of the core.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A new error with `code` and `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Error {
        Error {
            code,
            message: message.into(),
        }
    }

    /// The stable code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The human message (without the code).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for Error {}

impl From<redis::RedisError> for Error {
    fn from(e: redis::RedisError) -> Error {
        // Scripts raise `<code> <message>`; the guard raises `undeclared_key …`.
        if let Some(code) = e.code().and_then(ErrorCode::parse) {
            let detail = e.detail().unwrap_or_default();
            return Error::new(code, detail.to_string());
        }
        // A pipeline of script calls fails with its calls' errors: the first that carries a code
        // of ours is the error (a refused add in a pipelined batch is a group_full, not a
        // script_error).
        if let Some(errors) = e.clone().into_server_errors() {
            for (_, se) in errors.iter() {
                if let Some(code) = ErrorCode::parse(se.code()) {
                    return Error::new(code, se.details().unwrap_or_default().to_string());
                }
            }
        }
        let text = e.to_string();
        if let Some(pos) = text.find("undeclared_key") {
            return Error::new(ErrorCode::UndeclaredKey, text[pos..].to_string());
        }
        use redis::{ErrorKind, ServerErrorKind};
        let code = e.code().unwrap_or_default();
        if e.kind() == ErrorKind::AuthenticationFailed || matches!(code, "NOAUTH" | "WRONGPASS") {
            return Error::new(
                ErrorCode::AuthFailed,
                format!("the datastore refused the credentials ({text}); put the right user and password in the URL (redis://user:password@host:port)"),
            );
        }
        if e.kind() == ErrorKind::Server(ServerErrorKind::NoPerm)
            || code == "NOPERM"
            || text.contains("NOPERM")
        {
            return Error::new(
                ErrorCode::PermissionDenied,
                format!("the datastore's ACL refuses this user ({text}); a queue needs its keys emq:{{<queue>}}:* and {{emq}}:*, and the commands its scripts run"),
            );
        }
        if matches!(
            e.kind(),
            ErrorKind::Server(
                ServerErrorKind::BusyLoading
                    | ServerErrorKind::ClusterDown
                    | ServerErrorKind::MasterDown
                    | ServerErrorKind::TryAgain
            )
        ) || matches!(code, "LOADING" | "CLUSTERDOWN" | "MASTERDOWN" | "TRYAGAIN")
        {
            return Error::new(
                ErrorCode::ServerUnavailable,
                format!("the datastore is not ready ({text}); retry shortly"),
            );
        }
        if text.contains("refused to switch database") {
            return Error::new(
                ErrorCode::InvalidOption,
                format!("the URL's database number is not one this server has ({text}); use /0 up to its `databases` setting minus one (a cluster has only /0)"),
            );
        }
        if e.is_io_error()
            || e.is_connection_dropped()
            || e.is_connection_refusal()
            || e.is_timeout()
            || e.kind() == redis::ErrorKind::ClusterConnectionNotFound
        {
            return Error::new(
                ErrorCode::ServerUnavailable,
                format!("the datastore cannot be reached ({text}); check the URL and that the server is running"),
            );
        }
        if e.code() == Some("CROSSSLOT") {
            return Error::new(ErrorCode::CrossSlot, text);
        }
        Error::new(ErrorCode::ScriptError, text)
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Error {
        Error::new(ErrorCode::InvalidPayload, format!("not valid JSON: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for c in ErrorCode::ALL {
            assert_eq!(ErrorCode::parse(c.as_str()), Some(c));
            assert!(seen.insert(c.as_str()), "duplicate code {c}");
        }
        assert_eq!(ErrorCode::parse("nope"), None);
    }
}
