//! Trace context on real servers (`core/src/trace.rs`): a job's W3C context is stored in its own
//! record (its options, not its data), reads back exactly, stays through a delay and a retry, is
//! given by a flow's parent to children without one and by a running job to the children it adds; a job added without one stores nothing for it; a malformed one is refused
//! with `invalid_option` and adds nothing.

mod common;

use common::wait_until;
use emq::{
    spec::JobSpec, Backoff, ErrorCode, FlowJob, HandlerError, JobContext, JobOptions, JobState,
    Queue, TraceContext, Worker, WorkerOptions,
};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const OTHER: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";

fn traced(traceparent: &str, tracestate: Option<&str>) -> JobOptions {
    JobOptions {
        trace: Some(TraceContext::new(traceparent, tracestate).unwrap()),
        ..JobOptions::default()
    }
}

fn opts() -> WorkerOptions {
    WorkerOptions {
        concurrency: 4,
        block_timeout: Duration::from_millis(200),
        ..WorkerOptions::default()
    }
}

async fn state(q: &Queue, id: emq::JobId) -> Option<JobState> {
    q.get(id).await.unwrap().and_then(|j| j.state)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobs_trace_context_reads_back_and_survives_retries_and_delays() {
    for (topology, store) in common::both().await {
        let q = common::queue_on(&store, "trace").await;
        let plain = q
            .add("plain", json!({"n": 1}), JobOptions::default())
            .await
            .unwrap();
        let job = q.get(plain).await.unwrap().unwrap();
        assert_eq!(job.trace(), None, "{topology}");
        assert_eq!(
            job.options,
            json!({}),
            "{topology}: nothing stored without a trace"
        );

        let state_text = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7";
        let id = q
            .add(
                "traced",
                json!({"n": 2}),
                JobOptions {
                    attempts: 2,
                    backoff: Backoff::Fixed { delay_ms: 50 },
                    delay_ms: 30,
                    ..traced(PARENT, Some(state_text))
                },
            )
            .await
            .unwrap();
        let job = q.get(id).await.unwrap().unwrap();
        let t = job.trace().expect("the trace context reads back");
        assert_eq!(t.traceparent, PARENT, "{topology}");
        assert_eq!(t.tracestate.as_deref(), Some(state_text), "{topology}");
        assert_eq!(
            job.data,
            json!({"n": 2}),
            "{topology}: the data is untouched"
        );

        // Each run sees it: the first fails, the retry (after its backoff) completes.
        let seen: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
        let s = seen.clone();
        let worker = Worker::builder(q.clone())
            .options(opts())
            .handler(move |ctx: JobContext| {
                let s = s.clone();
                async move {
                    if ctx.job().name != "traced" {
                        return Ok(json!(null));
                    }
                    s.lock()
                        .unwrap()
                        .push(ctx.job().trace().map(|t| t.traceparent));
                    if ctx.job().attempts_made == 0 {
                        return Err(HandlerError::new("once more"));
                    }
                    Ok(json!("done"))
                }
            })
            .run()
            .unwrap();
        wait_until("the retry completes", Duration::from_secs(10), || async {
            state(&q, id).await == Some(JobState::Completed)
        })
        .await;
        worker.close().await.unwrap();
        assert_eq!(
            *seen.lock().unwrap(),
            vec![Some(PARENT.to_string()), Some(PARENT.to_string())],
            "{topology}"
        );
        let job = q.get(id).await.unwrap().unwrap();
        assert_eq!(job.trace().unwrap().traceparent, PARENT, "{topology}");
        common::audit_ok(&q).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn children_join_their_parents_trace_unless_they_bring_their_own() {
    for (topology, store) in common::both().await {
        let q = common::queue_on(&store, "trace-flow").await;
        let leaf = |n: i64, options: JobOptions| FlowJob {
            queue: q.name().to_string(),
            name: "leaf".into(),
            data: json!({"n": n}),
            options,
            children: vec![],
        };
        let ids = q
            .add_flow(FlowJob {
                queue: q.name().to_string(),
                name: "root".into(),
                data: json!({}),
                options: traced(PARENT, None),
                children: vec![leaf(1, JobOptions::default()), leaf(2, traced(OTHER, None))],
            })
            .await
            .unwrap();
        let parent_of = |i: usize| ids.children[i].id;
        let tp = |job: emq::Job| job.trace().map(|t| t.traceparent);
        assert_eq!(
            tp(q.get(ids.id).await.unwrap().unwrap()).as_deref(),
            Some(PARENT)
        );
        assert_eq!(
            tp(q.get(parent_of(0)).await.unwrap().unwrap()).as_deref(),
            Some(PARENT),
            "{topology}: a child without its own joins the parent's trace"
        );
        assert_eq!(
            tp(q.get(parent_of(1)).await.unwrap().unwrap()).as_deref(),
            Some(OTHER),
            "{topology}: a child's own context is kept"
        );

        // A running job's children: without a context of their own, the running job's.
        let kids = common::queue_on(&store, "trace-kids").await;
        let to = kids.name().to_string();
        let spawner = common::queue_on(&store, "trace-spawn").await;
        let added: Arc<Mutex<Vec<emq::JobId>>> = Arc::default();
        let a = added.clone();
        let worker = Worker::builder(spawner.clone())
            .options(opts())
            .handler(move |ctx: JobContext| {
                let (a, to) = (a.clone(), to.clone());
                async move {
                    if !a.lock().unwrap().is_empty() {
                        return Ok(json!("again"));
                    }
                    let one = ctx
                        .add_child(&to, "kid", json!(1), JobOptions::default())
                        .await
                        .map_err(|e| HandlerError::new(e.to_string()))?;
                    let two = ctx
                        .add_child(&to, "kid", json!(2), traced(OTHER, None))
                        .await
                        .map_err(|e| HandlerError::new(e.to_string()))?;
                    a.lock().unwrap().extend([one, two]);
                    Ok(json!("spawned"))
                }
            })
            .run()
            .unwrap();
        spawner
            .add("spawn", json!({}), traced(PARENT, None))
            .await
            .unwrap();
        wait_until("two children added", Duration::from_secs(10), || async {
            added.lock().unwrap().len() == 2
        })
        .await;
        worker.close().await.unwrap();
        let kid_ids = added.lock().unwrap().clone();
        assert_eq!(
            tp(kids.get(kid_ids[0]).await.unwrap().unwrap()).as_deref(),
            Some(PARENT),
            "{topology}"
        );
        assert_eq!(
            tp(kids.get(kid_ids[1]).await.unwrap().unwrap()).as_deref(),
            Some(OTHER),
            "{topology}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_trace_context_is_refused_and_adds_nothing() {
    let store = common::standalone().await;
    let q = common::queue_on(&store, "trace-bad").await;
    for (traceparent, tracestate) in [
        (
            Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"),
            None,
        ),
        (Some("not a trace"), None),
        (Some(PARENT), Some("a=b\nc=d")),
        (None, Some("a=b")),
    ] {
        let spec = JobSpec {
            traceparent: traceparent.map(str::to_string),
            tracestate: tracestate.map(str::to_string),
            ..JobSpec::default()
        };
        let e = JobOptions::try_from(spec).unwrap_err();
        assert_eq!(
            e.code(),
            ErrorCode::InvalidOption,
            "{traceparent:?} {tracestate:?}"
        );
    }
    // The typed options are checked by the add itself too.
    let bad = JobOptions {
        trace: Some(TraceContext {
            traceparent: "00-zz".into(),
            tracestate: None,
        }),
        ..JobOptions::default()
    };
    let e = q.add("x", json!(1), bad).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidOption);
    assert_eq!(q.counts().await.unwrap().total(), 0);

    // The spec's fields reach the options exactly.
    let spec = JobSpec {
        traceparent: Some(PARENT.into()),
        tracestate: Some("k=v".into()),
        ..JobSpec::default()
    };
    let o = JobOptions::try_from(spec).unwrap();
    let id = q.add("x", json!(1), o).await.unwrap();
    let t = q.get(id).await.unwrap().unwrap().trace().unwrap();
    assert_eq!(
        (t.traceparent.as_str(), t.tracestate.as_deref()),
        (PARENT, Some("k=v"))
    );
}
