//! Beyond the basics, on real servers: global concurrency, rate limits, debounce, dedup with a TTL,
//! job schedulers
//! racing across workers and producers, and metrics in the Prometheus text format.

mod common;

use common::{audit_ok, jobs, queue_on, wait_until};

use emq::{
    ErrorCode, JobContext, JobOptions, RateLimit, Repeat, Schedule, Worker, WorkerHandle,
    WorkerOptions,
};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn opts(concurrency: usize) -> WorkerOptions {
    WorkerOptions {
        concurrency,
        block_timeout: Duration::from_millis(300),
        ..WorkerOptions::default()
    }
}

/// With a global concurrency of 1 and two workers, the next job starts as soon as one ends: it
/// does not sit, leased and unstarted, in a worker's buffer until that worker's blocking wait
/// ends (the completer's refill was held behind the fetch loop's empty claim, whose ticket lived
/// across its wait: gaps of the whole 5 s block timeout).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capped_queue_starts_the_next_job_when_one_ends() {
    let store = common::standalone().await;
    let q = queue_on(&store, "gconc-gap").await;
    q.set_global_concurrency(Some(1)).await.unwrap();
    q.add_bulk(jobs("n", 12)).await.unwrap();
    let runs = Arc::new(std::sync::Mutex::new(Vec::<(Instant, Instant)>::new()));
    let mut workers: Vec<WorkerHandle> = Vec::new();
    for _ in 0..2 {
        let runs = runs.clone();
        workers.push(
            Worker::builder(q.clone())
                .options(WorkerOptions {
                    concurrency: 5,
                    ..WorkerOptions::default()
                })
                .handler(move |_job: JobContext| {
                    let runs = runs.clone();
                    async move {
                        let began = Instant::now();
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        runs.lock().unwrap().push((began, Instant::now()));
                        Ok(Value::Null)
                    }
                })
                .run()
                .unwrap(),
        );
    }
    wait_until("12 done", Duration::from_secs(60), || async {
        q.counts().await.unwrap().completed == 12
    })
    .await;
    for w in workers {
        w.close().await.unwrap();
    }
    let mut runs = runs.lock().unwrap().clone();
    runs.sort();
    let gap = runs
        .windows(2)
        .map(|w| w[1].0.saturating_duration_since(w[0].1))
        .max()
        .unwrap();
    assert!(
        gap < Duration::from_secs(2),
        "the longest wait between one job's end and the next one's start was {gap:?}"
    );
    audit_ok(&q).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn global_concurrency_holds_across_workers() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "gconc").await;
        q.set_global_concurrency(Some(2)).await.unwrap();
        q.add_bulk(jobs("n", 24)).await.unwrap();
        let now = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let mut workers: Vec<WorkerHandle> = Vec::new();
        for _ in 0..3 {
            let (now, peak) = (now.clone(), peak.clone());
            workers.push(
                Worker::builder(q.clone())
                    .options(opts(5))
                    .handler(move |_job: JobContext| {
                        let (now, peak) = (now.clone(), peak.clone());
                        async move {
                            let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                            peak.fetch_max(n, Ordering::SeqCst);
                            tokio::time::sleep(Duration::from_millis(40)).await;
                            now.fetch_sub(1, Ordering::SeqCst);
                            Ok(Value::Null)
                        }
                    })
                    .run()
                    .unwrap(),
            );
        }
        wait_until("24 done", Duration::from_secs(30), || async {
            q.counts().await.unwrap().completed == 24
        })
        .await;
        for w in workers {
            w.close().await.unwrap();
        }
        let p = peak.load(Ordering::SeqCst);
        assert!(
            p <= 2,
            "{topology}: at most 2 at once across 3 workers, saw {p}"
        );
        assert_eq!(p, 2, "{topology}: the limit is used");
        audit_ok(&q).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limit_spreads_starts_over_windows() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "rate").await;
        q.set_rate_limit(Some(RateLimit {
            max: 5,
            window: Duration::from_millis(400),
        }))
        .await
        .unwrap();
        let ids = q.add_bulk(jobs("n", 20)).await.unwrap();
        let started = Instant::now();
        let w = Worker::builder(q.clone())
            .options(opts(10))
            .handler(|_job: JobContext| async { Ok(Value::Null) })
            .run()
            .unwrap();
        wait_until("20 done", Duration::from_secs(30), || async {
            q.counts().await.unwrap().completed == 20
        })
        .await;
        let took = started.elapsed();
        w.close().await.unwrap();
        let mut starts = Vec::new();
        for id in ids {
            starts.push(q.get(id).await.unwrap().unwrap().processed_ms.unwrap());
        }
        starts.sort();
        assert!(
            took >= Duration::from_millis(1_100),
            "{topology}: 4 windows of 5, took {took:?}"
        );
        // No 6 starts within one window's length of the first.
        let first = starts[0];
        let early = starts.iter().filter(|s| **s < first + 350).count();
        assert!(early <= 5, "{topology}: {early} starts in the first window");
        audit_ok(&q).await;
        q.set_rate_limit(None).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debounce_replaces_data_and_pushes_due_time() {
    let store = common::standalone().await;
    let q = queue_on(&store, "debounce").await;
    let o = JobOptions {
        dedup: Some("search:user-7".into()),
        debounce: true,
        delay_ms: 400,
        ..Default::default()
    };
    let a = q.add("search", json!({"q": "r"}), o.clone()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(150)).await;
    let b = q
        .add("search", json!({"q": "ru"}), o.clone())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(150)).await;
    let last_add = Instant::now();
    let c = q
        .add("search", json!({"q": "rust"}), o.clone())
        .await
        .unwrap();
    assert_eq!((a, b), (a, c), "one job holds the key");
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    let w = Worker::builder(q.clone())
        .options(opts(1))
        .handler(move |job: JobContext| {
            let seen = seen2.clone();
            async move {
                seen.lock()
                    .unwrap()
                    .push((job.data().clone(), last_add.elapsed()));
                Ok(Value::Null)
            }
        })
        .run()
        .unwrap();
    wait_until("the debounced job", Duration::from_secs(10), || async {
        q.counts().await.unwrap().completed == 1
    })
    .await;
    w.close().await.unwrap();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].0, json!({"q": "rust"}), "the last data wins");
    assert!(
        seen[0].1 >= Duration::from_millis(350),
        "due time pushed: ran {:?} after the last add",
        seen[0].1
    );
    audit_ok(&q).await;
}

/// A dedup key held for a TTL drops duplicates after its job completed, until the TTL ends; then
/// the key is free again, and the trim drops the expired hold. On both topologies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dedup_with_a_ttl_outlives_the_job() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "dedupttl").await;
        let o = JobOptions {
            dedup: Some("invoice:42".into()),
            dedup_ttl_ms: 700,
            ..Default::default()
        };
        let added = Instant::now();
        let first = q.add("send", json!(1), o.clone()).await.unwrap();
        let w = Worker::builder(q.clone())
            .options(opts(1))
            .handler(|_job: JobContext| async { Ok(Value::Null) })
            .run()
            .unwrap();
        wait_until("the first run", Duration::from_secs(10), || async {
            q.counts().await.unwrap().completed == 1
        })
        .await;
        // Completed, yet the key is held: a duplicate returns the first job and adds nothing.
        let again = q.add("send", json!(2), o.clone()).await.unwrap();
        assert_eq!(
            again, first,
            "{topology}: held for the TTL after completion"
        );
        assert!(
            added.elapsed() < Duration::from_millis(700),
            "{topology}: the check ran in time"
        );
        audit_ok(&q).await;
        tokio::time::sleep(
            Duration::from_millis(700).saturating_sub(added.elapsed()) + Duration::from_millis(100),
        )
        .await;
        // Expired: the trim drops the hold, and the key takes a new job.
        assert_eq!(
            q.expire_dedup().await.unwrap(),
            1,
            "{topology}: the expired hold is dropped"
        );
        let fresh = q.add("send", json!(3), o.clone()).await.unwrap();
        assert_ne!(fresh, first, "{topology}: the key is free after its TTL");
        wait_until("the second run", Duration::from_secs(10), || async {
            q.counts().await.unwrap().completed == 2
        })
        .await;
        w.close().await.unwrap();
        let e = q
            .add(
                "x",
                json!(0),
                JobOptions {
                    dedup_ttl_ms: 10,
                    ..Default::default()
                },
            )
            .await
            .unwrap_err();
        assert_eq!(
            e.code(),
            emq::ErrorCode::InvalidOption,
            "{topology}: a TTL needs a key"
        );
        audit_ok(&q).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedulers_fire_each_run_exactly_once_under_races() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "sched").await;
        let created = q
            .upsert_scheduler(
                "nightly-report",
                Schedule {
                    limit: Some(6),
                    ..Schedule::new(
                        Repeat::Every(Duration::from_millis(150)),
                        "report",
                        json!({"kind": "daily"}),
                    )
                },
            )
            .await
            .unwrap();
        assert!(created);
        let list = q.schedulers().await.unwrap();
        assert_eq!(
            (list.len(), list[0].id.as_str(), list[0].every_ms),
            (1, "nightly-report", 150)
        );
        let runs = Arc::new(AtomicUsize::new(0));
        let mut workers = Vec::new();
        for _ in 0..3 {
            let runs = runs.clone();
            workers.push(
                Worker::builder(q.clone())
                    .options(opts(2))
                    .handler(move |job: JobContext| {
                        let runs = runs.clone();
                        async move {
                            assert_eq!(job.data(), &json!({"kind": "daily"}));
                            runs.fetch_add(1, Ordering::SeqCst);
                            Ok(Value::Null)
                        }
                    })
                    .run()
                    .unwrap(),
            );
        }
        // Producers racing the workers to fire the same scheduler.
        let racers: Vec<_> = (0..3)
            .map(|_| {
                let q = q.clone();
                tokio::spawn(async move {
                    let until = Instant::now() + Duration::from_secs(3);
                    while Instant::now() < until {
                        q.fire_due_schedulers().await.unwrap();
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                })
            })
            .collect();
        for r in racers {
            r.await.unwrap();
        }
        wait_until("6 runs", Duration::from_secs(10), || async {
            q.counts().await.unwrap().completed == 6
        })
        .await;
        tokio::time::sleep(Duration::from_millis(400)).await;
        for w in workers {
            w.close().await.unwrap();
        }
        assert_eq!(
            runs.load(Ordering::SeqCst),
            6,
            "{topology}: each due run once, and the limit holds"
        );
        assert_eq!(q.counts().await.unwrap().total(), 6);
        assert!(
            q.schedulers().await.unwrap().is_empty(),
            "removed after its limit"
        );
        audit_ok(&q).await;
        assert!(!q.remove_scheduler("nightly-report").await.unwrap());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_and_render_as_prometheus_text() {
    let store = common::standalone().await;
    let q = queue_on(&store, "metrics").await;
    q.add_bulk(jobs("n", 12)).await.unwrap();
    q.add("bad", json!(0), JobOptions::default()).await.unwrap();
    let w = Worker::builder(q.clone())
        .options(opts(4))
        .handler(|job: JobContext| async move {
            if job.job().name == "bad" {
                Err(emq::HandlerError::new("nope"))
            } else {
                Ok(Value::Null)
            }
        })
        .run()
        .unwrap();
    wait_until("13 finished", Duration::from_secs(10), || async {
        let c = q.counts().await.unwrap();
        c.completed == 12 && c.failed == 1
    })
    .await;
    w.close().await.unwrap();
    let m = q.metrics().await.unwrap();
    assert_eq!(
        m.completed_per_minute.iter().map(|(_, n)| n).sum::<u64>(),
        12
    );
    assert_eq!(m.failed_per_minute.iter().map(|(_, n)| n).sum::<u64>(), 1);
    assert_eq!(m.added, 13);
    let text = emq::prometheus_text(&[m]);
    let mut samples = 0;
    for line in text.lines() {
        if line.starts_with('#') {
            assert!(
                line.starts_with("# HELP ") || line.starts_with("# TYPE "),
                "{line}"
            );
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("name{labels} value");
        assert!(
            series.starts_with("emq_") && series.ends_with('}'),
            "{line}"
        );
        value.parse::<f64>().expect("a number");
        samples += 1;
    }
    assert!(text.contains(&format!(
        "emq_jobs{{queue=\"{}\",state=\"completed\"}} 12",
        q.name()
    )));
    assert!(text.contains(&format!(
        "emq_jobs_added_total{{queue=\"{}\"}} 13",
        q.name()
    )));
    assert!(samples >= 9 + 6);
}

/// A bulk add of several thousand jobs (many script calls, more than one pipelined group) lands
/// them in wait in the order given: the calls used to go out on separate tasks, in any order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_big_bulk_add_keeps_its_order() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "bulk-order").await;
        let ids = q.add_bulk(jobs("n", 4_600)).await.unwrap();
        let waiting = q.list_ids(emq::JobState::Waiting, 0, 10_000).await.unwrap();
        assert_eq!(waiting.len(), ids.len(), "{topology}");
        let first_out_of_place = waiting.iter().zip(&ids).position(|(w, i)| w != i);
        assert_eq!(
            first_out_of_place, None,
            "{topology}: wait order differs from the add's"
        );
        audit_ok(&q).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_description_reads_back_exactly_and_an_overlong_one_is_refused_writing_nothing() {
    use emq::spec::JobSpec;
    let store = common::standalone().await;
    let q = queue_on(&store, "described").await;
    // Up to the bound, any text (multi-byte too) reads back as given, through both add paths (a
    // plain one-job add and a batch).
    let text = "nightly import of account 7 — ünïcode, \"quotes\" and\nnewlines";
    let described = |d: &str| {
        JobOptions::try_from(JobSpec {
            description: Some(d.to_string()),
            ..JobSpec::default()
        })
        .unwrap()
    };
    let one = q.add("import", json!(1), described(text)).await.unwrap();
    let longest = "é".repeat(emq::options::MAX_DESCRIPTION / 2);
    let batch = q
        .add_bulk(vec![emq::NewJob {
            name: "import".into(),
            data: json!(2),
            options: described(&longest),
        }])
        .await
        .unwrap();
    let got = q.get(one).await.unwrap().unwrap();
    assert_eq!(got.options["description"], json!(text));
    assert_eq!(
        got.job_options().description.as_deref(),
        Some(text),
        "the typed options read it back too"
    );
    let got = q.get(batch[0]).await.unwrap().unwrap();
    assert_eq!(got.options["description"], json!(longest));
    // No description: nothing stored for it.
    let plain = q
        .add("plain", json!(3), JobOptions::default())
        .await
        .unwrap();
    let got = q.get(plain).await.unwrap().unwrap();
    assert!(got.options.get("description").is_none(), "{}", got.options);
    // One byte past the bound: refused before anything is sent.
    let err = JobOptions::try_from(JobSpec {
        description: Some("x".repeat(emq::options::MAX_DESCRIPTION + 1)),
        ..JobSpec::default()
    })
    .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidOption);
    assert!(err.message().contains("description"), "{}", err.message());
    let direct = JobOptions {
        description: Some("x".repeat(emq::options::MAX_DESCRIPTION + 1)),
        ..JobOptions::default()
    };
    assert_eq!(
        q.add("too-long", json!(4), direct)
            .await
            .unwrap_err()
            .code(),
        ErrorCode::InvalidOption
    );
    assert_eq!(q.counts().await.unwrap().waiting, 3);
    audit_ok(&q).await;
}

/// Workers count completed runs into the queue's run and wait histograms: per minute and over the
/// queue's life, rendered as Prometheus histograms (cumulative buckets in seconds, sum, count).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_and_waits_are_counted_into_histograms() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "latency").await;
        q.add_bulk(jobs("n", 10)).await.unwrap();
        // Every first run waits at least this long: the worker starts after it.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let w = Worker::builder(q.clone())
            .options(opts(4))
            .handler(|_job: JobContext| async move {
                tokio::time::sleep(Duration::from_millis(30)).await;
                Ok(Value::Null)
            })
            .run()
            .unwrap();
        wait_until("10 done", Duration::from_secs(10), || async {
            q.counts().await.unwrap().completed == 10
        })
        .await;
        w.close().await.unwrap();
        let m = q.metrics().await.unwrap();
        assert_eq!(m.run.count(), 10, "{topology}: {:?}", m.run);
        assert_eq!(m.wait.count(), 10, "{topology}: {:?}", m.wait);
        // Runs of 30 ms: none in the buckets up to 25 ms; waits of 300 ms: none up to 250 ms.
        let upto = |h: &emq::latency::Histogram, ms: u64| -> u64 {
            let b = emq::latency::bucket_of(ms);
            h.counts[..=b].iter().sum()
        };
        assert_eq!(upto(&m.run, 25), 0, "{topology}: {:?}", m.run);
        assert_eq!(upto(&m.wait, 250), 0, "{topology}: {:?}", m.wait);
        assert!(m.run.sum_ms >= 300, "{topology}: {:?}", m.run);
        assert!(m.wait.sum_ms >= 3_000, "{topology}: {:?}", m.wait);
        let minutes: u64 = m.run_per_minute.iter().map(|(_, h)| h.count()).sum();
        assert_eq!(minutes, 10, "{topology}: per minute");
        assert!(m.run.quantile_bound_ms(0.5).unwrap() >= 50);
        let text = emq::prometheus_text(&[m]);
        let name = q.name().to_string();
        assert!(
            text.contains("# TYPE emq_job_run_seconds histogram"),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "emq_job_run_seconds_bucket{{queue=\"{name}\",le=\"0.025\"}} 0"
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "emq_job_run_seconds_bucket{{queue=\"{name}\",le=\"+Inf\"}} 10"
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "emq_job_wait_seconds_count{{queue=\"{name}\"}} 10"
            )),
            "{text}"
        );
        q.drain(true).await.unwrap();
    }
}
