//! One worker on several queues, on real servers (standalone and a 3-master cluster, guarded):
//! strict order (no job of a later queue starts while an earlier one has a ready job), weights
//! (starts shared by weight while both have work), one concurrency shared by all the queues,
//! stats per queue, a graceful close that releases every queue's held jobs, and bad orders
//! refused with `invalid_option`.

mod common;

use common::{audit_ok, queue_on, wait_until};

use emq::{ErrorCode, JobContext, Queue, QueueOrder, Worker, WorkerHandle, WorkerOptions};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Starts (queue name, when) in order.
type Log = Arc<Mutex<Vec<(String, Instant)>>>;

fn worker(queues: &[&Queue], opts: WorkerOptions, log: Log, sleep: Duration) -> WorkerHandle {
    Worker::builder_many(queues.iter().map(|q| (*q).clone()).collect())
        .options(opts)
        .handler(move |job: JobContext| {
            let log = log.clone();
            async move {
                log.lock()
                    .unwrap()
                    .push((job.queue().name().as_str().to_string(), Instant::now()));
                tokio::time::sleep(sleep).await;
                Ok(Value::Null)
            }
        })
        .run()
        .unwrap()
}

fn opts(concurrency: usize, order: QueueOrder) -> WorkerOptions {
    WorkerOptions {
        concurrency,
        queue_order: order,
        block_timeout: Duration::from_millis(200),
        ..WorkerOptions::default()
    }
}

async fn done(qs: &[&Queue], n: u64) {
    wait_until("all done", Duration::from_secs(60), || async {
        let mut c = 0;
        for q in qs {
            c += q.counts().await.unwrap().completed;
        }
        c == n
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strict_order_starts_no_later_job_while_an_earlier_queue_has_one() {
    for (topology, store) in common::both().await {
        let a = queue_on(&store, "strict-a").await;
        let b = queue_on(&store, "strict-b").await;
        // b's jobs first: the order between the queues decides, not the order of adds.
        b.add_bulk(common::jobs("b", 40)).await.unwrap();
        a.add_bulk(common::jobs("a", 40)).await.unwrap();
        let log: Log = Arc::default();
        let w = worker(
            &[&a, &b],
            opts(2, QueueOrder::Strict),
            log.clone(),
            Duration::from_millis(5),
        );
        // While b's jobs run, more of a's arrive: from a wake-up later, b's wait again.
        wait_until("b has started", Duration::from_secs(20), || async {
            log.lock()
                .unwrap()
                .iter()
                .filter(|(q, _)| q == b.name().as_str())
                .count()
                >= 10
        })
        .await;
        a.add_bulk(common::jobs("a", 20)).await.unwrap();
        let added = Instant::now();
        done(&[&a, &b], 100).await;
        w.close().await.unwrap();
        let log = log.lock().unwrap().clone();
        let an = a.name().as_str();
        let first_b = log.iter().position(|(q, _)| q != an).unwrap();
        assert_eq!(
            (first_b, log[..first_b].iter().all(|(q, _)| q == an)),
            (40, true),
            "{topology}: every job of a ran before b's first"
        );
        let last_a = log.iter().rposition(|(q, _)| q == an).unwrap();
        let wake = Duration::from_millis(100);
        let late_b: Vec<usize> = (first_b..last_a)
            .filter(|&i| log[i].0 != an && log[i].1 > added + wake)
            .collect();
        assert!(
            late_b.is_empty(),
            "{topology}: no b job started while a's second batch waited (from {wake:?} after its add): {late_b:?}"
        );
        audit_ok(&a).await;
        audit_ok(&b).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weights_share_starts_while_both_queues_have_work() {
    for (topology, store) in common::both().await {
        // No-op jobs with the default prefetch empty a's buffer between its claims: its starts
        // wait for them rather than go to b. With no prefetch (what long jobs get), the leases
        // themselves must follow the weights, and every slot runs.
        for (case, prefetch, sleep) in [
            ("default prefetch", None, Duration::ZERO),
            ("no prefetch", Some(0), Duration::ZERO),
            ("no prefetch, 5 ms jobs", Some(0), Duration::from_millis(5)),
        ] {
            let tag = case.replace([' ', ','], "-");
            let a = queue_on(&store, &format!("weight-a-{tag}")).await;
            let b = queue_on(&store, &format!("weight-b-{tag}")).await;
            a.add_bulk(common::jobs("a", 1_200)).await.unwrap();
            b.add_bulk(common::jobs("b", 1_200)).await.unwrap();
            let weights = BTreeMap::from([
                (a.name().as_str().to_string(), 5),
                (b.name().as_str().to_string(), 1),
            ]);
            let log: Log = Arc::default();
            let (running, busiest) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
            let (log2, running2, busiest2) = (log.clone(), running.clone(), busiest.clone());
            let w = Worker::builder_many(vec![a.clone(), b.clone()])
                .options(WorkerOptions {
                    prefetch,
                    ..opts(10, QueueOrder::Weighted(weights))
                })
                .handler(move |job: JobContext| {
                    let (log, running, busiest) =
                        (log2.clone(), running2.clone(), busiest2.clone());
                    async move {
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        busiest.fetch_max(now, Ordering::SeqCst);
                        log.lock()
                            .unwrap()
                            .push((job.queue().name().as_str().to_string(), Instant::now()));
                        tokio::time::sleep(sleep).await;
                        running.fetch_sub(1, Ordering::SeqCst);
                        Ok(Value::Null)
                    }
                })
                .run()
                .unwrap();
            done(&[&a, &b], 2_400).await;
            w.close().await.unwrap();
            let log = log.lock().unwrap().clone();
            // While both have work: the first 1,200 starts (a drains at 1,440 in a 5:1 share).
            let a_starts = log[..1_200]
                .iter()
                .filter(|(q, _)| q == a.name().as_str())
                .count();
            let ratio = a_starts as f64 / (1_200 - a_starts) as f64;
            assert!(
                (4.9..=5.1).contains(&ratio),
                "{topology}, {case}: a:b must be 5:1 ± 2 % over the first 1,200 starts, saw {a_starts} of a ({ratio:.2})"
            );
            if !sleep.is_zero() {
                assert_eq!(
                    busiest.load(Ordering::SeqCst),
                    10,
                    "{topology}, {case}: all ten slots run jobs at once at some point"
                );
            }
            audit_ok(&a).await;
            audit_ok(&b).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queues_share_one_concurrency_and_report_stats_each() {
    let store = common::standalone().await;
    let qs = [
        queue_on(&store, "share-a").await,
        queue_on(&store, "share-b").await,
        queue_on(&store, "share-c").await,
    ];
    for q in &qs {
        q.add_bulk(common::jobs("n", 10)).await.unwrap();
    }
    let now = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let (n2, m2) = (now.clone(), most.clone());
    let w = Worker::builder_many(qs.to_vec())
        .options(opts(3, QueueOrder::default()))
        .handler(move |_job: JobContext| {
            let (now, most) = (n2.clone(), m2.clone());
            async move {
                let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(n, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(30)).await;
                now.fetch_sub(1, Ordering::SeqCst);
                Ok(Value::Null)
            }
        })
        .run()
        .unwrap();
    let refs: Vec<&Queue> = qs.iter().collect();
    done(&refs, 30).await;
    assert_eq!(
        w.queues(),
        qs.iter()
            .map(|q| q.name().as_str().to_string())
            .collect::<Vec<_>>()
    );
    let per: Vec<u64> = w
        .stats_by_queue()
        .iter()
        .map(|(_, s)| s.completed)
        .collect();
    assert_eq!((per, w.stats().completed), (vec![10, 10, 10], 30));
    w.close().await.unwrap();
    assert_eq!(
        most.load(Ordering::SeqCst),
        3,
        "three slots in all, used at once"
    );
    for q in &qs {
        audit_ok(q).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_releases_the_jobs_every_queue_holds() {
    let store = common::standalone().await;
    let a = queue_on(&store, "close-a").await;
    let b = queue_on(&store, "close-b").await;
    a.add_bulk(common::jobs("a", 5)).await.unwrap();
    b.add_bulk(common::jobs("b", 5)).await.unwrap();
    let log: Log = Arc::default();
    let w = worker(
        &[&a, &b],
        opts(2, QueueOrder::default()),
        log.clone(),
        Duration::from_secs(60),
    );
    wait_until("two running", Duration::from_secs(10), || async {
        log.lock().unwrap().len() == 2
    })
    .await;
    let report = w.close_within(Duration::from_millis(100)).await.unwrap();
    let (ca, cb) = (a.counts().await.unwrap(), b.counts().await.unwrap());
    assert_eq!(
        (ca.active, cb.active, ca.waiting + cb.waiting),
        (0, 0, 10),
        "every job back in wait"
    );
    assert!(report.released >= 2, "{report:?}");
    audit_ok(&a).await;
    audit_ok(&b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_orders_are_refused_with_invalid_option() {
    let store = common::standalone().await;
    let a = queue_on(&store, "bad-a").await;
    let b = queue_on(&store, "bad-b").await;
    let start = |qs: Vec<Queue>, order: QueueOrder| {
        Worker::builder_many(qs)
            .options(opts(1, order))
            .handler(|_job: JobContext| async { Ok(Value::Null) })
            .run()
            .err()
            .map(|e| (e.code(), e.message().to_string()))
    };
    let weighted =
        |name: &str, w: u32| QueueOrder::Weighted(BTreeMap::from([(name.to_string(), w)]));
    let cases = [
        (start(vec![], QueueOrder::Strict), "at least one queue"),
        (
            start(vec![a.clone(), a.clone()], QueueOrder::Strict),
            "named twice",
        ),
        (
            start(vec![a.clone(), b.clone()], weighted("nope", 2)),
            "not one of the worker's queues",
        ),
        (
            start(vec![a.clone(), b.clone()], weighted(a.name().as_str(), 0)),
            "between 1 and 1000",
        ),
        (
            start(
                vec![a.clone(), b.clone()],
                weighted(a.name().as_str(), 1_001),
            ),
            "between 1 and 1000",
        ),
    ];
    for (got, says) in cases {
        let (code, message) = got.expect("refused");
        assert_eq!(code, ErrorCode::InvalidOption, "{message}");
        assert!(message.contains(says), "{message:?} should say {says:?}");
    }
    let both = emq::spec::WorkerSpec {
        strict: Some(true),
        weights: Some(BTreeMap::from([("x".to_string(), 1.0)])),
        ..Default::default()
    };
    let e = WorkerOptions::try_from(both).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidOption);
    assert!(
        e.message().contains("exclude each other"),
        "{}",
        e.message()
    );
    // Nothing was leased by a refused worker.
    assert_eq!(a.counts().await.unwrap().active, 0);
}
