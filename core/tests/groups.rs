//! Per-group rate limits on real servers (standalone and a 3-master cluster, guarded): a busy group
//! gets at most M starts per window while other groups, added under load, keep flowing; the idle
//! wake-up fast path honours the limit too; nothing is lost and the group bookkeeping empties.

mod common;

use common::{audit_ok, queue_on, wait_until};

use emq::{
    GroupRateLimit, Job, JobContext, JobOptions, JobState, Moved, NewJob, Queue, Worker,
    WorkerHandle, WorkerOptions,
};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn grouped(group: &str, n: usize) -> Vec<NewJob> {
    (0..n)
        .map(|i| NewJob {
            name: group.into(),
            data: json!(i),
            options: JobOptions {
                group: Some(group.into()),
                ..JobOptions::default()
            },
        })
        .collect()
}

/// Replays the limiter: a group's window opens at its first start and lasts `window_ms`; the next
/// opens at the first start after it. Returns the starts in each window.
fn starts_per_window(mut starts: Vec<u64>, window_ms: u64) -> Vec<usize> {
    starts.sort();
    let mut out = Vec::new();
    let mut i = 0;
    while i < starts.len() {
        let end = starts[i] + window_ms;
        let n = starts[i..].iter().take_while(|s| **s < end).count();
        out.push(n);
        i += n;
    }
    out
}

async fn all_jobs(q: &Queue) -> Vec<Job> {
    let ids = q.list_ids(JobState::Completed, 0, 10_000).await.unwrap();
    let mut jobs = Vec::new();
    for id in ids {
        jobs.push(q.get(id).await.unwrap().unwrap());
    }
    jobs
}

async fn group_entries(q: &Queue) -> i64 {
    redis::cmd("HLEN")
        .arg(&q.keys().groups)
        .query_async(&mut q.store().conn())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_group_is_limited_while_other_groups_flow() {
    const M: u32 = 3;
    const WINDOW: u64 = 400;
    const BUSY: usize = 24;
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "groups").await;
        q.set_group_rate_limit(Some(GroupRateLimit {
            max: M,
            window: Duration::from_millis(WINDOW),
        }))
        .await
        .unwrap();
        // The busy group first, so its jobs sit at the head of wait.
        q.add_bulk(grouped("busy", BUSY)).await.unwrap();
        let mut workers: Vec<WorkerHandle> = Vec::new();
        for _ in 0..3 {
            workers.push(
                Worker::builder(q.clone())
                    .options(WorkerOptions {
                        concurrency: 4,
                        block_timeout: Duration::from_millis(300),
                        ..WorkerOptions::default()
                    })
                    .handler(|_job: JobContext| async {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        Ok(Value::Null)
                    })
                    .run()
                    .unwrap(),
            );
        }
        // Under load: other groups (2 jobs each, within their limit) and ungrouped jobs keep
        // arriving while the busy group is throttled.
        let mut others = 0;
        for round in 0..5 {
            let mut batch = Vec::new();
            for g in 0..8 {
                batch.extend(grouped(&format!("user-{round}-{g}"), 2));
            }
            batch.extend((0..4).map(|i| NewJob {
                name: "plain".into(),
                data: json!(i),
                options: JobOptions::default(),
            }));
            others += batch.len();
            q.add_bulk(batch).await.unwrap();
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let total = BUSY + others;
        let started = Instant::now();
        wait_until("every job done", Duration::from_secs(30), || async {
            q.counts().await.unwrap().completed == total as u64
        })
        .await;
        for w in workers {
            w.close().await.unwrap();
        }
        let jobs = all_jobs(&q).await;
        assert_eq!(jobs.len(), total, "{topology}: no job lost");
        let busy: Vec<&Job> = jobs.iter().filter(|j| j.name == "busy").collect();
        let windows = starts_per_window(
            busy.iter().map(|j| j.processed_ms.unwrap()).collect(),
            WINDOW,
        );
        assert!(
            windows.iter().all(|n| *n <= M as usize),
            "{topology}: at most {M} busy starts per window: {windows:?}"
        );
        assert!(
            windows.len() >= BUSY / M as usize,
            "{topology}: {BUSY} jobs need {} windows: {windows:?}",
            BUSY / M as usize
        );
        let busy_done = busy.iter().map(|j| j.finished_ms.unwrap()).max().unwrap();
        let others_done = jobs
            .iter()
            .filter(|j| j.name != "busy")
            .map(|j| j.finished_ms.unwrap())
            .max()
            .unwrap();
        assert!(
            others_done + 3 * WINDOW <= busy_done,
            "{topology}: the other groups finished ({others_done}) well before the busy one ({busy_done}); took {:?}",
            started.elapsed()
        );
        for g in 0..8 {
            let name = format!("user-4-{g}");
            let n = jobs
                .iter()
                .filter(|j| j.options.get("group").and_then(Value::as_str) == Some(&name))
                .count();
            assert_eq!(n, 2, "{topology}: {name}");
        }
        audit_ok(&q).await;
        assert_eq!(
            group_entries(&q).await,
            0,
            "{topology}: started jobs leave groups"
        );
        q.set_group_rate_limit(None).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_idle_fast_path_honours_the_group_limit() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "groups-idle").await;
        q.set_group_rate_limit(Some(GroupRateLimit {
            max: 1,
            window: Duration::from_millis(500),
        }))
        .await
        .unwrap();
        let w = Worker::builder(q.clone())
            .options(WorkerOptions {
                concurrency: 4,
                block_timeout: Duration::from_millis(300),
                ..WorkerOptions::default()
            })
            .handler(|_job: JobContext| async { Ok(Value::Null) })
            .run()
            .unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        // Each add finds wait empty, so its marker names the job for the one-call claim.
        let mut ids = Vec::new();
        for i in 0..3 {
            ids.push(
                q.add("solo", json!(i), grouped("solo", 1).remove(0).options)
                    .await
                    .unwrap(),
            );
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
        // A waiting grouped job that is removed leaves the groups hash.
        let gone = q
            .add(
                "solo",
                json!("removed"),
                JobOptions {
                    group: Some("solo".into()),
                    delay_ms: 60_000,
                    ..JobOptions::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(q.remove(gone).await.unwrap(), Moved::Moved);
        wait_until("3 done", Duration::from_secs(10), || async {
            q.counts().await.unwrap().completed == 3
        })
        .await;
        w.close().await.unwrap();
        let mut starts = Vec::new();
        for id in ids {
            starts.push(q.get(id).await.unwrap().unwrap().processed_ms.unwrap());
        }
        starts.sort();
        assert!(
            starts.windows(2).all(|s| s[1] >= s[0] + 500),
            "{topology}: one start per 500 ms window: {starts:?}"
        );
        audit_ok(&q).await;
        assert_eq!(group_entries(&q).await, 0, "{topology}");
        let e = q
            .set_group_rate_limit(Some(GroupRateLimit {
                max: 0,
                window: Duration::from_millis(1),
            }))
            .await
            .unwrap_err();
        assert_eq!(e.code(), emq::ErrorCode::InvalidOption);
        let e = q
            .add(
                "x",
                json!(0),
                JobOptions {
                    group: Some(String::new()),
                    ..JobOptions::default()
                },
            )
            .await
            .unwrap_err();
        assert_eq!(e.code(), emq::ErrorCode::InvalidOption);
    }
}

/// A retry (and a stall recovery) starts again under its group's limit: with one start per window,
/// a failing job's second attempt waits for a new window like any other start of its group.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_count_against_the_group_limit() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "groups-retry").await;
        q.set_group_rate_limit(Some(GroupRateLimit {
            max: 1,
            window: Duration::from_millis(500),
        }))
        .await
        .unwrap();
        let mut jobs = grouped("g", 2);
        jobs[0].options.attempts = 2;
        jobs[0].data = json!("flaky");
        q.add_bulk(jobs).await.unwrap();
        let starts = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = starts.clone();
        let w = Worker::builder(q.clone())
            .options(WorkerOptions {
                concurrency: 4,
                block_timeout: Duration::from_millis(300),
                ..WorkerOptions::default()
            })
            .handler(move |job: JobContext| {
                let seen = seen.clone();
                async move {
                    seen.lock().unwrap().push(Instant::now());
                    if job.data() == &json!("flaky") && job.job().attempts_made == 0 {
                        return Err(emq::HandlerError::new("first attempt fails"));
                    }
                    Ok(Value::Null)
                }
            })
            .run()
            .unwrap();
        wait_until("2 done", Duration::from_secs(10), || async {
            q.counts().await.unwrap().completed == 2
        })
        .await;
        w.close().await.unwrap();
        let mut starts = starts.lock().unwrap().clone();
        starts.sort();
        assert_eq!(
            starts.len(),
            3,
            "{topology}: two runs of the flaky job, one of the other"
        );
        for pair in starts.windows(2) {
            let gap = pair[1] - pair[0];
            assert!(
                gap >= Duration::from_millis(400),
                "{topology}: starts of one group are a window apart, saw {gap:?}"
            );
        }
        audit_ok(&q).await;
        assert_eq!(group_entries(&q).await, 0, "{topology}");
        q.set_group_rate_limit(None).await.unwrap();
    }
}
