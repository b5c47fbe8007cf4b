//! The connection to the datastore: standalone or cluster behind one type, and the guard mode
//! (scripts are loaded and called by `script`; the wire-version check at connect is `connect.rs`).
//!
//! [`Store::connect`] takes one URL (standalone, or a cluster node: it asks the server and switches to
//! a cluster client when `cluster_enabled:1`) or several seed URLs (a cluster). `rediss://` URLs use
//! TLS (with an optional private CA); a user and password in the URL authenticate with ACL. On
//! connect it writes `{emq}:version` if absent and refuses a keyspace of another wire version.

use crate::error::{Error, ErrorCode, Result};
use crate::keyspace::Key;
use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};
use std::sync::Arc;
use std::time::Duration;

/// The keyspace wire version this core reads and writes.
pub const WIRE_VERSION: u32 = 2;

/// How to reach the datastore.
#[derive(Clone, Debug)]
pub struct ConnectOptions {
    /// One URL (standalone or any cluster node) or several cluster seed URLs.
    pub urls: Vec<String>,
    /// Run every script with the undeclared-key guard. Default: on when `EMQ_GUARD=1`.
    pub guarded: bool,
    /// PEM of a private CA for `rediss://` (else the system's roots).
    pub ca_cert_pem: Option<Vec<u8>>,
    /// PEM of a client certificate (chain) and its private key, for mutual TLS (servers with
    /// `tls-auth-clients yes`). Both or neither; see [`ConnectOptions::client_cert_pem`].
    pub client_tls: Option<(Vec<u8>, Vec<u8>)>,
    /// Deadline for one non-blocking command.
    pub response_timeout: Duration,
    /// Deadline for opening a connection.
    pub connect_timeout: Duration,
    /// How long an add keeps resending its call (same job ids, so it never duplicates) while the
    /// datastore is unavailable: a restart, a failover, LOADING. Default 10 s; zero sends once.
    pub retry_unavailable: Duration,
    /// Opt-in durable adds: every add waits for this many replicas (`WAIT`) and fails with
    /// `not_replicated` when they did not acknowledge in time (see [`crate::durable`]). Default: none.
    pub durable: Option<crate::durable_pool::Durability>,
}

impl ConnectOptions {
    /// Options for one URL.
    pub fn new(url: impl Into<String>) -> ConnectOptions {
        ConnectOptions::seeds([url.into()])
    }

    /// Options for several cluster seed URLs.
    pub fn seeds<I: IntoIterator<Item = S>, S: Into<String>>(urls: I) -> ConnectOptions {
        ConnectOptions {
            urls: urls.into_iter().map(Into::into).collect(),
            guarded: std::env::var("EMQ_GUARD")
                .map(|v| v == "1")
                .unwrap_or(false),
            ca_cert_pem: None,
            client_tls: None,
            response_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
            retry_unavailable: Duration::from_secs(10),
            durable: None,
        }
    }

    /// Sets how long an add retries while the datastore is unavailable.
    pub fn retry_unavailable(mut self, window: Duration) -> ConnectOptions {
        self.retry_unavailable = window;
        self
    }

    /// Makes every add wait for `replicas` replicas, at most `timeout` (checked at connect).
    pub fn durable(mut self, replicas: u32, timeout: Duration) -> ConnectOptions {
        self.durable = Some(crate::durable_pool::Durability { replicas, timeout });
        self
    }

    /// As [`ConnectOptions::durable`] from a binding's whole numbers (out-of-range values are
    /// refused at connect, naming the bounds).
    pub fn durable_counts(self, replicas: u64, timeout_ms: u64) -> ConnectOptions {
        self.durable(
            u32::try_from(replicas).unwrap_or(u32::MAX),
            Duration::from_millis(timeout_ms),
        )
    }

    /// Sets guarded mode.
    pub fn guarded(mut self, on: bool) -> ConnectOptions {
        self.guarded = on;
        self
    }

    /// Trusts a private CA (PEM) for `rediss://`.
    pub fn ca_cert_pem(mut self, pem: Vec<u8>) -> ConnectOptions {
        self.ca_cert_pem = Some(pem);
        self
    }

    /// Presents a client certificate (PEM, the leaf first) and its private key (PEM) on
    /// `rediss://`, for mutual TLS.
    pub fn client_cert_pem(mut self, cert: Vec<u8>, key: Vec<u8>) -> ConnectOptions {
        self.client_tls = Some((cert, key));
        self
    }

    /// Applies [`TlsConfig`] (what a binding or the CLI was given: paths or PEM text), checked:
    /// an unreadable file, text that is not PEM of the right kind, or a client certificate
    /// without its key (or the reverse) is `invalid_option` naming the option.
    pub fn tls(mut self, tls: TlsConfig) -> Result<ConnectOptions> {
        if let Some(ca) = &tls.ca_cert {
            self.ca_cert_pem = Some(ca.load("ca_cert", "CERTIFICATE")?);
        }
        match (&tls.client_cert, &tls.client_key) {
            (Some(cert), Some(key)) => {
                let cert = cert.load("client_cert", "CERTIFICATE")?;
                let key = key.load("client_key", "PRIVATE KEY")?;
                self.client_tls = Some((cert, key));
            }
            (None, None) => {}
            (Some(_), None) => {
                return Err(Error::new(
                    ErrorCode::InvalidOption,
                    "client_cert is given without client_key: mutual TLS needs both (the \
                     certificate and its private key, PEM)",
                ))
            }
            (None, Some(_)) => {
                return Err(Error::new(
                    ErrorCode::InvalidOption,
                    "client_key is given without client_cert: mutual TLS needs both (the \
                     certificate and its private key, PEM)",
                ))
            }
        }
        Ok(self)
    }

    fn has_tls_material(&self) -> bool {
        self.ca_cert_pem.is_some() || self.client_tls.is_some()
    }

    fn certificates(&self) -> redis::TlsCertificates {
        redis::TlsCertificates {
            client_tls: self
                .client_tls
                .as_ref()
                .map(|(cert, key)| redis::ClientTlsConfig {
                    client_cert: cert.clone(),
                    client_key: key.clone(),
                }),
            root_cert: self.ca_cert_pem.clone(),
        }
    }
}

/// One PEM input: a file path, or the PEM text itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pem {
    /// A file holding PEM.
    Path(std::path::PathBuf),
    /// PEM text (`-----BEGIN …`).
    Text(Vec<u8>),
}

impl Pem {
    /// A string from a user: PEM text when it holds `-----BEGIN`, else a file path.
    pub fn guess(value: &str) -> Pem {
        if value.contains("-----BEGIN") {
            Pem::Text(value.as_bytes().to_vec())
        } else {
            Pem::Path(value.into())
        }
    }

    /// The PEM bytes, checked to hold a `-----BEGIN <kind>` block (`PRIVATE KEY` also matches
    /// `RSA PRIVATE KEY` and `EC PRIVATE KEY`).
    fn load(&self, option: &str, kind: &str) -> Result<Vec<u8>> {
        let (bytes, whence) = match self {
            Pem::Path(path) => {
                let bytes = std::fs::read(path).map_err(|e| {
                    Error::new(
                        ErrorCode::InvalidOption,
                        format!("{option}: cannot read {}: {e}", path.display()),
                    )
                })?;
                (bytes, format!("the file {}", path.display()))
            }
            Pem::Text(bytes) => (bytes.clone(), "the text given".to_string()),
        };
        let text = String::from_utf8_lossy(&bytes);
        let found = text.lines().any(|l| {
            l.trim()
                .strip_prefix("-----BEGIN ")
                .is_some_and(|rest| rest.trim_end_matches('-').ends_with(kind))
        });
        if !found {
            return Err(Error::new(
                ErrorCode::InvalidOption,
                format!("{option}: {whence} holds no PEM block `-----BEGIN …{kind}-----`"),
            ));
        }
        Ok(bytes)
    }
}

/// TLS material for `rediss://` as a binding or the CLI receives it; applied with
/// [`ConnectOptions::tls`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsConfig {
    /// A private CA to trust (else the system's roots).
    pub ca_cert: Option<Pem>,
    /// A client certificate for mutual TLS (with `client_key`).
    pub client_cert: Option<Pem>,
    /// The client certificate's private key.
    pub client_key: Option<Pem>,
}

/// Which kind of deployment the store talks to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Topology {
    /// One server (Redis, Valkey, Dragonfly).
    Standalone,
    /// A Redis Cluster.
    Cluster,
}

/// A shared connection: cheap to clone, safe to use from many tasks (never for blocking commands).
#[derive(Clone)]
pub enum Conn {
    /// A multiplexed connection to one server that reconnects by itself.
    Single(ConnectionManager),
    /// A cluster connection routing by slot.
    Cluster(ClusterConnection),
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Single(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
        }
    }
}

struct Inner {
    options: ConnectOptions,
    topology: Topology,
    single: Option<redis::Client>,
    /// The dedicated connections of durable adds (crate::durable), per master.
    durable_pool: crate::durable_pool::Pool,
}

/// A connected datastore.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
    conn: Conn,
}

pub(crate) fn client_for(url: &str, opts: &ConnectOptions) -> Result<redis::Client> {
    if url.starts_with("rediss://") {
        // rustls needs one process-wide crypto provider; the first caller installs ring.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
    let bad_url = |e: redis::RedisError| {
        Error::new(
            ErrorCode::InvalidOption,
            format!("cannot use the URL {url:?}: {e}"),
        )
    };
    if opts.has_tls_material() {
        if !url.starts_with("rediss://") {
            return Err(not_tls(url));
        }
        redis::Client::build_with_tls(url, opts.certificates()).map_err(bad_url)
    } else {
        redis::Client::open(url).map_err(bad_url)
    }
}

fn not_tls(url: &str) -> Error {
    Error::new(
        ErrorCode::InvalidOption,
        format!(
            "a CA or client certificate is given, but {:?} is not a rediss:// URL (TLS)",
            redact(url)
        ),
    )
}

/// The URL with its password replaced by `***`.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let cred = &url[s + 3..at];
            match cred.find(':') {
                Some(c) => format!("{}{}:***{}", &url[..s + 3], &cred[..c], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

/// A failed TLS handshake says so, and what to give (the error stays `server_unavailable`).
fn tls_hint(url: &str, opts: &ConnectOptions, e: Error) -> Error {
    let text = e.message().to_ascii_lowercase();
    if !url.starts_with("rediss://")
        || e.code() != ErrorCode::ServerUnavailable
        || !(text.contains("certificate") || text.contains("tls") || text.contains("handshake"))
    {
        return e;
    }
    let hint = if opts.ca_cert_pem.is_none() && text.contains("issuer") {
        "; the server's certificate is not signed by a CA this machine trusts: give its CA \
         (ca_cert / --tls-ca)"
    } else if opts.client_tls.is_none() {
        "; a server that requires client certificates (tls-auth-clients yes) needs client_cert \
         and client_key (--tls-cert, --tls-key)"
    } else {
        ""
    };
    Error::new(e.code(), format!("TLS: {}{hint}", e.message()))
}

/// A new cluster connection with `options` (its own slot map and node connections).
async fn cluster_connection(options: &ConnectOptions) -> Result<Conn> {
    let mut builder = ClusterClient::builder(options.urls.clone())
        .response_timeout(options.response_timeout)
        .connection_timeout(options.connect_timeout);
    if options.has_tls_material() {
        builder = builder.certs(options.certificates());
    }
    let client = builder.build().map_err(|e| {
        Error::new(
            ErrorCode::InvalidOption,
            format!("cannot use the cluster seeds: {e}"),
        )
    })?;
    let conn = client
        .get_async_connection()
        .await
        .map_err(|e| tls_hint(&options.urls[0], options, e.into()))?;
    Ok(Conn::Cluster(conn))
}

impl Store {
    /// This store (its options, topology and durable pool) on a cluster connection of its own: a
    /// lane. The cluster client stops every request on a connection while it rebuilds its slot
    /// map, which it does again and again while a master is down and not yet replaced; work for
    /// the slots of other masters on a lane of its own goes on meanwhile (a partitioned queue
    /// gives each master's partitions one, see `Queue::open`). Standalone: this store itself.
    pub(crate) async fn lane(&self) -> Result<Store> {
        match self.inner.topology {
            Topology::Standalone => Ok(self.clone()),
            Topology::Cluster => Ok(Store {
                inner: self.inner.clone(),
                conn: cluster_connection(&self.inner.options).await?,
            }),
        }
    }

    /// Connects and detects the topology; [`Store::connect`] (in `connect.rs`) adds the wire-version
    /// check.
    pub(crate) async fn open(options: ConnectOptions) -> Result<Store> {
        let first = options
            .urls
            .first()
            .ok_or_else(|| Error::new(ErrorCode::InvalidOption, "no datastore URL was given"))?;
        if let Some(d) = &options.durable {
            d.validate()?;
        }
        let config = redis::AsyncConnectionConfig::new()
            .set_response_timeout(Some(options.response_timeout))
            .set_connection_timeout(Some(options.connect_timeout));
        let mut is_cluster = options.urls.len() > 1;
        let mut single = None;
        let mut conn = None;
        if !is_cluster {
            let client = client_for(first, &options)?;
            let mut probe = client
                .get_multiplexed_async_connection_with_config(&config)
                .await
                .map_err(|e| tls_hint(first, &options, e.into()))?;
            let info: String = redis::cmd("INFO")
                .arg("cluster")
                .query_async(&mut probe)
                .await
                .map_err(|e| tls_hint(first, &options, e.into()))?;
            is_cluster = info.contains("cluster_enabled:1");
            if !is_cluster {
                let manager = ConnectionManagerConfig::new()
                    .set_response_timeout(Some(options.response_timeout))
                    .set_connection_timeout(Some(options.connect_timeout))
                    .set_number_of_retries(3)
                    .set_max_delay(Duration::from_secs(2));
                let c = ConnectionManager::new_with_config(client.clone(), manager).await?;
                conn = Some(Conn::Single(c));
                single = Some(client);
            }
        }
        if is_cluster {
            if first.starts_with("rediss://") {
                let _ = rustls::crypto::ring::default_provider().install_default();
            }
            if options.has_tls_material() {
                if let Some(plain) = options.urls.iter().find(|u| !u.starts_with("rediss://")) {
                    return Err(not_tls(plain));
                }
            }
            conn = Some(cluster_connection(&options).await?);
        }
        let store = Store {
            inner: Arc::new(Inner {
                topology: if is_cluster {
                    Topology::Cluster
                } else {
                    Topology::Standalone
                },
                options,
                single,
                durable_pool: crate::durable_pool::Pool::default(),
            }),
            conn: conn.expect("one branch connected"),
        };
        Ok(store)
    }

    /// True when scripts run under the undeclared-key guard.
    pub fn guarded(&self) -> bool {
        self.inner.options.guarded
    }

    /// Standalone or cluster.
    pub fn topology(&self) -> Topology {
        self.inner.topology
    }

    /// The options it was connected with.
    pub fn options(&self) -> &ConnectOptions {
        &self.inner.options
    }

    /// A handle on the shared connection (cheap; never use it for a blocking command).
    pub fn conn(&self) -> Conn {
        self.conn.clone()
    }

    /// A dedicated connection to the node that owns `key`, with no response deadline: the only kind
    /// of connection that may carry a blocking command (BRPOP, XREAD BLOCK). One per blocking loop.
    pub async fn blocking_connection(
        &self,
        key: &Key,
    ) -> Result<redis::aio::MultiplexedConnection> {
        let url = self.master_url_for(key).await?;
        self.dedicated_connection_to(&url).await
    }

    /// The URL of the server that owns `key`: the one URL standalone, else the slot's master.
    pub(crate) async fn master_url_for(&self, key: &Key) -> Result<String> {
        match &self.inner.single {
            Some(_) => Ok(self.inner.options.urls[0].clone()),
            None => self.node_url_for(key.slot()).await,
        }
    }

    /// [`Store::master_url_for`] for each of `keys`, in one round trip.
    pub(crate) async fn master_urls_for(&self, keys: &[&Key]) -> Result<Vec<String>> {
        match &self.inner.single {
            Some(_) => Ok(vec![self.inner.options.urls[0].clone(); keys.len()]),
            None => {
                let slots: Vec<u16> = keys.iter().map(|k| k.slot()).collect();
                self.node_urls_for(&slots).await
            }
        }
    }

    /// A new dedicated connection (no reconnect, no response deadline) to `url`, a URL from
    /// [`Store::master_url_for`].
    pub(crate) async fn dedicated_connection_to(
        &self,
        url: &str,
    ) -> Result<redis::aio::MultiplexedConnection> {
        let config = redis::AsyncConnectionConfig::new()
            .set_response_timeout(None)
            .set_connection_timeout(Some(self.inner.options.connect_timeout));
        let client = match &self.inner.single {
            Some(c) => c.clone(),
            None => client_for(url, &self.inner.options)?,
        };
        Ok(client
            .get_multiplexed_async_connection_with_config(&config)
            .await?)
    }

    /// The durable adds' connections.
    pub(crate) fn durable_pool(&self) -> &crate::durable_pool::Pool {
        &self.inner.durable_pool
    }

    /// The URL of the cluster master that owns `slot`, with the seed URL's scheme and credentials.
    async fn node_url_for(&self, slot: u16) -> Result<String> {
        let mut urls = self.node_urls_for(&[slot]).await?;
        Ok(urls.pop().expect("one slot asked, one URL"))
    }

    /// The URLs of the cluster masters that own `slots` (in their order), from one `CLUSTER SLOTS`.
    async fn node_urls_for(&self, slots: &[u16]) -> Result<Vec<String>> {
        let mut conn = self.conn();
        let ranges: Vec<redis::Value> = redis::cmd("CLUSTER")
            .arg("SLOTS")
            .query_async(&mut conn)
            .await?;
        let seed = &self.inner.options.urls[0];
        let (scheme, rest) = seed.split_once("://").unwrap_or(("redis", seed));
        let creds = rest
            .split_once('@')
            .map(|(c, _)| format!("{c}@"))
            .unwrap_or_default();
        // Each range as (lo, hi, the master's URL).
        let mut owners = Vec::new();
        for range in ranges {
            let redis::Value::Array(parts) = range else {
                continue;
            };
            let (
                Some(redis::Value::Int(lo)),
                Some(redis::Value::Int(hi)),
                Some(redis::Value::Array(master)),
            ) = (parts.first(), parts.get(1), parts.get(2))
            else {
                continue;
            };
            let host = match master.first() {
                Some(redis::Value::BulkString(b)) => String::from_utf8_lossy(b).to_string(),
                Some(redis::Value::SimpleString(s)) => s.clone(),
                _ => continue,
            };
            let Some(redis::Value::Int(port)) = master.get(1) else {
                continue;
            };
            owners.push((*lo, *hi, format!("{scheme}://{creds}{host}:{port}")));
        }
        slots
            .iter()
            .map(|&slot| {
                owners
                    .iter()
                    .find(|(lo, hi, _)| (*lo..=*hi).contains(&(slot as i64)))
                    .map(|(_, _, url)| url.clone())
                    .ok_or_else(|| {
                        Error::new(
                            ErrorCode::ServerUnavailable,
                            format!("no cluster node owns slot {slot}; is the cluster healthy?"),
                        )
                    })
            })
            .collect()
    }
}
