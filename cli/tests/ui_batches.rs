//! `emq ui`'s Batches, Dead letters and Metrics pages over HTTP, no browser: the run and wait
//! times per minute as p50/p95/p99 and since the queue began; a queue's batches newest
//! first with their state and counts, one batch with its failed jobs, cancel; the dead-lettered
//! jobs a queue holds with their origin, replayed by id and all; bad bodies and ids refused with
//! the core's codes; a read-only dashboard refuses both actions.

use emq::{
    BatchOptions, ConnectOptions, HandlerError, JobContext, JobOptions, JobState, Queue, Worker,
    WorkerOptions,
};
use serde_json::{json, Value};
use std::time::Duration;

mod ui_support;
use ui_support::Ui;

const ACTION: (&str, &str) = ("X-EMQ-UI", "1");

fn unique(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn url() -> String {
    emq_harness::shared_standalone().url()
}

async fn queue(name: &str) -> Queue {
    Queue::connect(ConnectOptions::new(url()), name)
        .await
        .unwrap()
}

fn get(ui: &Ui, path: &str) -> Value {
    let r = ui.request("GET", path, &[], "");
    assert_eq!(r.status, 200, "{path}: {}", r.body);
    r.json()
}

fn post(ui: &Ui, path: &str, body: &str) -> (u16, Value) {
    let r = ui.request("POST", path, &[ACTION], body);
    let status = r.status;
    (status, r.json())
}

/// Runs `q`'s jobs until `done` holds: those whose data has `"fail": true` fail for good.
async fn run_until(q: &Queue, done: impl Fn(emq::Counts) -> bool) {
    let w = Worker::builder(q.clone())
        .options(WorkerOptions {
            concurrency: 4,
            ..WorkerOptions::default()
        })
        .handler(|job: JobContext| async move {
            if job.data()["fail"] == json!(true) {
                return Err(HandlerError::new("row 2 is malformed"));
            }
            Ok::<Value, _>(json!("ok"))
        })
        .run()
        .unwrap();
    let t0 = std::time::Instant::now();
    while !done(q.counts().await.unwrap()) {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "jobs did not finish"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    w.close().await.unwrap();
}

#[test]
fn batches_are_listed_shown_with_their_failures_and_cancelled() {
    let name = unique("ui-batches");
    let rt = rt();
    let (q, done_id, open_id) = rt.block_on(async {
        let q = queue(&name).await;
        let done = q
            .batch(BatchOptions {
                description: Some("nightly import".into()),
                ..BatchOptions::default()
            })
            .await
            .unwrap();
        for n in 0..4 {
            done.add(
                &name,
                "row",
                json!({ "n": n, "fail": n == 2 }),
                JobOptions::default(),
            )
            .await
            .unwrap();
        }
        done.seal().await.unwrap();
        run_until(&q, |c| {
            c.get(JobState::Completed) + c.get(JobState::Failed) == 4
        })
        .await;
        // The outcomes reach the batch a step after the jobs' own.
        q.record_batch_outcomes().await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
        let open = q.batch(BatchOptions::default()).await.unwrap();
        open.add(&name, "row", json!({ "n": 9 }), JobOptions::default())
            .await
            .unwrap();
        (q, done.id().to_string(), open.id().to_string())
    });
    let ui = Ui::start(&[url()], &[], &[]);
    let base = format!("/api/queues/{name}/batches");

    let d = get(&ui, &base);
    assert_eq!(d["total"], 2, "{d}");
    assert_eq!(d["batches"][0]["id"], open_id.as_str(), "newest first: {d}");
    assert_eq!(d["batches"][0]["state"], "open");
    let b = &d["batches"][1];
    assert_eq!(b["id"], done_id.as_str());
    assert_eq!(b["description"], "nightly import");
    assert_eq!(
        (&b["total"], &b["completed"], &b["failed"]),
        (&json!(4), &json!(3), &json!(1))
    );
    assert_eq!((&b["state"], &b["done"]), (&json!("done"), &json!(true)));
    assert!(d["summary"].is_object(), "{d}");
    let paged = get(&ui, &format!("{base}?offset=1&limit=1"));
    assert_eq!(paged["batches"].as_array().unwrap().len(), 1);
    assert_eq!(paged["batches"][0]["id"], done_id.as_str());

    let one = get(&ui, &format!("{base}/{done_id}"));
    assert_eq!(one["failed_jobs"].as_array().unwrap().len(), 1, "{one}");
    assert_eq!(one["failed_jobs"][0]["queue"], name.as_str());

    let (status, r) = post(&ui, &format!("{base}/{open_id}/cancel"), "");
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["jobs"], 1);
    assert_eq!(get(&ui, &format!("{base}/{open_id}"))["state"], "cancelled");

    let r = ui.request("GET", &format!("{base}/nope"), &[], "");
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], "invalid_job_id", "{}", r.body);
    let r = ui.request("GET", &format!("{base}?limit=0"), &[], "");
    assert_eq!(r.json()["error"]["code"], "invalid_option", "{}", r.body);

    let ro = Ui::start(&[url()], &["--read-only"], &[]);
    let (status, _) = post(&ro, &format!("{base}/{done_id}/cancel"), "");
    assert_eq!(status, 403, "a read-only dashboard refuses cancel");
    rt.block_on(q.close()).unwrap();
}

#[test]
fn dead_letters_are_listed_with_their_origin_and_replayed() {
    let (name, dlq) = (unique("ui-origin"), unique("ui-dlq"));
    let rt = rt();
    let (q, d) = rt.block_on(async {
        let q = queue(&name).await;
        q.set_dead_letter(Some(&dlq)).await.unwrap();
        for n in 0..3 {
            q.add(
                "row",
                json!({ "n": n, "fail": true }),
                JobOptions::default(),
            )
            .await
            .unwrap();
        }
        run_until(&q, |c| {
            c.get(JobState::Failed) + c.get(JobState::Completed) == 0
                && c.get(JobState::Waiting) == 0
                && c.get(JobState::Active) == 0
        })
        .await;
        let d = queue(&dlq).await;
        let t0 = std::time::Instant::now();
        while d.counts().await.unwrap().get(JobState::Waiting) < 3 {
            assert!(t0.elapsed() < Duration::from_secs(30), "not dead-lettered");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        (q, d)
    });
    let ui = Ui::start(&[url()], &[], &[]);
    let origin = get(&ui, &format!("/api/queues/{name}/dead-letters"));
    assert_eq!(origin["dead_letter"], dlq.as_str(), "{origin}");
    assert_eq!(origin["jobs"], json!([]));

    let base = format!("/api/queues/{dlq}/dead-letters");
    let l = get(&ui, &base);
    let jobs = l["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 3, "{l}");
    assert_eq!(jobs[0]["origin"]["queue"], name.as_str());
    assert_eq!(jobs[0]["origin"]["attempts_made"], 1);
    assert_eq!(
        jobs[0]["origin"]["failure"]["message"],
        "row 2 is malformed"
    );
    let first = jobs[0]["id"].as_str().unwrap().to_string();

    let (status, r) = post(
        &ui,
        &format!("{base}/replay"),
        &json!({"ids": [first]}).to_string(),
    );
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["replayed"].as_array().unwrap().len(), 1, "{r}");
    assert_eq!(r["replayed"][0]["queue"], name.as_str());
    assert_eq!(get(&ui, &base)["jobs"].as_array().unwrap().len(), 2);
    let (status, r) = post(&ui, &format!("{base}/replay"), r#"{"all": true}"#);
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["replayed"].as_array().unwrap().len(), 2, "{r}");
    assert_eq!(get(&ui, &base)["jobs"], json!([]));
    let back = rt.block_on(q.counts()).unwrap();
    assert_eq!(
        back.get(JobState::Waiting),
        3,
        "all three back in their queue"
    );

    for (body, code) in [
        (r#"{"ids": []}"#, "invalid_option"),
        (r#"{"ids": ["a"], "all": true}"#, "invalid_option"),
        (r#"{"every": true}"#, "invalid_option"),
        (r#"{"ids": ["nope"]}"#, "invalid_job_id"),
    ] {
        let (status, r) = post(&ui, &format!("{base}/replay"), body);
        assert_eq!(
            (status, r["error"]["code"].as_str()),
            (400, Some(code)),
            "{body}: {r}"
        );
    }
    rt.block_on(async {
        q.close().await.unwrap();
        d.close().await.unwrap();
    });
}

#[test]
fn the_metrics_page_has_run_and_wait_quantiles_per_minute() {
    let name = unique("ui-metrics");
    let rt = rt();
    let q = rt.block_on(async {
        let q = queue(&name).await;
        for n in 0..6 {
            q.add("row", json!({ "n": n }), JobOptions::default())
                .await
                .unwrap();
        }
        run_until(&q, |c| c.get(JobState::Completed) == 6).await;
        q
    });
    let ui = Ui::start(&[url()], &[], &[]);
    let d = get(&ui, &format!("/api/queues/{name}/metrics"));
    assert_eq!(d["window_minutes"], 60, "{d}");
    assert_eq!(d["buckets_ms"].as_array().unwrap().len(), 16);
    assert_eq!(d["run"]["count"], 6, "{d}");
    assert_eq!(d["wait"]["count"], 6, "{d}");
    assert!(d["run"]["p50"].as_u64().is_some(), "{d}");
    let minutes = d["run_per_minute"].as_array().unwrap();
    let counted: u64 = minutes.iter().map(|m| m["count"].as_u64().unwrap()).sum();
    assert_eq!(counted, 6, "{d}");
    assert!(minutes[0]["p99"].as_u64().unwrap() >= minutes[0]["p50"].as_u64().unwrap());
    let done: u64 = d["completed_per_minute"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p[1].as_u64().unwrap())
        .sum();
    assert_eq!(done, 6);
    rt.block_on(q.close()).unwrap();
}
