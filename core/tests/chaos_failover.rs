//! The chaos suite (issue 16): a master of a 3-master + 3-replica Redis Cluster SIGKILLed while
//! producers and workers run on three queues, one per master. Its replica takes over
//! (`--cluster-node-timeout 2000`); the queues of the other masters keep going meanwhile, the
//! dead master's queue resumes by itself, and what asynchronous replication lost (acknowledged
//! adds missing after the failover) is measured and reported, not hidden. A durable producer
//! (`ConnectOptions::durable`: each add waits for a replica) on the dead master's queue beside the
//! plain one loses none of its acknowledged adds.

mod chaos_support;
mod common;

use chaos_support::{eventually, report, Profile};
use emq::{
    ConnectOptions, JobContext, JobId, JobOptions, Queue, Retention, Store, Worker, WorkerOptions,
};
use emq_harness::cluster::{key_slot, RedisCluster};
use serde_json::json;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Per queue: acknowledged adds, completion instants, runs per job.
#[derive(Default)]
struct Book {
    acked: Vec<JobId>,
    add_errors: Vec<String>,
    completions: Vec<Instant>,
    runs: HashMap<JobId, u32>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_master_killed_and_failed_over_keeps_the_other_queues_going() {
    let p = Profile::get();
    let started = Instant::now();
    let mut cluster = tokio::task::spawn_blocking(|| {
        RedisCluster::start_with_replicas(3, 1, &["--cluster-node-timeout", "2000"])
    })
    .await
    .unwrap()
    .expect("a 3+3 cluster");
    let store = Store::connect(ConnectOptions::seeds(cluster.urls()).guarded(true))
        .await
        .unwrap();
    // Queue i lives on master i; the victim is a master that does not hold the core's `{emq}`
    // keys (the id minter's node leases), so that only its own queue is hit.
    let masters: Vec<u16> = cluster.nodes()[..3].iter().map(|n| n.port()).collect();
    let port_of = |slot: u16| {
        cluster
            .slot_ranges()
            .iter()
            .find(|r| r.start <= slot && slot <= r.end)
            .unwrap()
            .port
    };
    let core_port = port_of(key_slot(b"emq"));
    let tag = common::unique("fo");
    let mut names: Vec<(u16, String)> = Vec::new();
    for i in 0..10_000 {
        let name = format!("{tag}-{i}");
        let port = port_of(key_slot(name.as_bytes()));
        if !names.iter().any(|(p, _)| *p == port) {
            names.push((port, name));
        }
        if names.len() == masters.len() {
            break;
        }
    }
    assert_eq!(names.len(), 3, "a queue name on every master");
    names.sort_by_key(|(port, _)| *port == core_port); // the victim first: not the {emq} master
    let victim_port = names[0].0;
    assert_ne!(victim_port, core_port);

    let minter = Arc::new(emq::IdMinter::start(store.clone()).await.unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let mut books = Vec::new();
    let mut workers = Vec::new();
    let mut producers = Vec::new();
    for (_, name) in &names {
        let q = Queue::with_store(store.clone(), minter.clone(), name).unwrap();
        let book: Arc<Mutex<Book>> = Arc::default();
        let b2 = book.clone();
        let w = Worker::builder(q.clone())
            .options(WorkerOptions {
                concurrency: 2,
                lease: Duration::from_millis(1_000),
                stalled_interval: Duration::from_millis(500),
                block_timeout: Duration::from_millis(300),
                max_stalls: 1_000,
                completed: Retention::KEEP_ALL,
                ..WorkerOptions::default()
            })
            .handler(move |job: JobContext| {
                let b = b2.clone();
                async move {
                    *b.lock().unwrap().runs.entry(job.id()).or_default() += 1;
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    b.lock().unwrap().completions.push(Instant::now());
                    Ok(json!(null))
                }
            })
            .run()
            .unwrap();
        workers.push(w);
        let (b3, stop2, q2) = (book.clone(), stop.clone(), q.clone());
        producers.push(tokio::spawn(async move {
            // Bounded: at most 100,000 adds, stopped by the test well before.
            for i in 0..100_000u32 {
                if stop2.load(Ordering::Relaxed) {
                    break;
                }
                let r = tokio::time::timeout(
                    Duration::from_secs(10),
                    q2.add("fo", json!(i), JobOptions::default()),
                )
                .await;
                match r {
                    Ok(Ok(id)) => b3.lock().unwrap().acked.push(id),
                    Ok(Err(e)) => b3.lock().unwrap().add_errors.push(e.code().to_string()),
                    Err(_) => b3.lock().unwrap().add_errors.push("timeout".into()),
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }));
        books.push((q, book));
    }
    // The durable variant: a producer of its own connection, with every add waiting for one
    // replica (`ConnectOptions::durable`), on the victim's queue beside the plain one.
    let durable_store = Store::connect(
        ConnectOptions::seeds(cluster.urls())
            .guarded(true)
            .durable(1, Duration::from_millis(500)),
    )
    .await
    .unwrap();
    let durable_book: Arc<Mutex<Book>> = Arc::default();
    {
        let q = Queue::with_store(durable_store, minter.clone(), &names[0].1).unwrap();
        let (b, stop2) = (durable_book.clone(), stop.clone());
        producers.push(tokio::spawn(async move {
            // Bounded: at most 100,000 adds, stopped by the test well before.
            for i in 0..100_000u32 {
                if stop2.load(Ordering::Relaxed) {
                    break;
                }
                let r = tokio::time::timeout(
                    Duration::from_secs(10),
                    q.add("fo-durable", json!(i), JobOptions::default()),
                )
                .await;
                match r {
                    Ok(Ok(id)) => {
                        let mut b = b.lock().unwrap();
                        b.acked.push(id);
                        b.completions.push(Instant::now());
                    }
                    Ok(Err(e)) => b.lock().unwrap().add_errors.push(e.code().to_string()),
                    Err(_) => b.lock().unwrap().add_errors.push("timeout".into()),
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }));
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    // The victim's replica (the one that will be promoted) falls behind first: frozen and cut off
    // for `lag`, while its master keeps acknowledging adds, then the master dies and the replica
    // resumes. That is the window asynchronous replication loses; a durable add cannot be
    // acknowledged in it.
    let (victim, replica) = chaos_support::master_and_replica(&cluster, victim_port);
    let lag = Duration::from_millis(p.pick(300, 500));
    let acked_before_lag = books[0].1.lock().unwrap().acked.len();
    chaos_support::signal(replica.pid(), chaos_support::SIGSTOP);
    // (What was sent before the freeze sits in the replica's socket; cutting the link makes the
    // master keep what it acknowledges from now on to itself.)
    victim
        .cli(&["CLIENT", "KILL", "TYPE", "replica"])
        .expect("the master drops its replica link");
    tokio::time::sleep(lag).await;
    let acked_before_kill = books[0].1.lock().unwrap().acked.len();
    chaos_support::signal(victim.pid(), chaos_support::SIGKILL);
    chaos_support::signal(replica.pid(), chaos_support::SIGCONT);
    let killed = Instant::now();

    // The victim's queue resumes by itself: a completion after the kill of a job added after it.
    let b0 = books[0].1.clone();
    let resumed = eventually(Duration::from_secs(p.pick(40, 60)), || {
        let b = b0.lock().unwrap();
        let ok = b.acked.len() > acked_before_kill + 5
            && b.completions.iter().filter(|t| **t > killed).count() > 5;
        async move { ok }
    })
    .await;
    let resumed_ms = killed.elapsed().as_millis() as u64;
    assert!(resumed, "the dead master's queue did not resume by itself");
    // Keep going a little after the failover, then stop producing.
    tokio::time::sleep(Duration::from_secs(p.pick(2, 20))).await;
    stop.store(true, Ordering::SeqCst);
    for pr in producers {
        tokio::time::timeout(Duration::from_secs(30), pr)
            .await
            .expect("a producer stopped")
            .unwrap();
    }
    // Every surviving acknowledged job completes.
    let mut figures = Vec::new();
    for (i, (q, book)) in books.iter().enumerate() {
        let acked = book.lock().unwrap().acked.clone();
        let q2 = q.clone();
        let acked2 = acked.clone();
        let settled = eventually(Duration::from_secs(60), || {
            let (q, ids) = (q2.clone(), acked2.clone());
            async move {
                let c = q.counts().await.unwrap();
                c.waiting + c.active + c.delayed + c.prioritized == 0 && !ids.is_empty()
            }
        })
        .await;
        assert!(settled, "queue {i} settled");
        let mut missing = 0;
        for id in &acked {
            match q.get(*id).await.unwrap() {
                None => missing += 1,
                Some(j) => assert!(j.finished_ms.is_some() && j.failure.is_none(), "{j:?}"),
            }
        }
        let audit = q.audit().await.unwrap();
        let b = book.lock().unwrap();
        let twice = b.runs.values().filter(|&&r| r > 1).count();
        // The longest pause between completions from the kill until the victim resumed.
        let mut ts: Vec<Instant> = b
            .completions
            .iter()
            .copied()
            .filter(|t| *t >= killed && *t <= killed + Duration::from_millis(resumed_ms))
            .collect();
        ts.sort();
        let mut gap = 0u64;
        let mut prev = killed;
        for t in &ts {
            gap = gap.max(t.duration_since(prev).as_millis() as u64);
            prev = *t;
        }
        let add_errors = b.add_errors.len();
        drop(b);
        if i > 0 {
            assert_eq!(
                missing, 0,
                "queue {i} on a live master lost acknowledged adds"
            );
            assert!(
                !ts.is_empty(),
                "queue {i} on a live master did nothing while the failover ran"
            );
            assert!(audit.ok(), "queue {i}: {:?}", audit.problems);
        }
        figures.push(json!({
            "queue": i, "victim": i == 0, "acked": acked.len(), "lost": missing,
            "run_twice": twice, "add_errors": add_errors,
            "completions_during_failover": ts.len(), "max_pause_ms": gap,
            "audit_ok": audit.ok(), "audit_problems": audit.problems.len(),
        }));
    }
    // Every acknowledged durable add survived the failover and completed.
    let (durable_acked, durable_errors) = {
        let b = durable_book.lock().unwrap();
        (b.acked.clone(), b.add_errors.len())
    };
    let mut durable_lost = 0;
    let acked_at = durable_book.lock().unwrap().completions.clone();
    for (n, id) in durable_acked.iter().enumerate() {
        match books[0].0.get(*id).await.unwrap() {
            None => {
                durable_lost += 1;
                let at = acked_at[n];
                println!(
                    "durable add {id} lost: acked {} ms {} the kill (lag began {} ms before it); errors {:?}",
                    if at > killed { at.duration_since(killed) } else { killed.duration_since(at) }.as_millis(),
                    if at > killed { "after" } else { "before" },
                    lag.as_millis(),
                    durable_book.lock().unwrap().add_errors
                );
            }
            Some(j) => assert!(j.finished_ms.is_some() && j.failure.is_none(), "{j:?}"),
        }
    }
    assert!(
        durable_acked.len() > 10,
        "durable adds were acknowledged before the kill: {}",
        durable_acked.len()
    );
    assert_eq!(
        durable_lost, 0,
        "acknowledged durable adds lost in the failover"
    );
    for w in workers {
        w.close().await.unwrap();
    }
    cluster.stop();
    let victim = &figures[0];
    report(
        "cluster master SIGKILLed after its replica lagged, replica promoted (3+3, node timeout 2 s), plain adds",
        json!({
            "topology": "cluster 3+3", "faults": 1,
            "jobs": figures.iter().map(|f| f["acked"].as_u64().unwrap()).sum::<u64>(),
            "lost": victim["lost"], "lost_on_live_masters": 0,
            "replica_lag_ms": lag.as_millis() as u64,
            "acked_while_replica_lagged": acked_before_kill - acked_before_lag,
            "durable_acked": durable_acked.len(), "durable_lost": durable_lost,
            "durable_add_errors": durable_errors,
            "run_twice": figures.iter().map(|f| f["run_twice"].as_u64().unwrap()).sum::<u64>(),
            "recovery_ms_max": resumed_ms, "recovery_bound_ms": null,
            "queues": figures, "seconds": started.elapsed().as_secs(),
        }),
    );
    report(
        "cluster master SIGKILLed after its replica lagged, durable adds (WAIT 1 replica, 500 ms)",
        json!({
            "topology": "cluster 3+3", "faults": 1, "jobs": durable_acked.len(),
            "lost": durable_lost, "run_twice": null, "recovery_ms_max": null,
            "recovery_bound_ms": null, "add_errors": durable_errors,
            "replica_lag_ms": lag.as_millis() as u64,
        }),
    );
}
