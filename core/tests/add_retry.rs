//! An add during a datastore restart (issue 16, defect 4): the core resends it with the same id
//! until its retry window ends, so it succeeds once the server is back, and a re-add of that id
//! (after a reply that was lost) adds nothing. The server keeps its data across the restart
//! (`appendonly yes`, `appendfsync always`), as a production one would.

use emq::{ConnectOptions, ErrorCode, JobOptions, NewJob, Queue};
use emq_harness::server::{RedisServer, ServerOptions};
use serde_json::json;
use std::time::{Duration, Instant};

fn durable() -> RedisServer {
    RedisServer::start_with(ServerOptions {
        extra_args: ["--appendonly", "yes", "--appendfsync", "always"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        ..ServerOptions::default()
    })
    .expect("start redis-server")
}

async fn added(q: &Queue) -> u64 {
    let key = q.keys().meta.clone();
    let n: Option<u64> = redis::cmd("HGET")
        .arg(key.as_str())
        .arg("added")
        .query_async(&mut q.store().conn())
        .await
        .unwrap();
    n.unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_add_during_a_restart_retries_with_its_id_and_lands_once() {
    let mut s = durable();
    let opts = ConnectOptions::new(s.url())
        .guarded(true)
        .retry_unavailable(Duration::from_secs(15));
    let q = Queue::connect(opts, "restarts").await.unwrap();
    q.add("before", json!(0), JobOptions::default())
        .await
        .unwrap();

    s.stop();
    let (q1, q2) = (q.clone(), q.clone());
    let single =
        tokio::spawn(async move { q1.add("during", json!(1), JobOptions::default()).await });
    let bulk = tokio::spawn(async move {
        q2.add_bulk(
            (0..300)
                .map(|i| NewJob {
                    name: "bulk".into(),
                    data: json!(i),
                    options: JobOptions::default(),
                })
                .collect(),
        )
        .await
    });
    // Down for longer than the old three retries lasted (the issue saw an add give up after 3.5 s).
    tokio::time::sleep(Duration::from_millis(6000)).await;
    let _s = tokio::task::spawn_blocking(move || {
        s.restart().expect("restart");
        s
    })
    .await
    .unwrap();
    let id = tokio::time::timeout(Duration::from_secs(20), single)
        .await
        .expect("the add finished within 20 s")
        .unwrap()
        .expect("the add succeeded once the server was back");
    assert!(q.get(id).await.unwrap().is_some());
    let ids = tokio::time::timeout(Duration::from_secs(20), bulk)
        .await
        .expect("the bulk add finished within 20 s")
        .unwrap()
        .expect("the bulk add succeeded once the server was back");
    assert_eq!(ids.len(), 300);
    let counts = q.counts().await.unwrap();
    assert_eq!(counts.waiting, 302, "{counts:?}");
    assert_eq!(added(&q).await, 302);
    let audit = q.audit().await.unwrap();
    assert!(audit.ok(), "{:?}", audit.problems);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_re_add_of_a_minted_id_after_a_restart_adds_nothing() {
    let mut s = durable();
    let q = Queue::connect(ConnectOptions::new(s.url()).guarded(true), "readd")
        .await
        .unwrap();
    let id = q.mint_id().unwrap();
    let with_id = || JobOptions {
        id: Some(id),
        ..JobOptions::default()
    };
    assert_eq!(q.add("once", json!({"n": 1}), with_id()).await.unwrap(), id);
    // The reply "was lost": the server restarts (from its AOF) and the producer adds again.
    let _s = tokio::task::spawn_blocking(move || {
        s.restart().expect("restart");
        s
    })
    .await
    .unwrap();
    assert_eq!(q.add("once", json!({"n": 2}), with_id()).await.unwrap(), id);
    assert_eq!(
        q.add_json("once", r#"{"n":3}"#, with_id()).await.unwrap(),
        id
    );
    let counts = q.counts().await.unwrap();
    assert_eq!(counts.total(), 1, "{counts:?}");
    assert_eq!(added(&q).await, 1);
    assert_eq!(q.get(id).await.unwrap().unwrap().data, json!({"n": 1}));
    let audit = q.audit().await.unwrap();
    assert!(audit.ok(), "{:?}", audit.problems);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_add_unavailable_past_its_window_names_its_id() {
    let mut s = durable();
    let opts = ConnectOptions::new(s.url())
        .guarded(true)
        .retry_unavailable(Duration::from_millis(800));
    let q = Queue::connect(opts, "gone").await.unwrap();
    s.stop();
    let id = q.mint_id().unwrap();
    let began = Instant::now();
    let e = q
        .add(
            "x",
            json!(1),
            JobOptions {
                id: Some(id),
                ..JobOptions::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::ServerUnavailable, "{e}");
    assert!(e.message().contains(&id.to_string()), "{e}");
    assert!(
        began.elapsed() < Duration::from_secs(10),
        "{:?}",
        began.elapsed()
    );
}
