//! [`IdMinter`]: mints [`JobId`]s under a node-id lease from `{emq}:nodes`.
//!
//! Time in an id is the *server's*: the lease script returns the server's `TIME`, and the minter
//! extrapolates it with the process's monotonic clock, re-anchoring at every renewal. A worker whose
//! wall clock is hours off, or steps back, mints the same ids as any other. Ids never go back: the
//! minter keeps the last millisecond it used, and when the sequence of a millisecond is used up it
//! moves to the next one. A lease comes with a floor (the expiry of the id's previous holder), so a
//! new holder of a node id starts above anything the old one minted; and a holder mints only while its
//! lease is valid (its expiry less a margin), so a process that loses its lease stops minting.

use crate::error::{Error, ErrorCode, Result};
use crate::job_id::{JobId, EPOCH_MS, MAX_SEQ};
use crate::keyspace::CoreKey;
use crate::script;
use crate::store::Store;
use crate::task::TaskHandle;
use rand::Rng;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Default node-id lease length.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);

struct State {
    node: Option<u16>,
    anchor_server_ms: u64,
    anchor: Instant,
    floor_ms: u64,
    valid_until_ms: u64,
    last_ms: u64,
    seq: u16,
}

struct Inner {
    store: Store,
    token: String,
    ttl: Duration,
    state: Mutex<State>,
}

/// Mints job ids; holds and renews a node-id lease while alive.
pub struct IdMinter {
    inner: Arc<Inner>,
    renewal: Mutex<Option<TaskHandle>>,
}

impl Inner {
    fn margin_ms(&self) -> u64 {
        (self.ttl.as_millis() as u64 / 6).max(100)
    }

    async fn acquire(&self) -> Result<()> {
        let (node, now, expiry, floor): (u16, u64, u64, u64) = script::NODE_ACQUIRE
            .prepare()
            .key(&CoreKey::Nodes.key())
            .arg(self.ttl.as_millis() as u64)
            .arg(&self.token)
            .invoke(&self.store)
            .await?;
        let mut s = self.state.lock().expect("minter state");
        s.node = Some(node);
        s.anchor_server_ms = now;
        s.anchor = Instant::now();
        // A new holder starts strictly above anything an earlier holder of this node id minted.
        s.floor_ms = floor + 1;
        s.last_ms = 0;
        s.seq = 0;
        s.valid_until_ms = expiry.saturating_sub(self.margin_ms());
        tracing::debug!(node, "leased node id");
        Ok(())
    }

    async fn renew(&self) -> Result<()> {
        let node = self.state.lock().expect("minter state").node;
        let Some(node) = node else {
            return self.acquire().await;
        };
        let renewed: Result<(u64, u64)> = script::NODE_RENEW
            .prepare()
            .key(&CoreKey::Nodes.key())
            .arg(node)
            .arg(&self.token)
            .arg(self.ttl.as_millis() as u64)
            .invoke(&self.store)
            .await;
        match renewed {
            Ok((now, expiry)) => {
                let mut s = self.state.lock().expect("minter state");
                s.anchor_server_ms = now;
                s.anchor = Instant::now();
                s.valid_until_ms = expiry.saturating_sub(self.margin_ms());
                Ok(())
            }
            Err(e) if e.code() == ErrorCode::NodeLeaseLost => {
                tracing::warn!(
                    node,
                    "lost the node-id lease; minting stops until a new one"
                );
                self.state.lock().expect("minter state").node = None;
                self.acquire().await
            }
            Err(e) => Err(e),
        }
    }
}

impl IdMinter {
    /// Leases a node id and starts renewing it in the background.
    pub async fn start(store: Store) -> Result<IdMinter> {
        IdMinter::start_with_lease(store, DEFAULT_LEASE).await
    }

    /// As [`IdMinter::start`], with a lease length (tests use short ones).
    pub async fn start_with_lease(store: Store, ttl: Duration) -> Result<IdMinter> {
        let token: u64 = rand::thread_rng().gen();
        let inner = Arc::new(Inner {
            store,
            token: format!("{token:016x}"),
            ttl,
            state: Mutex::new(State {
                node: None,
                anchor_server_ms: 0,
                anchor: Instant::now(),
                floor_ms: 0,
                valid_until_ms: 0,
                last_ms: 0,
                seq: 0,
            }),
        });
        inner.acquire().await?;
        let weak = Arc::downgrade(&inner);
        let every = ttl / 3;
        let renewal = TaskHandle::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let Some(inner) = weak.upgrade() else { return };
                if let Err(e) = inner.renew().await {
                    tracing::warn!(error = %e, "node-id lease renewal failed; will retry");
                }
            }
        });
        Ok(IdMinter {
            inner,
            renewal: Mutex::new(Some(renewal)),
        })
    }

    /// The node id currently leased, if any.
    pub fn node(&self) -> Option<u16> {
        self.inner.state.lock().expect("minter state").node
    }

    /// Mints one id.
    pub fn mint(&self) -> Result<JobId> {
        let mut s = self.inner.state.lock().expect("minter state");
        let node = s.node.ok_or_else(|| {
            Error::new(
                ErrorCode::NodeLeaseLost,
                "this process has no node-id lease (lost or not renewed); it will retry",
            )
        })?;
        let now = s.anchor_server_ms + s.anchor.elapsed().as_millis() as u64;
        let mut ms = now.max(s.floor_ms).max(s.last_ms);
        let mut seq = 0;
        if ms == s.last_ms {
            if s.seq >= MAX_SEQ {
                ms += 1;
            } else {
                seq = s.seq + 1;
            }
        }
        if ms >= s.valid_until_ms {
            return Err(Error::new(
                ErrorCode::NodeLeaseLost,
                format!("the node-id lease of node {node} was not renewed in time; minting stops until it is"),
            ));
        }
        s.last_ms = ms;
        s.seq = seq;
        Ok(JobId::from_parts(ms - EPOCH_MS, node, seq))
    }

    /// Stops renewing and gives the node id back.
    pub async fn release(&self) -> Result<()> {
        let handle = self.renewal.lock().expect("renewal").take();
        if let Some(h) = handle {
            h.stop().await;
        }
        let node = self.inner.state.lock().expect("minter state").node.take();
        if let Some(node) = node {
            let _: i64 = script::NODE_RELEASE
                .prepare()
                .key(&CoreKey::Nodes.key())
                .arg(node)
                .arg(&self.inner.token)
                .invoke(&self.inner.store)
                .await?;
        }
        Ok(())
    }

    /// Runs one renewal now (tests).
    pub async fn renew_now(&self) -> Result<()> {
        self.inner.renew().await
    }
}
