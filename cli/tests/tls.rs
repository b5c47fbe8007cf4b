//! `--tls-ca`, `--tls-cert`, `--tls-key` (and `EMQ_TLS_CA`, `EMQ_TLS_CERT`, `EMQ_TLS_KEY`) on the
//! harness's TLS servers: a private CA, and mutual TLS (`tls-auth-clients yes`).

use emq_harness::TlsServer;
use std::process::Output;
use std::time::Duration;

mod common;

const RUN_TIMEOUT: Duration = Duration::from_secs(30);

fn emq(args: &[&str], env: &[(&str, &str)]) -> Output {
    common::run_emq(args, env, RUN_TIMEOUT)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn path(p: &std::path::Path) -> String {
    p.to_string_lossy().into_owned()
}

fn add_ok(out: &Output) -> String {
    assert!(out.status.success(), "{out:?}");
    let id = text(&out.stdout).trim().to_string();
    emq::JobId::parse(&id).expect("a job id");
    id
}

#[test]
fn a_private_ca_from_the_flag_or_the_environment() {
    let server = TlsServer::start().expect("tls server");
    let url = server.url();
    let ca = path(server.ca_cert_path());
    let add = [
        "--url",
        &url,
        "add",
        "tls-q",
        "greet",
        "--data",
        r#"{"n":1}"#,
    ];

    // Without the CA: the server's certificate is not trusted, and the error says what to give.
    let out = emq(&add, &[]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = text(&out.stderr);
    assert!(stderr.contains("error[server_unavailable]"), "{stderr}");
    assert!(stderr.contains("--tls-ca"), "{stderr}");

    let mut with_flag = vec!["--tls-ca", ca.as_str()];
    with_flag.extend(add);
    let id = add_ok(&emq(&with_flag, &[]));
    let id2 = add_ok(&emq(&add, &[("EMQ_TLS_CA", &ca)]));
    // The PEM text itself in the variable works too.
    let pem = std::fs::read_to_string(server.ca_cert_path()).unwrap();
    let out = emq(
        &["--url", &url, "job", "tls-q", &id, "--json"],
        &[("EMQ_TLS_CA", &pem)],
    );
    assert!(out.status.success(), "{out:?}");
    let job: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(job["data"], serde_json::json!({"n": 1}), "{job}");
    assert_ne!(id, id2);

    // A missing file and a plain URL with a CA are invalid options (exit 2).
    let out = emq(&add, &[("EMQ_TLS_CA", "/nonexistent/ca.pem")]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        text(&out.stderr).contains("error[invalid_option]"),
        "{out:?}"
    );
    let out = emq(
        &[
            "--url",
            "redis://127.0.0.1:1",
            "--tls-ca",
            &ca,
            "stats",
            "tls-q",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(text(&out.stderr).contains("rediss://"), "{out:?}");
}

#[test]
fn mutual_tls_takes_the_client_certificate_and_key() {
    let server = TlsServer::start_mutual().expect("mtls server");
    let url = server.url();
    let ca = path(server.ca_cert_path());
    let cert = path(server.client_cert_path());
    let key = path(server.client_key_path());
    let add = [
        "--url", &url, "--tls-ca", &ca, "add", "mtls-q", "greet", "--data", "{}",
    ];

    let out = emq(&add, &[]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = text(&out.stderr);
    assert!(stderr.contains("error[server_unavailable]"), "{stderr}");
    assert!(stderr.contains("--tls-cert"), "{stderr}");

    let mut flags = vec!["--tls-cert", cert.as_str(), "--tls-key", key.as_str()];
    flags.extend(add);
    add_ok(&emq(&flags, &[]));
    add_ok(&emq(
        &add,
        &[("EMQ_TLS_CERT", &cert), ("EMQ_TLS_KEY", &key)],
    ));

    // A certificate without its key is refused before connecting.
    let mut half = vec!["--tls-cert", cert.as_str()];
    half.extend(add);
    let out = emq(&half, &[]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(text(&out.stderr).contains("client_key"), "{out:?}");

    let out = emq(
        &["--url", &url, "--tls-ca", &ca, "stats", "mtls-q", "--json"],
        &[("EMQ_TLS_CERT", &cert), ("EMQ_TLS_KEY", &key)],
    );
    assert!(out.status.success(), "{out:?}");
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(stats["counts"]["waiting"], 2, "{stats}");
}
