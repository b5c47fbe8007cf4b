//! Where the datastore is, and the connection to it.
//!
//! In order: the `--url` options (one URL, or several cluster seeds), else `EMQ_URL` (one URL, or
//! seeds separated by commas; empty counts as unset), else the command's fallback:
//!
//! - every command but `demo` and `dev`: [`DEFAULT_URL`], `redis://127.0.0.1:6379` (as redis-cli,
//!   BullMQ and Celery do). When nothing answers there the command fails with `server_unavailable`,
//!   naming the URL it tried and how to give another; it never starts a server of its own, so a job
//!   it adds is never lost with a throwaway one.
//! - `demo` ([`connect_or_embedded`]): a private `redis-server` started for this run (announced on
//!   stderr) and stopped when the [`Connected`] that holds it is dropped, which `main` does before
//!   it exits. (`dev` always starts its own.)
//!
//! `EMQ_TEST_DEFAULT_URL`, for the CLI's own tests only ([`TEST_DEFAULT_ENV`]), replaces
//! [`DEFAULT_URL`] as the fallback (a test cannot assume 6379 free or taken); it ranks below `--url`
//! and `EMQ_URL`, and a note on stderr says so whenever it is used.
//!
//! TLS material for `rediss://` comes from `--tls-ca`, `--tls-cert`, `--tls-key`, else
//! `EMQ_TLS_CA`, `EMQ_TLS_CERT`, `EMQ_TLS_KEY` (a path, or the PEM text itself) ([`resolve_tls`]);
//! `main` sets it once ([`set_tls`]) and every connection to given or default URLs uses it (the
//! core checks it: `invalid_option` for a missing file, a certificate without its key, or TLS
//! material with a `redis://` URL). The private server of `demo` ignores it.
//!
//! Subcommands that read or write the datastore call [`connect`] and keep the [`Connected`] for as
//! long as they run.

use emq::{ConnectOptions, Error, ErrorCode, IdMinter, Pem, Queue, QueueName, Store, TlsConfig};
use emq_server_process::EmbeddedServer;
use std::sync::{Arc, OnceLock};

/// The environment variables read when `--tls-ca`, `--tls-cert`, `--tls-key` are not given.
pub const TLS_ENV: [&str; 3] = ["EMQ_TLS_CA", "EMQ_TLS_CERT", "EMQ_TLS_KEY"];

static TLS: OnceLock<TlsConfig> = OnceLock::new();

/// Each of `[ca, cert, key]`: the flag, else its [`TLS_ENV`] variable (blank counts as unset),
/// as a path or PEM text ([`Pem::guess`]).
pub fn resolve_tls(flags: [&Option<String>; 3], env: impl Fn(&str) -> Option<String>) -> TlsConfig {
    let pick = |i: usize| {
        flags[i]
            .clone()
            .or_else(|| env(TLS_ENV[i]))
            .filter(|v| !v.trim().is_empty())
            .map(|v| Pem::guess(&v))
    };
    TlsConfig {
        ca_cert: pick(0),
        client_cert: pick(1),
        client_key: pick(2),
    }
}

/// Sets the TLS material of this run (once, from `main`).
pub fn set_tls(tls: TlsConfig) {
    let _ = TLS.set(tls);
}

/// Connect options for `urls` with this run's TLS material.
fn options(urls: Vec<String>) -> emq::Result<ConnectOptions> {
    ConnectOptions::seeds(urls).tls(TLS.get().cloned().unwrap_or_default())
}

/// The environment variable read when no `--url` is given.
pub const URL_ENV: &str = "EMQ_URL";

/// Where every command but `demo` and `dev` connects when neither `--url` nor `EMQ_URL` is given.
pub const DEFAULT_URL: &str = "redis://127.0.0.1:6379";

/// For the CLI's tests only: replaces [`DEFAULT_URL`] (announced on stderr when used).
pub const TEST_DEFAULT_ENV: &str = "EMQ_TEST_DEFAULT_URL";

/// Where the datastore is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// Given URLs (one, or cluster seeds), by `--url` or `EMQ_URL`.
    Urls(Vec<String>),
    /// None given: the default URL.
    Default(String),
    /// None given, and the command's fallback is a private server (`demo`).
    Embedded,
}

/// What a command falls back to when no URL is given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fallback {
    /// This URL ([`DEFAULT_URL`], unless a test moved it).
    Url(String),
    /// A private redis-server for this run.
    Embedded,
}

/// `--url` values beat `EMQ_URL` (its value passed as `env`), which beats the fallback.
pub fn resolve(cli_urls: &[String], env: Option<&str>, fallback: Fallback) -> Source {
    if !cli_urls.is_empty() {
        return Source::Urls(cli_urls.to_vec());
    }
    let from_env = split_urls(env);
    if !from_env.is_empty() {
        return Source::Urls(from_env);
    }
    match fallback {
        Fallback::Url(url) => Source::Default(url),
        Fallback::Embedded => Source::Embedded,
    }
}

/// URLs separated by commas; blanks dropped.
fn split_urls(value: Option<&str>) -> Vec<String> {
    value
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// The default URL: [`DEFAULT_URL`], or the one a test put in [`TEST_DEFAULT_ENV`] (`test_env`).
pub fn default_url(test_env: Option<&str>) -> String {
    match test_env.map(str::trim).filter(|s| !s.is_empty()) {
        Some(url) => url.to_string(),
        None => DEFAULT_URL.to_string(),
    }
}

/// A connected store, and the embedded server behind it when there is one. Fields drop in order:
/// the store first, then the server.
pub struct Connected {
    store: Store,
    embedded: Option<EmbeddedServer>,
}

impl Connected {
    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The private server, when no URL was given.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn embedded(&self) -> Option<&EmbeddedServer> {
        self.embedded.as_ref()
    }
}

/// An open queue and the connection behind it (keep both alive while the queue is used).
pub struct Opened {
    /// The queue handle. Declared first, so it drops before the connection.
    pub queue: Queue,
    /// The connection (and the embedded server, if one was started).
    pub _connected: Connected,
}

/// Checks the queue name (before any connection, so a bad name never starts a server), connects
/// and opens the queue (a partitioned queue with its stored partitions).
pub async fn open_queue(cli_urls: &[String], name: &str) -> emq::Result<Opened> {
    open_queue_with(cli_urls, name, emq::QueueOptions::default()).await
}

/// [`open_queue`] with a partition count (`emq add --partitions N`): stored as the queue's the
/// first time, refused when another is stored.
pub async fn open_queue_with(
    cli_urls: &[String],
    name: &str,
    options: emq::QueueOptions,
) -> emq::Result<Opened> {
    let name = QueueName::new(name)?;
    let options = emq::QueueOptions::with_partitions(options.partitions.map(i128::from))?;
    let connected = connect(cli_urls).await?;
    let minter = Arc::new(IdMinter::start(connected.store().clone()).await?);
    let queue = Queue::open(connected.store().clone(), minter, name.as_str(), options).await?;
    Ok(Opened {
        queue,
        _connected: connected,
    })
}

/// A datastore clock (`TIME` on any node), in milliseconds since the epoch: for showing times
/// relative to now. Comparisons against a queue's stamps use `Queue::server_time_ms` (its node).
pub async fn server_time_ms(store: &Store) -> emq::Result<u64> {
    let mut conn = store.conn();
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query_async(&mut conn).await?;
    Ok(secs * 1000 + micros / 1000)
}

/// Resolves the datastore from `--url` values and `EMQ_URL`, else the default URL, and connects.
pub async fn connect(cli_urls: &[String]) -> emq::Result<Connected> {
    let test_env = std::env::var(TEST_DEFAULT_ENV).ok();
    let fallback = Fallback::Url(default_url(test_env.as_deref()));
    connect_with(cli_urls, fallback).await
}

/// Like [`connect`], but with no URL given it starts a private server (`emq demo`).
pub async fn connect_or_embedded(cli_urls: &[String]) -> emq::Result<Connected> {
    connect_with(cli_urls, Fallback::Embedded).await
}

async fn connect_with(cli_urls: &[String], fallback: Fallback) -> emq::Result<Connected> {
    let env = std::env::var(URL_ENV).ok();
    connect_to(resolve(cli_urls, env.as_deref(), fallback)).await
}

/// Connects to `source`, starting the embedded server first if that is the source.
pub async fn connect_to(source: Source) -> emq::Result<Connected> {
    match source {
        Source::Urls(urls) => Ok(Connected {
            store: Store::connect(options(urls)?).await?,
            embedded: None,
        }),
        Source::Default(url) => {
            if url != DEFAULT_URL {
                eprintln!("emq: {TEST_DEFAULT_ENV} is set; the default URL is {url}");
            }
            match Store::connect(options(vec![url.clone()])?).await {
                Ok(store) => Ok(Connected {
                    store,
                    embedded: None,
                }),
                Err(e) if e.code() == ErrorCode::ServerUnavailable => {
                    Err(Error::new(e.code(), default_unavailable(&url, e.message())))
                }
                Err(e) => Err(e),
            }
        }
        Source::Embedded => {
            let server = start_embedded().await?;
            eprintln!(
                "emq: no --url or {URL_ENV}; started a private redis-server at {} (stopped on exit)",
                server.url()
            );
            // On a failed connect the server is dropped, and so stopped, here.
            let store = Store::connect(ConnectOptions::new(server.url())).await?;
            Ok(Connected {
                store,
                embedded: Some(server),
            })
        }
    }
}

/// The message when nothing answers at the default URL.
fn default_unavailable(url: &str, cause: &str) -> String {
    format!(
        "nothing answers at {url} (the default when neither --url nor {URL_ENV} is given): \
         {cause}. Start redis-server there, or pass --url redis://HOST:PORT or set \
         {URL_ENV}=redis://HOST:PORT (`emq dev` runs a private server and prints its URL)"
    )
}

/// Starts an [`EmbeddedServer`] off the async threads (it blocks while it polls for readiness).
/// A server that cannot be started is `server_unavailable`, with the reason (and, when
/// `redis-server` is missing, how to install it).
pub async fn start_embedded() -> emq::Result<EmbeddedServer> {
    tokio::task::spawn_blocking(EmbeddedServer::start)
        .await
        .map_err(|e| {
            Error::new(
                ErrorCode::Internal,
                format!("starting the embedded redis-server panicked: {e}"),
            )
        })?
        .map_err(|e| Error::new(ErrorCode::ServerUnavailable, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(xs: &[&str]) -> Vec<String> {
        xs.iter().map(|s| s.to_string()).collect()
    }

    fn local() -> Fallback {
        Fallback::Url(default_url(None))
    }

    #[test]
    fn url_options_beat_the_env_which_beats_the_fallback() {
        let cli = urls(&["redis://a:1", "redis://b:2"]);
        for fallback in [local(), Fallback::Embedded] {
            assert_eq!(
                resolve(&cli, Some("redis://env:3"), fallback.clone()),
                Source::Urls(cli.clone())
            );
            assert_eq!(
                resolve(&[], Some("redis://env:3"), fallback.clone()),
                Source::Urls(urls(&["redis://env:3"]))
            );
            assert_eq!(
                resolve(&[], Some(" redis://x:1 , redis://y:2,"), fallback),
                Source::Urls(urls(&["redis://x:1", "redis://y:2"]))
            );
        }
        assert_eq!(
            resolve(&[], Some("  "), Fallback::Embedded),
            Source::Embedded
        );
        assert_eq!(resolve(&[], None, Fallback::Embedded), Source::Embedded);
    }

    #[test]
    fn tls_flags_beat_the_env_and_blank_is_unset() {
        let env = |name: &str| match name {
            "EMQ_TLS_CA" => Some("/env/ca.pem".to_string()),
            "EMQ_TLS_CERT" => Some("-----BEGIN CERTIFICATE-----\nxx".to_string()),
            "EMQ_TLS_KEY" => Some("  ".to_string()),
            _ => None,
        };
        let got = resolve_tls([&Some("/flag/ca.pem".into()), &None, &None], env);
        assert_eq!(got.ca_cert, Some(Pem::Path("/flag/ca.pem".into())));
        assert_eq!(
            got.client_cert,
            Some(Pem::Text(b"-----BEGIN CERTIFICATE-----\nxx".to_vec()))
        );
        assert_eq!(got.client_key, None);
        let got = resolve_tls([&None, &None, &None], env);
        assert_eq!(got.ca_cert, Some(Pem::Path("/env/ca.pem".into())));
        assert_eq!(
            resolve_tls([&None, &None, &None], |_| None),
            TlsConfig::default()
        );
    }

    #[test]
    fn with_no_url_the_default_is_6379_on_loopback() {
        let want = Source::Default("redis://127.0.0.1:6379".into());
        assert_eq!(resolve(&[], None, local()), want);
        assert_eq!(resolve(&[], Some(" , "), local()), want);
        // Only a non-blank test override moves it.
        assert_eq!(default_url(Some("  ")), "redis://127.0.0.1:6379");
        assert_eq!(
            default_url(Some("redis://127.0.0.1:7")),
            "redis://127.0.0.1:7"
        );
    }

    #[tokio::test]
    async fn nothing_at_the_default_is_server_unavailable_naming_url_and_options() {
        let err = match connect_to(Source::Default("redis://127.0.0.1:1".into())).await {
            Ok(_) => panic!("connected to port 1"),
            Err(e) => e,
        };
        assert_eq!(err.code(), ErrorCode::ServerUnavailable, "{err}");
        let msg = err.message();
        for part in ["redis://127.0.0.1:1", "--url", "EMQ_URL"] {
            assert!(msg.contains(part), "{part} missing: {msg}");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn embedded_connects_and_stops_with_the_connection() {
        let connected = connect_to(Source::Embedded).await.expect("connects");
        assert_eq!(connected.store().topology(), emq::Topology::Standalone);
        let server = connected.embedded().expect("an embedded server");
        let (port, pid) = (server.port(), server.pid());

        // The connect wrote the wire version, so the store really talked to that server.
        assert_eq!(
            raw_get(port, "{emq}:version"),
            format!(
                "${}\r\n{}\r\n",
                emq::WIRE_VERSION.to_string().len(),
                emq::WIRE_VERSION
            )
        );

        drop(connected);
        // SAFETY: signal 0 only asks whether the pid exists.
        let alive = unsafe { libc::kill(pid as libc::pid_t, 0) } == 0;
        assert!(!alive, "the server (pid {pid}) outlived the connection");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_given_url_is_used_and_nothing_is_started() {
        let server = start_embedded().await.expect("a server to point at");
        let connected = connect(&[server.url()]).await.expect("connects");
        assert!(connected.embedded().is_none());
        assert_eq!(connected.store().topology(), emq::Topology::Standalone);
        assert!(raw_get(server.port(), "{emq}:version").starts_with('$'));
    }

    #[tokio::test]
    async fn an_unreachable_url_is_server_unavailable() {
        // Port 1 on loopback: nothing listens there.
        let err = match connect(&["redis://127.0.0.1:1".to_string()]).await {
            Ok(_) => panic!("connected to port 1"),
            Err(e) => e,
        };
        assert_eq!(err.code(), ErrorCode::ServerUnavailable, "{err}");
        assert_eq!(crate::exit::code_for(err.code()), crate::exit::FAILURE);
    }

    /// `GET key` over raw TCP (the CLI does not depend on a Redis client); the reply as sent.
    fn raw_get(port: u16, key: &str) -> String {
        use std::io::{Read, Write};
        use std::time::Duration;
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        write!(s, "*2\r\n$3\r\nGET\r\n${}\r\n{key}\r\n", key.len()).unwrap();
        let mut buf = [0u8; 64];
        let n = s.read(&mut buf).unwrap();
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }
}
