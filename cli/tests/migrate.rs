//! `emq migrate` against real BullMQ: the npm package (pinned in tests/migrate/package.json, installed
//! into `$EMQ_BULLMQ_DIR`, default /tmp/emq-bullmq, when missing) writes a queue in every state with
//! prefix `bull` (BullMQ's default) and `emq` (the v1 keyspace); `emq migrate` copies it; emq workers
//! run the copies. A migration SIGKILLed midway and run again ends with every job copied once, in
//! order. Without node or npm every test here prints a SKIPPED line and returns, except under CI (`CI=true`,
//! as `.ci/run` → scripts/test-all sets it), where that fails the test.

use emq::{ConnectOptions, JobContext, JobState, Queue, Worker, WorkerOptions};
use emq_harness::RedisServer;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

mod common;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/migrate/fixtures.js");
const PACKAGE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/migrate/package.json");

fn works(cmd: &str) -> bool {
    Command::new(cmd)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Where BullMQ is installed, installing it once per test binary; None (with a SKIPPED line) when
/// node or npm is missing, outside CI (under `CI=true` that panics: CI has both).
fn bullmq() -> Option<PathBuf> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        if !works("node") || !works("npm") {
            emq_harness::builds::skip_unless_ci(
                "emq migrate's BullMQ tests",
                "they need node and npm on PATH; none found",
            );
            return None;
        }
        let dir = PathBuf::from(
            std::env::var("EMQ_BULLMQ_DIR").unwrap_or_else(|_| "/tmp/emq-bullmq".into()),
        );
        let pinned = |p: &str, v: &str| {
            std::fs::read_to_string(dir.join("node_modules").join(p).join("package.json"))
                .is_ok_and(|t| t.contains(&format!("\"version\": \"{v}\"")))
        };
        if !(pinned("bullmq", "6.7.0") && pinned("ioredis", "6.0.0")) {
            std::fs::create_dir_all(&dir).expect("create the BullMQ folder");
            std::fs::copy(PACKAGE, dir.join("package.json")).expect("copy package.json");
            eprintln!("installing BullMQ 6.7.0 into {}", dir.display());
            let out = run_bounded(
                Command::new("npm")
                    .args(["install", "--no-audit", "--no-fund"])
                    .current_dir(&dir),
                Duration::from_secs(300),
            );
            assert!(out.status.success(), "npm install: {out:?}");
        }
        Some(dir)
    })
    .clone()
}

fn run_bounded(cmd: &mut Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let until = Instant::now() + limit;
    while child.try_wait().expect("try_wait").is_none() {
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

/// Runs the BullMQ fixture script; returns its summary.
fn fixtures(dir: &Path, url: &str, prefix: &str, queue: &str, mode: &[&str]) -> Value {
    let out = run_bounded(
        Command::new("node")
            .arg(FIXTURES)
            .args([url, prefix, queue])
            .args(mode)
            .env("EMQ_BULLMQ_DIR", dir),
        Duration::from_secs(120),
    );
    assert!(out.status.success(), "fixtures.js: {out:?}");
    serde_json::from_slice(&out.stdout).expect("fixture summary")
}

fn migrate(urls: &[String], args: &[&str]) -> Value {
    let mut all: Vec<&str> = urls.iter().flat_map(|u| ["--url", u.as_str()]).collect();
    all.extend_from_slice(&["migrate", "--json"]);
    all.extend_from_slice(args);
    let out = common::run_emq(&all, &[], Duration::from_secs(120));
    assert!(out.status.success(), "emq {all:?}: {out:?}");
    serde_json::from_slice(&out.stdout).expect("report JSON")
}

/// `state` -> (read, written, already, skipped).
fn rows(report: &Value) -> BTreeMap<String, (u64, u64, u64, u64)> {
    report["states"]
        .as_array()
        .expect("states")
        .iter()
        .map(|s| {
            let n = |k: &str| s[k].as_u64().unwrap();
            (
                s["state"].as_str().unwrap().to_string(),
                (n("read"), n("written"), n("already"), n("skipped")),
            )
        })
        .collect()
}

async fn conn(url: &str) -> emq::Store {
    emq::Store::connect(ConnectOptions::new(url).guarded(true))
        .await
        .expect("connect")
}

/// Every source key of `<prefix>:<queue>` and its DUMP (TTLs aside).
async fn snapshot(store: &emq::Store, prefix: &str, queue: &str) -> BTreeMap<String, Vec<u8>> {
    let mut c = store.conn();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}:{queue}:*"))
        .query_async(&mut c)
        .await
        .unwrap();
    let mut out = BTreeMap::new();
    for k in keys {
        let v: Vec<u8> = redis::cmd("DUMP")
            .arg(&k)
            .query_async(&mut c)
            .await
            .unwrap();
        out.insert(k, v);
    }
    out
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Copies every key of `<prefix>:<queue>` from `from` to the cluster (DUMP / RESTORE with its TTL):
/// BullMQ's flat keys land on several nodes, as they would on a cluster (BullMQ itself needs a
/// braced prefix there). Returns how many nodes hold them.
async fn copy_to_cluster(from: &emq::Store, to: &emq::Store, prefix: &str, queue: &str) -> usize {
    let cluster = emq_harness::shared_cluster();
    let mut nodes = std::collections::HashSet::new();
    for (key, dump) in snapshot(from, prefix, queue).await {
        let ttl: i64 = redis::cmd("PTTL")
            .arg(&key)
            .query_async(&mut from.conn())
            .await
            .unwrap();
        let _: () = redis::cmd("RESTORE")
            .arg(&key)
            .arg(ttl.max(0))
            .arg(dump)
            .arg("REPLACE")
            .query_async(&mut to.conn())
            .await
            .unwrap();
        nodes.insert(cluster.node_for_key(&key));
    }
    nodes.len()
}

async fn every_state_for(dir: &Path, prefix: &str, on_cluster: bool) {
    every_state_into(dir, prefix, on_cluster, "payments", None).await;
}

/// [`every_state_for`] into a queue of `partitions` partitions (None: a plain queue).
async fn every_state_into(
    dir: &Path,
    prefix: &str,
    on_cluster: bool,
    queue: &str,
    partitions: Option<u16>,
) {
    let server = RedisServer::start().expect("redis-server");
    let fixture_url = server.url();
    let summary =
        tokio::task::block_in_place(|| fixtures(dir, &fixture_url, prefix, queue, &["all"]));
    let due_ms = summary["delayed_due_ms"].as_u64().expect("due");
    let (store, urls) = if on_cluster {
        let urls = emq_harness::shared_cluster().urls();
        let store = emq::Store::connect(ConnectOptions::seeds(urls.clone()).guarded(true))
            .await
            .expect("connect cluster");
        let nodes = copy_to_cluster(&conn(&fixture_url).await, &store, prefix, queue).await;
        assert!(nodes >= 2, "the source keys landed on {nodes} node(s)");
        (store, urls)
    } else {
        (conn(&fixture_url).await, vec![fixture_url.clone()])
    };
    let before = snapshot(&store, prefix, queue).await;
    assert!(before.contains_key(&format!("{prefix}:{queue}:wait")));
    let q = Queue::connect_with(
        ConnectOptions::seeds(urls.clone()),
        queue,
        emq::QueueOptions { partitions },
    )
    .await
    .unwrap();
    assert_eq!(
        q.partitions().map_or(1, |p| p.len()),
        usize::from(partitions.unwrap_or(1))
    );

    // The dry run writes nothing, and says what would move.
    let dry = tokio::task::block_in_place(|| {
        migrate(
            &urls,
            &[
                "--from-prefix",
                prefix,
                "--queue",
                queue,
                "--dry-run",
                "--completed",
            ],
        )
    });
    assert_eq!(dry["dry_run"], true);
    let expect = BTreeMap::from([
        ("schedulers".to_string(), (2, 2, 0, 0)),
        ("waiting-children".to_string(), (1, 1, 0, 0)),
        ("flow-children".to_string(), (2, 2, 0, 0)),
        ("active".to_string(), (1, 0, 0, 1)),
        ("wait".to_string(), (12, 11, 0, 1)),
        ("prioritized".to_string(), (4, 4, 0, 0)),
        ("delayed".to_string(), (2, 1, 0, 1)),
        ("failed".to_string(), (1, 1, 0, 0)),
        ("completed".to_string(), (1, 1, 0, 0)),
    ]);
    assert_eq!(rows(&dry), expect, "{dry:#}");
    assert_eq!(
        q.counts().await.unwrap().total(),
        0,
        "the dry run added jobs"
    );
    assert!(q.schedulers().await.unwrap().is_empty());
    assert_eq!(snapshot(&store, prefix, queue).await, before);

    let report = tokio::task::block_in_place(|| {
        migrate(
            &urls,
            &["--from-prefix", prefix, "--queue", queue, "--completed"],
        )
    });
    assert_eq!(rows(&report), expect, "{report:#}");
    // Logs come along: "done" logged one run, "fail-me" two.
    assert_eq!(report["log_lines"], 3, "{report:#}");
    let failed = q.list(JobState::Failed, 0, 10).await.unwrap();
    assert_eq!(
        q.logs(failed[0].id).await.unwrap(),
        ["run 1 of fail-me", "run 2 of fail-me"]
    );
    assert!(
        !report["not_mapped"]
            .to_string()
            .contains("deduplication id"),
        "{report:#}"
    );
    // The deduplication id is the copy's dedup key: an emq add with it returns the copy.
    let held = q
        .add(
            "w",
            serde_json::json!({"n": 999}),
            emq::JobOptions {
                dedup: Some("w-zero".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        q.get(held).await.unwrap().unwrap().data,
        serde_json::json!({"n": 0})
    );
    let reasons = report["reasons"].as_object().unwrap();
    let has = |needle: &str| reasons.keys().any(|r| r.contains(needle));
    assert!(has("lock lives"), "{reasons:?}");
    assert!(!has("flow"), "the flow moves whole: {reasons:?}");
    assert!(has("migrated scheduler"), "{reasons:?}");
    // The source is not written without --delete-source.
    assert_eq!(snapshot(&store, prefix, queue).await, before);
    let counts = q.counts().await.unwrap();
    assert_eq!(counts.failed, 1);
    assert_eq!(counts.completed, 1);
    assert_eq!(counts.prioritized, 4);
    assert_eq!(
        counts.delayed, 1,
        "{counts:?} (the migration ran after the job's due time?)"
    );
    // The 11 waiting copies, and the every-hour scheduler's first run: it was due, and the
    // migration fires the due schedulers once they are copied.
    // And the flow's two children; their parent waits for them.
    assert_eq!(counts.waiting, 14, "{counts:?}");
    assert_eq!(counts.waiting_children, 1, "{counts:?}");

    // Run again: nothing is copied twice.
    let again = tokio::task::block_in_place(|| {
        migrate(
            &urls,
            &["--from-prefix", prefix, "--queue", queue, "--completed"],
        )
    });
    for (state, (read, written, already, _)) in rows(&again) {
        if state != "schedulers" {
            assert_eq!(written, 0, "{state} copied twice: {again:#}");
            assert_eq!(already, expect[&state].1, "{state}: {again:#}");
            assert_eq!(read, expect[&state].0, "{state}");
        }
    }
    assert_eq!(q.counts().await.unwrap(), counts);
    assert_eq!(again["log_lines"], 0, "a re-run copies no log line twice");

    // The human report is a table with a row per state.
    let mut human: Vec<&str> = urls.iter().flat_map(|u| ["--url", u.as_str()]).collect();
    human.extend_from_slice(&[
        "migrate",
        "--from-prefix",
        prefix,
        "--queue",
        queue,
        "--dry-run",
    ]);
    let out = tokio::task::block_in_place(|| common::run_emq(&human, &[], Duration::from_secs(60)));
    assert!(out.status.success(), "{out:?}");
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(
        table.contains("STATE") && table.contains("ALREADY"),
        "{table}"
    );
    let wait_row = table
        .lines()
        .find(|l| l.starts_with("wait "))
        .expect(&table);
    assert_eq!(
        wait_row.split_whitespace().collect::<Vec<_>>(),
        ["wait", "12", "0", "11", "1"],
        "{table}"
    );
    run_the_copies(&store, &q, prefix, queue, due_ms).await;
    delete_source_for(&store, &urls, &q, prefix, queue).await;
    let audit = q.audit().await.unwrap();
    assert!(audit.ok(), "{:?}", audit.problems);
}

/// `--delete-source` after a migration: every copied source job (the flow's too, and the schedulers)
/// is deleted, nothing is copied again, and what was not copied (the held job, the pending
/// scheduler runs) stays.
async fn delete_source_for(
    store: &emq::Store,
    urls: &[String],
    q: &Queue,
    prefix: &str,
    queue: &str,
) {
    let counts = q.counts().await.unwrap();
    let gone = tokio::task::block_in_place(|| {
        migrate(
            urls,
            &[
                "--from-prefix",
                prefix,
                "--queue",
                queue,
                "--completed",
                "--delete-source",
            ],
        )
    });
    for (state, (_, written, _, _)) in rows(&gone) {
        if state != "schedulers" {
            assert_eq!(written, 0, "{state}: {gone:#}");
        }
    }
    // 18 copied jobs, the flow's 3 and 2 scheduler hashes.
    assert_eq!(gone["source_deleted"], 23, "{gone:#}");
    assert_eq!(q.counts().await.unwrap(), counts);
    let mut c = store.conn();
    let len = |key: String, cmd: &'static str| {
        let mut c = store.conn();
        async move {
            redis::cmd(cmd)
                .arg(key)
                .query_async::<u64>(&mut c)
                .await
                .unwrap()
        }
    };
    // Left in wait: the every-hour scheduler's pending run.
    assert_eq!(len(format!("{prefix}:{queue}:wait"), "LLEN").await, 1);
    for set in ["prioritized", "failed", "completed", "repeat"] {
        assert_eq!(
            len(format!("{prefix}:{queue}:{set}"), "ZCARD").await,
            0,
            "{set}"
        );
    }
    assert_eq!(len(format!("{prefix}:{queue}:delayed"), "ZCARD").await, 1);
    assert_eq!(
        len(format!("{prefix}:{queue}:waiting-children"), "ZCARD").await,
        0
    );
    let active: Vec<String> = redis::cmd("LRANGE")
        .arg(format!("{prefix}:{queue}:active"))
        .arg(0)
        .arg(-1)
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(active.len(), 1);
    let lock: i64 = redis::cmd("EXISTS")
        .arg(format!("{prefix}:{queue}:{}:lock", active[0]))
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(lock, 1, "the held job's lock is not touched");
}

/// Checks the copies (failures, results, schedulers), then runs them with an emq worker.
async fn run_the_copies(store: &emq::Store, q: &Queue, prefix: &str, queue: &str, due_ms: u64) {
    // Failures keep their reason, stack and attempts; results are kept; the lookup works.
    let mut c = store.conn();
    let failed_src: Vec<String> = redis::cmd("ZRANGE")
        .arg(format!("{prefix}:{queue}:failed"))
        .arg(0)
        .arg(-1)
        .query_async(&mut c)
        .await
        .unwrap();
    let fid = q
        .migrated_id(prefix, queue, &failed_src[0])
        .await
        .unwrap()
        .expect("mapped");
    let failed = q.get(fid).await.unwrap().expect("failed job");
    assert_eq!(failed.state, Some(JobState::Failed));
    assert_eq!(failed.name, "fail-me");
    assert_eq!(failed.attempts_made, 2);
    let failure = failed.failure.expect("failure");
    assert_eq!(failure.message, "boom 2");
    assert!(failure.stack.unwrap_or_default().contains("boom 2"));
    assert_eq!(
        q.migrated_source(fid).await.unwrap().as_deref(),
        Some(format!("{prefix}:{queue}:{}", failed_src[0]).as_str())
    );
    let done = q.list(JobState::Completed, 0, 10).await.unwrap();
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].result, Some(serde_json::json!({"ok": 1, "n": 100})));
    let scheds = q.schedulers().await.unwrap();
    let by_id: HashMap<_, _> = scheds.iter().map(|s| (s.id.as_str(), s)).collect();
    assert_eq!(by_id["every-hour"].every_ms, 3_600_000);
    assert_eq!(by_id["cron-9"].cron.as_deref(), Some("0 9 * * *"));
    assert_eq!(by_id["cron-9"].tz.as_deref(), Some("Europe/Berlin"));

    // emq workers run every copy once: priorities first (emq runs prioritized jobs before plain
    // ones), in priority order; the waiting ones in the source's order (LIFO first); the delayed
    // one on time; and the every-hour scheduler's first run.
    let seen: Arc<Mutex<Vec<(String, i64, u64)>>> = Arc::default();
    let seen2 = seen.clone();
    let worker = Worker::builder(q.clone())
        .options(WorkerOptions {
            concurrency: 1,
            // No jobs leased ahead: a concurrency-1 worker with prefetch runs its buffer out of
            // list order (seen here: a job 16 places early), which is not what this test checks.
            prefetch: Some(0),
            block_timeout: Duration::from_millis(200),
            ..WorkerOptions::default()
        })
        .handler(move |job: JobContext| {
            let seen = seen2.clone();
            async move {
                let n = job.data()["n"].as_i64().unwrap_or(-1);
                seen.lock()
                    .unwrap()
                    .push((job.job().name.clone(), n, now_ms()));
                Ok(Value::Null)
            }
        })
        .run()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(30);
    while seen.lock().unwrap().len() < 20 && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    worker.close().await.unwrap();
    let seen = seen.lock().unwrap().clone();
    let names = |name: &str| -> Vec<i64> {
        seen.iter()
            .filter(|(n, _, _)| n == name)
            .map(|(_, v, _)| *v)
            .collect()
    };
    let mut prioritized = names("p");
    let mut plain: Vec<i64> = seen
        .iter()
        .filter(|(n, _, _)| n == "w" || n == "w-lifo")
        .map(|(_, v, _)| *v)
        .collect();
    if q.partitions().is_some() {
        // A partitioned queue keeps order within a partition, not across them: each runs once.
        prioritized.sort_unstable();
        plain.sort_unstable();
        assert_eq!(prioritized, vec![20, 21, 22, 23], "{seen:?}");
        assert_eq!(plain, (0..=10).collect::<Vec<i64>>(), "{seen:?}");
    } else {
        assert_eq!(prioritized, vec![21, 23, 22, 20], "{seen:?}");
        assert_eq!(plain, [10, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9], "{seen:?}");
    }
    assert_eq!(names("tick"), vec![-1], "{seen:?}");
    let d: Vec<u64> = seen
        .iter()
        .filter(|(n, _, _)| n == "d")
        .map(|(_, _, t)| *t)
        .collect();
    assert_eq!(d.len(), 1, "{seen:?}");
    assert!(
        d[0] + 250 >= due_ms && d[0] <= due_ms + 2_000,
        "the delayed job ran at {} ms from its due time",
        d[0] as i64 - due_ms as i64
    );
    assert_eq!(seen.len(), 20, "every payload once: {seen:?}");
    // The flow: both children, then their parent.
    let at = |name: &str| seen.iter().position(|(n, _, _)| n == name).expect(name);
    assert!(
        at("parent") > at("child-1") && at("parent") > at("child-2"),
        "{seen:?}"
    );
    assert_eq!(names("parent"), vec![103], "{seen:?}");
    for held in ["held", "fail-me", "done"] {
        assert!(names(held).is_empty(), "{held} ran: {seen:?}");
    }
    let audit = q.audit().await.unwrap();
    assert!(audit.ok(), "{:?}", audit.problems);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_bullmq_queue_in_every_state_arrives_once_with_prefix_bull_and_v1_emq() {
    let Some(dir) = bullmq() else { return };
    every_state_for(&dir, "bull", false).await;
    every_state_for(&dir, "emq", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_the_3_master_cluster_flat_source_keys_on_several_nodes_migrate_too() {
    let Some(dir) = bullmq() else { return };
    every_state_for(&dir, "bull", true).await;
}

/// Into a partitioned queue (`emq migrate` finds its stored count): the same report, counts and
/// runs, each job in one partition (its dedup key's where it has one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn into_a_partitioned_queue_on_the_cluster_every_state_arrives_once() {
    let Some(dir) = bullmq() else { return };
    every_state_into(&dir, "bull", true, "payments-parts", Some(3)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migration_killed_midway_and_run_again_copies_each_job_once_in_order() {
    let Some(dir) = bullmq() else { return };
    let server = RedisServer::start().expect("redis-server");
    let url = server.url();
    const N: usize = 3_000;
    let summary =
        tokio::task::block_in_place(|| fixtures(&dir, &url, "bull", "bulk", &["many", "3000"]));
    assert_eq!(summary["waiting"], N);
    let store = conn(&url).await;
    let q = Queue::connect(ConnectOptions::new(url.as_str()), "bulk")
        .await
        .unwrap();
    // Twice: start a slowed migration and SIGKILL it just after a batch's adds landed, inside the
    // pause before that batch is marked copied (the widest window a crash can hit).
    for (round, kill_at) in [(1u64, 300u64), (2, 1_200)] {
        let mut child = Command::new(common::EMQ)
            .args([
                "--url", &url, "migrate", "--queue", "bulk", "--batch", "100",
            ])
            .env("EMQ_TEST_MIGRATE_PAUSE_MS", "150")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let until = Instant::now() + Duration::from_secs(60);
        while q.counts().await.unwrap().waiting < kill_at {
            assert!(
                child.try_wait().unwrap().is_none(),
                "round {round}: the migration ended before it was killed"
            );
            assert!(Instant::now() < until, "round {round}: no progress");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let copied = q.counts().await.unwrap().waiting;
        assert!(
            copied > 0 && copied < N as u64,
            "round {round}: {copied} copied"
        );
    }
    let report =
        tokio::task::block_in_place(|| migrate(std::slice::from_ref(&url), &["--queue", "bulk"]));
    let (read, written, already, skipped) = rows(&report)["wait"];
    assert_eq!(read, N as u64);
    assert_eq!(skipped, 0);
    assert!(already > 0 && written > 0, "{report:#}");
    assert_eq!(written + already, N as u64, "{report:#}");
    assert_eq!(q.counts().await.unwrap().waiting, N as u64);

    // --delete-source: the copies exist, so each source job goes; none is copied again.
    let deleted = tokio::task::block_in_place(|| {
        migrate(
            std::slice::from_ref(&url),
            &["--queue", "bulk", "--delete-source"],
        )
    });
    assert_eq!(rows(&deleted)["wait"], (N as u64, 0, N as u64, 0));
    assert_eq!(deleted["source_deleted"], N);
    let left: u64 = redis::cmd("LLEN")
        .arg("bull:bulk:wait")
        .query_async(&mut store.conn())
        .await
        .unwrap();
    assert_eq!(left, 0);
    let jobs_left: Vec<String> = redis::cmd("KEYS")
        .arg("bull:bulk:[0-9]*")
        .query_async(&mut store.conn())
        .await
        .unwrap();
    assert!(jobs_left.is_empty(), "{} source jobs left", jobs_left.len());

    // Every payload once, in the source's order.
    let seen: Arc<Mutex<Vec<i64>>> = Arc::default();
    let seen2 = seen.clone();
    let worker = Worker::builder(q.clone())
        .options(WorkerOptions {
            concurrency: 1,
            // No jobs leased ahead: a concurrency-1 worker with prefetch runs its buffer out of
            // list order (seen here: a job 16 places early), which is not what this test checks.
            prefetch: Some(0),
            block_timeout: Duration::from_millis(200),
            ..WorkerOptions::default()
        })
        .handler(move |job: JobContext| {
            let seen = seen2.clone();
            async move {
                seen.lock().unwrap().push(job.data()["n"].as_i64().unwrap());
                Ok(Value::Null)
            }
        })
        .run()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(60);
    while seen.lock().unwrap().len() < N && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    worker.close().await.unwrap();
    let seen = seen.lock().unwrap().clone();
    let mut sorted = seen.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(
        (seen.len(), sorted.len()),
        (N, N),
        "ran {} jobs, {} distinct",
        seen.len(),
        sorted.len()
    );
    let first = seen.iter().enumerate().find(|(i, n)| **n != *i as i64);
    assert!(first.is_none(), "out of order from position {first:?}");
    let audit = q.audit().await.unwrap();
    assert!(audit.ok(), "{:?}", audit.problems);
}
