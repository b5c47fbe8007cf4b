//! TLS files for `rediss://` (`Queue.connect(url, name, tls)`), converted into the core's
//! `TlsConfig`; the core reads and checks them.

use crate::error::EmqException;

/// TLS material: each a file path, or the PEM text itself (`-----BEGIN …`).
#[derive(Debug, Clone, Default, PartialEq, Eq, uniffi::Record)]
pub struct TlsFiles {
    /// A private CA to trust (else the system's roots).
    #[uniffi(default = None)]
    pub ca_cert: Option<String>,
    /// A client certificate for mutual TLS (`tls-auth-clients yes`), with `client_key`.
    #[uniffi(default = None)]
    pub client_cert: Option<String>,
    /// The client certificate's private key.
    #[uniffi(default = None)]
    pub client_key: Option<String>,
}

/// The connect options for `urls` (one URL, or cluster seeds) with `tls` applied.
pub(crate) fn options(
    urls: Vec<String>,
    tls: Option<TlsFiles>,
) -> Result<emq::ConnectOptions, EmqException> {
    let tls = tls.unwrap_or_default();
    let pem = |v: Option<String>| v.map(|s| emq::Pem::guess(&s));
    Ok(emq::ConnectOptions::seeds(urls).tls(emq::TlsConfig {
        ca_cert: pem(tls.ca_cert),
        client_cert: pem(tls.client_cert),
        client_key: pem(tls.client_key),
    })?)
}
