//! [`Store::connect`]: opens the connection (`store.rs`: standalone or cluster, TLS/ACL, the
//! topology) and checks the wire version with the `version_check` script. It sits above both
//! `store` and `script`: the scripts send through a store, and the store knows no script.

use crate::error::{Error, ErrorCode, Result};
use crate::keyspace::CoreKey;
use crate::script;
use crate::store::{ConnectOptions, Store, WIRE_VERSION};

impl Store {
    /// Connects, detects the topology, and checks the wire version.
    pub async fn connect(options: ConnectOptions) -> Result<Store> {
        let store = Store::open(options).await?;
        check_version(&store).await?;
        Ok(store)
    }
}

/// Writes the wire version on first connect; `incompatible_version` when another one is stored.
async fn check_version(store: &Store) -> Result<()> {
    let stored: String = script::VERSION_CHECK
        .prepare()
        .key(&CoreKey::Version.key())
        .arg(WIRE_VERSION)
        .invoke(store)
        .await?;
    if stored != WIRE_VERSION.to_string() {
        return Err(Error::new(
            ErrorCode::IncompatibleVersion,
            format!(
                "{} holds wire version {stored:?}, this emq speaks {WIRE_VERSION}; use an emq of \
                 that version, or another datastore (or database number) for this one",
                CoreKey::Version.key()
            ),
        ));
    }
    Ok(())
}
