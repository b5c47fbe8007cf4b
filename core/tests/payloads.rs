//! Payloads that every reader gets back exactly, or that `add` refuses (`invalid_payload`): nesting
//! (127 levels read back, 128 refused), lone surrogates (refused), integers beyond 64 bits (refused;
//! i64/u64 extremes read back exactly), and a stored field no reader can parse (written by an older
//! emq, or by hand) is an `invalid_payload` error for `get` and fails the job for a worker instead
//! of reaching the handler as `null`.

mod common;

use common::{audit_ok, queue_on, wait_until};
use emq::{ErrorCode, JobContext, JobOptions, JobPart, JobState, NewJob, Worker, WorkerOptions};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn nested(levels: usize) -> String {
    format!("{}1{}", "[".repeat(levels), "]".repeat(levels))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payloads_read_back_exactly_or_are_refused_at_add() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "payloads").await;
        let deep = q
            .add_json("deep", &nested(127), JobOptions::default())
            .await
            .unwrap();
        let want: Value = serde_json::from_str(&nested(127)).unwrap();
        assert_eq!(q.get(deep).await.unwrap().unwrap().data, want, "{topology}");
        for (what, bad) in [
            ("128 levels", nested(128)),
            ("300 levels", nested(300)),
            ("lone surrogate", r#"{"s":"\ud800"}"#.to_string()),
            ("2**70", "1180591620717411303424".to_string()),
            ("2**64", r#"[18446744073709551616]"#.to_string()),
        ] {
            let e = q
                .add_json("bad", &bad, JobOptions::default())
                .await
                .expect_err(what);
            assert_eq!(
                e.code(),
                ErrorCode::InvalidPayload,
                "{topology} {what}: {e}"
            );
        }
        // A Value built in Rust is held to the same depth (add and add_bulk).
        let mut v = json!(1);
        for _ in 0..128 {
            v = json!([v]);
        }
        let e = q
            .add("bad", v.clone(), JobOptions::default())
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidPayload);
        let e = q
            .add_bulk(vec![NewJob {
                name: "bad".into(),
                data: v,
                options: JobOptions::default(),
            }])
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidPayload);
        // The 64-bit extremes and a surrogate pair come back exactly.
        let text = r#"{"max":18446744073709551615,"min":-9223372036854775808,"s":"\ud83d\ude00"}"#;
        let id = q
            .add_json("edges", text, JobOptions::default())
            .await
            .unwrap();
        let data = q.get(id).await.unwrap().unwrap().data;
        assert_eq!(data["max"].as_u64(), Some(u64::MAX));
        assert_eq!(data["min"].as_i64(), Some(i64::MIN));
        assert_eq!(data["s"], "😀");
        // Nothing refused was written.
        assert_eq!(q.counts().await.unwrap().total(), 2, "{topology}");
        audit_ok(&q).await;
    }
}

/// A record whose data no reader can parse, as an emq before the payload check could store it.
async fn spoil(q: &emq::Queue, id: emq::JobId) {
    let key = q.name().job_key(id, JobPart::Record);
    let _: i64 = redis::cmd("HSET")
        .arg(key.as_str())
        .arg("data")
        .arg(nested(200))
        .query_async(&mut q.store().conn())
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_stored_payload_is_an_error_never_null() {
    let store = common::standalone().await;
    let q = queue_on(&store, "unreadable").await;
    let id = q.add("x", json!(1), JobOptions::default()).await.unwrap();
    spoil(&q, id).await;
    let e = q.get(id).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidPayload, "{e}");
    assert!(e.message().contains(&id.to_string()), "{e}");
    // A worker does not run the handler with null: the job fails, unrecoverably, with the code.
    let runs = Arc::new(AtomicUsize::new(0));
    let runs2 = runs.clone();
    let worker = Worker::builder(q.clone())
        .options(WorkerOptions {
            block_timeout: Duration::from_millis(300),
            ..WorkerOptions::default()
        })
        .handler(move |_job: JobContext| {
            let runs = runs2.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok(json!(null))
            }
        })
        .run()
        .unwrap();
    wait_until("the spoiled job fails", Duration::from_secs(10), || {
        let q = q.clone();
        async move { q.counts().await.unwrap().failed == 1 }
    })
    .await;
    worker.close().await.unwrap();
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "the handler ran with null data"
    );
    let failed = q.list_ids(JobState::Failed, 0, 10).await.unwrap();
    assert_eq!(failed, vec![id]);
    audit_ok(&q).await;
}
