//! Growing a partitioned queue online ([`Queue::grow_partitions`]) and how its handles learn of
//! it.
//!
//! A growth from N to M partitions, while producers and workers run:
//! 1. **Settings first.** The new partitions get the queue's settings as partition 0 holds them
//!    (paused, dead-letter queue, job defaults, the groups' defaults and rate limit, the rate
//!    limit's window), and a share of 0 of a global concurrency or rate limit that is set, before
//!    anything can use them. The logical queue's `share_parts` becomes M, so a worker that still
//!    knows N partitions gets no round of moving the shares (`share_lease.lua`): it could lend what
//!    the new partitions hold.
//! 2. **Publish.** The grown layout `N0,…,M` replaces the stored one only if it is still the one
//!    read (`partitions_grow.lua`): of two growths racing one wins, the other gets
//!    `invalid_option` naming the count stored now.
//! 3. **Handles learn it** within a second: every call of a partitioned handle that finds its
//!    layout older than [`LAYOUT_REFRESH`] reads it in the background ([`Queue::spread`]), and the
//!    calls that change settings on every partition (pause, limits, defaults, obliterate) read it
//!    first ([`Queue::spread_now`]). A handle that has not read it yet routes its adds over the
//!    partitions it knows, all of which are still served.
//! 4. **Workers take up the new partitions** (`worker/regrow.rs`): each reads the layout every
//!    second and restarts itself over the grown queue, as a graceful close and start would.
//!
//! A setting changed (on any handle) between steps 1 and 2 of a growth reaches only the
//! partitions known before it: the new partitions keep the value copied in step 1 (set it again
//! after the growth to be sure). A growth is an operator's step; settings are rarely changed at
//! the same moment.
//!
//! Nothing moves: a job stays in the partition it was added to, and keys and ids keep routing to
//! their home partitions (`partitions.rs`), so no job is lost or run twice and per-key order
//! holds; the new partitions take the jobs routed by backlog (those with neither a key nor an id
//! of their caller). Shrinking is refused.

use super::Queue;
use crate::error::{Error, ErrorCode, Result};
use crate::keyspace::CoreKey;
use crate::partitions::Layout;
use crate::queue::partition_set::{stored_layout, Partitions, PartsCell};
use crate::script;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// How old a handle's layout may get before a call of it reads the stored one again.
pub(crate) const LAYOUT_REFRESH: Duration = Duration::from_secs(1);

/// Clears a handle's "layout read under way" flag when dropped.
struct Checked(Option<Arc<PartsCell>>);

impl Drop for Checked {
    fn drop(&mut self) {
        if let Some(c) = &self.0 {
            c.checking.store(false, Ordering::Release);
        }
    }
}

/// The settings of partition 0 a new partition gets (meta fields).
const COPIED: &[&str] = &[
    "paused",
    "dead_letter",
    crate::job_defaults::FIELD,
    "gconc",
    "gmaxw",
    "grl_max",
    "grl_window_ms",
    "rl_window_ms",
];

impl Queue {
    /// The partitions, when this is a partitioned queue's handle, as last read; starts a read of
    /// the stored layout in the background when that was more than [`LAYOUT_REFRESH`] ago.
    pub(crate) fn spread(&self) -> Option<Arc<Partitions>> {
        let cell = self.parts.as_ref()?;
        let now = cell.ms();
        let last = cell.checked_ms.load(Ordering::Relaxed);
        if now.saturating_sub(last) >= LAYOUT_REFRESH.as_millis() as u64
            && !cell.checking.swap(true, Ordering::AcqRel)
        {
            cell.checked_ms.store(now, Ordering::Relaxed);
            match tokio::runtime::Handle::try_current() {
                Ok(rt) => {
                    let q = self.clone();
                    rt.spawn(async move {
                        // Cleared however the read ends (a runtime shut down drops it mid-way).
                        let _done = Checked(q.parts.clone());
                        let _ = q.read_layout().await;
                    });
                }
                Err(_) => cell.checking.store(false, Ordering::Release),
            }
        }
        Some(cell.now())
    }

    /// [`Queue::spread`] with the stored layout read first: for the calls that change a setting
    /// on every partition, so a growth published before the call is not missed.
    pub(crate) async fn spread_now(&self) -> Result<Option<Arc<Partitions>>> {
        if self.parts.is_none() {
            return Ok(None);
        }
        self.read_layout().await?;
        Ok(self.parts.as_ref().map(|c| c.now()))
    }

    /// Reads the stored layout and, when the queue has grown past the partitions this handle
    /// knows, puts the grown partitions in place (for this handle and its clones). Returns the
    /// stored layout (None: none is stored, the queue obliterated).
    pub(crate) async fn read_layout(&self) -> Result<Option<Layout>> {
        let Some(cell) = &self.parts else {
            return Ok(None);
        };
        cell.checked_ms.store(cell.ms(), Ordering::Relaxed);
        let stored = stored_layout(self).await?;
        if let Some(layout) = &stored {
            self.take_layout(cell, layout).await?;
        }
        Ok(stored)
    }

    /// Puts the partitions of `layout` in place when it has more than this handle knows: the
    /// members this handle has keep their connections; the new ones get the lane of their master
    /// (`members_on_lanes`: on a standalone server, this handle's connection).
    async fn take_layout(&self, cell: &PartsCell, layout: &Layout) -> Result<()> {
        let parts = cell.now();
        if usize::from(layout.count()) <= parts.members.len() {
            return Ok(());
        }
        let names = layout.names(&self.name);
        let mut members = parts.members.clone();
        members.extend(
            self.members_on_lanes(cell, names[parts.members.len()..].to_vec())
                .await?,
        );
        cell.set(Partitions::new(members, layout.clone()));
        Ok(())
    }

    /// Grows this partitioned queue to `count` partitions, online (see the module doc): the new
    /// partitions get the queue's settings, then the grown layout is published; workers take the
    /// new partitions up within about a second (each as a graceful restart), other handles within
    /// a second of their next call. Returns the count now.
    ///
    /// `invalid_option` for a plain queue (open it with `partitions=` while it is empty), for a
    /// count not above the present one (shrinking is not supported) or above
    /// [`MAX_PARTITIONS`](crate::partitions::MAX_PARTITIONS), and when another growth won a race
    /// (the message names the count stored now). `count` is any integer (a binding's), checked
    /// here.
    pub async fn grow_partitions(&self, count: impl Into<i128>) -> Result<u16> {
        let count = crate::partitions::count_from(count.into())?;
        let Some(cell) = &self.parts else {
            return Err(Error::new(
                ErrorCode::InvalidOption,
                format!(
                    "queue {} is not partitioned; only a partitioned queue grows (a plain queue takes partitions= when opened while it holds no jobs)",
                    self.name
                ),
            ));
        };
        let was = self.read_layout().await?.ok_or_else(|| {
            Error::new(
                ErrorCode::InvalidOption,
                format!(
                    "queue {} has no stored partitions (obliterated?)",
                    self.name
                ),
            )
        })?;
        let grown = was.grown(count)?;
        let parts = cell.now();
        let names = grown.names(&self.name);
        let new = &names[usize::from(was.count())..];
        // 1. Settings, and the shares' count.
        let first = &parts.members[0];
        let values: Vec<Option<String>> = redis::cmd("HMGET")
            .arg(&first.keys().meta)
            .arg(COPIED)
            .query_async(&mut first.store().conn())
            .await?;
        let totals: (Option<String>, Option<String>) = redis::cmd("HMGET")
            .arg(&self.keys().meta)
            .arg("share_total")
            .arg("share_rate")
            .query_async(&mut self.store().conn())
            .await?;
        let mut fields: Vec<(&str, String)> = COPIED
            .iter()
            .zip(values)
            .filter_map(|(f, v)| v.map(|v| (*f, v)))
            .collect();
        if totals.0.is_some() {
            fields.push(("concurrency", "0".to_string()));
        }
        if totals.1.is_some() {
            fields.push(("rl_max", "0".to_string()));
        }
        if !fields.is_empty() {
            futures::future::try_join_all(new.iter().map(|n| {
                let mut cmd = redis::cmd("HSET");
                cmd.arg(n.keys().meta);
                for (f, v) in &fields {
                    cmd.arg(*f).arg(v);
                }
                let store = self.store.clone();
                async move {
                    let _: i64 = cmd.query_async(&mut store.conn()).await?;
                    Ok::<(), Error>(())
                }
            }))
            .await?;
        }
        self.set_share_parts(count).await?;
        // 2. Publish, if still the layout read.
        let r: Vec<redis::Value> = script::PARTITIONS_GROW
            .prepare()
            .key(&CoreKey::Partitions.key())
            .arg(self.name.as_str())
            .arg(was.text())
            .arg(grown.text())
            .invoke(&self.store)
            .await?;
        if !matches!(r.first(), Some(redis::Value::Int(1))) {
            // Lost to another growth: the shares' count is the stored layout's again.
            let now = stored_layout(self)
                .await?
                .map_or(was.count(), |l| l.count());
            self.set_share_parts(now).await?;
            return Err(Error::new(
                ErrorCode::InvalidOption,
                format!(
                    "queue {} was grown by another caller meanwhile; it has {now} partitions now",
                    self.name
                ),
            ));
        }
        // 3. This handle at once.
        self.take_layout(cell, &grown).await?;
        Ok(count)
    }

    /// The count of partitions every round of moving the shares must know (`share_lease.lua`).
    async fn set_share_parts(&self, count: u16) -> Result<()> {
        let _: i64 = redis::cmd("HSET")
            .arg(&self.keys().meta)
            .arg("share_parts")
            .arg(count)
            .query_async(&mut self.store().conn())
            .await?;
        Ok(())
    }
}
