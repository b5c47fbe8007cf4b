//! Fencing tokens (`JobContext::fence`) on a real server: a job's runs carry fences that only grow,
//! and a downstream store that keeps the highest fence it accepted (here a Redis key written by a
//! compare-and-set script, outside emq's keyspace) refuses the late write of a zombie run: a worker
//! whose whole runtime froze past its lease while the job ran again on another worker.

mod common;

use emq::{JobContext, JobOptions, Worker, WorkerOptions};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The downstream store's write: set `key` to `value` only if `fence` is at least the highest
/// fence accepted so far. Returns whether it was accepted.
const FENCED_SET: &str = r"
local last = tonumber(redis.call('HGET', KEYS[1], 'fence') or '0')
if tonumber(ARGV[1]) < last then return 0 end
redis.call('HSET', KEYS[1], 'fence', ARGV[1], 'value', ARGV[2])
return 1";

async fn fenced_set(store: &emq::Store, key: &str, fence: u64, value: &str) -> bool {
    let ok: i64 = redis::cmd("EVAL")
        .arg(FENCED_SET)
        .arg(1)
        .arg(key)
        .arg(fence)
        .arg(value)
        .query_async(&mut store.conn())
        .await
        .unwrap();
    ok == 1
}

/// One run's write to the store: (who, its fence, accepted).
type Write = (&'static str, u64, bool);

fn opts() -> WorkerOptions {
    WorkerOptions {
        concurrency: 1,
        lease: Duration::from_millis(400),
        stalled_interval: Duration::from_millis(100),
        block_timeout: Duration::from_millis(100),
        max_stalls: 10,
        ..WorkerOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zombie_runs_write_is_refused_by_its_fence() {
    let store = common::standalone().await;
    let q = common::queue_on(&store, "fence").await;
    let id = q
        .add("charge", json!({}), JobOptions::default())
        .await
        .unwrap();
    let target = format!("downstream:{}", common::unique("fence"));
    // What each run saw and whether its write was accepted: (who, fence, accepted).
    let log: Arc<Mutex<Vec<Write>>> = Arc::default();

    // The zombie: a worker on its own one-thread runtime, which its handler freezes (the thread
    // sleeps, so its lease renewals stop too) for well past the lease, then writes.
    let (q_a, store_a, target_a, log_a) = (q.clone(), store.clone(), target.clone(), log.clone());
    let (started_tx, started_rx) = std::sync::mpsc::channel::<()>();
    let zombie = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let w = Worker::builder(q_a)
                .options(opts())
                .handler(move |job: JobContext| {
                    let (store, target, log, started) = (
                        store_a.clone(),
                        target_a.clone(),
                        log_a.clone(),
                        started_tx.clone(),
                    );
                    async move {
                        let _ = started.send(());
                        std::thread::sleep(Duration::from_millis(2_000));
                        let ok = fenced_set(&store, &target, job.fence(), "zombie").await;
                        log.lock().unwrap().push(("zombie", job.fence(), ok));
                        Ok(Value::Null)
                    }
                })
                .run()
                .unwrap();
            tokio::time::sleep(Duration::from_millis(3_000)).await;
            w.close().await.ok();
        });
    });
    started_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the zombie's run started");

    // The healthy worker: it recovers the job once the frozen lease expires and runs it again.
    let (store_b, target_b, log_b) = (store.clone(), target.clone(), log.clone());
    let b = Worker::builder(q.clone())
        .options(opts())
        .handler(move |job: JobContext| {
            let (store, target, log) = (store_b.clone(), target_b.clone(), log_b.clone());
            async move {
                let ok = fenced_set(&store, &target, job.fence(), "healthy").await;
                log.lock().unwrap().push(("healthy", job.fence(), ok));
                Ok(Value::Null)
            }
        })
        .run()
        .unwrap();
    zombie.join().unwrap();
    common::wait_until("the job completed", Duration::from_secs(10), || async {
        q.get(id)
            .await
            .unwrap()
            .is_some_and(|j| j.finished_ms.is_some())
    })
    .await;
    b.close().await.unwrap();

    let log = log.lock().unwrap().clone();
    let healthy = log.iter().find(|(who, ..)| *who == "healthy").copied();
    let zombie = log.iter().find(|(who, ..)| *who == "zombie").copied();
    let (Some(healthy), Some(zombie)) = (healthy, zombie) else {
        panic!("both runs wrote: {log:?}");
    };
    assert!(
        healthy.1 > zombie.1,
        "the later run's fence is higher: {log:?}"
    );
    assert!(healthy.2, "the healthy run's write was accepted: {log:?}");
    assert!(!zombie.2, "the zombie's late write was refused: {log:?}");
    let value: String = redis::cmd("HGET")
        .arg(&target)
        .arg("value")
        .query_async(&mut store.conn())
        .await
        .unwrap();
    assert_eq!(value, "healthy");
    let job = q.get(id).await.unwrap().unwrap();
    assert!(job.failure.is_none() && job.stalls >= 1, "{job:?}");
}
