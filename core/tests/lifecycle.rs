//! The job lifecycle on real servers, on both topologies: add, process, retry, delay, priority,
//! dedup, pause, drain, clean, obliterate, progress, logs, events, graceful close, stalled recovery,
//! bad input. Every test ends with the audit.

mod common;

use common::{audit_ok, queue_on, wait_until};

use emq::{
    Backoff, ErrorCode, HandlerError, JobContext, JobOptions, JobState, Moved, NewJob, Queue,
    Worker, WorkerOptions,
};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn fast() -> WorkerOptions {
    WorkerOptions {
        block_timeout: Duration::from_millis(500),
        ..WorkerOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_process_complete_on_both_topologies() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "basic").await;
        let mut events = q.events(None).await.unwrap();
        let ids = q
            .add_bulk(
                (0..200)
                    .map(|i| NewJob {
                        name: "double".into(),
                        data: json!({ "n": i }),
                        options: JobOptions::default(),
                    })
                    .collect(),
            )
            .await
            .unwrap();
        assert_eq!(ids.len(), 200);
        assert_eq!(q.counts().await.unwrap().waiting, 200, "{topology}");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let seen2 = seen.clone();
        let worker = Worker::builder(q.clone())
            .concurrency(8)
            .options(WorkerOptions {
                concurrency: 8,
                ..fast()
            })
            .handler(move |job: JobContext| {
                let seen = seen2.clone();
                async move {
                    seen.lock().unwrap().push(job.id());
                    Ok(json!(job.data()["n"].as_i64().unwrap() * 2))
                }
            })
            .run()
            .unwrap();
        wait_until("200 completions", Duration::from_secs(20), || async {
            q.counts().await.unwrap().completed == 200
        })
        .await;
        worker.close().await.unwrap();
        let mut got = seen.lock().unwrap().clone();
        got.sort();
        let mut want = ids.clone();
        want.sort();
        assert_eq!(got, want, "{topology}: each job ran exactly once");
        let job = q.get(ids[7]).await.unwrap().unwrap();
        assert_eq!(job.state, Some(JobState::Completed));
        assert_eq!(job.result, Some(json!(14)));
        assert_eq!(job.attempts_made, 1);
        assert!(job.processed_ms.unwrap() <= job.finished_ms.unwrap());
        let evs = events
            .next_batch(Duration::from_secs(2), 1_000)
            .await
            .unwrap();
        assert!(evs.iter().any(|e| e.kind == "completed"), "{topology}");
        audit_ok(&q).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_retry_with_backoff_or_stop() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "fail").await;
        let retried = q
            .add(
                "flaky",
                json!({"fail_times": 2}),
                JobOptions {
                    attempts: 3,
                    backoff: Backoff::Fixed { delay_ms: 200 },
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        let doomed = q
            .add(
                "doomed",
                json!({}),
                JobOptions {
                    attempts: 5,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        let panics = q
            .add("panics", json!({}), JobOptions::default())
            .await
            .unwrap();
        let slow = q
            .add(
                "slow",
                json!({}),
                JobOptions {
                    timeout_ms: 100,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        let runs = Arc::new(AtomicUsize::new(0));
        let runs2 = runs.clone();
        let worker = Worker::builder(q.clone())
            .options(WorkerOptions {
                concurrency: 4,
                ..fast()
            })
            .handler(move |job: JobContext| {
                let runs = runs2.clone();
                async move {
                    match job.job().name.as_str() {
                        "flaky" => {
                            let n = runs.fetch_add(1, Ordering::SeqCst);
                            if n < 2 {
                                Err(HandlerError::new(format!("try {n}")))
                            } else {
                                Ok(json!("finally"))
                            }
                        }
                        "doomed" => {
                            Err(HandlerError::unrecoverable("bad card").with_code("card_declined"))
                        }
                        "panics" => panic!("boom"),
                        _ => {
                            tokio::time::sleep(Duration::from_secs(5)).await;
                            Ok(Value::Null)
                        }
                    }
                }
            })
            .run()
            .unwrap();
        wait_until("outcomes", Duration::from_secs(20), || async {
            let c = q.counts().await.unwrap();
            c.completed == 1 && c.failed == 3
        })
        .await;
        worker.close().await.unwrap();
        let j = q.get(retried).await.unwrap().unwrap();
        assert_eq!(
            (j.attempts_made, j.result.clone()),
            (3, Some(json!("finally"))),
            "{topology}"
        );
        let j = q.get(doomed).await.unwrap().unwrap();
        assert_eq!(
            j.attempts_made, 1,
            "{topology}: unrecoverable skips retries"
        );
        assert_eq!(j.failure.unwrap().code, "card_declined");
        let j = q.get(panics).await.unwrap().unwrap();
        assert_eq!(j.failure.unwrap().code, "panic");
        let j = q.get(slow).await.unwrap().unwrap();
        assert_eq!(j.failure.unwrap().code, "timeout");
        // An operator retries a failed job: it runs again.
        assert_eq!(q.retry(doomed).await.unwrap(), Moved::Moved);
        assert_eq!(
            q.get(doomed).await.unwrap().unwrap().state,
            Some(JobState::Waiting)
        );
        audit_ok(&q).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delay_priority_lifo_dedup_and_idempotent_add() {
    let store = common::standalone().await;
    let q = queue_on(&store, "order").await;
    q.pause().await.unwrap();
    let a = q.add("a", json!(1), JobOptions::default()).await.unwrap();
    let b = q.add("b", json!(2), JobOptions::default()).await.unwrap();
    let urgent = q
        .add(
            "urgent",
            json!(3),
            JobOptions {
                priority: 1,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let lifo = q
        .add(
            "lifo",
            json!(4),
            JobOptions {
                lifo: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let later = q
        .add(
            "later",
            json!(5),
            JobOptions {
                delay_ms: 700,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    // Same id twice: one job.
    let id = q.mint_id().unwrap();
    let opts = JobOptions {
        id: Some(id),
        ..Default::default()
    };
    assert_eq!(q.add("once", json!(6), opts.clone()).await.unwrap(), id);
    assert_eq!(q.add("once", json!(6), opts).await.unwrap(), id);
    // A dedup key held by a live job returns that job.
    let d1 = q
        .add(
            "d",
            json!(7),
            JobOptions {
                dedup: Some("order-42".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let d2 = q
        .add(
            "d",
            json!(8),
            JobOptions {
                dedup: Some("order-42".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(d1, d2);
    assert_eq!(q.counts().await.unwrap().paused, 5);
    let order = Arc::new(Mutex::new(Vec::new()));
    let order2 = order.clone();
    let started = Instant::now();
    let worker = Worker::builder(q.clone())
        .options(WorkerOptions {
            concurrency: 1,
            ..fast()
        })
        .handler(move |job: JobContext| {
            let order = order2.clone();
            async move {
                order.lock().unwrap().push((job.id(), started.elapsed()));
                Ok(Value::Null)
            }
        })
        .run()
        .unwrap();
    q.resume().await.unwrap();
    wait_until("all 7", Duration::from_secs(10), || async {
        q.counts().await.unwrap().completed == 7
    })
    .await;
    worker.close().await.unwrap();
    let order = order.lock().unwrap().clone();
    let ids: Vec<_> = order.iter().map(|(id, _)| *id).collect();
    assert_eq!(ids[0], urgent, "priority first");
    assert_eq!(ids[1], lifo, "then LIFO");
    assert_eq!(&ids[2..4], &[a, b], "then FIFO");
    assert_eq!(*ids.last().unwrap(), later, "the delayed job last");
    assert!(
        order.last().unwrap().1 >= Duration::from_millis(600),
        "not before it is due"
    );
    // Once the dedup holder finished, the key is free again.
    let d3 = q
        .add(
            "d",
            json!(9),
            JobOptions {
                dedup: Some("order-42".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_ne!(d3, d1);
    audit_ok(&q).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_calls_and_bad_input() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "ops").await;
        let ids = q
            .add_bulk(
                (0..30)
                    .map(|i| NewJob {
                        name: "n".into(),
                        data: json!(i),
                        options: JobOptions::default(),
                    })
                    .collect(),
            )
            .await
            .unwrap();
        let page = q.list_ids(JobState::Waiting, 0, 10).await.unwrap();
        assert_eq!(page, ids[..10].to_vec(), "{topology}: oldest first");
        let page2 = q.list_ids(JobState::Waiting, 10, 10).await.unwrap();
        assert_eq!(page2, ids[10..20].to_vec());
        q.update_progress(ids[0], &json!({"pct": 50}))
            .await
            .unwrap();
        q.log(ids[0], "step one").await.unwrap();
        q.log(ids[0], "step two").await.unwrap();
        assert_eq!(q.logs(ids[0]).await.unwrap(), vec!["step one", "step two"]);
        assert_eq!(
            q.get(ids[0]).await.unwrap().unwrap().progress,
            Some(json!({"pct": 50}))
        );
        assert_eq!(q.remove(ids[1]).await.unwrap(), Moved::Moved);
        assert!(q.get(ids[1]).await.unwrap().is_none());
        let delayed = q
            .add(
                "later",
                json!(0),
                JobOptions {
                    delay_ms: 60_000,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(
            q.get(delayed).await.unwrap().unwrap().state,
            Some(JobState::Delayed)
        );
        assert_eq!(q.promote(delayed).await.unwrap(), Moved::Moved);
        assert_eq!(
            q.get(delayed).await.unwrap().unwrap().state,
            Some(JobState::Waiting)
        );
        assert_eq!(q.drain(true).await.unwrap(), 30);
        assert_eq!(q.counts().await.unwrap().total(), 0);

        // Bad input: typed errors, nothing added.
        let e = q
            .add_json("x", "{not json", JobOptions::default())
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidPayload);
        let e = q
            .add(
                "x",
                json!(1),
                JobOptions {
                    attempts: 0,
                    ..Default::default()
                },
            )
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidOption);
        assert_eq!(
            q.get_str("j0000000000000zz").await.unwrap_err().code(),
            ErrorCode::InvalidJobId
        );
        assert_eq!(
            q.get_str("123").await.unwrap_err().code(),
            ErrorCode::InvalidJobId
        );
        assert_eq!(
            q.queue("bad:name").err().unwrap().code(),
            ErrorCode::InvalidQueueName
        );
        assert_eq!(q.counts().await.unwrap().total(), 0);
        audit_ok(&q).await;

        // Clean and obliterate.
        let w = Worker::builder(q.clone())
            .options(WorkerOptions {
                concurrency: 4,
                ..fast()
            })
            .handler(|_job: JobContext| async { Ok(Value::Null) })
            .run()
            .unwrap();
        q.add_bulk(
            (0..5)
                .map(|i| NewJob {
                    name: "n".into(),
                    data: json!(i),
                    options: JobOptions::default(),
                })
                .collect(),
        )
        .await
        .unwrap();
        wait_until("5 done", Duration::from_secs(10), || async {
            q.counts().await.unwrap().completed == 5
        })
        .await;
        w.close().await.unwrap();
        assert_eq!(
            q.clean(JobState::Completed, Duration::ZERO, 100)
                .await
                .unwrap(),
            5
        );
        q.add("left", json!(0), JobOptions::default())
            .await
            .unwrap();
        assert_eq!(q.obliterate(false).await.unwrap(), 1);
        assert_eq!(q.counts().await.unwrap().total(), 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_lease_is_refused_and_stalled_jobs_are_recovered() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "stall").await;
        let id = q
            .add("hang", json!({}), JobOptions::default())
            .await
            .unwrap();
        let short = WorkerOptions {
            concurrency: 1,
            lease: Duration::from_millis(600),
            stalled_interval: Duration::from_millis(200),
            ..fast()
        };
        let started = Arc::new(AtomicUsize::new(0));
        let s2 = started.clone();
        // A worker that takes the job and is then killed (dropped: its tasks abort, nothing is
        // released, its lease just stops being renewed).
        let w1 = Worker::builder(q.clone())
            .options(short.clone())
            .handler(move |_job: JobContext| {
                let s = s2.clone();
                async move {
                    s.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_secs(60)).await;
                    Ok(Value::Null)
                }
            })
            .run()
            .unwrap();
        wait_until("the job started", Duration::from_secs(10), || async {
            started.load(Ordering::SeqCst) == 1
        })
        .await;
        drop(w1);
        let w2 = Worker::builder(q.clone())
            .options(short)
            .handler(|_job: JobContext| async { Ok(json!("second worker")) })
            .run()
            .unwrap();
        wait_until(
            "recovered and completed",
            Duration::from_secs(15),
            || async { q.counts().await.unwrap().completed == 1 },
        )
        .await;
        let stats = w2.stats();
        w2.close().await.unwrap();
        let job = q.get(id).await.unwrap().unwrap();
        assert_eq!(job.result, Some(json!("second worker")), "{topology}");
        assert_eq!(job.stalls, 1);
        assert_eq!(job.attempts_made, 2, "the stalled run counts as an attempt");
        assert_eq!(stats.recovered, 1);
        audit_ok(&q).await;
    }
}

/// Issue 16, defect 2: a job the stall sweep fails (too many stalls) counts in the failed-per-minute
/// metric like any other failure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_failed_by_the_sweep_counts_as_failed_in_the_metrics() {
    let store = common::standalone().await;
    let q = queue_on(&store, "stallmetric").await;
    let id = q
        .add("hang", json!({}), JobOptions::default())
        .await
        .unwrap();
    let short = WorkerOptions {
        concurrency: 1,
        lease: Duration::from_millis(500),
        stalled_interval: Duration::from_millis(200),
        max_stalls: 0,
        ..fast()
    };
    let started = Arc::new(AtomicUsize::new(0));
    let s2 = started.clone();
    let w1 = Worker::builder(q.clone())
        .options(short.clone())
        .handler(move |_job: JobContext| {
            let s = s2.clone();
            async move {
                s.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_secs(60)).await;
                Ok(Value::Null)
            }
        })
        .run()
        .unwrap();
    wait_until("the job started", Duration::from_secs(10), || async {
        started.load(Ordering::SeqCst) == 1
    })
    .await;
    // Killed: its lease stops being renewed.
    drop(w1);
    let w2 = Worker::builder(q.clone())
        .options(short)
        .handler(|_job: JobContext| async { Ok(Value::Null) })
        .run()
        .unwrap();
    wait_until("failed by the sweep", Duration::from_secs(10), || async {
        q.counts().await.unwrap().failed == 1
    })
    .await;
    w2.close().await.unwrap();
    let job = q.get(id).await.unwrap().unwrap();
    assert_eq!(job.failure.map(|f| f.code), Some("stalled".to_string()));
    let m = q.metrics().await.unwrap();
    let failed: u64 = m.failed_per_minute.iter().map(|(_, n)| n).sum();
    assert_eq!(failed, 1, "{:?}", m.failed_per_minute);
    audit_ok(&q).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_close_releases_unfinished_jobs() {
    let store = common::standalone().await;
    let q = queue_on(&store, "close").await;
    q.add_bulk(
        (0..3)
            .map(|i| NewJob {
                name: "slow".into(),
                data: json!(i),
                options: JobOptions::default(),
            })
            .collect(),
    )
    .await
    .unwrap();
    let w = Worker::builder(q.clone())
        .options(WorkerOptions {
            concurrency: 3,
            ..fast()
        })
        .handler(|_job: JobContext| async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            Ok(Value::Null)
        })
        .run()
        .unwrap();
    wait_until("3 active", Duration::from_secs(10), || async {
        q.counts().await.unwrap().active == 3
    })
    .await;
    let report = w.close_within(Duration::from_millis(200)).await.unwrap();
    assert_eq!(report.released, 3);
    let c = q.counts().await.unwrap();
    assert_eq!((c.waiting, c.active), (3, 0));
    for job in q.list(JobState::Waiting, 0, 10).await.unwrap() {
        assert_eq!(job.attempts_made, 0, "a released run is not an attempt");
    }
    audit_ok(&q).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queues_spread_over_cluster_nodes() {
    let cluster = emq_harness::shared_cluster();
    let store = common::cluster().await;
    let mut nodes = std::collections::HashSet::new();
    let mut queues = Vec::new();
    // Names are random (`unique`), so keep drawing until one queue sits on
    // each node: twelve draws missed a node 2% of the time (a CI failure).
    for i in 0..500 {
        let q = queue_on(&store, &format!("spread{i}")).await;
        if nodes.insert(cluster.node_for_slot(q.name().slot())) {
            queues.push(q);
        }
        if nodes.len() == 3 {
            break;
        }
    }
    assert_eq!(nodes.len(), 3, "the queues live on three different nodes");
    let mut workers = Vec::new();
    for q in &queues {
        q.add_bulk(
            (0..20)
                .map(|i| NewJob {
                    name: "n".into(),
                    data: json!(i),
                    options: JobOptions::default(),
                })
                .collect(),
        )
        .await
        .unwrap();
        workers.push(
            Worker::builder(q.clone())
                .options(WorkerOptions {
                    concurrency: 4,
                    ..fast()
                })
                .handler(|_job: JobContext| async { Ok(Value::Null) })
                .run()
                .unwrap(),
        );
    }
    for q in &queues {
        wait_until("20 per queue", Duration::from_secs(20), || async {
            q.counts().await.unwrap().completed == 20
        })
        .await;
        audit_ok(q).await;
    }
    for w in workers {
        w.close().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_and_acl_from_the_url() {
    let server = emq_harness::TlsServer::start().unwrap();
    let pem = std::fs::read(server.ca_cert_path()).unwrap();
    let url = server.url();
    assert!(url.starts_with("rediss://emq:emq-secret@"), "{url}");
    let q = Queue::connect(
        emq::ConnectOptions::new(url.clone())
            .guarded(true)
            .ca_cert_pem(pem.clone()),
        "tls-orders",
    )
    .await
    .unwrap();
    let id = q
        .add("t", json!({"secure": true}), JobOptions::default())
        .await
        .unwrap();
    let w = Worker::builder(q.clone())
        .options(WorkerOptions {
            concurrency: 2,
            ..fast()
        })
        .handler(|job: JobContext| async move { Ok(job.data().clone()) })
        .run()
        .unwrap();
    wait_until("the TLS job", Duration::from_secs(10), || async {
        q.counts().await.unwrap().completed == 1
    })
    .await;
    w.close().await.unwrap();
    assert_eq!(
        q.get(id).await.unwrap().unwrap().result,
        Some(json!({"secure": true}))
    );
    audit_ok(&q).await;
    // A wrong password is refused with a typed error.
    let bad = url.replacen("emq-secret", "wrong", 1);
    let e = Queue::connect(
        emq::ConnectOptions::new(bad).ca_cert_pem(pem.clone()),
        "tls-orders",
    )
    .await
    .err()
    .expect("refused");
    assert_eq!(e.code(), ErrorCode::AuthFailed, "{e}");
    // Without the private CA the server's certificate is not trusted: a typed error that says so.
    let e = Queue::connect(emq::ConnectOptions::new(url.clone()), "tls-orders")
        .await
        .err()
        .expect("untrusted");
    assert_eq!(e.code(), ErrorCode::ServerUnavailable, "{e}");
    assert!(e.message().contains("ca_cert"), "{e}");
    // TLS material on a plain URL, a client certificate without its key, and a CA file that is
    // not PEM are invalid options, refused before any connection.
    let plain = emq::ConnectOptions::new("redis://127.0.0.1:1").ca_cert_pem(pem.clone());
    let e = Queue::connect(plain, "tls-orders")
        .await
        .err()
        .expect("plain");
    assert_eq!(e.code(), ErrorCode::InvalidOption, "{e}");
    let half = emq::TlsConfig {
        client_cert: Some(emq::Pem::Path(server.client_cert_path().into())),
        ..Default::default()
    };
    let e = emq::ConnectOptions::new(url.clone())
        .tls(half)
        .expect_err("half");
    assert_eq!(e.code(), ErrorCode::InvalidOption, "{e}");
    assert!(e.message().contains("client_key"), "{e}");
    let not_pem = emq::TlsConfig {
        ca_cert: Some(emq::Pem::guess("/nonexistent/ca.crt")),
        ..Default::default()
    };
    let e = emq::ConnectOptions::new(url.clone())
        .tls(not_pem)
        .expect_err("missing");
    assert_eq!(e.code(), ErrorCode::InvalidOption, "{e}");
    let key_as_ca = emq::TlsConfig {
        ca_cert: Some(emq::Pem::Path(server.client_key_path().into())),
        ..Default::default()
    };
    let e = emq::ConnectOptions::new(url)
        .tls(key_as_ca)
        .expect_err("a key");
    assert_eq!(e.code(), ErrorCode::InvalidOption, "{e}");
}

/// Mutual TLS (`tls-auth-clients yes`): refused without a client certificate, served with one
/// signed by the server's CA (given as files through `TlsConfig`, as the bindings and the CLI do).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_needs_a_client_certificate() {
    let server = emq_harness::TlsServer::start_mutual().unwrap();
    let url = server.url();
    let ca_only = emq::TlsConfig {
        ca_cert: Some(emq::Pem::Path(server.ca_cert_path().into())),
        ..Default::default()
    };
    let opts = emq::ConnectOptions::new(url.clone())
        .guarded(true)
        .tls(ca_only.clone())
        .unwrap();
    let e = Queue::connect(opts, "mtls").await.err().expect("refused");
    assert_eq!(e.code(), ErrorCode::ServerUnavailable, "{e}");
    assert!(e.message().contains("client_cert"), "{e}");
    let full = emq::TlsConfig {
        client_cert: Some(emq::Pem::Path(server.client_cert_path().into())),
        client_key: Some(emq::Pem::Text(
            std::fs::read(server.client_key_path()).unwrap(),
        )),
        ..ca_only
    };
    let opts = emq::ConnectOptions::new(url)
        .guarded(true)
        .tls(full)
        .unwrap();
    let q = Queue::connect(opts, "mtls").await.unwrap();
    let id = q
        .add("t", json!({"mutual": true}), JobOptions::default())
        .await
        .unwrap();
    let w = Worker::builder(q.clone())
        .options(fast())
        .handler(|job: JobContext| async move { Ok(job.data().clone()) })
        .run()
        .unwrap();
    wait_until("the mTLS job", Duration::from_secs(10), || async {
        q.counts().await.unwrap().completed == 1
    })
    .await;
    w.close().await.unwrap();
    assert_eq!(
        q.get(id).await.unwrap().unwrap().result,
        Some(json!({"mutual": true}))
    );
    audit_ok(&q).await;
}

/// Reads one command's call count from `INFO commandstats` text.
fn calls(stats: &str, cmd: &str) -> u64 {
    stats
        .lines()
        .find(|l| l.starts_with(&format!("cmdstat_{cmd}:")))
        .and_then(|l| l.split("calls=").nth(1))
        .and_then(|v| v.split(',').next())
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0)
}

/// An idle worker is handed a new job by the add itself (no claim call); without a registration
/// the marker names the job and the worker claims and reads it in one call (`claim_id.lua`); a
/// close ends the blocking wait at once and withdraws the registration.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_worker_is_handed_a_new_job_or_claims_it_in_one_call() {
    let server = emq_harness::RedisServer::start().unwrap();
    let q = Queue::connect(emq::ConnectOptions::new(server.url()).guarded(true), "wake")
        .await
        .unwrap();
    let w = Worker::builder(q.clone())
        .options(WorkerOptions {
            concurrency: 1,
            block_timeout: Duration::from_secs(5),
            ..fast()
        })
        .handler(|job: JobContext| async move { Ok(job.data().clone()) })
        .run()
        .unwrap();
    let mut conn = q.store().conn();
    for (round, handed) in [(0, true), (1, false)] {
        // Let the worker go idle (blocked, registered), then count commands from here on.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let registered: u64 = redis::cmd("ZCARD")
            .arg(&q.keys().waiters)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(
            registered, 1,
            "round {round}: the blocked worker is registered"
        );
        if !handed {
            let _: u64 = redis::cmd("DEL")
                .arg(&q.keys().waiters)
                .query_async(&mut conn)
                .await
                .unwrap();
        }
        let _: () = redis::cmd("CONFIG")
            .arg("RESETSTAT")
            .query_async(&mut conn)
            .await
            .unwrap();
        let id = q
            .add("one", json!({"x": round}), JobOptions::default())
            .await
            .unwrap();
        wait_until("the job", Duration::from_secs(10), || async {
            q.get(id).await.unwrap().unwrap().result.is_some()
        })
        .await;
        let stats: String = redis::cmd("INFO")
            .arg("commandstats")
            .query_async(&mut conn)
            .await
            .unwrap();
        // ZPOPMAX runs only in add.lua (taking a registration); LREM only in claim_id.lua here.
        let (zpopmax, lrem) = (calls(&stats, "zpopmax"), calls(&stats, "lrem"));
        if handed {
            assert_eq!((zpopmax, lrem), (1, 0), "handed over by the add:\n{stats}");
        } else {
            assert_eq!(lrem, 1, "claimed by claim_id.lua:\n{stats}");
        }
        let job = q.get(id).await.unwrap().unwrap();
        assert_eq!(job.result, Some(json!({"x": round})));
        assert_eq!((job.attempts_made, job.stalls), (1, 0));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let began = Instant::now();
    w.close().await.unwrap();
    assert!(
        began.elapsed() < Duration::from_millis(1500),
        "close ended the 5 s blocking wait at once ({:?})",
        began.elapsed()
    );
    let registered: u64 = redis::cmd("ZCARD")
        .arg(&q.keys().waiters)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(registered, 0, "close withdrew the registration");
    audit_ok(&q).await;
}

/// Registers a waiter no worker stands behind (as a worker that died while blocked would leave),
/// for 60 s of the server's clock, handing jobs over under a `lease_ms` lease.
async fn register_ghost_waiter(q: &Queue, lease_ms: u64) {
    let mut conn = q.store().conn();
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query_async(&mut conn).await.unwrap();
    let _: u64 = redis::cmd("ZADD")
        .arg(&q.keys().waiters)
        .arg(secs * 1000 + micros / 1000 + 60_000)
        .arg(format!("00000000deadbeef|{lease_ms}"))
        .query_async(&mut conn)
        .await
        .unwrap();
}

/// Entries on the queue's hand-off list.
async fn handoff_entries(q: &Queue) -> u64 {
    redis::cmd("LLEN")
        .arg(&q.keys().handoff)
        .query_async(&mut q.store().conn())
        .await
        .unwrap()
}

/// A job an add handed to a registration whose worker never took it (it was busy, or gone) is
/// given back to wait when its lease expires, counted as neither a stall nor an attempt, and runs
/// once; on both topologies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handed_job_nobody_takes_goes_back_to_wait_uncounted() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "untaken").await;
        let runs = Arc::new(Mutex::new(Vec::new()));
        let runs2 = runs.clone();
        let w = Worker::builder(q.clone())
            .options(WorkerOptions {
                concurrency: 1,
                stalled_interval: Duration::from_millis(200),
                ..fast()
            })
            .handler(move |job: JobContext| {
                let runs = runs2.clone();
                async move {
                    runs.lock().unwrap().push(job.id());
                    if job.data()["long"] == json!(true) {
                        tokio::time::sleep(Duration::from_millis(1500)).await;
                    }
                    Ok(Value::Null)
                }
            })
            .run()
            .unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        let long = q
            .add("long", json!({"long": true}), JobOptions::default())
            .await
            .unwrap();
        wait_until("the long job to start", Duration::from_secs(5), || async {
            runs.lock().unwrap().contains(&long)
        })
        .await;
        register_ghost_waiter(&q, 300).await;
        let short = q
            .add("short", json!({}), JobOptions::default())
            .await
            .unwrap();
        let entries = handoff_entries(&q).await;
        assert_eq!(
            entries, 1,
            "{topology}: handed over to the stale registration"
        );
        assert_eq!(
            q.get(short).await.unwrap().unwrap().state,
            Some(JobState::Active),
            "{topology}"
        );
        audit_ok(&q).await;
        wait_until("the short job", Duration::from_secs(10), || async {
            q.get(short).await.unwrap().unwrap().finished_ms.is_some()
        })
        .await;
        let job = q.get(short).await.unwrap().unwrap();
        assert_eq!(
            (job.stalls, job.attempts_made),
            (0, 1),
            "{topology}: the untaken hand-off was not counted"
        );
        let entries = handoff_entries(&q).await;
        assert_eq!(entries, 0, "{topology}: the entry was withdrawn");
        assert_eq!(
            runs.lock()
                .unwrap()
                .iter()
                .filter(|id| **id == short)
                .count(),
            1,
            "{topology}: ran once"
        );
        w.close().await.unwrap();
        audit_ok(&q).await;
    }
}

/// Prefetched jobs wait in the worker's buffer with their leases held; a graceful close gives
/// every one of them back to wait, uncounted as an attempt, on both topologies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_releases_prefetched_jobs() {
    let runs = common::both()
        .await
        .into_iter()
        .flat_map(|(t, store)| [(t, store.clone(), false), (t, store, true)]);
    for (topology, store, grouped) in runs {
        let q = queue_on(&store, "prefetch").await;
        let mut jobs = common::jobs("n", 12);
        if grouped {
            // Under a per-group limit that allows them all: a released job must wait under its
            // group's limit again (the audit checks that each is in the groups hash).
            q.set_group_rate_limit(Some(emq::GroupRateLimit {
                max: 1_000,
                window: Duration::from_secs(60),
            }))
            .await
            .unwrap();
            for j in &mut jobs {
                j.options.group = Some("tenant-1".into());
            }
        }
        let topology = format!("{topology}{}", if grouped { ", grouped" } else { "" });
        let ids = q.add_bulk(jobs).await.unwrap();
        // The fourth job blocks, so the worker is caught holding its buffer.
        let blocker = ids[3];
        let w = Worker::builder(q.clone())
            .options(WorkerOptions {
                concurrency: 1,
                prefetch: Some(4),
                ..fast()
            })
            .handler(move |job: JobContext| async move {
                if job.id() == blocker {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                }
                Ok(Value::Null)
            })
            .run()
            .unwrap();
        wait_until("the blocking job runs", Duration::from_secs(10), || async {
            q.get(blocker).await.unwrap().map(|j| j.state) == Some(Some(JobState::Active))
                && w.stats().completed == 3
        })
        .await;
        let held = q.counts().await.unwrap().active;
        assert!(
            (2..=5).contains(&held),
            "{topology}: one running and up to 4 buffered jobs are leased, saw {held}"
        );
        let report = w.close_within(Duration::from_millis(200)).await.unwrap();
        assert_eq!(
            report.released, held,
            "{topology}: every held job is released"
        );
        let c = q.counts().await.unwrap();
        assert_eq!(
            (c.active, c.waiting + c.completed),
            (0, 12),
            "{topology}: {c:?}"
        );
        for job in q.list(JobState::Waiting, 0, 20).await.unwrap() {
            assert_eq!(
                job.attempts_made, 0,
                "{topology}: a released job is not an attempt"
            );
        }
        audit_ok(&q).await;
    }
}

/// A worker does not lease ahead while its jobs are long: two workers share slow jobs evenly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_jobs_are_not_prefetched() {
    let store = common::standalone().await;
    let q = queue_on(&store, "longjobs").await;
    q.add_bulk(common::jobs("slow", 6)).await.unwrap();
    let start = |q: Queue| {
        Worker::builder(q)
            .options(WorkerOptions {
                concurrency: 1,
                ..fast()
            })
            .handler(|_job: JobContext| async {
                tokio::time::sleep(Duration::from_millis(150)).await;
                Ok(Value::Null)
            })
            .run()
            .unwrap()
    };
    let a = start(q.clone());
    let b = start(q.clone());
    wait_until("6 completed", Duration::from_secs(20), || async {
        a.stats().completed + b.stats().completed == 6
    })
    .await;
    let (na, nb) = (a.stats().completed, b.stats().completed);
    assert!(
        na >= 2 && nb >= 2,
        "both workers ran slow jobs: {na} and {nb}"
    );
    a.close().await.unwrap();
    b.close().await.unwrap();
    audit_ok(&q).await;
}

/// A delayed job that becomes the queue's earliest wakes a blocked worker, whose next wait then ends
/// when the job is due: it starts on time, not when the worker's 5 s blocking wait runs out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_earliest_delayed_job_wakes_a_blocked_worker() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "delay-wake").await;
        let w = Worker::builder(q.clone())
            .options(WorkerOptions {
                block_timeout: Duration::from_secs(5),
                ..fast()
            })
            .handler(|_job: JobContext| async move { Ok(Value::Null) })
            .run()
            .unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        let id = q
            .add(
                "later",
                json!({}),
                JobOptions {
                    delay_ms: 300,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        wait_until("the delayed job", Duration::from_secs(10), || async {
            q.get(id).await.unwrap().unwrap().finished_ms.is_some()
        })
        .await;
        let job = q.get(id).await.unwrap().unwrap();
        let after = job.processed_ms.unwrap() - job.created_ms;
        assert!(
            (300..2_500).contains(&after),
            "{topology}: started {after} ms after the add (due at 300 ms; the wait was 5 s)"
        );
        w.close().await.unwrap();
        audit_ok(&q).await;
    }
}

/// A job handed to a registration whose worker never took it is the oldest ready job: the next claim
/// by any worker takes it first (popping its entry), rather than leaving it until its lease expires.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_takes_untaken_handed_jobs_first() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "handed-first").await;
        register_ghost_waiter(&q, 60_000).await;
        let handed = q
            .add("handed", json!({}), JobOptions::default())
            .await
            .unwrap();
        let later = q.add_bulk(common::jobs("later", 5)).await.unwrap();
        let entries = handoff_entries(&q).await;
        assert_eq!(entries, 1, "{topology}: the first job was handed over");
        let order = Arc::new(Mutex::new(Vec::new()));
        let order2 = order.clone();
        let w = Worker::builder(q.clone())
            .options(WorkerOptions {
                concurrency: 1,
                ..fast()
            })
            .handler(move |job: JobContext| {
                order2.lock().unwrap().push(job.id());
                async { Ok(Value::Null) }
            })
            .run()
            .unwrap();
        wait_until("all six jobs", Duration::from_secs(10), || async {
            q.counts().await.unwrap().completed == 6
        })
        .await;
        let order = order.lock().unwrap().clone();
        assert_eq!(order[0], handed, "{topology}: the handed job ran first");
        assert_eq!(
            order.len(),
            1 + later.len(),
            "{topology}: each job ran once"
        );
        let job = q.get(handed).await.unwrap().unwrap();
        assert_eq!((job.attempts_made, job.stalls), (1, 0), "{topology}");
        w.close().await.unwrap();
        audit_ok(&q).await;
    }
}

/// One worker at concurrency 1 starts a queue's jobs in the order the queue hands them out,
/// whatever the order its claims' replies come back in (the fetch loop's and the completer's
/// refills race: a later claim's jobs must wait for an earlier one's), prefetch or not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_slot_starts_jobs_in_queue_order() {
    for (topology, store) in common::both().await {
        for prefetch in [Some(1), Some(3), None] {
            let q = queue_on(&store, "inorder").await;
            let ids = q.add_bulk(common::jobs("n", 300)).await.unwrap();
            let log = Arc::new(Mutex::new(Vec::new()));
            let log2 = log.clone();
            let w = Worker::builder(q.clone())
                .options(WorkerOptions {
                    concurrency: 1,
                    prefetch,
                    ..fast()
                })
                .handler(move |job: JobContext| {
                    let log = log2.clone();
                    async move {
                        log.lock().unwrap().push(job.id());
                        Ok(Value::Null)
                    }
                })
                .run()
                .unwrap();
            wait_until("all done", Duration::from_secs(30), || async {
                q.counts().await.unwrap().completed == 300
            })
            .await;
            w.close().await.unwrap();
            let started = log.lock().unwrap().clone();
            let out_of_order = started.windows(2).filter(|p| p[0] > p[1]).count();
            assert_eq!(
                (started.len(), out_of_order),
                (300, 0),
                "{topology}, prefetch {prefetch:?}: every job ran once, in order"
            );
            assert_eq!(started, ids, "{topology}, prefetch {prefetch:?}");
            audit_ok(&q).await;
        }
    }
}
