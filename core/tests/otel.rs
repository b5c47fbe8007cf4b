//! The `otel` feature's spans (`core/src/otel.rs`) on a real server, read back from the SDK's
//! in-memory exporter: a `send` span per add (the caller's span its parent) and one per bulk call,
//! whose W3C context each job keeps; a `process` span per run, linked to the send span (or its
//! child under `Relation::Child`), with the attempt, the outcome and the error, current while the
//! handler runs, so a child the run adds carries it. Run by scripts/test-all:
//! `cargo test -p emq --features otel --test otel` (one test: the tracer provider is global).

mod common;

use common::{queue_on, wait_until};
use emq::otel::{set_relation, Relation};
use emq::{HandlerError, JobContext, JobOptions, JobState, NewJob, Worker, WorkerOptions};
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{global, Context, KeyValue, Value as OtelValue};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn attr<'a>(span: &'a SpanData, key: &str) -> Option<&'a OtelValue> {
    span.attributes
        .iter()
        .find(|kv: &&KeyValue| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

fn named(exporter: &InMemorySpanExporter, name: &str) -> Vec<SpanData> {
    exporter
        .get_finished_spans()
        .unwrap()
        .into_iter()
        .filter(|s| s.name == name)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adds_and_runs_make_linked_spans_and_a_runs_children_join_it() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    global::set_tracer_provider(provider.clone());

    let store = common::standalone().await;
    let q = queue_on(&store, "otel").await;
    let kids = q.queue(&format!("{}-kids", q.name())).unwrap();

    // Under a caller's span: one add, then one bulk call of two.
    let tracer = global::tracer("tests");
    let request = tracer.start("request");
    let request_cx = Context::current_with_span(request);
    let (id, bulk) = {
        let _in = request_cx.clone().attach();
        let id = q
            .add(
                "charge",
                json!({"n": 1}),
                JobOptions {
                    attempts: 2,
                    ..JobOptions::default()
                },
            )
            .await
            .unwrap();
        let bulk = q
            .add_bulk(
                (1..=2)
                    .map(|n| NewJob {
                        name: "plain".into(),
                        data: json!(n),
                        options: JobOptions::default(),
                    })
                    .collect(),
            )
            .await
            .unwrap();
        (id, bulk)
    };
    request_cx.span().end();
    let request_id = request_cx.span().span_context().span_id();

    let sends = named(&exporter, &format!("send {}", q.name()));
    assert_eq!(sends.len(), 2, "one per add, one per bulk call");
    let one = sends
        .iter()
        .find(|s| attr(s, "messaging.batch.message_count").is_none())
        .unwrap();
    let many = sends
        .iter()
        .find(|s| attr(s, "messaging.batch.message_count").is_some())
        .unwrap();
    assert_eq!(one.span_kind, SpanKind::Producer);
    assert_eq!(
        one.parent_span_id, request_id,
        "the caller's span is its parent"
    );
    assert_eq!(attr(one, "messaging.system").unwrap().as_str(), "emq");
    assert_eq!(
        attr(one, "messaging.destination.name").unwrap().as_str(),
        q.name().as_str()
    );
    assert_eq!(
        attr(one, "messaging.message.id").unwrap().as_str(),
        id.to_string()
    );
    assert_eq!(
        attr(many, "messaging.batch.message_count"),
        Some(&OtelValue::I64(2))
    );
    let stored = q.get(id).await.unwrap().unwrap().trace().unwrap();
    assert_eq!(stored.trace_id(), one.span_context.trace_id().to_string());
    assert_eq!(stored.span_id(), one.span_context.span_id().to_string());
    for b in &bulk {
        let t = q.get(*b).await.unwrap().unwrap().trace().unwrap();
        assert_eq!(t.span_id(), many.span_context.span_id().to_string());
    }

    // The runs: "charge" fails once and adds a child on its second run.
    let in_span = Arc::new(Mutex::new(Vec::new()));
    let seen = in_span.clone();
    let kids_name = kids.name().to_string();
    let opts = WorkerOptions {
        concurrency: 2,
        block_timeout: Duration::from_millis(200),
        ..WorkerOptions::default()
    };
    let home = q.clone();
    let w = Worker::builder(q.clone())
        .options(opts.clone())
        .handler(move |job: JobContext| {
            let seen = seen.clone();
            let kids_name = kids_name.clone();
            let home = home.clone();
            async move {
                if job.job().name == "charge" {
                    seen.lock()
                        .unwrap()
                        .push(Context::current().span().span_context().span_id());
                    if job.job().attempts_made == 0 {
                        return Err(HandlerError::new("card declined"));
                    }
                    // Once: the run that adds a child runs again when the child is done.
                    let done = home.children_results(job.job().id).await.unwrap();
                    if done.is_empty() {
                        job.add_child(&kids_name, "receipt", json!({}), JobOptions::default())
                            .await
                            .map_err(|e| HandlerError::new(e.to_string()))?;
                    }
                }
                Ok(Value::Null)
            }
        })
        .run()
        .unwrap();
    let kw = Worker::builder(kids.clone())
        .options(opts.clone())
        .handler(|_job: JobContext| async move { Ok(Value::Null) })
        .run()
        .unwrap();
    wait_until("charge completed", Duration::from_secs(20), || async {
        q.get(id).await.unwrap().and_then(|j| j.state) == Some(JobState::Completed)
    })
    .await;
    w.close().await.unwrap();
    kw.close().await.unwrap();

    let mut runs: Vec<SpanData> = named(&exporter, &format!("process {}", q.name()))
        .into_iter()
        .filter(|s| attr(s, "messaging.message.id").unwrap().as_str() == id.to_string())
        .collect();
    runs.sort_by_key(|s| s.start_time);
    assert_eq!(
        runs.len(),
        3,
        "charge: failed, added its child, ran again once it was done"
    );
    let attempt = |s: &SpanData| match attr(s, "emq.job.attempt") {
        Some(OtelValue::I64(n)) => *n,
        _ => 0,
    };
    assert_eq!((attempt(&runs[0]), attempt(&runs[1])), (1, 2));
    let outcomes: Vec<String> = runs
        .iter()
        .map(|s| attr(s, "emq.job.outcome").unwrap().as_str().to_string())
        .collect();
    assert_eq!(outcomes, vec!["failed", "completed", "completed"]);
    assert!(
        matches!(&runs[0].status, Status::Error { description } if description.contains("card declined"))
    );
    assert_eq!(runs[0].events.events[0].name, "exception");
    assert_eq!(runs[1].status, Status::Unset);
    for run in &runs {
        assert_eq!(run.span_kind, SpanKind::Consumer);
        let link = &run.links.links[0];
        assert_eq!(link.span_context.span_id(), one.span_context.span_id());
        assert_ne!(
            run.span_context.trace_id(),
            one.span_context.trace_id(),
            "linked, not a child"
        );
        assert_eq!(attr(run, "emq.job.name").unwrap().as_str(), "charge");
    }
    let handler_saw = in_span.lock().unwrap().clone();
    assert_eq!(
        handler_saw,
        runs.iter()
            .map(|s| s.span_context.span_id())
            .collect::<Vec<_>>(),
        "the handler runs in its span"
    );
    // The child the second run added carries that run's span.
    let child = kids.list(JobState::Completed, 0, 10).await.unwrap();
    assert_eq!(child.len(), 1);
    let ct = child[0].trace().unwrap();
    assert_eq!(ct.span_id(), runs[1].span_context.span_id().to_string());
    let child_run = named(&exporter, &format!("process {}", kids.name()));
    assert_eq!(
        child_run[0].links.links[0].span_context.span_id(),
        runs[1].span_context.span_id()
    );

    // Relation::Child: the run is the producer's child, in its trace.
    set_relation(Relation::Child);
    exporter.reset();
    let lone = q
        .add("lone", json!({}), JobOptions::default())
        .await
        .unwrap();
    let w = Worker::builder(q.clone())
        .options(opts)
        .handler(|_job: JobContext| async move { Ok(Value::Null) })
        .run()
        .unwrap();
    wait_until("lone completed", Duration::from_secs(20), || async {
        q.get(lone).await.unwrap().and_then(|j| j.state) == Some(JobState::Completed)
    })
    .await;
    w.close().await.unwrap();
    set_relation(Relation::Link);
    let send = &named(&exporter, &format!("send {}", q.name()))[0];
    let run = &named(&exporter, &format!("process {}", q.name()))[0];
    assert_eq!(run.span_context.trace_id(), send.span_context.trace_id());
    assert_eq!(run.parent_span_id, send.span_context.span_id());
    assert!(run.links.links.is_empty());
    let _ = provider.shutdown();
}
