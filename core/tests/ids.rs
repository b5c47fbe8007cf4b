//! Job ids against real servers: minted under a node-id lease, unique across processes (1M ids from
//! two processes at once), monotonic, and stopped when the lease is lost.

mod common;

use emq::keyspace::CoreKey;
use emq::{ErrorCode, IdMinter, JobId};
use std::collections::HashSet;
use std::process::Command;
use std::time::Duration;

const CHILD_ENV: &str = "EMQ_TEST_MINT_CHILD";

/// Body of a child process: mints `count` ids and prints them, one per line.
#[tokio::test]
async fn mint_child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (url, count) = spec.split_once(',').unwrap();
    let count: usize = count.parse().unwrap();
    let store = emq::Store::connect(emq::ConnectOptions::new(url).guarded(true))
        .await
        .unwrap();
    let minter = IdMinter::start(store).await.unwrap();
    let mut out = String::with_capacity(count * 17);
    for _ in 0..count {
        out.push_str(&minter.mint().unwrap().to_string());
        out.push('\n');
    }
    minter.release().await.unwrap();
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(b"IDS-BEGIN\n").unwrap();
    stdout.write_all(out.as_bytes()).unwrap();
    stdout.write_all(b"IDS-END\n").unwrap();
}

#[tokio::test]
async fn two_processes_mint_a_million_ids_without_collision() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let url = emq_harness::shared_standalone().url();
    let exe = std::env::current_exe().unwrap();
    let spawn = || {
        Command::new(&exe)
            .args(["--exact", "mint_child", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, format!("{url},500000"))
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let mut all = HashSet::with_capacity(1_000_000);
    let mut nodes = HashSet::new();
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        let body = text
            .split("IDS-BEGIN\n")
            .nth(1)
            .and_then(|t| t.split("IDS-END").next())
            .expect("child printed its ids");
        let mut prev: Option<JobId> = None;
        let mut n = 0;
        for line in body.lines() {
            let id = JobId::parse(line).unwrap();
            if let Some(p) = prev {
                assert!(p < id, "ids of one process increase");
            }
            prev = Some(id);
            nodes.insert(id.node());
            assert!(all.insert(id), "duplicate id {line}");
            n += 1;
        }
        assert_eq!(n, 500_000);
    }
    assert_eq!(all.len(), 1_000_000);
    assert_eq!(nodes.len(), 2, "two live processes hold two node ids");
}

#[tokio::test]
async fn ids_carry_server_time_and_increase() {
    for (topology, store) in common::both().await {
        let mut conn = store.conn();
        let (secs, micros): (u64, u64) = redis::cmd("TIME").query_async(&mut conn).await.unwrap();
        let server_ms = secs * 1000 + micros / 1000;
        let minter = IdMinter::start(store.clone()).await.unwrap();
        let mut prev = minter.mint().unwrap();
        assert!(
            prev.unix_ms().abs_diff(server_ms) < 2_000,
            "{topology}: id time follows the server clock"
        );
        for _ in 0..50_000 {
            let id = minter.mint().unwrap();
            assert!(id > prev && id.to_string() > prev.to_string());
            prev = id;
        }
        minter.release().await.unwrap();
    }
}

#[tokio::test]
async fn losing_the_lease_stops_minting_and_a_new_holder_starts_above_the_old() {
    let mut server = emq_harness::RedisServer::start().unwrap();
    let store = emq::Store::connect(emq::ConnectOptions::new(server.url()).guarded(true))
        .await
        .unwrap();
    let minter = IdMinter::start_with_lease(store.clone(), Duration::from_secs(3))
        .await
        .unwrap();
    let node = minter.node().unwrap();
    let last = minter.mint().unwrap();

    // Someone else takes the node id (as if our lease had expired while we were frozen): the
    // background renewal sees it and moves to another node id; ids keep increasing.
    let mut conn = store.conn();
    let _: () = redis::cmd("HSET")
        .arg(CoreKey::Nodes.key())
        .arg(node)
        .arg("intruder|99999999999999")
        .query_async(&mut conn)
        .await
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while minter.node() == Some(node) && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_ne!(minter.node(), Some(node), "renewal noticed the lost lease");
    let after = minter.mint().unwrap();
    assert!(after > last && after.node() != node);

    // The server goes away: no renewal, so the lease runs out and minting stops by itself.
    server.stop();
    tokio::time::sleep(Duration::from_millis(3_000)).await;
    let e = minter.mint().unwrap_err();
    assert_eq!(e.code(), ErrorCode::NodeLeaseLost, "{e}");

    // Back again (empty): the next renewal leases afresh and minting resumes, still increasing.
    server.restart().unwrap();
    let mut renewed = Err(e);
    for _ in 0..50 {
        renewed = minter.renew_now().await;
        if renewed.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    renewed.unwrap();
    let resumed = minter.mint().unwrap();
    assert!(resumed > after);

    // A clean release keeps the lease's expiry as the floor for the next holder of that node id.
    let released = minter.node().unwrap();
    minter.release().await.unwrap();
    let mut conn = store.conn();
    let v: String = redis::cmd("HGET")
        .arg(CoreKey::Nodes.key())
        .arg(released)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(v.starts_with("-|"), "{v}");
    let floor: u64 = v[2..].parse().unwrap();
    assert!(floor > resumed.unix_ms());
    assert_eq!(minter.mint().unwrap_err().code(), ErrorCode::NodeLeaseLost);
}
