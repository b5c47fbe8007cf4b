//! The queue registry (`{emq}:queues`, with its SCAN repair) and the worker registry
//! (`emq:{q}:workers` + `worker-info`, on the server's clock), on the standalone server and the
//! cluster.

mod common;

use emq::{registry, worker_registry, JobContext, JobOptions, Worker};
use serde_json::json;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_add_registers_the_queue_and_obliterate_takes_it_out() {
    for (topo, store) in common::both().await {
        let q = common::queue_on(&store, "reg-add").await;
        let name = q.name().clone();
        assert!(
            !registry::queues(&store).await.unwrap().contains(&name),
            "{topo}: registered before any use"
        );
        q.add("x", json!({}), JobOptions::default()).await.unwrap();
        assert!(
            registry::queues(&store).await.unwrap().contains(&name),
            "{topo}: not registered by its first add"
        );
        q.obliterate(true).await.unwrap();
        assert!(
            !registry::queues(&store).await.unwrap().contains(&name),
            "{topo}: still registered after obliterate"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repair_finds_queues_created_before_the_registry() {
    for (topo, store) in common::both().await {
        // Several queues, so on a cluster they spread over the masters.
        let mut made = Vec::new();
        for _ in 0..6 {
            let q = common::queue_on(&store, "reg-old").await;
            q.add("x", json!({}), JobOptions::default()).await.unwrap();
            // As if written by an emq before the registry: take it out again.
            q.unregister().await.unwrap();
            made.push(q);
        }
        let before = registry::queues(&store).await.unwrap();
        for q in &made {
            assert!(!before.contains(q.name()), "{topo}");
        }
        let report = registry::repair(&store).await.unwrap();
        assert!(report.complete, "{topo}: {report:?}");
        let want_nodes = if topo == "cluster" { 3 } else { 1 };
        assert_eq!(report.nodes, want_nodes, "{topo}");
        assert!(report.added >= made.len(), "{topo}: {report:?}");
        let after = registry::queues(&store).await.unwrap();
        for q in &made {
            assert!(
                after.contains(q.name()),
                "{topo}: {} not repaired",
                q.name()
            );
        }
        // A second repair finds nothing new.
        let again = registry::repair(&store).await.unwrap();
        assert_eq!(again.added, 0, "{topo}: {again:?}");
        for q in made {
            q.obliterate(true).await.unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_is_listed_while_it_runs_and_leaves_when_it_closes() {
    for (topo, store) in common::both().await {
        let q = common::queue_on(&store, "reg-work").await;
        assert!(q.workers().await.unwrap().is_empty(), "{topo}");
        let worker = Worker::builder(q.clone())
            .concurrency(3)
            .handler(|_job: JobContext| async move { Ok(json!(null)) })
            .run()
            .unwrap();
        let until = std::time::Instant::now() + Duration::from_secs(5);
        let listed = loop {
            let ws = q.workers().await.unwrap();
            if !ws.is_empty() || std::time::Instant::now() > until {
                break ws;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert_eq!(listed.len(), 1, "{topo}: {listed:?}");
        let w = &listed[0];
        assert_eq!(w.pid, std::process::id(), "{topo}");
        assert_eq!(w.concurrency, 3, "{topo}");
        assert_eq!(w.language, "rust", "{topo}");
        assert_eq!(w.queue, q.name().as_str(), "{topo}");
        assert!(
            w.started_ms > 0 && w.beat_ms >= w.started_ms,
            "{topo}: {w:?}"
        );
        assert_eq!(
            w.lapse_ms - w.beat_ms,
            worker_registry::TTL.as_millis() as u64,
            "{topo}: the lapse is the server's beat + TTL"
        );
        // The heartbeat also registers the queue.
        assert!(
            registry::queues(&store).await.unwrap().contains(q.name()),
            "{topo}"
        );
        worker.close().await.unwrap();
        assert!(
            q.workers().await.unwrap().is_empty(),
            "{topo}: still listed after close"
        );
        q.obliterate(true).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_worker_leaves_and_a_silent_one_lapses() {
    for (topo, store) in common::both().await {
        let q = common::queue_on(&store, "reg-lapse").await;
        let worker = Worker::builder(q.clone())
            .handler(|_job: JobContext| async move { Ok(json!(null)) })
            .run()
            .unwrap();
        common::wait_until("registration", Duration::from_secs(5), || {
            let q = q.clone();
            async move { !q.workers().await.unwrap().is_empty() }
        })
        .await;
        drop(worker);
        common::wait_until("a dropped worker leaves", Duration::from_secs(5), || {
            let q = q.clone();
            async move { q.workers().await.unwrap().is_empty() }
        })
        .await;

        // A registration nobody renews is gone once its TTL passes on the server's clock, and the
        // next beat of another worker prunes it.
        worker_registry::beat(&q, "silent", 1, 0, Duration::from_millis(200))
            .await
            .unwrap();
        worker_registry::beat(&q, "alive", 2, 1, Duration::from_secs(60))
            .await
            .unwrap();
        let ids = |ws: Vec<emq::WorkerInfo>| ws.into_iter().map(|w| w.id).collect::<Vec<_>>();
        assert_eq!(
            ids(q.workers().await.unwrap()),
            ["silent", "alive"],
            "{topo}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(ids(q.workers().await.unwrap()), ["alive"], "{topo}");
        worker_registry::beat(&q, "alive", 2, 1, Duration::from_secs(60))
            .await
            .unwrap();
        let mut conn = store.conn();
        let left: Vec<String> = redis::cmd("HKEYS")
            .arg(&q.keys().worker_info)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(left, ["alive"], "{topo}: the lapsed entry was not pruned");
        assert!(worker_registry::remove(&q, "alive").await.unwrap());
        assert!(q.workers().await.unwrap().is_empty(), "{topo}");
        q.obliterate(true).await.unwrap();
    }
}
