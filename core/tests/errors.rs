//! The datastore's refusals come back with their own codes, not `script_error` (issue 16, defect
//! 5): a wrong password and NOAUTH are `auth_failed`, an ACL refusal (NOPERM, a user limited to
//! another tenant's keys) is `permission_denied`, a database number the server does not have is
//! `invalid_option`, and LOADING (a server reloading its data) is the retryable
//! `server_unavailable`. Each on its own real redis-server.

use emq::{ConnectOptions, ErrorCode, JobOptions, Queue};
use emq_harness::server::{RedisServer, ServerOptions};
use serde_json::json;
use std::time::{Duration, Instant};

fn server(args: &[&str]) -> RedisServer {
    RedisServer::start_with(ServerOptions {
        extra_args: args.iter().map(|s| s.to_string()).collect(),
        ..ServerOptions::default()
    })
    .expect("start redis-server")
}

async fn connect_err(url: &str) -> emq::Error {
    match Queue::connect(ConnectOptions::new(url).guarded(true), "errs").await {
        Ok(_) => panic!("{url} connected"),
        Err(e) => e,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_password_and_noauth_are_auth_failed() {
    let s = server(&["--requirepass", "right-secret"]);
    let port = s.port();
    for url in [
        format!("redis://:wrong@127.0.0.1:{port}"),
        format!("redis://127.0.0.1:{port}"),
        format!("redis://nobody:right-secret@127.0.0.1:{port}"),
    ] {
        let e = connect_err(&url).await;
        assert_eq!(e.code().as_str(), "auth_failed", "{url}: {e}");
    }
    let q = Queue::connect(
        ConnectOptions::new(format!("redis://:right-secret@127.0.0.1:{port}")).guarded(true),
        "errs",
    )
    .await
    .unwrap();
    q.add("x", json!(1), JobOptions::default()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acl_refusal_is_permission_denied() {
    let s = server(&[]);
    // The ACL line a tenant's user needs: its queue's keys and the core's.
    let set = s
        .cli(&[
            "ACL",
            "SETUSER",
            "tenant-a",
            "on",
            ">a-secret",
            "resetkeys",
            "~emq:{tenant-a}:*",
            "~{emq}:*",
            "+@all",
        ])
        .unwrap();
    assert_eq!(set.trim(), "OK");
    let url = format!("redis://tenant-a:a-secret@127.0.0.1:{}", s.port());
    let a = Queue::connect(ConnectOptions::new(&url).guarded(true), "tenant-a")
        .await
        .unwrap();
    let id = a.add("x", json!(1), JobOptions::default()).await.unwrap();
    assert!(a.get(id).await.unwrap().is_some());
    let b = a.queue("tenant-b").unwrap();
    let e = b
        .add("x", json!(1), JobOptions::default())
        .await
        .unwrap_err();
    assert_eq!(e.code().as_str(), "permission_denied", "{e}");
    let e = b.counts().await.unwrap_err();
    assert_eq!(e.code().as_str(), "permission_denied", "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_number_out_of_range_is_invalid_option() {
    let s = server(&["--databases", "4"]);
    let e = connect_err(&format!("redis://127.0.0.1:{}/4", s.port())).await;
    assert_eq!(e.code(), ErrorCode::InvalidOption, "{e}");
    Queue::connect(
        ConnectOptions::new(format!("redis://127.0.0.1:{}/3", s.port())).guarded(true),
        "errs",
    )
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loading_is_server_unavailable() {
    // Loading 4,000 keys at 1 ms each takes about 4 s, answering other clients LOADING meanwhile.
    let s = server(&[
        "--enable-debug-command",
        "yes",
        "--key-load-delay",
        "1000",
        "--loading-process-events-interval-bytes",
        "1024",
    ]);
    let q = Queue::connect(ConnectOptions::new(s.url()).guarded(true), "errs")
        .await
        .unwrap();
    q.add("x", json!(1), JobOptions::default()).await.unwrap();
    assert_eq!(s.cli(&["DEBUG", "POPULATE", "4000"]).unwrap().trim(), "OK");
    let port = s.port();
    let reload = std::thread::spawn(move || {
        emq_harness::resp::command(port, &["DEBUG", "RELOAD"], Duration::from_secs(30))
    });
    let until = Instant::now() + Duration::from_secs(10);
    let mut unavailable = None;
    while Instant::now() < until && !reload.is_finished() {
        match q.counts().await {
            Err(e) => {
                unavailable = Some(e);
                break;
            }
            Ok(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
    let e = unavailable.expect("no call saw the server loading");
    assert_eq!(e.code(), ErrorCode::ServerUnavailable, "{e}");
    assert!(e.message().to_lowercase().contains("loading"), "{e}");
    reload.join().unwrap().unwrap();
    // Loaded: the same queue works again by itself.
    assert_eq!(q.counts().await.unwrap().waiting, 1);
}

/// The ACL line the site's datastores page (docs/site/operations/datastores.md) and RELIABILITY.md document for one tenant: its queue's keys and the
/// core's `{emq}:` keys, and every command but the dangerous ones (FLUSHALL, CONFIG, KEYS, DEBUG…),
/// less the two of them a worker needs: CLIENT UNBLOCK (to end its own blocking wait at close) and
/// INFO (the server version check).
const TENANT_ACL: &[&str] = &[
    "on",
    ">a-secret",
    "resetkeys",
    "~emq:{tenant-a}:*",
    "~{emq}:*",
    "resetchannels",
    "-@all",
    "+@all",
    "-@dangerous",
    "+client|unblock",
    "+info",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_user_runs_its_queue_completely_and_is_refused_on_another() {
    use emq::{Repeat, Schedule, Worker, WorkerOptions};
    let s = server(&[]);
    let mut set = vec!["ACL", "SETUSER", "tenant-a"];
    set.extend_from_slice(TENANT_ACL);
    assert_eq!(s.cli(&set).unwrap().trim(), "OK");
    let url = format!("redis://tenant-a:a-secret@127.0.0.1:{}", s.port());
    let a = Queue::connect(ConnectOptions::new(&url).guarded(true), "tenant-a")
        .await
        .unwrap();
    let mut events = a.events(None).await.unwrap();
    // add, bulk add, a job that fails once then succeeds (retry), one that fails for good.
    let ok = a
        .add("ok", json!({"n": 1}), JobOptions::default())
        .await
        .unwrap();
    let bulk = a
        .add_bulk(
            (0..5)
                .map(|i| emq::NewJob {
                    name: "ok".into(),
                    data: json!(i),
                    options: JobOptions::default(),
                })
                .collect(),
        )
        .await
        .unwrap();
    let flaky = a
        .add(
            "flaky",
            json!(null),
            JobOptions {
                attempts: 2,
                ..JobOptions::default()
            },
        )
        .await
        .unwrap();
    let doomed = a
        .add("doomed", json!(null), JobOptions::default())
        .await
        .unwrap();
    a.pause().await.unwrap();
    assert!(a.is_paused().await.unwrap());
    a.resume().await.unwrap();
    // A scheduler: every 50 ms, 2 runs.
    let schedule = Schedule {
        limit: Some(2),
        ..Schedule::new(Repeat::Every(Duration::from_millis(50)), "tick", json!({}))
    };
    assert!(a.upsert_scheduler("ticker", schedule).await.unwrap());
    assert_eq!(a.schedulers().await.unwrap().len(), 1);
    let w = Worker::builder(a.clone())
        .options(WorkerOptions {
            lease: Duration::from_millis(1_000),
            stalled_interval: Duration::from_millis(500),
            block_timeout: Duration::from_millis(200),
            ..WorkerOptions::default()
        })
        .handler(|job: emq::JobContext| async move {
            job.log("ran").await?;
            job.progress(json!(50)).await?;
            match job.job().name.as_str() {
                "flaky" if job.job().attempts_made == 0 => Err(emq::HandlerError::new("once")),
                "doomed" => Err(emq::HandlerError::new("never")),
                _ => Ok(json!("done")),
            }
        })
        .run()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        a.fire_due_schedulers().await.unwrap();
        let c = a.counts().await.unwrap();
        // 1 + 5 + flaky + 2 scheduled runs complete; doomed fails.
        if c.completed == 9 && c.failed == 1 {
            break;
        }
        assert!(
            Instant::now() < until,
            "tenant-a's jobs did not finish: {c:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Retry of the failed job, by hand: it runs again (and fails again).
    a.retry(doomed).await.unwrap();
    let until = Instant::now() + Duration::from_secs(20);
    while a.logs(doomed).await.unwrap().len() < 2 || a.counts().await.unwrap().failed < 1 {
        assert!(Instant::now() < until, "the retried job did not run again");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    w.close().await.unwrap();
    let job = a.get(flaky).await.unwrap().unwrap();
    assert_eq!((job.attempts_made, job.result), (2, Some(json!("done"))));
    assert_eq!(a.logs(ok).await.unwrap(), vec!["ran".to_string()]);
    assert!(a.get(bulk[4]).await.unwrap().unwrap().finished_ms.is_some());
    let seen = events
        .next_batch(Duration::from_millis(500), 1_000)
        .await
        .unwrap();
    assert!(seen.iter().any(|e| e.kind == "completed"), "{seen:?}");
    // "ticker" ended itself after its 2 runs; another one is upserted, listed and removed.
    let hourly = Schedule::new(Repeat::Every(Duration::from_secs(3600)), "h", json!({}));
    assert!(a.upsert_scheduler("hourly", hourly).await.unwrap());
    assert_eq!(a.schedulers().await.unwrap().len(), 1);
    assert!(a.remove_scheduler("hourly").await.unwrap());
    let r = a.audit().await.unwrap();
    assert!(r.ok(), "{:?}", r.problems);
    assert!(a.remove(ok).await.is_ok());

    // Every call on tenant-b is refused with the typed error, and writes nothing there.
    let b = a.queue("tenant-b").unwrap();
    let denied = |what: &str, e: emq::Error| {
        assert_eq!(e.code(), ErrorCode::PermissionDenied, "{what}: {e}");
    };
    denied(
        "add",
        b.add("x", json!(1), JobOptions::default())
            .await
            .unwrap_err(),
    );
    denied("counts", b.counts().await.unwrap_err());
    denied("get", b.get(ok).await.unwrap_err());
    denied("pause", b.pause().await.unwrap_err());
    denied("retry", b.retry(doomed).await.unwrap_err());
    denied(
        "upsert_scheduler",
        b.upsert_scheduler(
            "t",
            Schedule::new(Repeat::Every(Duration::from_secs(1)), "t", json!({})),
        )
        .await
        .unwrap_err(),
    );
    denied("audit", b.audit().await.unwrap_err());
    match b.events(None).await {
        Err(e) => denied("events", e),
        Ok(mut st) => denied(
            "events",
            st.next_batch(Duration::from_millis(100), 10)
                .await
                .unwrap_err(),
        ),
    }
    // The dangerous commands are refused too: a tenant cannot flush or reconfigure the server.
    let flush: redis::RedisResult<()> = redis::cmd("FLUSHALL")
        .query_async(&mut a.store().conn())
        .await;
    assert!(flush.is_err());
    let keys: Vec<String> = s
        .cli(&["--scan", "--pattern", "emq:{tenant-b}:*"])
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert!(keys.is_empty(), "{keys:?}");
}
