//! Cron job schedulers on real servers (standalone and a 3-master cluster, guarded): a cron every
//! second raced by workers and producers enqueues each due second exactly once; limit, end and a
//! re-upsert keeping the count hold; a bad expression or zone is a typed error and stores nothing.
//! The calendar itself (time zones, daylight saving) is unit-tested in `src/scheduler.rs`.

mod common;

use common::{audit_ok, queue_on, wait_until};

use emq::keyspace::JobPart;
use emq::{ErrorCode, JobContext, JobId, JobState, Queue, Repeat, Schedule, Worker, WorkerOptions};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn opts() -> WorkerOptions {
    WorkerOptions {
        concurrency: 2,
        block_timeout: Duration::from_millis(300),
        ..WorkerOptions::default()
    }
}

/// The due instant (server ms) stored on each run enqueued by a scheduler, in order.
async fn due_times(q: &Queue, ids: &[JobId]) -> Vec<u64> {
    let mut conn = q.store().conn();
    let mut out = Vec::new();
    for id in ids {
        let due: Option<u64> = redis::cmd("HGET")
            .arg(q.name().job_key(*id, JobPart::Record))
            .arg("due_ms")
            .query_async(&mut conn)
            .await
            .unwrap();
        out.push(due.expect("a scheduled run records its due time"));
    }
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cron_every_second_enqueues_each_second_once_under_races() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "cron").await;
        let schedule = Schedule {
            limit: Some(4),
            ..Schedule::new(
                Repeat::cron("* * * * * *", "Europe/Berlin"),
                "tick",
                json!({"k": 1}),
            )
        };
        assert!(q
            .upsert_scheduler("ticker", schedule.clone())
            .await
            .unwrap());
        let info = q.schedulers().await.unwrap();
        assert_eq!(info.len(), 1);
        assert_eq!(info[0].cron.as_deref(), Some("* * * * * *"));
        assert_eq!(info[0].tz.as_deref(), Some("Europe/Berlin"));
        assert!(info[0].next_in_ms.unwrap() <= 1_000, "{info:?}");
        let mut workers = Vec::new();
        for _ in 0..3 {
            workers.push(
                Worker::builder(q.clone())
                    .options(opts())
                    .handler(|_job: JobContext| async { Ok(Value::Null) })
                    .run()
                    .unwrap(),
            );
        }
        let racers: Vec<_> = (0..3)
            .map(|_| {
                let q = q.clone();
                tokio::spawn(async move {
                    let until = Instant::now() + Duration::from_millis(5_500);
                    while Instant::now() < until {
                        q.fire_due_schedulers().await.unwrap();
                        tokio::time::sleep(Duration::from_millis(3)).await;
                    }
                })
            })
            .collect();
        // After the first run, replace it with the same schedule: it keeps its count and due time.
        wait_until("the first run", Duration::from_secs(5), || async {
            q.counts().await.unwrap().total() >= 1
        })
        .await;
        assert!(!q.upsert_scheduler("ticker", schedule).await.unwrap());
        let kept = q.schedulers().await.unwrap();
        assert!(
            kept.is_empty() || kept[0].count >= 1,
            "{topology}: count kept: {kept:?}"
        );
        for r in racers {
            r.await.unwrap();
        }
        wait_until("4 runs done", Duration::from_secs(10), || async {
            q.counts().await.unwrap().completed == 4
        })
        .await;
        for w in workers {
            w.close().await.unwrap();
        }
        assert_eq!(q.counts().await.unwrap().total(), 4, "{topology}: limit 4");
        assert!(
            q.schedulers().await.unwrap().is_empty(),
            "{topology}: removed at its limit"
        );
        let ids = q.list_ids(JobState::Completed, 0, 100).await.unwrap();
        let due = due_times(&q, &ids).await;
        assert!(
            due.iter().all(|d| d % 1000 == 0),
            "{topology}: each run is due on a whole second: {due:?}"
        );
        assert!(
            due.windows(2).all(|w| w[1] == w[0] + 1000),
            "{topology}: one run per second, none twice, none skipped: {due:?}"
        );
        audit_ok(&q).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduler_stops_at_its_end() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "cron-end").await;
        let started = Instant::now();
        q.upsert_scheduler(
            "short",
            Schedule {
                end_after: Some(Duration::from_millis(450)),
                ..Schedule::new(
                    Repeat::Every(Duration::from_millis(100)),
                    "tick",
                    json!(null),
                )
            },
        )
        .await
        .unwrap();
        let ends_in = q.schedulers().await.unwrap()[0].ends_in_ms.unwrap();
        assert!((300..=450).contains(&ends_in), "{topology}: {ends_in}");
        while started.elapsed() < Duration::from_millis(900) {
            q.fire_due_schedulers().await.unwrap();
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(
            q.schedulers().await.unwrap().is_empty(),
            "{topology}: removed after its end"
        );
        let ids = q.list_ids(JobState::Waiting, 0, 100).await.unwrap();
        let due = due_times(&q, &ids).await;
        assert!(
            (1..=5).contains(&due.len()),
            "{topology}: runs due at 0..=400 ms only: {due:?}"
        );
        assert!(
            due.iter().all(|d| *d <= due[0] + 450),
            "{topology}: no run due after the end: {due:?}"
        );
        audit_ok(&q).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_cron_expressions_and_zones_are_invalid_options() {
    let store = common::standalone().await;
    let q = queue_on(&store, "cron-bad").await;
    for (expr, tz) in [
        ("* * * *", "UTC"),
        ("*/0 * * * *", "UTC"),
        ("0 25 * * *", "UTC"),
        ("0 9 * * *", "Europe/Atlantis"),
        ("0 9 * * *", "+02:00"),
    ] {
        let e = q
            .upsert_scheduler(
                "bad",
                Schedule::new(Repeat::cron(expr, tz), "x", json!(null)),
            )
            .await
            .unwrap_err();
        assert_eq!(
            e.code(),
            ErrorCode::InvalidOption,
            "{expr:?} in {tz:?}: {e}"
        );
    }
    let e = q
        .upsert_scheduler(
            "bad",
            Schedule::new(Repeat::Every(Duration::ZERO), "x", json!(null)),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidOption);
    assert!(q.schedulers().await.unwrap().is_empty(), "nothing stored");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_schedulers_view_is_one_shape_in_ms_or_seconds() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "sched-view").await;
        q.upsert_scheduler(
            "every",
            Schedule {
                end_after: Some(Duration::from_secs(60)),
                limit: Some(3),
                ..Schedule::new(Repeat::Every(Duration::from_millis(1500)), "tick", json!(1))
            },
        )
        .await
        .unwrap();
        q.upsert_scheduler(
            "cron",
            Schedule::new(
                Repeat::Cron {
                    expr: "0 0 * * *".into(),
                    tz: "Europe/Paris".into(),
                },
                "nightly",
                json!(null),
            ),
        )
        .await
        .unwrap();
        let mut all = q.schedulers().await.unwrap();
        all.sort_by(|a, b| a.id.cmp(&b.id));
        let views: Vec<_> = all.iter().map(|s| s.view()).collect();
        let (cron, every) = (&views[0], &views[1]);
        assert_eq!((cron.id.as_str(), cron.name.as_str()), ("cron", "nightly"));
        assert_eq!(
            (cron.every, cron.limit, cron.ends_in),
            (None, None, None),
            "{topology}"
        );
        assert_eq!(
            (cron.cron.as_deref(), cron.tz.as_deref()),
            (Some("0 0 * * *"), Some("Europe/Paris"))
        );
        assert_eq!(
            (every.every, every.limit, every.count),
            (Some(1500), Some(3), 1),
            "{topology}"
        );
        // (The upsert enqueued its first run: `first_after` is 0.)
        let ends_in = every.ends_in.unwrap();
        assert!(
            (59_000..=60_000).contains(&ends_in),
            "{topology}: {ends_in}"
        );
        assert!(
            every.next_in.unwrap() <= 1500,
            "{topology}: {:?}",
            every.next_in
        );
        // Serialized with the names both bindings start from; seconds are the ms over 1000.
        let text = serde_json::to_value(every).unwrap();
        let keys: Vec<&str> = text
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut want = vec![
            "count", "cron", "ends_in", "every", "id", "limit", "name", "next_in", "tz",
        ];
        want.sort();
        let mut got = keys.clone();
        got.sort();
        assert_eq!(got, want);
        let secs = every.clone().in_seconds();
        assert_eq!((secs.every, secs.limit), (Some(1.5), Some(3)));
        assert_eq!(secs.ends_in, Some(ends_in as f64 / 1000.0));
        assert_eq!(serde_json::to_value(&secs).unwrap()["cron"], Value::Null);
    }
}
