//! `emq ui` in a real browser (Debian's Chromium driven by playwright-core, `cli/ui-test/ui.test.js`).
//! Ignored by a plain `cargo test` (it needs the browser); `cli/ui-test/run.sh` installs what is
//! missing and runs it with `--ignored`. Screenshots of each page go to `target/ui-screens/`.

use emq::{
    BatchOptions, ConnectOptions, FlowJob, HandlerError, JobContext, JobOptions, JobState, NewJob,
    Queue, Worker,
};
use serde_json::json;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

mod ui_support;
use ui_support::Ui;

/// Runs of the job named "flaky" so far: the first fails, the next ones complete.
static FLAKY_RUNS: AtomicU32 = AtomicU32::new(0);

async fn handle(job: JobContext) -> Result<serde_json::Value, HandlerError> {
    match job.job().name.as_str() {
        "flaky" if FLAKY_RUNS.fetch_add(1, Ordering::SeqCst) == 0 => Err(card_declined()),
        "flaky" => {
            // Long enough that the page's own re-read after the click still sees it running: what
            // shows it completed is the live update.
            tokio::time::sleep(Duration::from_millis(1500)).await;
            Ok(json!({"charged": true}))
        }
        "doomed" => Err(card_declined()),
        _ => Ok(json!({"ok": true})),
    }
}

fn card_declined() -> HandlerError {
    HandlerError::new("card declined: insufficient funds")
        .with_code("payment_failed")
        .with_stack("Error: card declined\n    at charge (billing.rs:42)\n    at run (worker.rs:7)")
}

async fn wait_state(q: &Queue, id: emq::JobId, state: JobState, limit: Duration) {
    let until = Instant::now() + limit;
    loop {
        let job = q.get(id).await.unwrap().expect("the job");
        if job.state == Some(state) {
            return;
        }
        assert!(
            Instant::now() < until,
            "{id} stayed {:?}, wanted {state:?}",
            job.state
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium and playwright-core: run cli/ui-test/run.sh"]
async fn the_dashboard_in_a_browser() {
    let url = emq_harness::shared_standalone().url();
    let pid = std::process::id();
    let (name, html_name) = (format!("payments-{pid}"), format!("notes-{pid}"));
    let q = Queue::connect(ConnectOptions::new(url.clone()), &name)
        .await
        .unwrap();
    let notes = q.queue(&html_name).unwrap();
    for i in 0..12 {
        q.add("charge", json!({ "amount": i }), JobOptions::default())
            .await
            .unwrap();
    }
    let flaky = q
        .add("flaky", json!({"amount": 42}), JobOptions::default())
        .await
        .unwrap();
    let doomed = q
        .add("doomed", json!({"amount": 7}), JobOptions::default())
        .await
        .unwrap();
    q.add(
        "later",
        json!({}),
        JobOptions {
            delay_ms: 3_600_000,
            ..JobOptions::default()
        },
    )
    .await
    .unwrap();
    let html = notes
        .add(
            "<b>html-name</b>",
            json!({"note": "<script>window.__pwned = 1</script><img src=x onerror=window.__pwned=2><b>bold</b>"}),
            JobOptions {
                description: Some("notes for <i>ops</i> — ünïcode".into()),
                ..JobOptions::default()
            },
        )
        .await
        .unwrap();
    let drain_name = format!("drain-{pid}");
    let drain = q.queue(&drain_name).unwrap();
    for i in 0..3 {
        drain
            .add("d", json!({ "i": i }), JobOptions::default())
            .await
            .unwrap();
    }
    // A flow across two queues (no worker serves them), a queue for bulk actions and search, and
    // jobs to cancel and reprioritise.
    let (flow_name, parts_name) = (format!("orders-{pid}"), format!("parts-{pid}"));
    let flow = q
        .add_flow(FlowJob {
            queue: flow_name.clone(),
            name: "assemble".into(),
            data: json!({"order": 1}),
            options: JobOptions::default(),
            children: vec![FlowJob {
                queue: parts_name.clone(),
                name: "wheel".into(),
                data: json!({"size": 17}),
                options: JobOptions::default(),
                children: vec![],
            }],
        })
        .await
        .unwrap();
    let bulk_name = format!("invoices-{pid}");
    let bulk = q.queue(&bulk_name).unwrap();
    let later = |dedup: Option<&str>| JobOptions {
        delay_ms: 3_600_000,
        dedup: dedup.map(String::from),
        ..JobOptions::default()
    };
    for i in 0..4 {
        bulk.add(&format!("invoice-{i}"), json!({ "i": i }), later(None))
            .await
            .unwrap();
    }
    let refund = bulk
        .add("refund-7", json!({}), later(Some("refund-key-7")))
        .await
        .unwrap();
    let misc_name = format!("misc-{pid}");
    let misc = q.queue(&misc_name).unwrap();
    let to_cancel = misc
        .add("cancel-me", json!({}), JobOptions::default())
        .await
        .unwrap();
    let to_prioritise = misc
        .add("urgent-later", json!({}), JobOptions::default())
        .await
        .unwrap();
    // A queue longer than one name-search window (5,000): the needle is the 5,001st oldest.
    let hay_name = format!("hay-{pid}");
    let hay = q.queue(&hay_name).unwrap();
    let straw = |n: usize| {
        (0..n)
            .map(|i| NewJob {
                name: "straw".into(),
                data: json!({ "i": i }),
                options: JobOptions::default(),
            })
            .collect::<Vec<_>>()
    };
    hay.add_bulk(straw(5_000)).await.unwrap();
    let needle = hay
        .add("needle-1", json!({}), JobOptions::default())
        .await
        .unwrap();
    hay.add_bulk(straw(9)).await.unwrap();
    // A queue of fair groups (no worker serves it): backlogs 6, 3, 2 and 1, whose name order is
    // another order.
    let groups_name = format!("tenants-{pid}");
    let tenants = q.queue(&groups_name).unwrap();
    for (group, n) in [
        ("tenant-big", 6),
        ("tenant-mid", 3),
        ("a-tenant", 2),
        ("tenant-small", 1),
    ] {
        for i in 0..n {
            tenants
                .add(
                    "sync",
                    json!({ "i": i }),
                    JobOptions {
                        group: Some(group.into()),
                        ..JobOptions::default()
                    },
                )
                .await
                .unwrap();
        }
    }
    tenants
        .set_group_concurrency(Some(2), Some("tenant-big"))
        .await
        .unwrap();
    tenants
        .set_group_max_waiting(Some(10_000), Some("tenant-mid"))
        .await
        .unwrap();
    // Batches (the Batches page): "nightly import" done with one failed job of five, then
    // "backfill" with two of its five jobs done (three wait on a queue no worker serves).
    // Dead letters: two jobs of "charges" fail for good and move to "charges-dlq".
    let (imports_name, later_name) = (format!("imports-{pid}"), format!("imports-later-{pid}"));
    let (charges_name, dlq_name) = (format!("charges-{pid}"), format!("charges-dlq-{pid}"));
    let imports = q.queue(&imports_name).unwrap();
    let charges = q.queue(&charges_name).unwrap();
    charges.set_dead_letter(Some(&dlq_name)).await.unwrap();
    let nightly = imports
        .batch(BatchOptions {
            description: Some("nightly import".into()),
            ..BatchOptions::default()
        })
        .await
        .unwrap();
    for n in 0..5 {
        nightly
            .add(
                &imports_name,
                "row",
                json!({ "n": n, "fail": n == 3 }),
                JobOptions::default(),
            )
            .await
            .unwrap();
    }
    nightly.seal().await.unwrap();
    let backfill = imports
        .batch(BatchOptions {
            description: Some("backfill 2019".into()),
            ..BatchOptions::default()
        })
        .await
        .unwrap();
    for n in 0..5 {
        let to = if n < 2 { &imports_name } else { &later_name };
        backfill
            .add(to, "row", json!({ "n": n }), JobOptions::default())
            .await
            .unwrap();
    }
    backfill.seal().await.unwrap();
    for n in 0..2 {
        charges
            .add(
                "charge",
                json!({ "n": n, "fail": true }),
                JobOptions::default(),
            )
            .await
            .unwrap();
    }
    // A backlog sample (what workers take as they trim): the Metrics page's backlog chart.
    imports.trim_metrics().await.unwrap();
    let side = Worker::builder_many(vec![imports.clone(), charges.clone()])
        .concurrency(2)
        .handler(|job: JobContext| async move {
            if job.data()["fail"] == json!(true) {
                return Err(card_declined());
            }
            Ok(json!("ok"))
        })
        .run()
        .unwrap();
    let dlq = q.queue(&dlq_name).unwrap();
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        imports.record_batch_outcomes().await.unwrap();
        let n = nightly.status(0, 0).await.unwrap();
        let b = backfill.status(0, 0).await.unwrap();
        if n.done && b.completed == 2 && dlq.counts().await.unwrap().waiting == 2 {
            break;
        }
        assert!(
            Instant::now() < until,
            "batches {n:?} {b:?} or dead letters not ready"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    side.close().await.unwrap();
    let sched_queue = format!("reports-{pid}");
    q.queue(&sched_queue)
        .unwrap()
        .add("seed", json!({}), JobOptions::default())
        .await
        .unwrap();

    let worker = Worker::builder(q.clone())
        .concurrency(2)
        .handler(handle)
        .run()
        .unwrap();
    wait_state(&q, flaky, JobState::Failed, Duration::from_secs(10)).await;
    wait_state(&q, doomed, JobState::Failed, Duration::from_secs(10)).await;

    let urls = vec![url.clone()];
    let (ui, ro) = tokio::task::spawn_blocking(move || {
        (
            Ui::start(&urls, &[], &[]),
            Ui::start(&urls, &["--read-only"], &[]),
        )
    })
    .await
    .unwrap();
    let screens = concat!(env!("CARGO_MANIFEST_DIR"), "/../target/ui-screens");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/ui-test/ui.test.js");
    let mut child = Command::new("node")
        .arg(script)
        .env("UI_BASE", ui.base())
        .env("UI_RO_BASE", ro.base())
        .env("QUEUE", &name)
        .env("HTML_QUEUE", &html_name)
        .env("DRAIN_QUEUE", &drain_name)
        .env("FLAKY_ID", flaky.to_string())
        .env("DOOMED_ID", doomed.to_string())
        .env("HTML_ID", html.to_string())
        .env("FLOW_QUEUE", &flow_name)
        .env("PARTS_QUEUE", &parts_name)
        .env("FLOW_PARENT", flow.id.to_string())
        .env("FLOW_CHILD", flow.children[0].id.to_string())
        .env("BULK_QUEUE", &bulk_name)
        .env("REFUND_ID", refund.to_string())
        .env("MISC_QUEUE", &misc_name)
        .env("CANCEL_ID", to_cancel.to_string())
        .env("PRIO_ID", to_prioritise.to_string())
        .env("SCHED_QUEUE", &sched_queue)
        .env("GROUPS_QUEUE", &groups_name)
        .env("BATCH_QUEUE", &imports_name)
        .env("NIGHTLY_ID", nightly.id().to_string())
        .env("BACKFILL_ID", backfill.id().to_string())
        .env("ORIGIN_QUEUE", &charges_name)
        .env("DLQ_QUEUE", &dlq_name)
        .env("HAY_QUEUE", &hay_name)
        .env("NEEDLE_ID", needle.to_string())
        .env("SCREENS", screens)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node (see cli/ui-test/run.sh)");
    let until = Instant::now() + Duration::from_secs(180);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the browser checks ran past 180 s");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        status.success(),
        "browser checks failed:\n{stdout}\nui stderr:\n{}",
        ui.stderr()
    );
    assert!(stdout.contains("all browser checks passed"), "{stdout}");
    // What the browser did, seen from the core: Retry completed the flaky job; read-only left the
    // doomed one failed.
    wait_state(&q, flaky, JobState::Completed, Duration::from_secs(5)).await;
    assert_eq!(
        q.get(doomed).await.unwrap().unwrap().state,
        Some(JobState::Failed)
    );
    worker.close().await.unwrap();
    drop((ui, ro));
    q.obliterate(true).await.unwrap();
    notes.obliterate(true).await.unwrap();
    assert_eq!(drain.counts().await.unwrap().waiting, 0, "Drain left jobs");
    drain.obliterate(true).await.unwrap();
    // What the browser did to the other queues, seen from the core.
    let c = misc.get(to_cancel).await.unwrap().unwrap();
    assert_eq!(c.state, Some(JobState::Failed));
    assert_eq!(c.failure.map(|f| f.code), Some("cancelled".to_string()));
    let p = misc.get(to_prioritise).await.unwrap().unwrap();
    assert_eq!((p.state, p.priority), (Some(JobState::Prioritized), 3));
    // Promoted in bulk, then given priority 4 in bulk (the refund was removed in between).
    let counts = bulk.counts().await.unwrap();
    assert_eq!(
        (counts.delayed, counts.waiting, counts.prioritized),
        (0, 0, 4),
        "bulk promote, then bulk priority"
    );
    assert!(bulk.get(refund).await.unwrap().is_none(), "the refund");
    for j in bulk.list(JobState::Prioritized, 0, 10).await.unwrap() {
        assert_eq!(j.priority, 4, "{}", j.id);
    }
    // The Groups page paused tenant-mid and gave tenant-big weight 5; the read-only one nothing.
    let groups = tenants.groups(0, 100).await.unwrap();
    let by = |n: &str| groups.iter().find(|g| g.name == n).expect(n).clone();
    assert!(by("tenant-mid").paused, "{groups:?}");
    assert_eq!(by("tenant-big").weight, 5, "{groups:?}");
    assert!(
        !by("tenant-big").paused && !by("a-tenant").paused,
        "{groups:?}"
    );
    assert_eq!(by("tenant-mid").waiting, 3, "a pause keeps the jobs");
    // The Batches page cancelled "backfill"; the Dead letters page replayed both charges.
    let b = backfill.status(0, 0).await.unwrap();
    assert!(b.cancelled, "{b:?}");
    assert_eq!(charges.counts().await.unwrap().waiting, 2, "both replayed");
    assert_eq!(dlq.counts().await.unwrap().waiting, 0);
    let sq = q.queue(&sched_queue).unwrap();
    assert!(
        sq.schedulers().await.unwrap().is_empty(),
        "the scheduler was removed"
    );
    for name in [
        &flow_name,
        &parts_name,
        &bulk_name,
        &misc_name,
        &sched_queue,
        &hay_name,
        &groups_name,
        &imports_name,
        &later_name,
        &charges_name,
        &dlq_name,
    ] {
        q.queue(name).unwrap().obliterate(true).await.unwrap();
    }
}
