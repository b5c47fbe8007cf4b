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
