//! A one-job plain add goes through `add_one.lua`, a batch through `add.lua`: both must leave the
//! same record, lists, marker, events and counter behind (and the same idempotence and pause
//! behaviour), so the two scripts cannot drift apart.

use emq::{ConnectOptions, JobOptions, NewJob, Queue, Removal};
use emq_harness::RedisServer;
use serde_json::json;
use std::collections::HashMap;

async fn conn(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

async fn record(c: &mut redis::aio::MultiplexedConnection, key: &str) -> HashMap<String, String> {
    redis::cmd("HGETALL").arg(key).query_async(c).await.unwrap()
}

async fn list(c: &mut redis::aio::MultiplexedConnection, key: &str) -> Vec<String> {
    redis::cmd("LRANGE")
        .arg(key)
        .arg(0)
        .arg(-1)
        .query_async(c)
        .await
        .unwrap()
}

async fn hget(c: &mut redis::aio::MultiplexedConnection, key: &str, f: &str) -> Option<String> {
    redis::cmd("HGET")
        .arg(key)
        .arg(f)
        .query_async(c)
        .await
        .unwrap()
}

/// The `ids` of each `added` event of a queue's stream, in order.
async fn added_events(c: &mut redis::aio::MultiplexedConnection, q: &str) -> Vec<String> {
    let entries: Vec<(String, HashMap<String, String>)> = redis::cmd("XRANGE")
        .arg(format!("emq:{{{q}}}:events"))
        .arg("-")
        .arg("+")
        .query_async(c)
        .await
        .unwrap();
    entries
        .into_iter()
        .filter(|(_, f)| f.get("ev").map(String::as_str) == Some("added"))
        .map(|(_, f)| f["ids"].clone())
        .collect()
}

fn options() -> JobOptions {
    JobOptions {
        attempts: 3,
        remove_on_complete: Removal::Now,
        ..JobOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_plain_add_writes_what_a_batch_writes() {
    let server = RedisServer::start().expect("redis-server");
    let url = server.url();
    let open = |name: &'static str| {
        let url = url.clone();
        async move {
            Queue::connect(ConnectOptions::new(url).guarded(true), name)
                .await
                .unwrap()
        }
    };
    let (one, bulk) = (open("one").await, open("bulk").await);
    let mut c = conn(&url).await;

    let id = one.add("n", json!({"a": 1}), options()).await.unwrap();
    let ids = bulk
        .add_bulk(vec![
            NewJob {
                name: "n".into(),
                data: json!({"a": 1}),
                options: options(),
            },
            NewJob {
                name: "m".into(),
                data: json!(2),
                options: JobOptions::default(),
            },
        ])
        .await
        .unwrap();

    // The same record, created stamp aside (both from the server's clock).
    let mut a = record(&mut c, &format!("emq:{{one}}:{id}")).await;
    let mut b = record(&mut c, &format!("emq:{{bulk}}:{}", ids[0])).await;
    for r in [&mut a, &mut b] {
        let created: u64 = r.remove("created_ms").unwrap().parse().unwrap();
        assert!(created > 1_700_000_000_000, "{created}");
    }
    assert_eq!(a, b);
    assert_eq!(a["attempts"], "3");
    assert!(a["opts"].contains("remove_on_complete"), "{a:?}");

    // Waiting, named by the marker (the list was empty), counted, and announced.
    assert_eq!(list(&mut c, "emq:{one}:wait").await, vec![id.to_string()]);
    assert_eq!(list(&mut c, "emq:{one}:marker").await, vec![id.to_string()]);
    assert_eq!(
        list(&mut c, "emq:{bulk}:marker").await,
        vec![ids[0].to_string()]
    );
    assert_eq!(
        hget(&mut c, "emq:{one}:meta", "added").await.as_deref(),
        Some("1")
    );
    assert_eq!(
        hget(&mut c, "emq:{bulk}:meta", "added").await.as_deref(),
        Some("2")
    );
    assert_eq!(added_events(&mut c, "one").await, vec![id.to_string()]);
    assert_eq!(
        added_events(&mut c, "bulk").await,
        vec![format!("{} {}", ids[0], ids[1])]
    );
    assert_eq!(one.get(id).await.unwrap().unwrap().data, json!({"a": 1}));

    // Idempotent: the same id again changes nothing (record, list, counter, events).
    let before = record(&mut c, &format!("emq:{{one}}:{id}")).await;
    let again = JobOptions {
        id: Some(id),
        ..options()
    };
    assert_eq!(one.add("other", json!(9), again).await.unwrap(), id);
    assert_eq!(record(&mut c, &format!("emq:{{one}}:{id}")).await, before);
    assert_eq!(list(&mut c, "emq:{one}:wait").await.len(), 1);
    assert_eq!(
        hget(&mut c, "emq:{one}:meta", "added").await.as_deref(),
        Some("1")
    );
    assert_eq!(added_events(&mut c, "one").await.len(), 1);

    // Paused: to the paused list, no marker.
    let paused = open("paused").await;
    paused.pause().await.unwrap();
    let p = paused
        .add("n", json!(1), JobOptions::default())
        .await
        .unwrap();
    assert_eq!(
        list(&mut c, "emq:{paused}:paused").await,
        vec![p.to_string()]
    );
    assert!(list(&mut c, "emq:{paused}:wait").await.is_empty());
    assert!(list(&mut c, "emq:{paused}:marker").await.is_empty());
    let counts = paused.counts().await.unwrap();
    assert_eq!((counts.waiting, counts.paused), (0, 1), "{counts:?}");

    for q in [&one, &bulk, &paused] {
        let r = q.audit().await.unwrap();
        assert!(r.ok(), "{:?}", r.problems);
    }
}

/// A lease an add handed over: "<16 digits of the server's microseconds>.h<place>|<ms>|a".
fn assert_handoff_lease(lease: &str, place: usize) {
    let (token, rest) = lease.split_once('|').expect(lease);
    let (clock, at) = token.split_once('.').expect(lease);
    assert!(
        clock.len() == 16 && clock.bytes().all(|b| b.is_ascii_digit()),
        "{lease}"
    );
    assert_eq!(at, format!("h{place}"), "{lease}");
    let (ms, ahead) = rest.split_once('|').expect(lease);
    assert_eq!(ahead, "a", "{lease}");
    assert_eq!(
        ms.parse::<u64>().unwrap(),
        clock.parse::<u64>().unwrap() / 1000,
        "{lease}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handed_over_job_is_leased_with_the_servers_exact_microseconds() {
    let server = RedisServer::start().expect("redis-server");
    let url = server.url();
    let mut c = conn(&url).await;
    for (name, n) in [("hand-one", 1usize), ("hand-bulk", 2)] {
        let q = Queue::connect(ConnectOptions::new(url.clone()).guarded(true), name)
            .await
            .unwrap();
        // Registrations as wait_register.lua writes them ("<worker>|<lease_ms>" -> end of the
        // wait), one per job, so each add hands its job over.
        for w in 0..n {
            let _: i64 = redis::cmd("ZADD")
                .arg(format!("emq:{{{name}}}:waiters"))
                .arg(4_102_444_800_000u64)
                .arg(format!("w{w}|30000"))
                .query_async(&mut c)
                .await
                .unwrap();
        }
        let ids = if n == 1 {
            vec![q.add("h", json!(1), JobOptions::default()).await.unwrap()]
        } else {
            let job = |i: i64| NewJob {
                name: "h".into(),
                data: json!(i),
                options: JobOptions::default(),
            };
            q.add_bulk(vec![job(1), job(2)]).await.unwrap()
        };
        assert_eq!(
            list(&mut c, &format!("emq:{{{name}}}:handoff")).await.len(),
            n
        );
        assert!(list(&mut c, &format!("emq:{{{name}}}:wait"))
            .await
            .is_empty());
        for (place, id) in ids.iter().enumerate() {
            let lease = hget(&mut c, &format!("emq:{{{name}}}:leases"), &id.to_string())
                .await
                .expect("a lease");
            assert_handoff_lease(&lease, place);
        }
    }
}
