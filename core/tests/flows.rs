//! Flows on real servers: a parent waits for children in other queues (on other cluster nodes),
//! reads their results, and completes exactly once — also when a worker dies between the two steps
//! of a child's completion. Child-failure policies: fail, ignore, remove.

mod common;

use common::wait_until;

use emq::{
    FlowJob, HandlerError, JobContext, JobOptions, JobState, ParentPolicy, Queue, Store, Worker,
    WorkerHandle, WorkerOptions,
};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CHILD_ENV: &str = "EMQ_TEST_FLOW_CHILD";

fn opts(lease_ms: u64) -> WorkerOptions {
    WorkerOptions {
        concurrency: 4,
        lease: Duration::from_millis(lease_ms),
        stalled_interval: Duration::from_millis(lease_ms / 2),
        block_timeout: Duration::from_millis(300),
        ..WorkerOptions::default()
    }
}

/// Three queue names whose slots are on three different nodes of the cluster.
fn spread_names(prefix: &str) -> Vec<String> {
    let cluster = emq_harness::shared_cluster();
    let mut nodes = std::collections::HashSet::new();
    let mut out = Vec::new();
    for i in 0.. {
        let name = common::unique(&format!("{prefix}{i}"));
        let slot = emq::QueueName::new(&name).unwrap().slot();
        if nodes.insert(cluster.node_for_slot(slot)) {
            out.push(name);
            if out.len() == 3 {
                return out;
            }
        }
    }
    unreachable!()
}

fn leaf(queue: &str, n: i64, options: JobOptions) -> FlowJob {
    FlowJob {
        queue: queue.into(),
        name: "part".into(),
        data: json!({ "n": n }),
        options,
        children: vec![],
    }
}

fn child_worker(q: &Queue, lease_ms: u64) -> WorkerHandle {
    Worker::builder(q.clone())
        .options(opts(lease_ms))
        .handler(|job: JobContext| async move {
            let n = job.data()["n"].as_i64().unwrap();
            if n < 0 {
                return Err(HandlerError::unrecoverable(format!("bad part {n}")));
            }
            Ok(json!(n * 10))
        })
        .run()
        .unwrap()
}

fn parent_worker(q: &Queue, runs: Arc<AtomicUsize>) -> WorkerHandle {
    Worker::builder(q.clone())
        .options(opts(2_000))
        .handler(move |job: JobContext| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                let results = job.children_results().await.unwrap();
                let sum: i64 = results.values().filter_map(Value::as_i64).sum();
                Ok(json!({ "sum": sum, "children": results.len() }))
            }
        })
        .run()
        .unwrap()
}

async fn queues(store: &Store, names: &[String]) -> Vec<Queue> {
    let minter = Arc::new(emq::IdMinter::start(store.clone()).await.unwrap());
    names
        .iter()
        .map(|n| Queue::with_store(store.clone(), minter.clone(), n).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parent_waits_for_children_across_nodes() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let names = spread_names("flow");
    for (topology, store) in common::both().await {
        let qs = queues(&store, &names).await;
        let (parent_q, a, b) = (&qs[0], &qs[1], &qs[2]);
        let ids = parent_q
            .add_flow(FlowJob {
                queue: names[0].clone(),
                name: "assemble".into(),
                data: json!({}),
                options: JobOptions::default(),
                children: vec![
                    leaf(&names[1], 1, JobOptions::default()),
                    leaf(&names[1], 2, JobOptions::default()),
                    leaf(&names[2], 3, JobOptions::default()),
                ],
            })
            .await
            .unwrap();
        assert_eq!(
            parent_q.get(ids.id).await.unwrap().unwrap().state,
            Some(JobState::WaitingChildren)
        );
        let runs = Arc::new(AtomicUsize::new(0));
        let workers = vec![
            parent_worker(parent_q, runs.clone()),
            child_worker(a, 2_000),
            child_worker(b, 2_000),
        ];
        wait_until("the parent", Duration::from_secs(20), || async {
            parent_q.counts().await.unwrap().completed == 1
        })
        .await;
        for w in workers {
            w.close().await.unwrap();
        }
        let parent = parent_q.get(ids.id).await.unwrap().unwrap();
        assert_eq!(
            parent.result,
            Some(json!({"sum": 60, "children": 3})),
            "{topology}"
        );
        assert_eq!(
            runs.load(Ordering::SeqCst),
            1,
            "{topology}: the parent ran once"
        );
        for q in &qs {
            let r = q.audit().await.unwrap();
            assert!(r.ok(), "{topology}: {:?}", r.problems);
        }
    }
}

/// A child-queue worker process that dies (abort) right after the first step of a completion.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flow_child_process() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (url, name) = spec.split_once('|').unwrap();
    let q = Queue::connect(emq::ConnectOptions::new(url).guarded(true), name)
        .await
        .unwrap();
    let _w = child_worker(&q, 1_000);
    tokio::time::sleep(Duration::from_secs(30)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_dying_between_the_two_steps_still_completes_the_parent_once() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let names = spread_names("crashflow");
    let store = common::cluster().await;
    let qs = queues(&store, &names).await;
    let (parent_q, child_q) = (&qs[0], &qs[1]);
    let ids = parent_q
        .add_flow(FlowJob {
            queue: names[0].clone(),
            name: "assemble".into(),
            data: json!({}),
            options: JobOptions::default(),
            children: vec![leaf(&names[1], 7, JobOptions::default())],
        })
        .await
        .unwrap();
    // The child is taken by a process that records it in the parent, then dies.
    let exe = std::env::current_exe().unwrap();
    let mut victim = std::process::Command::new(exe)
        .args([
            "--exact",
            "flow_child_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(
            CHILD_ENV,
            format!("{}|{}", store.options().urls[0], names[1]),
        )
        .env("EMQ_FAULT_AFTER_PARENT_STEP", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(20);
    while victim.try_wait().unwrap().is_none() {
        assert!(Instant::now() < until, "the victim died at the fault point");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Step one happened: the parent moved to wait; the child is still active (its lease held).
    assert_eq!(parent_q.counts().await.unwrap().waiting, 1);
    assert_eq!(child_q.counts().await.unwrap().active, 1);
    let runs = Arc::new(AtomicUsize::new(0));
    let workers = vec![
        parent_worker(parent_q, runs.clone()),
        child_worker(child_q, 1_000),
    ];
    wait_until("both done", Duration::from_secs(20), || async {
        parent_q.counts().await.unwrap().completed == 1
            && child_q.counts().await.unwrap().completed == 1
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    for w in workers {
        w.close().await.unwrap();
    }
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the parent completed exactly once"
    );
    let child = child_q.list(JobState::Completed, 0, 10).await.unwrap();
    assert_eq!(child[0].stalls, 1, "the child was recovered and re-run");
    assert_eq!(
        parent_q.get(ids.id).await.unwrap().unwrap().result,
        Some(json!({"sum": 70, "children": 1}))
    );
    for q in &qs {
        let r = q.audit().await.unwrap();
        assert!(r.ok(), "{:?}", r.problems);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_failure_policies() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let store = common::standalone().await;
    let names: Vec<String> = (0..2)
        .map(|i| common::unique(&format!("policy{i}")))
        .collect();
    let qs = queues(&store, &names).await;
    let (parent_q, child_q) = (&qs[0], &qs[1]);
    let mut parents = Vec::new();
    for policy in [
        ParentPolicy::Fail,
        ParentPolicy::Ignore,
        ParentPolicy::Remove,
    ] {
        let ids = parent_q
            .add_flow(FlowJob {
                queue: names[0].clone(),
                name: "assemble".into(),
                data: json!({}),
                options: JobOptions::default(),
                children: vec![
                    leaf(&names[1], 5, JobOptions::default()),
                    leaf(
                        &names[1],
                        -1,
                        JobOptions {
                            parent_policy: policy,
                            ..Default::default()
                        },
                    ),
                ],
            })
            .await
            .unwrap();
        parents.push((policy, ids.id));
    }
    let runs = Arc::new(AtomicUsize::new(0));
    let workers = vec![
        parent_worker(parent_q, runs.clone()),
        child_worker(child_q, 2_000),
    ];
    wait_until("three parents settled", Duration::from_secs(20), || async {
        let c = parent_q.counts().await.unwrap();
        c.completed == 2 && c.failed == 1
    })
    .await;
    for w in workers {
        w.close().await.unwrap();
    }
    for (policy, id) in parents {
        let job = parent_q.get(id).await.unwrap().unwrap();
        match policy {
            ParentPolicy::Fail => {
                assert_eq!(job.state, Some(JobState::Failed));
                assert_eq!(job.failure.unwrap().code, "child_failed");
            }
            ParentPolicy::Ignore => {
                assert_eq!(
                    job.result,
                    Some(json!({"sum": 50, "children": 2})),
                    "the failed child is listed"
                );
            }
            ParentPolicy::Remove => {
                assert_eq!(job.result, Some(json!({"sum": 50, "children": 1})));
            }
        }
    }
    for q in &qs {
        let r = q.audit().await.unwrap();
        assert!(r.ok(), "{:?}", r.problems);
    }
}
