//! A run's `process <queue>` span (the core's `otel` feature, `core/src/otel.rs`): around one run
//! of the handler, linked to (or a child of) the span that added the job, with the run's outcome.

use super::*;
use crate::keyspace::QueueName;
use crate::otel::{messaging, relation, remote, Relation};
use futures::future::BoxFuture;
use futures::FutureExt as _;
use opentelemetry::trace::{FutureExt as _, Link, SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{global, Context, KeyValue};

/// Runs `work` (one run of `job`) inside a `process <queue>` span.
pub(crate) fn process(
    queue: &QueueName,
    job: &Job,
    work: BoxFuture<'static, HandlerResult>,
) -> BoxFuture<'static, HandlerResult> {
    let tracer = global::tracer("emq");
    let mut attributes = messaging(queue, "process");
    attributes.push(KeyValue::new("messaging.message.id", job.id.to_string()));
    attributes.push(KeyValue::new("emq.job.name", job.name.clone()));
    attributes.push(KeyValue::new(
        "emq.job.attempt",
        i64::from(job.attempts_made) + 1,
    ));
    let mut builder = tracer
        .span_builder(format!("process {queue}"))
        .with_kind(SpanKind::Consumer)
        .with_attributes(attributes);
    let producer = job.trace().as_ref().and_then(remote);
    let parent = match (producer, relation()) {
        (Some(sc), Relation::Child) => Context::new().with_remote_span_context(sc),
        (Some(sc), Relation::Link) => {
            builder = builder.with_links(vec![Link::new(sc, Vec::new(), 0)]);
            Context::new()
        }
        (None, _) => Context::new(),
    };
    let span = builder.start_with_context(&tracer, &parent);
    let cx = Context::new().with_span(span);
    let during = cx.clone();
    async move {
        let out = work.with_context(during).await;
        let span = cx.span();
        match &out {
            Ok(_) => span.set_attribute(KeyValue::new("emq.job.outcome", "completed")),
            Err(e) => {
                span.set_attribute(KeyValue::new("emq.job.outcome", "failed"));
                span.add_event(
                    "exception",
                    vec![
                        KeyValue::new("exception.type", e.code.clone()),
                        KeyValue::new("exception.message", e.message.clone()),
                    ],
                );
                span.set_status(Status::error(e.message.clone()));
            }
        }
        span.end();
        out
    }
    .boxed()
}
