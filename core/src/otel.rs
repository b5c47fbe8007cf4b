//! OpenTelemetry spans for Rust applications (the core's `otel` feature, off by default): what
//! `emq.tracing` (Python), `tracing` (Node) and `dev.emq.Tracing` (Kotlin) do in their languages,
//! with the `opentelemetry` crate's global tracer provider.
//!
//! - [`Queue::add`](crate::Queue::add) and [`Queue::add_bulk`](crate::Queue::add_bulk) make a
//!   `send <queue>` span (kind PRODUCER; a bulk call's has `messaging.batch.message_count`), and
//!   each job keeps that span's W3C context ([`crate::TraceContext`]) in its options, unless the
//!   caller set one. With no provider set (the global one is a no-op) the span is not valid and
//!   nothing is stored.
//! - A worker runs each handler inside a `process <queue>` span (kind CONSUMER) with the attempt,
//!   the outcome and the error (an `exception` event, status ERROR), current while the handler
//!   runs (so the jobs it adds, [`JobContext::add_child`](crate::JobContext::add_child) too, join it). It *links* to the producer's span by default;
//!   [`set_relation`]`(`[`Relation::Child`]`)` makes it the producer's child instead.
//!
//! Attributes follow OpenTelemetry's messaging conventions, as in every other language:
//! `messaging.system` = `emq`, `messaging.destination.name`, `messaging.operation.name` / `.type`,
//! `messaging.message.id` (the job id), `emq.job.name`, `emq.job.attempt` (1 for the first run),
//! `emq.job.outcome`. The bindings do not turn this feature on: their packages make the spans in
//! their own language.

use crate::job_id::JobId;
use crate::keyspace::QueueName;
use crate::options::JobOptions;
use crate::trace::TraceContext;
use opentelemetry::trace::{
    Span, SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceFlags, TraceId, TraceState,
    Tracer,
};
use opentelemetry::{global, Context, KeyValue};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};

/// How a run's span relates to the span that added its job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Relation {
    /// A trace of its own per run, linked to the producer's span (the default).
    Link,
    /// A child of the producer's span, in its trace.
    Child,
}

static CHILD: AtomicBool = AtomicBool::new(false);

/// Sets how every worker's run spans relate to their producers' spans.
pub fn set_relation(relation: Relation) {
    CHILD.store(relation == Relation::Child, Ordering::Relaxed);
}

/// The relation in force ([`set_relation`]).
pub fn relation() -> Relation {
    if CHILD.load(Ordering::Relaxed) {
        Relation::Child
    } else {
        Relation::Link
    }
}

pub(crate) fn messaging(queue: &QueueName, operation: &'static str) -> Vec<KeyValue> {
    vec![
        KeyValue::new("messaging.system", "emq"),
        KeyValue::new("messaging.destination.name", queue.as_str().to_string()),
        KeyValue::new("messaging.operation.name", operation),
        KeyValue::new("messaging.operation.type", operation),
    ]
}

/// The W3C context of a span context, or None when it is not valid (no provider records).
fn carrier(sc: &SpanContext) -> Option<TraceContext> {
    if !sc.is_valid() {
        return None;
    }
    let traceparent = format!(
        "00-{}-{}-{:02x}",
        sc.trace_id(),
        sc.span_id(),
        sc.trace_flags().to_u8()
    );
    let state = sc.trace_state().header();
    TraceContext::new(&traceparent, (!state.is_empty()).then_some(state.as_str())).ok()
}

/// The W3C context of the caller's current span, or None when none records.
pub(crate) fn current() -> Option<TraceContext> {
    carrier(Context::current().span().span_context())
}

/// The span context a job's W3C context names (remote), or None when it has none or it is unusable.
pub(crate) fn remote(trace: &TraceContext) -> Option<SpanContext> {
    let trace_id = TraceId::from_hex(trace.trace_id()).ok()?;
    let span_id = SpanId::from_hex(trace.span_id()).ok()?;
    let flags = if trace.sampled() {
        TraceFlags::SAMPLED
    } else {
        TraceFlags::default()
    };
    let state = trace
        .tracestate
        .as_deref()
        .and_then(|s| TraceState::from_str(s).ok())
        .unwrap_or_default();
    let sc = SpanContext::new(trace_id, span_id, flags, true, state);
    sc.is_valid().then_some(sc)
}

/// A `send <queue>` span around one add or one bulk call.
pub(crate) struct Send {
    cx: Context,
    trace: Option<TraceContext>,
}

impl Send {
    /// Starts the span (child of the caller's current context); `count`: a bulk call's jobs.
    pub(crate) fn start(queue: &QueueName, count: Option<usize>) -> Send {
        let mut attributes = messaging(queue, "send");
        if let Some(n) = count {
            attributes.push(KeyValue::new("messaging.batch.message_count", n as i64));
        }
        let tracer = global::tracer("emq");
        let span = tracer
            .span_builder(format!("send {queue}"))
            .with_kind(SpanKind::Producer)
            .with_attributes(attributes)
            .start(&tracer);
        let trace = carrier(span.span_context());
        Send {
            cx: Context::current_with_span(span),
            trace,
        }
    }

    /// Gives a job this span's context, unless it has one.
    pub(crate) fn stamp(&self, options: &mut JobOptions) {
        if options.trace.is_none() {
            options.trace = self.trace.clone();
        }
    }

    /// Ends the span with the add's outcome (a single add's id as the message id).
    pub(crate) fn end(self, outcome: Result<Option<JobId>, &crate::error::Error>) {
        let span = self.cx.span();
        match outcome {
            Ok(Some(id)) => {
                span.set_attribute(KeyValue::new("messaging.message.id", id.to_string()))
            }
            Ok(None) => {}
            Err(e) => {
                span.set_attribute(KeyValue::new("error.type", e.code().as_str()));
                span.set_status(Status::error(e.to_string()));
            }
        }
        span.end();
    }
}
