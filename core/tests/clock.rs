//! `Queue::server_time_ms` reads the clock of the node that owns the queue (the clock its scripts
//! stamp with), not of whichever cluster node a bare `TIME` reaches.

mod common;

async fn script_calls(url: &str) -> u64 {
    let client = redis::Client::open(url).unwrap();
    let mut c = client.get_multiplexed_async_connection().await.unwrap();
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut c)
        .await
        .unwrap();
    // cmdstat_evalsha:calls=N,... (and evalsha_ro / eval on some paths)
    info.lines()
        .filter(|l| l.starts_with("cmdstat_evalsha") || l.starts_with("cmdstat_eval:"))
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
async fn the_clock_is_read_on_the_queues_node() {
    let cluster = emq_harness::shared_cluster();
    let store = common::cluster().await;
    let q = common::queue_on(&store, "clock").await;
    let owner = cluster.node_for_slot(q.name().slot());
    let local = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let first = q.server_time_ms().await.unwrap(); // loads the script
    assert!(first.abs_diff(local) < 60_000, "{first} vs {local}");
    let before = script_calls(&owner).await;
    let mut last = first;
    for _ in 0..30 {
        let t = q.server_time_ms().await.unwrap();
        assert!(t >= last, "the clock went back: {t} < {last}");
        last = t;
    }
    let on_owner = script_calls(&owner).await - before;
    assert!(
        on_owner >= 30,
        "only {on_owner} of 30 reads reached the queue's node {owner}"
    );
}
