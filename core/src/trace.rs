//! Trace context: the W3C Trace Context carrier a job keeps in its own record (its options, never
//! its data), so that one trace runs from the code that added the job to the worker that runs it,
//! in any language.
//!
//! The core owns the carrier and its checks: [`TraceContext`] (a `traceparent` and an optional
//! `tracestate`, as <https://www.w3.org/TR/trace-context/> spells them) is a field of
//! [`crate::JobOptions`], written with the job's other options by the add itself (no extra round
//! trip; nothing at all when absent), kept through retries, delays, stalls and releases (the options
//! outlive every run), given by a flow's parent to the children that bring none, and read back with
//! [`crate::Job::trace`]. Each binding only reads its language's current context into the add's
//! options and opens its language's consumer span from the job's context around the handler:
//! Python (`opentelemetry-api`), Node (`@opentelemetry/api`), Kotlin (`io.opentelemetry:
//! opentelemetry-api`), all optional.

use crate::error::{Error, ErrorCode, Result};
use serde::{Deserialize, Serialize};

/// Longest `tracestate` kept, in bytes (the W3C list of at most 32 members fits in 512).
pub const MAX_TRACESTATE: usize = 512;

/// A W3C trace context: the span that added a job (its `traceparent`) and the vendors' state that
/// travels with it (`tracestate`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceContext {
    /// `00-<32 hex trace id>-<16 hex parent span id>-<2 hex flags>`, lower-case, neither id all
    /// zeros.
    pub traceparent: String,
    /// The vendors' `key=value` list, up to [`MAX_TRACESTATE`] bytes of printable ASCII.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracestate: Option<String>,
}

impl TraceContext {
    /// A checked context: `invalid_option` for a `traceparent` that is not a W3C version-00 one, or
    /// a `tracestate` that is too long or not printable ASCII.
    pub fn new(traceparent: &str, tracestate: Option<&str>) -> Result<TraceContext> {
        let t = TraceContext {
            traceparent: traceparent.to_string(),
            tracestate: tracestate.map(str::to_string),
        };
        t.validate()?;
        Ok(t)
    }

    /// Checks both fields (see [`TraceContext::new`]).
    pub fn validate(&self) -> Result<()> {
        if !is_traceparent(&self.traceparent) {
            return Err(Error::new(
                ErrorCode::InvalidOption,
                format!(
                    "traceparent must be a W3C trace context, \
                     00-<32 hex trace id>-<16 hex span id>-<2 hex flags>, got {:?}",
                    self.traceparent
                ),
            ));
        }
        if let Some(s) = &self.tracestate {
            if s.len() > MAX_TRACESTATE || !s.bytes().all(|b| (0x20..0x7f).contains(&b)) {
                return Err(Error::new(
                    ErrorCode::InvalidOption,
                    format!("tracestate must be at most {MAX_TRACESTATE} bytes of printable ASCII"),
                ));
            }
        }
        Ok(())
    }

    /// The trace id (32 hex digits).
    pub fn trace_id(&self) -> &str {
        self.traceparent.get(3..35).unwrap_or("")
    }

    /// The id of the span that added the job (16 hex digits).
    pub fn span_id(&self) -> &str {
        self.traceparent.get(36..52).unwrap_or("")
    }

    /// Whether the adding span was sampled (flag bit 0).
    pub fn sampled(&self) -> bool {
        self.traceparent
            .get(53..55)
            .and_then(|f| u8::from_str_radix(f, 16).ok())
            .is_some_and(|f| f & 1 == 1)
    }
}

fn is_traceparent(s: &str) -> bool {
    let b = s.as_bytes();
    let hex = |r: std::ops::Range<usize>| {
        b[r].iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
    };
    let zeros = |r: std::ops::Range<usize>| b[r].iter().all(|&c| c == b'0');
    b.len() == 55
        && &b[..3] == b"00-"
        && b[35] == b'-'
        && b[52] == b'-'
        && hex(3..35)
        && hex(36..52)
        && hex(53..55)
        && !zeros(3..35)
        && !zeros(36..52)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_w3c_traceparent_is_kept_and_read() {
        let t = TraceContext::new(GOOD, Some("congo=t61rcWkgMzE")).unwrap();
        assert_eq!(t.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(t.span_id(), "00f067aa0ba902b7");
        assert!(t.sampled());
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(serde_json::from_str::<TraceContext>(&json).unwrap(), t);
    }

    #[test]
    fn malformed_contexts_are_refused() {
        for bad in [
            "",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
            "00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
        ] {
            let e = TraceContext::new(bad, None).unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidOption, "{bad:?}");
        }
        let long = "a=".to_string() + &"b".repeat(MAX_TRACESTATE);
        for bad in [long.as_str(), "a=b\n", "é=1"] {
            let e = TraceContext::new(GOOD, Some(bad)).unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidOption, "{bad:?}");
        }
    }
}
