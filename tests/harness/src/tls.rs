//! TLS for test servers: [`TlsOptions`] (the redis-server TLS/ACL flags),
//! certificate generation with the `openssl` CLI (a throwaway self-signed CA
//! plus a server cert for 127.0.0.1/localhost), and [`TlsServer`], a
//! TLS-only standalone server whose default user is disabled so clients must
//! authenticate as the ACL user `emq` / `emq-secret`; [`TlsServer::start_mutual`]
//! also requires a client certificate (`tls-auth-clients yes`), and every
//! [`TlsServer`] has one signed by its CA (`client.crt` / `client.key`).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::cmd;
use crate::server::{RedisServer, ServerOptions};

/// ACL user name of [`TlsServer`].
pub const TLS_USER: &str = "emq";
/// ACL password of [`TlsServer`].
pub const TLS_PASSWORD: &str = "emq-secret";

const OPENSSL_TIMEOUT: Duration = Duration::from_secs(30);

/// An ACL user created at server start with all commands, keys and channels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AclUser {
    pub name: String,
    pub password: String,
}

/// TLS settings for [`ServerOptions::tls`]. The server listens with TLS only
/// (`--port 0 --tls-port P`) and asks for client certificates signed by
/// `ca_cert_file` only when `auth_clients` is set (`--tls-auth-clients yes|no`).
#[derive(Clone, Debug)]
pub struct TlsOptions {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
    /// The CA that signed `cert_file`; clients verify the server with it.
    pub ca_cert_file: PathBuf,
    /// When set, this user is created (`--user NAME on >PASS ~* &* +@all`)
    /// and the `default` user is switched off, so every connection must
    /// AUTH as this user.
    pub user: Option<AclUser>,
    /// Require a client certificate (mutual TLS).
    pub auth_clients: bool,
    /// A client certificate and key (PEM files) the harness's own `redis-cli` presents (needed
    /// when `auth_clients` is set).
    pub client_cert: Option<(PathBuf, PathBuf)>,
}

impl TlsOptions {
    pub(crate) fn server_args(&self) -> Vec<String> {
        let mut a: Vec<String> = [
            "--tls-cert-file",
            &self.cert_file.to_string_lossy(),
            "--tls-key-file",
            &self.key_file.to_string_lossy(),
            "--tls-ca-cert-file",
            &self.ca_cert_file.to_string_lossy(),
            "--tls-auth-clients",
            if self.auth_clients { "yes" } else { "no" },
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        if let Some(u) = &self.user {
            a.extend([
                "--user".to_string(),
                u.name.clone(),
                "on".into(),
                format!(">{}", u.password),
                "~*".into(),
                "&*".into(),
                "+@all".into(),
                "--user".into(),
                "default".into(),
                "off".into(),
            ]);
        }
        a
    }
}

/// Paths of a generated CA + server certificate + client certificate.
#[derive(Clone, Debug)]
pub struct GeneratedCerts {
    pub ca_cert: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
    /// A client certificate signed by the CA (`extendedKeyUsage=clientAuth`).
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
}

/// Generates into `dir`: `ca.crt`/`ca.key` (self-signed CA),
/// `server.crt`/`server.key` signed by it, with
/// `subjectAltName=IP:127.0.0.1,DNS:localhost`, and `client.crt`/`client.key`
/// (CN `emq-client`, for mutual TLS) signed by it. RSA 2048, 10 years.
pub fn generate_certs(dir: &Path) -> io::Result<GeneratedCerts> {
    let p = |name: &str| dir.join(name);
    let openssl = || {
        let mut c = Command::new("openssl");
        c.current_dir(dir);
        c
    };
    cmd::run_ok(
        openssl().args([
            "req",
            "-x509",
            "-new",
            "-nodes",
            "-newkey",
            "rsa:2048",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
            "-days",
            "3650",
            "-subj",
            "/CN=emq-harness test CA",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ]),
        OPENSSL_TIMEOUT,
    )?;
    cmd::run_ok(
        openssl().args([
            "req",
            "-new",
            "-nodes",
            "-newkey",
            "rsa:2048",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=localhost",
        ]),
        OPENSSL_TIMEOUT,
    )?;
    fs::write(
        p("server.ext"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\n\
         basicConstraints=critical,CA:FALSE\n\
         keyUsage=critical,digitalSignature,keyEncipherment\n\
         extendedKeyUsage=serverAuth\n",
    )?;
    cmd::run_ok(
        openssl().args([
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.crt",
            "-days",
            "3650",
            "-sha256",
            "-extfile",
            "server.ext",
        ]),
        OPENSSL_TIMEOUT,
    )?;
    cmd::run_ok(
        openssl().args([
            "req",
            "-new",
            "-nodes",
            "-newkey",
            "rsa:2048",
            "-keyout",
            "client.key",
            "-out",
            "client.csr",
            "-subj",
            "/CN=emq-client",
        ]),
        OPENSSL_TIMEOUT,
    )?;
    fs::write(
        p("client.ext"),
        "basicConstraints=critical,CA:FALSE\n\
         keyUsage=critical,digitalSignature,keyEncipherment\n\
         extendedKeyUsage=clientAuth\n",
    )?;
    cmd::run_ok(
        openssl().args([
            "x509",
            "-req",
            "-in",
            "client.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "client.crt",
            "-days",
            "3650",
            "-sha256",
            "-extfile",
            "client.ext",
        ]),
        OPENSSL_TIMEOUT,
    )?;
    Ok(GeneratedCerts {
        ca_cert: p("ca.crt"),
        cert: p("server.crt"),
        key: p("server.key"),
        client_cert: p("client.crt"),
        client_key: p("client.key"),
    })
}

/// A standalone TLS-only redis-server with generated certs in its temp dir
/// and the ACL user `emq` / `emq-secret` (default user off).
#[derive(Debug)]
pub struct TlsServer {
    server: RedisServer,
    certs: GeneratedCerts,
}

impl TlsServer {
    /// A server that does not ask for client certificates.
    pub fn start() -> io::Result<TlsServer> {
        TlsServer::start_with(false)
    }

    /// A server that requires a client certificate signed by its CA (mutual
    /// TLS, `tls-auth-clients yes`): [`TlsServer::client_cert_path`] and
    /// [`TlsServer::client_key_path`].
    pub fn start_mutual() -> io::Result<TlsServer> {
        TlsServer::start_with(true)
    }

    fn start_with(auth_clients: bool) -> io::Result<TlsServer> {
        let dir = tempfile::Builder::new()
            .prefix("emq-redis-tls-")
            .tempdir()?;
        let certs = generate_certs(dir.path())?;
        let opts = ServerOptions {
            tls: Some(TlsOptions {
                cert_file: certs.cert.clone(),
                key_file: certs.key.clone(),
                ca_cert_file: certs.ca_cert.clone(),
                user: Some(AclUser {
                    name: TLS_USER.into(),
                    password: TLS_PASSWORD.into(),
                }),
                auth_clients,
                client_cert: Some((certs.client_cert.clone(), certs.client_key.clone())),
            }),
            ..ServerOptions::default()
        };
        let server = RedisServer::start_in(dir, opts)?;
        Ok(TlsServer { server, certs })
    }

    /// `rediss://emq:emq-secret@127.0.0.1:PORT`
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// The CA certificate (PEM) clients should trust.
    pub fn ca_cert_path(&self) -> &Path {
        &self.certs.ca_cert
    }

    /// A client certificate (PEM) signed by the CA, for mutual TLS.
    pub fn client_cert_path(&self) -> &Path {
        &self.certs.client_cert
    }

    /// The client certificate's private key (PEM).
    pub fn client_key_path(&self) -> &Path {
        &self.certs.client_key
    }

    pub fn server(&self) -> &RedisServer {
        &self.server
    }

    pub fn server_mut(&mut self) -> &mut RedisServer {
        &mut self.server
    }

    pub fn port(&self) -> u16 {
        self.server.port()
    }

    pub fn stop(&mut self) {
        self.server.stop();
    }
}
