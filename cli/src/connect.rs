//! Where the datastore is, and the connection to it.
//!
//! In order: the `--url` options (one URL, or several cluster seeds), else `EMQ_URL` (one URL, or
//! seeds separated by commas; empty counts as unset), else the embedded default: a private
//! `redis-server` started for this run (announced on stderr) and stopped when the [`Connected`]
//! that holds it is dropped, which `main` does before it exits.
//!
//! Subcommands that read or write the datastore call [`connect`] and keep the [`Connected`] for as
//! long as they run.

use emq::embedded::EmbeddedServer;
use emq::{ConnectOptions, Error, ErrorCode, IdMinter, Queue, QueueName, Store};
use std::sync::Arc;

/// The environment variable read when no `--url` is given.
pub const URL_ENV: &str = "EMQ_URL";

/// Where the datastore is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// Given URLs (one, or cluster seeds).
    Urls(Vec<String>),
    /// None given: start a private server.
    Embedded,
}

/// `--url` values beat `EMQ_URL` (its value passed as `env`), which beats the embedded default.
pub fn resolve(cli_urls: &[String], env: Option<&str>) -> Source {
    if !cli_urls.is_empty() {
        return Source::Urls(cli_urls.to_vec());
    }
    let from_env: Vec<String> = env
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    if from_env.is_empty() {
        Source::Embedded
    } else {
        Source::Urls(from_env)
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
/// and opens the queue.
pub async fn open_queue(cli_urls: &[String], name: &str) -> emq::Result<Opened> {
    let name = QueueName::new(name)?;
    let connected = connect(cli_urls).await?;
    let minter = Arc::new(IdMinter::start(connected.store().clone()).await?);
    let queue = Queue::with_store(connected.store().clone(), minter, name.as_str())?;
    Ok(Opened {
        queue,
        _connected: connected,
    })
}

/// The datastore's clock (`TIME`), in milliseconds since the epoch.
pub async fn server_time_ms(store: &Store) -> emq::Result<u64> {
    let mut conn = store.conn();
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query_async(&mut conn).await?;
    Ok(secs * 1000 + micros / 1000)
}

/// Resolves the datastore from `--url` values and `EMQ_URL`, and connects.
pub async fn connect(cli_urls: &[String]) -> emq::Result<Connected> {
    let env = std::env::var(URL_ENV).ok();
    connect_to(resolve(cli_urls, env.as_deref())).await
}

/// Connects to `source`, starting the embedded server first if that is the source.
pub async fn connect_to(source: Source) -> emq::Result<Connected> {
    match source {
        Source::Urls(urls) => Ok(Connected {
            store: Store::connect(ConnectOptions::seeds(urls)).await?,
            embedded: None,
        }),
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

/// Starts an [`EmbeddedServer`] off the async threads (it blocks while it polls for readiness).
pub async fn start_embedded() -> emq::Result<EmbeddedServer> {
    tokio::task::spawn_blocking(EmbeddedServer::start)
        .await
        .map_err(|e| {
            Error::new(
                ErrorCode::Internal,
                format!("starting the embedded redis-server panicked: {e}"),
            )
        })?
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(xs: &[&str]) -> Vec<String> {
        xs.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn url_options_beat_the_env_which_beats_embedded() {
        let cli = urls(&["redis://a:1", "redis://b:2"]);
        assert_eq!(
            resolve(&cli, Some("redis://env:3")),
            Source::Urls(cli.clone())
        );
        assert_eq!(
            resolve(&[], Some("redis://env:3")),
            Source::Urls(urls(&["redis://env:3"]))
        );
        assert_eq!(
            resolve(&[], Some(" redis://x:1 , redis://y:2,")),
            Source::Urls(urls(&["redis://x:1", "redis://y:2"]))
        );
        assert_eq!(resolve(&[], Some("  ")), Source::Embedded);
        assert_eq!(resolve(&[], None), Source::Embedded);
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
                emq::store::WIRE_VERSION.to_string().len(),
                emq::store::WIRE_VERSION
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
