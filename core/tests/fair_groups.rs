//! Fair groups on real servers (standalone and a 3-master cluster, guarded): round-robin between
//! groups and the ungrouped jobs, weights, a per-group concurrency cap across workers, a cap on a
//! group's waiting jobs (`group_full`, nothing written), pausing one group, priorities and LIFO
//! inside a group, the groups view, and the audit's group invariants after each.

mod common;

use common::{audit_ok, queue_on, wait_until};

use emq::{
    ErrorCode, GroupInfo, JobContext, JobOptions, JobState, NewJob, Queue, Worker, WorkerHandle,
    WorkerOptions,
};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn job(group: Option<&str>, i: usize) -> NewJob {
    NewJob {
        name: group.unwrap_or("plain").into(),
        data: json!(i),
        options: JobOptions {
            group: group.map(str::to_string),
            ..JobOptions::default()
        },
    }
}

fn grouped(group: &str, n: usize) -> Vec<NewJob> {
    (0..n).map(|i| job(Some(group), i)).collect()
}

fn one_at_a_time() -> WorkerOptions {
    WorkerOptions {
        concurrency: 1,
        prefetch: Some(1),
        block_timeout: Duration::from_millis(200),
        ..WorkerOptions::default()
    }
}

/// A worker that records each job's name (its group) as it starts, in order.
fn recording(q: &Queue, opts: WorkerOptions, log: Arc<Mutex<Vec<String>>>) -> WorkerHandle {
    Worker::builder(q.clone())
        .options(opts)
        .handler(move |job: JobContext| {
            let log = log.clone();
            async move {
                log.lock().unwrap().push(job.job().name.clone());
                Ok(Value::Null)
            }
        })
        .run()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_group_is_not_behind_a_big_ones_backlog() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "fair").await;
        q.add_bulk(grouped("big", 300)).await.unwrap();
        q.add_bulk(vec![job(Some("small"), 0)]).await.unwrap();
        q.add_bulk(vec![job(None, 0)]).await.unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let w = recording(&q, one_at_a_time(), log.clone());
        wait_until("all done", Duration::from_secs(30), || async {
            q.counts().await.unwrap().completed == 302
        })
        .await;
        w.close().await.unwrap();
        let order = log.lock().unwrap().clone();
        let at = |name: &str| order.iter().position(|n| n == name).unwrap();
        // Three groups are active (big, small, the ungrouped jobs): each gets its turn within
        // the first three starts.
        assert!(
            at("small") < 3,
            "{topology}: small started at {}: {:?}",
            at("small"),
            &order[..5]
        );
        assert!(
            at("plain") < 3,
            "{topology}: plain started at {}: {:?}",
            at("plain"),
            &order[..5]
        );
        audit_ok(&q).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weights_share_the_workers_three_to_one() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "weights").await;
        q.set_group_weight("heavy", 3).await.unwrap();
        let mut jobs = grouped("heavy", 400);
        jobs.extend(grouped("light", 400));
        q.add_bulk(jobs).await.unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let w = recording(&q, one_at_a_time(), log.clone());
        wait_until("400 started", Duration::from_secs(30), || async {
            log.lock().unwrap().len() >= 400
        })
        .await;
        w.close().await.unwrap();
        let order = log.lock().unwrap().clone();
        let heavy = order[..400].iter().filter(|n| *n == "heavy").count();
        // 3:1 of 400 is 300; within 5 %.
        assert!(
            (285..=315).contains(&heavy),
            "{topology}: heavy ran {heavy} of the first 400"
        );
        q.drain(true).await.unwrap();
        audit_ok(&q).await;
    }
}

/// A queue that ran with no group setting reads only running counts in its claims; a weight set
/// afterwards must be seen by the next claim all the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_weight_set_after_the_queue_ran_without_settings_holds() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "weights-late").await;
        q.add_bulk(grouped("light", 5)).await.unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let w = recording(&q, one_at_a_time(), log.clone());
        wait_until("the first jobs done", Duration::from_secs(30), || async {
            q.counts().await.unwrap().completed == 5
        })
        .await;
        w.close().await.unwrap();
        q.set_group_weight("heavy", 3).await.unwrap();
        let mut jobs = grouped("heavy", 400);
        jobs.extend(grouped("light", 400));
        q.add_bulk(jobs).await.unwrap();
        log.lock().unwrap().clear();
        let w = recording(&q, one_at_a_time(), log.clone());
        wait_until("400 started", Duration::from_secs(30), || async {
            log.lock().unwrap().len() >= 400
        })
        .await;
        w.close().await.unwrap();
        let order = log.lock().unwrap().clone();
        let heavy = order[..400].iter().filter(|n| *n == "heavy").count();
        assert!(
            (285..=315).contains(&heavy),
            "{topology}: heavy ran {heavy} of the first 400"
        );
        q.drain(true).await.unwrap();
        audit_ok(&q).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_never_runs_more_than_its_cap_across_workers() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "cap").await;
        q.set_group_concurrency(Some(2), None).await.unwrap();
        q.set_group_concurrency(Some(1), Some("solo"))
            .await
            .unwrap();
        let mut jobs = grouped("a", 30);
        jobs.extend(grouped("solo", 10));
        jobs.extend(grouped("b", 30));
        jobs.extend((0..20).map(|i| job(None, i)));
        q.add_bulk(jobs).await.unwrap();
        let running: Arc<Mutex<HashMap<String, (usize, usize)>>> = Arc::default();
        let mut workers = Vec::new();
        for _ in 0..3 {
            let running = running.clone();
            workers.push(
                Worker::builder(q.clone())
                    .options(WorkerOptions {
                        concurrency: 10,
                        block_timeout: Duration::from_millis(200),
                        ..WorkerOptions::default()
                    })
                    .handler(move |job: JobContext| {
                        let running = running.clone();
                        async move {
                            let name = job.job().name.clone();
                            {
                                let mut r = running.lock().unwrap();
                                let e = r.entry(name.clone()).or_default();
                                e.0 += 1;
                                e.1 = e.1.max(e.0);
                            }
                            tokio::time::sleep(Duration::from_millis(15)).await;
                            running.lock().unwrap().get_mut(&name).unwrap().0 -= 1;
                            Ok(Value::Null)
                        }
                    })
                    .run()
                    .unwrap(),
            );
        }
        wait_until("all done", Duration::from_secs(30), || async {
            q.counts().await.unwrap().completed == 90
        })
        .await;
        for w in workers {
            w.close().await.unwrap();
        }
        let r = running.lock().unwrap().clone();
        assert!(r["a"].1 <= 2 && r["b"].1 <= 2, "{topology}: {r:?}");
        assert_eq!(r["solo"].1, 1, "{topology}: {r:?}");
        assert!(
            r["plain"].1 > 2,
            "{topology}: ungrouped jobs are not capped: {r:?}"
        );
        audit_ok(&q).await;
        let groups = q.groups(0, 100).await.unwrap();
        assert!(
            groups.iter().all(|g| g.running == 0 && g.waiting == 0),
            "{groups:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_freed_slot_lets_the_next_job_of_a_capped_group_go_at_once() {
    let store = common::standalone().await;
    let q = queue_on(&store, "wake").await;
    q.set_group_concurrency(Some(1), Some("g")).await.unwrap();
    q.add_bulk(grouped("g", 5)).await.unwrap();
    let stamps = Arc::new(Mutex::new(Vec::new()));
    let s = stamps.clone();
    let w = Worker::builder(q.clone())
        .options(WorkerOptions {
            concurrency: 4,
            // A long block: a freed slot must wake the worker, not wait for its poll.
            block_timeout: Duration::from_secs(5),
            ..WorkerOptions::default()
        })
        .handler(move |_job: JobContext| {
            let s = s.clone();
            async move {
                s.lock().unwrap().push(std::time::Instant::now());
                tokio::time::sleep(Duration::from_millis(50)).await;
                Ok(Value::Null)
            }
        })
        .run()
        .unwrap();
    wait_until("all done", Duration::from_secs(10), || async {
        q.counts().await.unwrap().completed == 5
    })
    .await;
    w.close().await.unwrap();
    let stamps = stamps.lock().unwrap().clone();
    for pair in stamps.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(
            gap < Duration::from_millis(1_000),
            "the next job waited {gap:?}"
        );
    }
    audit_ok(&q).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_group_refuses_adds_and_writes_nothing() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "full").await;
        q.set_group_max_waiting(Some(3), Some("g")).await.unwrap();
        q.add_bulk(grouped("g", 3)).await.unwrap();
        let err = q.add_bulk(vec![job(Some("g"), 9)]).await.unwrap_err();
        assert_eq!(err.code(), ErrorCode::GroupFull, "{topology}: {err}");
        // A batch that would pass the cap is refused whole, its other jobs too.
        let mut batch = grouped("other", 2);
        batch.push(job(Some("g"), 10));
        let err = q.add_bulk(batch).await.unwrap_err();
        assert_eq!(err.code(), ErrorCode::GroupFull, "{topology}: {err}");
        let c = q.counts().await.unwrap();
        assert_eq!(c.waiting, 3, "{topology}: nothing written: {c:?}");
        // The default for every group, and a delayed job does not count until due.
        q.set_group_max_waiting(Some(1), None).await.unwrap();
        q.add_bulk(vec![job(Some("h"), 0)]).await.unwrap();
        assert_eq!(
            q.add_bulk(vec![job(Some("h"), 1)])
                .await
                .unwrap_err()
                .code(),
            ErrorCode::GroupFull
        );
        q.add_bulk(vec![NewJob {
            options: JobOptions {
                group: Some("h".into()),
                delay_ms: 60_000,
                ..JobOptions::default()
            },
            ..job(Some("h"), 2)
        }])
        .await
        .unwrap();
        // Lifted: adds land again.
        q.set_group_max_waiting(None, Some("g")).await.unwrap();
        q.set_group_max_waiting(None, None).await.unwrap();
        q.add_bulk(vec![job(Some("g"), 11)]).await.unwrap();
        assert_eq!(q.counts().await.unwrap().waiting, 5, "{topology}");
        audit_ok(&q).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_group_waits_while_the_rest_runs() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "pausegroup").await;
        q.pause_group("held").await.unwrap();
        let mut jobs = grouped("held", 5);
        jobs.extend(grouped("free", 5));
        q.add_bulk(jobs).await.unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let w = recording(&q, one_at_a_time(), log.clone());
        wait_until("free done", Duration::from_secs(10), || async {
            q.counts().await.unwrap().completed == 5
        })
        .await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(
            log.lock().unwrap().iter().all(|n| n == "free"),
            "{topology}: {:?}",
            log.lock().unwrap()
        );
        let held = q.groups(0, 10).await.unwrap();
        let h = held.iter().find(|g| g.name == "held").unwrap();
        assert!(h.paused && h.waiting == 5, "{topology}: {h:?}");
        q.resume_group("held").await.unwrap();
        wait_until("held done", Duration::from_secs(10), || async {
            q.counts().await.unwrap().completed == 10
        })
        .await;
        w.close().await.unwrap();
        audit_ok(&q).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn priorities_and_lifo_order_jobs_inside_a_group() {
    let store = common::standalone().await;
    let q = queue_on(&store, "order").await;
    let with = |i: usize, priority: u32, lifo: bool| NewJob {
        name: format!("j{i}"),
        data: json!(i),
        options: JobOptions {
            group: Some("g".into()),
            priority,
            lifo,
            ..JobOptions::default()
        },
    };
    q.add_bulk(vec![with(0, 0, false)]).await.unwrap();
    q.add_bulk(vec![with(1, 0, false)]).await.unwrap();
    q.add_bulk(vec![with(2, 5, false)]).await.unwrap();
    q.add_bulk(vec![with(3, 1, false)]).await.unwrap();
    q.add_bulk(vec![with(4, 0, true)]).await.unwrap();
    let listed: Vec<String> = q
        .list(JobState::Waiting, 0, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|j| j.name)
        .collect();
    assert_eq!(listed, ["j3", "j2", "j4", "j0", "j1"]);
    let log = Arc::new(Mutex::new(Vec::new()));
    let w = recording(&q, one_at_a_time(), log.clone());
    wait_until("all done", Duration::from_secs(10), || async {
        q.counts().await.unwrap().completed == 5
    })
    .await;
    w.close().await.unwrap();
    assert_eq!(*log.lock().unwrap(), ["j3", "j2", "j4", "j0", "j1"]);
    audit_ok(&q).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_groups_view_reads_back_every_setting() {
    let store = common::standalone().await;
    let q = queue_on(&store, "view").await;
    q.add_bulk(grouped("b", 2)).await.unwrap();
    q.add_bulk(grouped("a", 1)).await.unwrap();
    q.set_group_weight("a", 7).await.unwrap();
    q.set_group_concurrency(Some(4), Some("a")).await.unwrap();
    q.set_group_max_waiting(Some(9), Some("a")).await.unwrap();
    q.set_group_concurrency(Some(2), None).await.unwrap();
    q.pause_group("b").await.unwrap();
    let groups = q.groups(0, 10).await.unwrap();
    assert_eq!(
        groups,
        vec![
            GroupInfo {
                name: "a".into(),
                waiting: 1,
                running: 0,
                weight: 7,
                concurrency: Some(4),
                max_waiting: Some(9),
                paused: false,
            },
            GroupInfo {
                name: "b".into(),
                waiting: 2,
                running: 0,
                weight: 1,
                concurrency: Some(2),
                max_waiting: None,
                paused: true,
            },
        ]
    );
    assert_eq!(q.groups(1, 10).await.unwrap().len(), 1);
    // Bad input: a clear, typed error, nothing changed.
    for e in [
        q.set_group_weight("a", 0).await.unwrap_err(),
        q.set_group_weight("a", 1_001).await.unwrap_err(),
        q.set_group_concurrency(Some(0), None).await.unwrap_err(),
        q.set_group_max_waiting(Some(0), Some("a"))
            .await
            .unwrap_err(),
        q.pause_group("").await.unwrap_err(),
        q.pause_group("a\0b").await.unwrap_err(),
        q.add_bulk(vec![job(Some("x\0y"), 0)]).await.unwrap_err(),
    ] {
        assert_eq!(e.code(), ErrorCode::InvalidOption, "{e}");
    }
    assert_eq!(q.groups(0, 10).await.unwrap(), groups);
    // Lifting a per-group rate limit forgets the windows, not the groups' books.
    q.set_group_rate_limit(Some(emq::GroupRateLimit {
        max: 1,
        window: Duration::from_secs(1),
    }))
    .await
    .unwrap();
    q.set_group_rate_limit(None).await.unwrap();
    assert_eq!(q.groups(0, 10).await.unwrap(), groups);
    audit_ok(&q).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_remove_and_retries_keep_the_group_books() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "books").await;
        q.set_group_concurrency(Some(1), Some("g")).await.unwrap();
        let mut jobs = grouped("g", 6);
        for j in &mut jobs {
            j.options.attempts = 3;
        }
        let ids = q.add_bulk(jobs).await.unwrap();
        q.cancel(ids[0], "no").await.unwrap();
        assert_eq!(q.remove(ids[1]).await.unwrap(), emq::Moved::Moved);
        q.change_priority(ids[5], 1).await.unwrap();
        assert_eq!(
            q.get(ids[2]).await.unwrap().unwrap().state,
            Some(JobState::Waiting)
        );
        audit_ok(&q).await;
        let fails = Arc::new(Mutex::new(0));
        let f = fails.clone();
        let w = Worker::builder(q.clone())
            .options(WorkerOptions {
                concurrency: 4,
                block_timeout: Duration::from_millis(200),
                ..WorkerOptions::default()
            })
            .handler(move |job: JobContext| {
                let f = f.clone();
                async move {
                    let mut n = f.lock().unwrap();
                    if job.job().attempts_made == 0 && *n < 2 {
                        *n += 1;
                        return Err(emq::HandlerError::new("once more"));
                    }
                    Ok(Value::Null)
                }
            })
            .run()
            .unwrap();
        wait_until("all done", Duration::from_secs(10), || async {
            q.counts().await.unwrap().completed == 4
        })
        .await;
        w.close().await.unwrap();
        audit_ok(&q).await;
        let g = &q.groups(0, 10).await.unwrap()[0];
        assert_eq!((g.waiting, g.running), (0, 0), "{topology}: {g:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grouped_jobs_events_name_its_group() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "events").await;
        let mut events = q.events(None).await.unwrap();
        let mut jobs = grouped("tenant-7", 2);
        jobs[1].options.attempts = 2;
        jobs.push(job(None, 0));
        let ids = q.add_bulk(jobs).await.unwrap();
        let flaky = ids[1];
        let w = Worker::builder(q.clone())
            .options(one_at_a_time())
            .handler(move |job: JobContext| async move {
                if job.id() == flaky && job.job().attempts_made == 0 {
                    return Err(emq::HandlerError::new("again"));
                }
                Ok(Value::Null)
            })
            .run()
            .unwrap();
        wait_until("all done", Duration::from_secs(10), || async {
            q.counts().await.unwrap().completed == 3
        })
        .await;
        w.close().await.unwrap();
        let mut seen: Vec<(String, Option<String>, Option<String>)> = Vec::new();
        loop {
            let batch = events
                .next_batch(Duration::from_millis(100), 100)
                .await
                .unwrap();
            if batch.is_empty() {
                break;
            }
            for e in batch {
                seen.push((
                    e.kind.clone(),
                    e.job_id.map(|id| id.to_string()),
                    e.fields.get("group").cloned(),
                ));
            }
        }
        for kind in ["added", "active", "completed", "retrying"] {
            for id in [ids[0], ids[1]] {
                if kind == "retrying" && id == ids[0] {
                    continue;
                }
                assert!(
                    seen.iter().any(|(k, j, g)| k == kind
                        && j.as_deref() == Some(&id.to_string())
                        && g.as_deref() == Some("tenant-7")),
                    "{topology}: a {kind} event of {id} with its group: {seen:?}"
                );
            }
        }
        assert!(
            seen.iter()
                .filter(|(_, j, _)| j.as_deref() == Some(&ids[2].to_string()))
                .all(|(_, _, g)| g.is_none()),
            "{topology}: the ungrouped job's events name no group"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_group_gauges_only_when_asked() {
    let store = common::standalone().await;
    let q = queue_on(&store, "gauges").await;
    q.add_bulk(grouped("acme \"inc\"", 3)).await.unwrap();
    let plain = emq::prometheus_text(&[q.metrics().await.unwrap()]);
    assert!(!plain.contains("emq_group_"), "{plain}");
    let text = emq::prometheus_text(&[q.metrics_with_groups(100).await.unwrap()]);
    let line = format!(
        "emq_group_waiting{{queue=\"{}\",group=\"acme \\\"inc\\\"\"}} 3",
        q.name()
    );
    assert!(text.contains(&line), "{line} in:\n{text}");
    assert!(text.contains("# TYPE emq_group_running gauge"), "{text}");
}
