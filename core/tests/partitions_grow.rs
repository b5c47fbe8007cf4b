//! Growing a partitioned queue online (`Queue::grow_partitions`), on real servers (standalone and
//! a 3-master cluster, guarded): under a producer and two workers, from 2 to 5 partitions, no job
//! is lost or run twice, a key's jobs stay in one partition and run in order, the new partitions
//! get work and are served, the global concurrency is never exceeded, every handle learns the new
//! count; the new partitions carry the queue's settings; shrinking, a plain queue and a stale
//! count are typed refusals.

mod common;

use common::{audit_ok, unique, wait_until};

use emq::{ErrorCode, IdMinter, JobContext, JobOptions, Queue, QueueOptions, Store, Worker};
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

async fn open(store: &Store, name: &str, partitions: Option<u16>) -> emq::Result<Queue> {
    let minter = Arc::new(IdMinter::start(store.clone()).await.unwrap());
    Queue::open(store.clone(), minter, name, QueueOptions { partitions }).await
}

/// What the handler saw of one run: the job's id, its key and number (from its data), and the
/// partition it ran in.
type Run = (emq::JobId, Option<String>, u64, String);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn growing_under_load_loses_nothing_runs_nothing_twice_and_keeps_keys_in_place() {
    for (topology, store) in common::both().await {
        let name = unique("grow-load");
        let q = open(&store, &name, Some(2)).await.unwrap();
        q.set_global_concurrency(Some(4)).await.unwrap();
        // One job of a group at a time, so a group's jobs run in the order they were added.
        q.set_group_concurrency(Some(1), None).await.unwrap();
        let runs: Arc<Mutex<Vec<Run>>> = Arc::default();
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let mut workers = Vec::new();
        for _ in 0..2 {
            // Each worker on a handle of its own, opened before the growth.
            let wq = open(&store, &name, None).await.unwrap();
            let (runs, running, most) = (runs.clone(), running.clone(), most.clone());
            workers.push(
                Worker::builder(wq)
                    .concurrency(4)
                    .handler(move |job: JobContext| {
                        let (runs, running, most) = (runs.clone(), running.clone(), most.clone());
                        async move {
                            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                            most.fetch_max(now, Ordering::SeqCst);
                            let d = job.data().clone();
                            runs.lock().unwrap().push((
                                job.id(),
                                d["key"].as_str().map(str::to_string),
                                d["n"].as_u64().unwrap(),
                                job.queue().name().as_str().to_string(),
                            ));
                            tokio::time::sleep(Duration::from_millis(2)).await;
                            running.fetch_sub(1, Ordering::SeqCst);
                            Ok(json!(null))
                        }
                    })
                    .run()
                    .unwrap(),
            );
        }
        // The producer: 600 jobs, every third with one of 5 groups, some with ids of their own.
        let total = 600u64;
        let mut own_ids = Vec::new();
        let mut grown = None;
        for n in 0..total {
            let mut o = JobOptions::default();
            let key = (n % 3 == 0).then(|| format!("k{}", n % 5));
            o.group = key.clone();
            if n % 7 == 0 {
                let id = q.mint_id().unwrap();
                o.id = Some(id);
                own_ids.push((id, n, key.clone()));
            }
            q.add("j", json!({"n": n, "key": key}), o).await.unwrap();
            if n == 200 {
                // Another handle grows the queue while the producer adds and the workers run.
                let other = open(&store, &name, None).await.unwrap();
                assert_eq!(other.grow_partitions(5).await.unwrap(), 5, "{topology}");
                assert_eq!(other.partition_count(), 5);
                grown = Some(other);
            }
            if n % 50 == 0 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            // After the growth, adds over 2 s: the producer's handle reads the grown layout
            // within a second of its calls, so its later adds reach the new partitions.
            if grown.is_some() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        // An add retried with its id after the growth stays one job.
        for (id, n, key) in &own_ids {
            let o = JobOptions {
                id: Some(*id),
                group: key.clone(),
                ..Default::default()
            };
            q.add("j", json!({"n": n, "key": key}), o).await.unwrap();
        }
        // The producer's handle learns the count within a second of its calls.
        wait_until(
            "the producer's handle reads 5 partitions",
            Duration::from_secs(5),
            || {
                let q = q.clone();
                async move {
                    let _ = q.counts().await;
                    q.partition_count() == 5
                }
            },
        )
        .await;
        wait_until("every job completed", Duration::from_secs(60), || {
            let q = q.clone();
            async move { q.counts().await.unwrap().completed == total }
        })
        .await;
        let runs = runs.lock().unwrap().clone();
        assert_eq!(runs.len() as u64, total, "{topology}: each job ran once");
        let ids: HashSet<_> = runs.iter().map(|r| r.0).collect();
        assert_eq!(ids.len() as u64, total, "{topology}: no job ran twice");
        assert!(
            most.load(Ordering::SeqCst) <= 4,
            "{topology}: the global concurrency of 4 held, saw {}",
            most.load(Ordering::SeqCst)
        );
        // A key's jobs all ran in one partition (its home, one of the first two), in order.
        let names: Vec<String> = q
            .partitions()
            .unwrap()
            .iter()
            .map(|p| p.name().as_str().to_string())
            .collect();
        let mut by_key: HashMap<String, (HashSet<String>, Vec<u64>)> = HashMap::new();
        for (_, key, n, part) in &runs {
            if let Some(k) = key {
                let e = by_key.entry(k.clone()).or_default();
                e.0.insert(part.clone());
                e.1.push(*n);
            }
        }
        assert_eq!(by_key.len(), 5);
        for (k, (parts, ns)) in &by_key {
            assert_eq!(parts.len(), 1, "{topology}: key {k} in {parts:?}");
            assert!(names[..2].contains(parts.iter().next().unwrap()), "{k}");
            let mut sorted = ns.clone();
            sorted.sort_unstable();
            assert_eq!(ns, &sorted, "{topology}: key {k} ran in order");
        }
        // The new partitions got work and were served.
        for new in &names[2..] {
            let served = runs.iter().filter(|r| &r.3 == new).count();
            assert!(served > 0, "{topology}: partition {new} ran no job");
        }
        let mut stats = emq::WorkerStats::default();
        for w in workers {
            let a = w.aborter();
            w.close().await.unwrap();
            stats = stats.plus(a.stats());
        }
        assert_eq!(
            stats.completed, total,
            "{topology}: the counters carried over"
        );
        for p in q.partitions().unwrap() {
            audit_ok(&p).await;
        }
        drop(grown);
        q.obliterate(true).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_partitions_carry_the_settings_and_bad_growths_are_refused() {
    for (topology, store) in common::both().await {
        let name = unique("grow-settings");
        let q = open(&store, &name, Some(3)).await.unwrap();
        // A follower of the queue's events opened before any growth, and a cursor of then.
        let mut stream = q.events(None).await.unwrap();
        let first = q
            .add("before", json!(0), JobOptions::default())
            .await
            .unwrap();
        let mut cursor = None;
        while cursor.is_none() {
            for e in stream.next_batch(Duration::from_secs(2), 10).await.unwrap() {
                if e.job_id == Some(first) {
                    cursor = Some(e.stream_id.clone());
                }
            }
        }
        q.remove(first).await.unwrap();
        q.pause().await.unwrap();
        q.set_dead_letter(Some("grow-dlq")).await.unwrap();
        assert_eq!(q.grow_partitions(4).await.unwrap(), 4);
        let parts = q.partitions().unwrap();
        assert_eq!(parts.len(), 4, "{topology}");
        assert!(parts[3].is_paused().await.unwrap(), "{topology}: paused");
        assert_eq!(
            parts[3].dead_letter().await.unwrap().as_deref(),
            Some("grow-dlq"),
            "{topology}"
        );
        assert!(q.is_paused().await.unwrap());
        q.resume().await.unwrap();
        assert!(!parts[3].is_paused().await.unwrap(), "{topology}: resumed");
        // The stored layout wins: a handle opened without a count gets all four; the old count
        // is refused, typed, and says how to grow.
        assert_eq!(
            open(&store, &name, None).await.unwrap().partition_count(),
            4
        );
        assert!(open(&store, &name, Some(4)).await.is_ok());
        let e = open(&store, &name, Some(3)).await.err().unwrap();
        assert_eq!(e.code(), ErrorCode::InvalidOption);
        assert!(e.message().contains("has 4 partitions"), "{}", e.message());
        // Only growing, within bounds.
        for bad in [4u16, 2, 257] {
            let e = q.grow_partitions(bad).await.err().unwrap();
            assert_eq!(e.code(), ErrorCode::InvalidOption, "{bad}");
        }
        // A handle that has not read the growth yet grows from the stored layout.
        let stale = open(&store, &name, None).await.unwrap();
        assert_eq!(q.grow_partitions(6).await.unwrap(), 6);
        assert_eq!(stale.grow_partitions(7).await.unwrap(), 7);
        assert_eq!(stale.partition_count(), 7);
        // A plain queue does not grow.
        let plain = open(&store, &unique("grow-plain"), None).await.unwrap();
        let e = plain.grow_partitions(2).await.err().unwrap();
        assert_eq!(e.code(), ErrorCode::InvalidOption);
        assert!(e.message().contains("not partitioned"), "{}", e.message());
        // Jobs added now spread over all seven, and a job is found in any of them by id.
        let mut ids = Vec::new();
        for i in 0..70 {
            ids.push(q.add("x", json!(i), JobOptions::default()).await.unwrap());
        }
        wait_until("q reads seven partitions", Duration::from_secs(5), || {
            let q = q.clone();
            async move {
                let _ = q.counts().await;
                q.partition_count() == 7
            }
        })
        .await;
        for id in &ids {
            assert!(q.get(*id).await.unwrap().is_some(), "{topology}");
        }
        assert_eq!(q.counts().await.unwrap().waiting, 70);
        // The follower opened before the growths sees the adds of every partition, the new ones'
        // too; a cursor of before the growths resumes over all seven.
        let parts = q.partitions().unwrap();
        let in_new: HashSet<emq::JobId> = {
            let mut s = HashSet::new();
            for p in &parts[3..] {
                for id in p.list_ids(emq::JobState::Waiting, 0, 100).await.unwrap() {
                    s.insert(id);
                }
            }
            s
        };
        assert!(
            !in_new.is_empty(),
            "{topology}: no job in the new partitions"
        );
        for follower in [&mut stream, &mut q.events(cursor).await.unwrap()] {
            let mut added = HashSet::new();
            let until = std::time::Instant::now() + Duration::from_secs(20);
            while !ids.iter().all(|id| added.contains(id)) {
                assert!(
                    std::time::Instant::now() < until,
                    "{topology}: {} of 70 adds seen",
                    added.len()
                );
                for e in follower
                    .next_batch(Duration::from_millis(500), 100)
                    .await
                    .unwrap()
                {
                    if e.kind == "added" {
                        added.extend(e.job_id);
                    }
                }
            }
        }
        for p in q.partitions().unwrap() {
            audit_ok(&p).await;
        }
        q.obliterate(true).await.unwrap();
        // Obliterated, the layout is forgotten.
        assert_eq!(
            open(&store, &name, Some(2))
                .await
                .unwrap()
                .partition_count(),
            2
        );
        open(&store, &name, None)
            .await
            .unwrap()
            .obliterate(true)
            .await
            .unwrap();
    }
}
