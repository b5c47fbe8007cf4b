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

/// A parent whose first run adds `data.spawn` children (values 1..=n, to the queue `data.to`,
/// policy `data.policy`) and returns; its next run, once they are done, sums their results.
fn spawning_worker(q: &Queue, runs: Arc<AtomicUsize>) -> WorkerHandle {
    Worker::builder(q.clone())
        .options(opts(2_000))
        .handler(move |job: JobContext| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                let results = job.children_results().await.unwrap();
                if results.is_empty() {
                    let to = job.data()["to"].as_str().unwrap().to_string();
                    let policy = match job.data()["policy"].as_str() {
                        Some("ignore") => ParentPolicy::Ignore,
                        _ => ParentPolicy::Fail,
                    };
                    for n in 1..=job.data()["spawn"].as_i64().unwrap() {
                        let value = if job.data()["bad"] == json!(n) { -n } else { n };
                        job.add_child(
                            &to,
                            "part",
                            json!({ "n": value }),
                            JobOptions {
                                parent_policy: policy,
                                ..JobOptions::default()
                            },
                        )
                        .await
                        .map_err(|e| HandlerError::new(e.to_string()))?;
                    }
                    return Ok(json!("spawned"));
                }
                let sum: i64 = results.values().filter_map(Value::as_i64).sum();
                Ok(json!({ "sum": sum, "children": results.len() }))
            }
        })
        .run()
        .unwrap()
}

/// A running job adds children (on other nodes); it waits for them as a flow's parent does and
/// runs again once they are done, with their results; its attempt is not spent by the wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_job_adds_children_and_runs_again_once_they_are_done() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let names = spread_names("spawn");
    for (topology, store) in common::both().await {
        let qs = queues(&store, &names).await;
        let (parent_q, kids) = (&qs[0], &qs[1]);
        let id = parent_q
            .add(
                "import",
                json!({ "spawn": 4, "to": names[1] }),
                JobOptions::default(),
            )
            .await
            .unwrap();
        let runs = Arc::new(AtomicUsize::new(0));
        let pw = spawning_worker(parent_q, runs.clone());
        // No child worker yet: the parent's first run ends waiting for its four children.
        wait_until("the parent waits", Duration::from_secs(20), || async {
            parent_q.get(id).await.unwrap().unwrap().state == Some(JobState::WaitingChildren)
        })
        .await;
        assert_eq!(kids.counts().await.unwrap().waiting, 4, "{topology}");
        let cw = child_worker(kids, 2_000);
        wait_until("the parent", Duration::from_secs(20), || async {
            parent_q.counts().await.unwrap().completed == 1
        })
        .await;
        pw.close().await.unwrap();
        cw.close().await.unwrap();
        let parent = parent_q.get(id).await.unwrap().unwrap();
        assert_eq!(
            parent.result,
            Some(json!({"sum": 100, "children": 4})),
            "{topology}"
        );
        assert_eq!(runs.load(Ordering::SeqCst), 2, "{topology}: two runs");
        assert_eq!(
            parent.attempts_made, 1,
            "{topology}: the wait spent no attempt"
        );
        for q in &qs {
            let r = q.audit().await.unwrap();
            assert!(r.ok(), "{topology}: {:?}", r.problems);
        }
    }
}

/// A child added by a running job that fails for good fails the job under the `fail` policy
/// (code `child_failed`), whether the job still ran or already waited; under `ignore` the job
/// runs again with the failure among its children's results.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_child_of_a_running_job_follows_its_policy() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let names = spread_names("spawnfail");
    for (topology, store) in common::both().await {
        let qs = queues(&store, &names).await;
        let (parent_q, kids) = (&qs[0], &qs[1]);
        let fails = parent_q
            .add(
                "import",
                json!({ "spawn": 3, "to": names[1], "bad": 2 }),
                JobOptions::default(),
            )
            .await
            .unwrap();
        let ignores = parent_q
            .add(
                "import",
                json!({ "spawn": 3, "to": names[1], "bad": 2, "policy": "ignore" }),
                JobOptions::default(),
            )
            .await
            .unwrap();
        let runs = Arc::new(AtomicUsize::new(0));
        let workers = [spawning_worker(parent_q, runs), child_worker(kids, 2_000)];
        wait_until("both parents end", Duration::from_secs(20), || async {
            let c = parent_q.counts().await.unwrap();
            c.completed + c.failed == 2
        })
        .await;
        for w in workers {
            w.close().await.unwrap();
        }
        let f = parent_q.get(fails).await.unwrap().unwrap();
        assert_eq!(f.state, Some(JobState::Failed), "{topology}");
        assert_eq!(
            f.failure.map(|x| x.code),
            Some("child_failed".to_string()),
            "{topology}"
        );
        let i = parent_q.get(ignores).await.unwrap().unwrap();
        assert_eq!(i.state, Some(JobState::Completed), "{topology}");
        // Children 1 and 3 (10 + 30); the failed one is listed, not summed.
        assert_eq!(
            i.result,
            Some(json!({"sum": 40, "children": 3})),
            "{topology}"
        );
        for q in &qs {
            let r = q.audit().await.unwrap();
            assert!(r.ok(), "{topology}: {:?}", r.problems);
        }
    }
}

/// `Queue::add_child` gives a waiting parent one more child, which it waits for too; a parent
/// that is not waiting for children refuses (`invalid_state`), and the child is not left behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_parent_takes_one_more_child_and_others_refuse() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let names = spread_names("addchild");
    for (topology, store) in common::both().await {
        let qs = queues(&store, &names).await;
        let (parent_q, kids) = (&qs[0], &qs[1]);
        let flow = parent_q
            .add_flow(FlowJob {
                queue: names[0].clone(),
                name: "assemble".into(),
                data: json!({}),
                options: JobOptions::default(),
                children: vec![leaf(&names[1], 1, JobOptions::default())],
            })
            .await
            .unwrap();
        let extra = parent_q
            .add_child(
                flow.id,
                &names[1],
                "part",
                json!({ "n": 5 }),
                JobOptions::default(),
            )
            .await
            .unwrap();
        assert_eq!(kids.counts().await.unwrap().waiting, 2, "{topology}");
        let plain = parent_q
            .add("lone", json!({}), JobOptions::default())
            .await
            .unwrap();
        let e = parent_q
            .add_child(
                plain,
                &names[1],
                "part",
                json!({ "n": 9 }),
                JobOptions::default(),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code(), emq::ErrorCode::InvalidState, "{topology}: {e}");
        assert_eq!(
            kids.counts().await.unwrap().waiting,
            2,
            "{topology}: none left behind"
        );
        let e = parent_q
            .add_child(
                flow.id,
                &names[1],
                "part",
                json!({}),
                JobOptions {
                    dedup: Some("k".into()),
                    ..JobOptions::default()
                },
            )
            .await
            .unwrap_err();
        assert_eq!(e.code(), emq::ErrorCode::InvalidOption, "{topology}");
        parent_q.remove(plain).await.unwrap();
        let runs = Arc::new(AtomicUsize::new(0));
        let workers = vec![
            parent_worker(parent_q, runs.clone()),
            child_worker(kids, 2_000),
        ];
        wait_until("the parent", Duration::from_secs(20), || async {
            parent_q.counts().await.unwrap().completed == 1
        })
        .await;
        for w in workers {
            w.close().await.unwrap();
        }
        let parent = parent_q.get(flow.id).await.unwrap().unwrap();
        assert_eq!(
            parent.result,
            Some(json!({"sum": 60, "children": 2})),
            "{topology}: waited for the extra child {extra}"
        );
        assert_eq!(runs.load(Ordering::SeqCst), 1, "{topology}");
        for q in &qs {
            let r = q.audit().await.unwrap();
            assert!(r.ok(), "{topology}: {:?}", r.problems);
        }
    }
}
