//! `Queue::wait` shares one events follower per queue handle: many concurrent waits cost one
//! connection, and the follower ends once no wait is left.

mod common;

use emq::{ConnectOptions, JobContext, JobOptions, Queue, Worker};
use emq_harness::RedisServer;
use serde_json::json;
use std::time::Duration;

async fn connected_clients(url: &str) -> u64 {
    let client = redis::Client::open(url).unwrap();
    let mut c = client.get_multiplexed_async_connection().await.unwrap();
    let info: String = redis::cmd("INFO")
        .arg("clients")
        .query_async(&mut c)
        .await
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("connected_clients:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("connected_clients")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_waits_share_one_follower_and_it_ends_when_idle() {
    // A private server, so the client count is this test's alone.
    let server = RedisServer::start().expect("redis-server");
    let url = server.url();
    let q = Queue::connect(ConnectOptions::new(url.clone()).guarded(true), "waits")
        .await
        .unwrap();
    let mut ids = Vec::new();
    for i in 0..50 {
        ids.push(q.add("w", json!(i), JobOptions::default()).await.unwrap());
    }
    let before = connected_clients(&url).await;
    let waits: Vec<_> = ids
        .iter()
        .map(|id| {
            let (q, id) = (q.clone(), *id);
            tokio::spawn(async move { q.wait(id, Duration::from_secs(20)).await })
        })
        .collect();
    common::wait_until("50 waits registered", Duration::from_secs(10), || async {
        q.waits_registered() == (50, true)
    })
    .await;
    let during = connected_clients(&url).await;
    assert!(
        during <= before + 1,
        "50 waits opened {} connections (one follower expected)",
        during - before
    );
    let w = Worker::builder(q.clone())
        .concurrency(4)
        .handler(|job: JobContext| async move {
            Ok(json!({ "twice": job.data().as_i64().unwrap() * 2 }))
        })
        .run()
        .unwrap();
    for (i, wait) in waits.into_iter().enumerate() {
        assert_eq!(
            wait.await.unwrap().unwrap(),
            Ok(json!({ "twice": i as i64 * 2 }))
        );
    }
    assert_eq!(
        q.waits_registered().0,
        0,
        "every finished wait deregistered"
    );
    common::wait_until("the follower to end", Duration::from_secs(5), || async {
        q.waits_registered() == (0, false)
    })
    .await;
    // A wait after the follower ended starts a new one and still sees a finished job.
    assert_eq!(
        q.wait(ids[0], Duration::from_secs(5)).await.unwrap(),
        Ok(json!({ "twice": 0 }))
    );
    w.close().await.unwrap();
}
