//! `Queue::obliterate` deletes every key of the queue: jobs of every state, their logs, and the
//! queue-wide keys (schedulers, limits, metrics, the cancels stream, the migration map…).

mod common;

use emq::limits::RateLimit;
use emq::scheduler::{Repeat, Schedule};
use emq::{JobContext, JobOptions, Worker};
use serde_json::json;
use std::time::Duration;

/// The keys left under `emq:{<queue>}:` on the node that owns the queue's slot.
async fn keys_of(url: &str, q: &emq::Queue) -> Vec<String> {
    let client = redis::Client::open(url).unwrap();
    let mut c = client.get_multiplexed_async_connection().await.unwrap();
    let pattern = format!("emq:{}:*", q.name().braced());
    let mut cursor = 0u64;
    let mut out = Vec::new();
    for _ in 0..10_000 {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(&pattern)
            .arg("COUNT")
            .arg(1000)
            .query_async(&mut c)
            .await
            .unwrap();
        out.extend(keys);
        cursor = next;
        if cursor == 0 {
            break;
        }
    }
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn obliterate_leaves_no_key_of_the_queue() {
    for (topo, store) in common::both().await {
        let q = common::queue_on(&store, "obl").await;
        let url = match topo {
            "standalone" => emq_harness::shared_standalone().url(),
            _ => emq_harness::shared_cluster().node_for_slot(q.name().slot()),
        };
        let done = q
            .add(
                "done",
                json!(1),
                JobOptions {
                    remove_on_complete: emq::Removal::Keep,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        q.add(
            "later",
            json!(2),
            JobOptions {
                delay_ms: 60_000,
                ..Default::default()
            },
        )
        .await
        .unwrap();
        q.add(
            "urgent",
            json!(3),
            JobOptions {
                priority: 1,
                ..Default::default()
            },
        )
        .await
        .unwrap();
        let doomed = q
            .add("doomed", json!(4), JobOptions::default())
            .await
            .unwrap();
        q.upsert_scheduler(
            "every-minute",
            Schedule::new(Repeat::Every(Duration::from_secs(60)), "tick", json!(null)),
        )
        .await
        .unwrap();
        q.set_rate_limit(Some(RateLimit {
            max: 1000,
            window: Duration::from_secs(1),
        }))
        .await
        .unwrap();
        let w = Worker::builder(q.clone())
            .handler(|job: JobContext| async move {
                job.log("a line").await.unwrap();
                if job.job().name == "doomed" {
                    Err(emq::HandlerError::new("no"))
                } else {
                    Ok(json!("ok"))
                }
            })
            .run()
            .unwrap();
        common::wait_until(
            "done and doomed finished",
            Duration::from_secs(10),
            || async {
                let c = q.counts().await.unwrap();
                c.completed >= 1 && c.failed == 1
            },
        )
        .await;
        w.close().await.unwrap();
        assert!(q.get(done).await.unwrap().is_some() && q.get(doomed).await.unwrap().is_some());
        let waiting = q
            .add("cancel-me", json!(5), JobOptions::default())
            .await
            .unwrap();
        q.cancel(waiting, "test").await.unwrap();
        // The migration map, as `emq migrate` leaves it.
        let _: () = redis::cmd("HSET")
            .arg(q.name().key(emq::keyspace::Family::Migrated).as_str())
            .arg("bull:src:1")
            .arg("x")
            .query_async(&mut store.conn())
            .await
            .unwrap();
        assert!(
            !keys_of(&url, &q).await.is_empty(),
            "{topo}: the queue has keys before"
        );
        q.obliterate(true).await.unwrap();
        assert_eq!(
            keys_of(&url, &q).await,
            Vec::<String>::new(),
            "{topo}: keys left by obliterate"
        );
    }
}
