//! The durable add (issue 16): `ConnectOptions::durable(replicas, timeout)` makes every add wait
//! for that many replicas (`WAIT`). Out-of-range options are refused at connect with
//! `invalid_option` naming the bound; with a replica attached, the add returns once the replica has
//! the job; with fewer replicas than asked, it fails with `not_replicated` naming the job (which is
//! written on the master, and re-adding it with the same id is idempotent). Durable adds reuse a
//! few dedicated connections per master (`emq::testing::CONNECTIONS_PER_MASTER`), and drop one
//! whose WAIT fell short. The cluster case (a failover that loses nothing) is in
//! `chaos_failover.rs`.

mod common;

use emq::{ConnectOptions, ErrorCode, JobId, JobOptions, JobPart, Queue};
use emq_harness::server::{RedisServer, ServerOptions};
use serde_json::json;
use std::time::{Duration, Instant};

#[tokio::test]
async fn out_of_range_durability_is_refused_at_connect_naming_the_bound() {
    let url = emq_harness::shared_standalone().url();
    for (replicas, ms, bound) in [
        (0, 1_000, "1..=64"),
        (65, 1_000, "1..=64"),
        (1, 0, "1..=60000 ms"),
        (1, 60_001, "1..=60000 ms"),
    ] {
        let opts = ConnectOptions::new(url.clone()).durable(replicas, Duration::from_millis(ms));
        let e = Queue::connect(opts, &common::unique("dur"))
            .await
            .err()
            .unwrap_or_else(|| panic!("durable({replicas}, {ms} ms) was accepted"));
        assert_eq!(e.code(), ErrorCode::InvalidOption, "{e}");
        assert!(e.message().contains(bound), "{e}");
    }
}

#[tokio::test]
async fn without_a_replica_a_durable_add_fails_with_not_replicated_naming_its_job() {
    let url = emq_harness::shared_standalone().url();
    let opts = ConnectOptions::new(url).durable(1, Duration::from_millis(200));
    let q = Queue::connect(opts, &common::unique("dur")).await.unwrap();
    let id = q.mint_id().unwrap();
    let started = Instant::now();
    let e = q
        .add(
            "d",
            json!(1),
            JobOptions {
                id: Some(id),
                ..JobOptions::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::NotReplicated, "{e}");
    assert_eq!(e.code().as_str(), "not_replicated");
    assert!(e.message().contains(&id.to_string()), "{e}");
    assert!(e.message().contains("0 of 1 replicas"), "{e}");
    assert!(started.elapsed() >= Duration::from_millis(190));
    // Written on the master all the same.
    assert!(q.get(id).await.unwrap().is_some());
    let e = q.add_bulk(common::jobs("b", 3)).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::NotReplicated, "{e}");
    assert!(
        e.message().contains("the jobs ") && e.message().contains(" are written on the master"),
        "{e}"
    );
    common::audit_ok(&q).await;
}

/// A private primary with one replica, online.
fn primary_with_a_replica() -> (RedisServer, RedisServer) {
    let primary = RedisServer::start().unwrap();
    let replica = RedisServer::start_with(ServerOptions {
        extra_args: vec![
            "--replicaof".into(),
            "127.0.0.1".into(),
            primary.port().to_string(),
        ],
        ..ServerOptions::default()
    })
    .unwrap();
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let info = primary.cli(&["INFO", "replication"]).unwrap();
        if info.contains("connected_slaves:1") && info.contains("state=online") {
            break;
        }
        assert!(
            Instant::now() < until,
            "the replica never came online: {info}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    (primary, replica)
}

async fn conn(server: &RedisServer) -> redis::aio::MultiplexedConnection {
    redis::Client::open(server.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// One field of `INFO <section>`.
async fn info_field(
    conn: &mut redis::aio::MultiplexedConnection,
    section: &str,
    field: &str,
) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg(section)
        .query_async(conn)
        .await
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in INFO {section}: {info}"))
        .trim()
        .parse()
        .unwrap()
}

async fn on_replica(replica: &mut redis::aio::MultiplexedConnection, q: &Queue, ids: &[JobId]) {
    for id in ids {
        let n: i64 = redis::cmd("EXISTS")
            .arg(q.name().job_key(*id, JobPart::Record))
            .query_async(replica)
            .await
            .unwrap();
        assert_eq!(n, 1, "job {id} is on the replica");
    }
}

#[tokio::test]
async fn with_a_replica_a_durable_add_returns_once_the_replica_has_the_job() {
    let (primary, replica) = primary_with_a_replica();
    let opts = ConnectOptions::new(primary.url()).durable(1, Duration::from_secs(5));
    let q = Queue::connect(opts, &common::unique("dur")).await.unwrap();
    let mut replica_conn = conn(&replica).await;
    let mut ids = vec![q.add("d", json!(1), JobOptions::default()).await.unwrap()];
    ids.extend(q.add_bulk(common::jobs("b", 50)).await.unwrap());
    // Right after each add returned, the replica holds the job: no polling.
    on_replica(&mut replica_conn, &q, &ids).await;
    common::audit_ok(&q).await;
}

#[tokio::test]
async fn more_replicas_than_exist_is_not_replicated_and_the_job_is_on_the_master() {
    let (primary, replica) = primary_with_a_replica();
    // 1 s for the WAIT: long enough for the one replica to acknowledge on a loaded machine (with
    // 200 ms it was once "0 of 2" while a CI run shared the cores).
    let opts = ConnectOptions::new(primary.url()).durable(2, Duration::from_secs(1));
    let q = Queue::connect(opts, &common::unique("dur")).await.unwrap();
    let id = q.mint_id().unwrap();
    let with_id = JobOptions {
        id: Some(id),
        ..JobOptions::default()
    };
    let started = Instant::now();
    let e = q.add("d", json!(1), with_id.clone()).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::NotReplicated, "{e}");
    assert!(e.message().contains("1 of 2 replicas"), "{e}");
    assert!(e.message().contains(&id.to_string()), "{e}");
    assert!(started.elapsed() >= Duration::from_millis(990));
    // Written on the master, and the one replica there is has it.
    assert!(q.get(id).await.unwrap().is_some());
    on_replica(&mut conn(&replica).await, &q, &[id]).await;
    // Adding again with the same id waits again and writes nothing new.
    let e = q.add("d", json!(1), with_id).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::NotReplicated, "{e}");
    assert_eq!(q.counts().await.unwrap().waiting, 1);
    common::audit_ok(&q).await;
}

#[tokio::test]
async fn durable_adds_reuse_a_few_connections_and_drop_one_whose_wait_fell_short() {
    let (primary, replica) = primary_with_a_replica();
    let mut probe = conn(&primary).await;
    let mut replica_conn = conn(&replica).await;
    let opts = ConnectOptions::new(primary.url()).durable(1, Duration::from_secs(5));
    let q = Queue::connect(opts, &common::unique("dur")).await.unwrap();
    let opened = |before: u64, now: u64| now - before;
    let before = info_field(&mut probe, "stats", "total_connections_received").await;
    // One after another: one dedicated connection, reused by every call.
    let mut ids = Vec::new();
    for i in 0..100 {
        ids.push(q.add("seq", json!(i), JobOptions::default()).await.unwrap());
    }
    let after_sequential = info_field(&mut probe, "stats", "total_connections_received").await;
    assert_eq!(
        opened(before, after_sequential),
        1,
        "100 durable adds one after another opened one connection"
    );
    // 200 at once: at most CONNECTIONS_PER_MASTER connections, the other calls wait for one.
    let many = futures::future::join_all((0..200).map(|i| {
        let q = q.clone();
        async move { q.add("par", json!(i), JobOptions::default()).await }
    }))
    .await;
    for r in many {
        ids.push(r.unwrap());
    }
    let after_parallel = info_field(&mut probe, "stats", "total_connections_received").await;
    let total = opened(before, after_parallel) as usize;
    assert!(
        (1..=emq::testing::CONNECTIONS_PER_MASTER).contains(&total),
        "300 durable adds opened {total} connections (at most {} per master)",
        emq::testing::CONNECTIONS_PER_MASTER
    );
    // Nothing lost: every job the adds acknowledged is on the replica.
    assert_eq!(ids.len(), 300);
    on_replica(&mut replica_conn, &q, &ids).await;
    assert_eq!(q.counts().await.unwrap().waiting, 300);
    common::audit_ok(&q).await;

    // A WAIT that fell short: its connection is dropped, never reused; each call opens its own.
    let short = ConnectOptions::new(primary.url()).durable(2, Duration::from_millis(50));
    let q2 = Queue::connect(short, &common::unique("dur")).await.unwrap();
    let before = info_field(&mut probe, "stats", "total_connections_received").await;
    for i in 0..3 {
        let e = q2
            .add("short", json!(i), JobOptions::default())
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::NotReplicated, "{e}");
    }
    let now = info_field(&mut probe, "stats", "total_connections_received").await;
    assert_eq!(
        opened(before, now),
        3,
        "three adds whose WAIT fell short opened a connection each"
    );
}
