//! Coalesced adds (`core/src/queue/coalesce.rs`) on real servers (standalone and a cluster,
//! guarded): one-job adds that arrive while another is in flight go as one `add.lua` call, each
//! caller told its own id and its own error; a lone add is one call.

mod common;

use common::{audit_ok, queue_on};

use emq::{ConnectOptions, ErrorCode, JobOptions, Queue};
use serde_json::json;
use std::collections::HashSet;

/// `n` adds started at once on one handle: the first goes alone, the others wait in its line.
async fn at_once(
    q: &Queue,
    jobs: Vec<(String, serde_json::Value, JobOptions)>,
) -> Vec<emq::Result<emq::JobId>> {
    futures::future::join_all(jobs.into_iter().map(|(name, data, o)| {
        let q = q.clone();
        async move { q.add(&name, data, o).await }
    }))
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_adds_each_get_their_own_id_data_and_options() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "co-own").await;
        let n = 600;
        let jobs = (0..n)
            .map(|i| {
                let o = JobOptions {
                    priority: if i % 3 == 1 { 1 + (i % 7) as u32 } else { 0 },
                    delay_ms: if i % 3 == 2 { 60_000 } else { 0 },
                    attempts: 1 + (i % 4) as u32,
                    ..JobOptions::default()
                };
                (format!("job-{i}"), json!({ "i": i }), o)
            })
            .collect();
        let ids: Vec<_> = at_once(&q, jobs)
            .await
            .into_iter()
            .map(|r| r.unwrap())
            .collect();
        let distinct: HashSet<_> = ids.iter().collect();
        assert_eq!(distinct.len(), n, "{topology}: every caller its own id");
        for (i, id) in ids.iter().enumerate() {
            let job = q
                .get(*id)
                .await
                .unwrap()
                .unwrap_or_else(|| panic!("{topology}: job {i} ({id}) was not written"));
            assert_eq!(job.name, format!("job-{i}"), "{topology}");
            assert_eq!(job.data, json!({ "i": i }), "{topology}");
            assert_eq!(job.attempts, 1 + (i % 4) as u32, "{topology}");
            let priority = if i % 3 == 1 { 1 + (i % 7) as u32 } else { 0 };
            assert_eq!(job.priority, priority, "{topology}: job {i}");
        }
        let c = q.counts().await.unwrap();
        assert_eq!(
            (c.waiting, c.prioritized, c.delayed),
            (200, 200, 200),
            "{topology}: {c:?}"
        );
        audit_ok(&q).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_refused_among_concurrent_adds_fails_alone_with_its_code() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "co-bad").await;
        q.set_group_max_waiting(Some(2), Some("g")).await.unwrap();
        let mut jobs: Vec<(String, serde_json::Value, JobOptions)> = Vec::new();
        for i in 0..40 {
            let o = match i {
                // past the group's cap of 2: the third and fourth of group g
                5 | 10 | 15 | 20 => JobOptions {
                    group: Some("g".into()),
                    ..JobOptions::default()
                },
                // a bad option
                25 => JobOptions {
                    attempts: 0,
                    ..JobOptions::default()
                },
                _ => JobOptions::default(),
            };
            jobs.push((format!("j{i}"), json!(i), o));
        }
        let out = at_once(&q, jobs).await;
        let mut full = 0;
        for (i, r) in out.iter().enumerate() {
            match (i, r) {
                (25, Err(e)) => assert_eq!(e.code(), ErrorCode::InvalidOption, "{topology}: {e}"),
                (5 | 10 | 15 | 20, Err(e)) => {
                    assert_eq!(e.code(), ErrorCode::GroupFull, "{topology}: {e}");
                    full += 1;
                }
                (_, Ok(id)) => {
                    let job = q.get(*id).await.unwrap().expect("written");
                    assert_eq!(job.data, json!(i), "{topology}");
                }
                (_, Err(e)) => panic!("{topology}: job {i} failed: {e}"),
            }
        }
        assert_eq!(full, 2, "{topology}: two of group g past its cap");
        let c = q.counts().await.unwrap();
        assert_eq!(c.waiting, 35 + 2, "{topology}: {c:?}");
        audit_ok(&q).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_adds_with_one_dedup_key_in_one_call_make_one_job() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "co-dedup").await;
        let dedup = |i: usize| JobOptions {
            dedup: Some("key".into()),
            ..if i == 0 {
                JobOptions::default()
            } else {
                JobOptions {
                    priority: 3,
                    ..JobOptions::default()
                }
            }
        };
        let mut jobs: Vec<(String, serde_json::Value, JobOptions)> = (0..20)
            .map(|i| (format!("j{i}"), json!(i), JobOptions::default()))
            .collect();
        jobs[7].2 = dedup(0);
        jobs[12].2 = dedup(1);
        let ids: Vec<_> = at_once(&q, jobs)
            .await
            .into_iter()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(ids[7], ids[12], "{topology}: both told the holder's id");
        let holder = q.get(ids[7]).await.unwrap().unwrap();
        assert_eq!(
            holder.data,
            json!(7),
            "{topology}: the first in line holds it"
        );
        let distinct: HashSet<_> = ids.iter().collect();
        assert_eq!(distinct.len(), 19, "{topology}");
        assert_eq!(q.counts().await.unwrap().waiting, 19, "{topology}");
        audit_ok(&q).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_coalesced_add_is_idempotent() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "co-retry").await;
        let given: Vec<_> = (0..50).map(|_| q.mint_id().unwrap()).collect();
        let jobs = |round: u32| {
            given
                .iter()
                .enumerate()
                .map(|(i, id)| {
                    let o = JobOptions {
                        id: Some(*id),
                        ..JobOptions::default()
                    };
                    (format!("j{i}"), json!({ "i": i, "round": round }), o)
                })
                .collect::<Vec<_>>()
        };
        for round in 0..2 {
            let ids: Vec<_> = at_once(&q, jobs(round))
                .await
                .into_iter()
                .map(|r| r.unwrap())
                .collect();
            assert_eq!(ids, given, "{topology}: round {round}");
        }
        for (i, id) in given.iter().enumerate() {
            let job = q.get(*id).await.unwrap().expect("written");
            assert_eq!(
                job.data,
                json!({ "i": i, "round": 0 }),
                "{topology}: unchanged"
            );
        }
        assert_eq!(q.counts().await.unwrap().waiting, 50, "{topology}");
        audit_ok(&q).await;
    }
}

/// The script calls (EVALSHA) a server has run.
async fn script_calls(url: &str) -> u64 {
    let client = redis::Client::open(url).unwrap();
    let mut c = client.get_multiplexed_async_connection().await.unwrap();
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut c)
        .await
        .unwrap();
    info.lines()
        .filter(|l| l.starts_with("cmdstat_evalsha:") || l.starts_with("cmdstat_eval:"))
        .filter_map(|l| {
            l.split("calls=")
                .nth(1)?
                .split(',')
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lone_add_is_one_call_and_a_thousand_concurrent_far_fewer() {
    let server = emq_harness::RedisServer::start().unwrap();
    let cluster = emq_harness::RedisCluster::start(1).unwrap();
    let setups = [
        (
            "standalone",
            ConnectOptions::new(server.url()),
            server.url(),
        ),
        (
            "cluster",
            ConnectOptions::seeds(cluster.urls()),
            cluster.urls()[0].clone(),
        ),
    ];
    for (topology, options, node) in setups {
        let q = Queue::connect(options.guarded(true), "co-calls")
            .await
            .unwrap();
        // (loads the scripts)
        q.add("warm", json!(0), JobOptions::default())
            .await
            .unwrap();
        let before = script_calls(&node).await;
        q.add("lone", json!(1), JobOptions::default())
            .await
            .unwrap();
        assert_eq!(
            script_calls(&node).await - before,
            1,
            "{topology}: a lone add"
        );
        let before = script_calls(&node).await;
        let jobs = (0..1000)
            .map(|i| ("many".to_string(), json!(i), JobOptions::default()))
            .collect();
        let ids: Vec<_> = at_once(&q, jobs)
            .await
            .into_iter()
            .map(|r| r.unwrap())
            .collect();
        let calls = script_calls(&node).await - before;
        assert!(
            calls <= 50,
            "{topology}: 1,000 concurrent adds took {calls} calls"
        );
        assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 1000, "{topology}");
        assert_eq!(q.counts().await.unwrap().waiting, 1002, "{topology}");
        audit_ok(&q).await;
        q.close().await.unwrap();
    }
}

/// A durable add whose call too few replicas acknowledged: every caller of the coalesced call
/// fails with `not_replicated`, its message naming that caller's own job, which is written on the
/// master (the shared standalone server has no replica).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_caller_of_a_durable_call_that_fell_short_fails_naming_its_own_job() {
    let url = emq_harness::shared_standalone().url();
    let opts = ConnectOptions::new(url)
        .guarded(true)
        .durable(1, std::time::Duration::from_millis(100));
    let q = Queue::connect(opts, &common::unique("co-dur"))
        .await
        .unwrap();
    let given: Vec<_> = (0..30).map(|_| q.mint_id().unwrap()).collect();
    let jobs = given
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let o = JobOptions {
                id: Some(*id),
                ..JobOptions::default()
            };
            (format!("d{i}"), json!(i), o)
        })
        .collect();
    let out = at_once(&q, jobs).await;
    for (i, r) in out.into_iter().enumerate() {
        let e = r.expect_err("no replica: not_replicated");
        assert_eq!(e.code(), ErrorCode::NotReplicated, "{e}");
        assert!(e.message().contains(&given[i].to_string()), "job {i}: {e}");
        let job = q
            .get(given[i])
            .await
            .unwrap()
            .expect("written on the master");
        assert_eq!(job.data, json!(i));
    }
    q.close().await.unwrap();
}
