//! The durable add (issue 16): `ConnectOptions::durable(replicas, timeout)` makes every add wait
//! for that many replicas (`WAIT`). Out-of-range options are refused at connect with
//! `invalid_option` naming the bound; with a replica attached, the add returns once the replica has
//! the job; without one, it fails with `timeout` naming the job (which is written on the master, and
//! re-adding it with the same id is idempotent). The cluster case (a failover that loses nothing) is
//! in `chaos_failover.rs`.

mod common;

use emq::{ConnectOptions, ErrorCode, JobOptions, JobPart, Queue};
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
async fn without_a_replica_a_durable_add_fails_with_timeout_naming_its_job() {
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
    assert_eq!(e.code(), ErrorCode::Timeout, "{e}");
    assert!(e.message().contains(&id.to_string()), "{e}");
    assert!(e.message().contains("0 of 1 replicas"), "{e}");
    assert!(started.elapsed() >= Duration::from_millis(190));
    // Written on the master all the same.
    assert!(q.get(id).await.unwrap().is_some());
    let e = q.add_bulk(common::jobs("b", 3)).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Timeout, "{e}");
    assert!(e.message().contains("jobs are"), "{e}");
    common::audit_ok(&q).await;
}

#[tokio::test]
async fn with_a_replica_a_durable_add_returns_once_the_replica_has_the_job() {
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
    let opts = ConnectOptions::new(primary.url()).durable(1, Duration::from_secs(5));
    let q = Queue::connect(opts, &common::unique("dur")).await.unwrap();
    let mut replica_conn = redis::Client::open(replica.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let mut ids = vec![q.add("d", json!(1), JobOptions::default()).await.unwrap()];
    ids.extend(q.add_bulk(common::jobs("b", 50)).await.unwrap());
    // Right after each add returned, the replica holds the job: no polling.
    for id in &ids {
        let n: i64 = redis::cmd("EXISTS")
            .arg(q.name().job_key(*id, JobPart::Record))
            .query_async(&mut replica_conn)
            .await
            .unwrap();
        assert_eq!(n, 1, "job {id} is on the replica");
    }
    common::audit_ok(&q).await;
}
