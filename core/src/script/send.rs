//! Sending: one call or a pipeline of calls, with the one NOSCRIPT retry (load the scripts
//! involved, resend once), and loading every script.

use super::{invocation::*, registry::*};
use crate::error::Result;
use crate::store::Store;
use redis::aio::ConnectionLike;
use redis::FromRedisValue;

/// Sends many script calls in one pipelined round trip (EVALSHA each); after NOSCRIPT, loads the
/// scripts involved and resends the whole pipeline once. Only for calls that are safe to repeat
/// (a call that ran before the NOSCRIPT of another runs again).
pub async fn pipeline<T: FromRedisValue>(store: &Store, calls: &[Invocation]) -> Result<Vec<T>> {
    let guarded = store.guarded();
    let mut pipe = redis::pipe();
    for c in calls {
        pipe.add_command(c.command(guarded)?);
    }
    let scripts: Vec<&'static Script> = calls.iter().map(|c| c.script).collect();
    let mut conn = store.conn();
    send_loading(store, &mut conn, &Request::Many(pipe), &scripts).await
}

/// What one round trip carries: one call or a pipeline of calls.
pub(super) enum Request {
    One(redis::Cmd),
    Many(redis::Pipeline),
}

impl Request {
    async fn send<T: FromRedisValue, C: ConnectionLike + Send>(
        &self,
        conn: &mut C,
    ) -> redis::RedisResult<T> {
        match self {
            Request::One(cmd) => cmd.query_async(conn).await,
            Request::Many(pipe) => pipe.query_async(conn).await,
        }
    }
}

/// True when the server no longer has a script it was asked to run: the NOSCRIPT of a call, or of
/// any call of a pipeline (whose error is the kind of its first failure only).
pub(super) fn is_noscript(e: &redis::RedisError) -> bool {
    use redis::{ErrorKind, ServerErrorKind};
    e.kind() == ErrorKind::Server(ServerErrorKind::NoScript)
        || e.clone().into_server_errors().is_some_and(|failures| {
            failures
                .iter()
                .any(|(_, f)| f.kind() == Some(ServerErrorKind::NoScript))
        })
}

/// The one NOSCRIPT retry: sends `req`; when the server answers NOSCRIPT (after `SCRIPT FLUSH`, a
/// restart, or a failover to a node that never loaded it), loads each of `scripts` once and
/// resends once.
pub(super) async fn send_loading<T: FromRedisValue, C: ConnectionLike + Send>(
    store: &Store,
    conn: &mut C,
    req: &Request,
    scripts: &[&'static Script],
) -> Result<T> {
    match req.send(conn).await {
        Err(e) if is_noscript(&e) => {
            let mut loaded: Vec<&'static str> = Vec::new();
            for s in scripts.iter().copied() {
                if !loaded.contains(&s.name) {
                    loaded.push(s.name);
                    s.load(store).await?;
                }
            }
            Ok(req.send(conn).await?)
        }
        other => Ok(other?),
    }
}

#[cfg(any(test, feature = "testing"))] // only the tests load every script up front
/// Loads every script in the store's mode (on a cluster: on every node).
pub async fn load_all(store: &Store) -> Result<()> {
    for s in ALL {
        s.load(store).await?;
    }
    Ok(())
}
