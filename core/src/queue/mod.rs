//! [`Queue`]: the producer and operator side of one queue — add, read, count, list, pause, drain,
//! clean, obliterate, progress, logs, remove, retry, promote, events and audit.
//!
//! Ids are minted here, before sending, so a retried add (after a timeout or a dropped connection)
//! carries the same id and the add script makes it a no-op: an add never duplicates. Work on ids not
//! known in advance (drain, clean, trim, obliterate) selects ids from the queue's containers first,
//! then removes each with a script that declares that job's keys and re-checks its state.
//!
//! One file per side: this one the handle (connect, its keys, minting); `add.rs` every add (one
//! job, a batch, a debounce, the retry of an unavailable add); `coalesce.rs` the line that sends
//! one-job adds arriving while another is in flight as one call; `ops.rs` reads and an operator's
//! moves (get, counts, list, pause, remove, drain, clean, trim, obliterate, progress, logs, retry,
//! promote, priority, cancel); `partitioned.rs` how each call spans a partitioned queue's
//! partitions.

use crate::error::Result;
use crate::job_id::JobId;
use crate::keyspace::{QueueKeys, QueueName};
use crate::minter::IdMinter;
use crate::options::JobOptions;
use crate::script::{self};
use crate::store::{ConnectOptions, Store};
use serde_json::Value;
use std::sync::Arc;

mod add;
mod cleanup;
mod coalesce;
pub(crate) mod direct;
mod events;
mod grow;
mod job_defaults;
mod ops;
pub(crate) mod partition_set;
pub(crate) mod partitioned;
mod reads;
mod wait;

#[cfg(test)]
pub(crate) use add::add_one_keyed;
pub use ops::CancelOutcome;

/// Default cap of a queue's events stream (approximate, trimmed as it grows).
pub const DEFAULT_MAX_EVENTS: u64 = 10_000;
/// Most log lines kept per job.
pub const MAX_LOG_LINES: u64 = 1_000;

/// One job to add.
#[derive(Clone, Debug)]
pub struct NewJob {
    /// The kind of work.
    pub name: String,
    /// The payload.
    pub data: Value,
    /// Its options.
    pub options: JobOptions,
}

/// A handle on one queue. Cheap to clone.
#[derive(Clone)]
pub struct Queue {
    pub(crate) store: Store,
    pub(crate) name: QueueName,
    pub(crate) keys: Arc<QueueKeys>,
    pub(crate) minter: Arc<IdMinter>,
    pub(crate) max_events: u64,
    /// Set once this handle wrote the queue into the registry (see `registry`).
    pub(crate) registered: Arc<std::sync::atomic::AtomicBool>,
    /// The waits of [`Queue::wait`] on this handle and its clones, and their one follower.
    pub(crate) waiters: Arc<crate::waiters::Waiters>,
    /// add_one.lua's checked front (its sha and eleven queue keys), made on the first one-job add.
    add_one_prefix: Arc<std::sync::OnceLock<script::Prefix>>,
    /// Where a caller's own socket sends direct adds, worked out once (`direct.rs`).
    pub(crate) direct: Arc<std::sync::OnceLock<Option<(String, u16)>>>,
    /// The line of one-job adds waiting for the call in flight (`coalesce.rs`).
    coalescer: Arc<coalesce::Coalescer>,
    /// For a partitioned queue, its partitions as last read (`partitions.rs`, `grow.rs`); its own
    /// keys are then unused.
    pub(crate) parts: Option<Arc<partition_set::PartsCell>>,
}

/// How a queue is opened ([`Queue::connect_with`], [`Queue::open`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueOptions {
    /// Spread the queue over this many slots (1 to
    /// [`MAX_PARTITIONS`](crate::partitions::MAX_PARTITIONS)); stored as the queue's count the
    /// first time. None: the count stored for the queue, else a plain queue.
    pub partitions: Option<u16>,
}

impl QueueOptions {
    /// Options with a partition count as a binding passed it (any integer): `invalid_option`,
    /// naming the value, unless it is 1 to [`MAX_PARTITIONS`](crate::partitions::MAX_PARTITIONS).
    pub fn with_partitions(partitions: Option<i128>) -> Result<QueueOptions> {
        let partitions = partitions.map(crate::partitions::count_from).transpose()?;
        Ok(QueueOptions { partitions })
    }
}

impl Queue {
    /// Connects to the datastore and opens the queue `name` (`orders` or `{orders}`); a queue
    /// stored as partitioned opens with its partitions.
    pub async fn connect(options: ConnectOptions, name: &str) -> Result<Queue> {
        Queue::connect_with(options, name, QueueOptions::default()).await
    }

    /// [`Queue::connect`] with [`QueueOptions`] (a partition count).
    pub async fn connect_with(
        options: ConnectOptions,
        name: &str,
        queue: QueueOptions,
    ) -> Result<Queue> {
        QueueName::new(name)?;
        if let Some(n) = queue.partitions {
            crate::partitions::check_count(n)?;
        }
        let store = Store::connect(options).await?;
        let minter = Arc::new(IdMinter::start(store.clone()).await?);
        Queue::open(store, minter, name, queue).await
    }

    /// Opens the queue `name` on an existing store and id minter, reading (or, with
    /// `queue.partitions`, storing) its partition count: one round trip more than
    /// [`Queue::with_store`], which opens a plain queue.
    pub async fn open(
        store: Store,
        minter: Arc<IdMinter>,
        name: &str,
        queue: QueueOptions,
    ) -> Result<Queue> {
        Queue::open_on(store, minter, name, queue.partitions)
            .await?
            .on_lanes()
            .await
    }

    /// The queue `name` with its partition count settled (`asked`, or the stored one), every
    /// partition on `store`'s connection.
    async fn open_on(
        store: Store,
        minter: Arc<IdMinter>,
        name: &str,
        asked: Option<u16>,
    ) -> Result<Queue> {
        let plain = Queue::from_parts(store, minter, QueueName::new(name)?);
        Ok(match partition_set::settle_layout(&plain, asked).await? {
            None => plain,
            Some(layout) => plain.with_partitions(layout),
        })
    }

    /// A partitioned handle whose partitions talk over one cluster connection per master they live
    /// on now ([`Store::lane`]): while a master is down, the cluster client stalls each connection
    /// that has requests for it, so the partitions of the other masters (their adds, and a
    /// worker's claims, completions and renewals) keep going on theirs. A partition whose slot
    /// moves later keeps its lane (correct, only less isolated). Standalone: unchanged.
    async fn on_lanes(self) -> Result<Queue> {
        let Some(cell) = self.parts.clone() else {
            return Ok(self);
        };
        if self.store.topology() != crate::store::Topology::Cluster {
            return Ok(self);
        }
        let parts = cell.now();
        let names: Vec<QueueName> = parts.members.iter().map(|p| p.name.clone()).collect();
        let members = self.members_on_lanes(&cell, names).await?;
        cell.set(partition_set::Partitions::new(
            members,
            parts.layout.clone(),
        ));
        Ok(self)
    }

    /// Handles on the partitions `names`, each on the lane of the master it lives on now (a lane
    /// made for a master no partition was on yet, kept in `cell` for later members).
    pub(crate) async fn members_on_lanes(
        &self,
        cell: &partition_set::PartsCell,
        names: Vec<QueueName>,
    ) -> Result<Vec<Queue>> {
        let keys: Vec<crate::keyspace::Key> = names.iter().map(|n| n.keys().marker).collect();
        let keys: Vec<&crate::keyspace::Key> = keys.iter().collect();
        let masters = self.store.master_urls_for(&keys).await?;
        let mut members = Vec::with_capacity(names.len());
        for (name, master) in names.into_iter().zip(masters) {
            let known = cell.lane_of(&master);
            let lane = match known {
                Some(lane) => lane,
                None => {
                    let lane = self.store.lane().await?;
                    cell.add_lane(master, lane.clone());
                    lane
                }
            };
            members.push(Queue::from_parts(lane, self.minter.clone(), name));
        }
        Ok(members)
    }

    /// This handle over the partitions of `layout` (settled).
    fn with_partitions(mut self, layout: crate::partitions::Layout) -> Queue {
        let members = layout
            .names(&self.name)
            .into_iter()
            .map(|p| Queue::from_parts(self.store.clone(), self.minter.clone(), p))
            .collect();
        self.parts = Some(Arc::new(partition_set::PartsCell::new(
            partition_set::Partitions::new(members, layout),
        )));
        self
    }

    /// The plain queues this handle's jobs live in, one per slot: its partitions, or itself (what
    /// a worker on it serves, and names in `WorkerHandle::queues`).
    pub fn slot_queues(&self) -> Vec<Queue> {
        match self.partitions() {
            Some(parts) => parts,
            None => vec![self.clone()],
        }
    }

    /// How many partitions the queue has (1 for a plain queue), as this handle last read them (a
    /// growth elsewhere reaches it within a second of its calls, `grow.rs`).
    pub fn partition_count(&self) -> u16 {
        self.parts
            .as_ref()
            .map_or(1, |p| p.now().members.len() as u16)
    }

    /// A partitioned queue's partitions, in index order (each a queue in its own slot), as this
    /// handle last read them; None for a plain queue.
    pub fn partitions(&self) -> Option<Vec<Queue>> {
        self.parts.as_ref().map(|p| p.now().members.clone())
    }

    /// Opens the queue `name` on an existing store and id minter (several queues share them).
    pub fn with_store(store: Store, minter: Arc<IdMinter>, name: &str) -> Result<Queue> {
        Ok(Queue::from_parts(store, minter, QueueName::new(name)?))
    }

    pub(crate) fn from_parts(store: Store, minter: Arc<IdMinter>, name: QueueName) -> Queue {
        Queue {
            keys: Arc::new(name.keys()),
            store,
            name,
            minter,
            max_events: DEFAULT_MAX_EVENTS,
            registered: Arc::default(),
            waiters: Arc::default(),
            add_one_prefix: Arc::default(),
            direct: Arc::default(),
            coalescer: Arc::default(),
            parts: None,
        }
    }

    /// Another queue on the same connection and id minter.
    pub fn queue(&self, name: &str) -> Result<Queue> {
        Ok(Queue::from_parts(
            self.store.clone(),
            self.minter.clone(),
            QueueName::new(name)?,
        ))
    }

    /// The same queue (its name, id minter, partitions and events cap) on a connection of its own,
    /// made now with this one's options on the current runtime, with handles of its own (add line,
    /// waits): what a binding gives each thread of a blocking API, so that the thread's own
    /// runtime drives that connection and a blocking call makes no thread hop (Python's
    /// `emq.sync`). Ids stay unique: the minter, and its node-id lease, are shared.
    pub async fn on_own_connection(&self) -> Result<Queue> {
        let store = Store::connect(self.store.options().clone()).await?;
        let mut q = Queue::from_parts(store, self.minter.clone(), self.name.clone());
        q.max_events = self.max_events;
        Ok(match &self.parts {
            Some(p) => q.with_partitions(p.now().layout.clone()),
            None => q,
        })
    }

    /// Another queue on the same connection and id minter, opened with its stored partition
    /// count (one round trip): where the core adds to a queue it only knows by name (a flow's
    /// node, a dead-letter queue), so a partitioned one gets its jobs in its partitions (on this
    /// handle's connection: a handle made per call opens no lanes).
    pub(crate) async fn queue_opened(&self, name: &str) -> Result<Queue> {
        Queue::open_on(self.store.clone(), self.minter.clone(), name, None).await
    }

    /// The queue's name.
    pub fn name(&self) -> &QueueName {
        &self.name
    }

    /// The store it talks to.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Its keys.
    pub fn keys(&self) -> &QueueKeys {
        &self.keys
    }

    /// Mints a job id now (to add later with `JobOptions::id`, for an add that is idempotent across
    /// process restarts).
    pub fn mint_id(&self) -> Result<JobId> {
        self.minter.mint()
    }

    /// Releases the queue's node-id lease (ids can no longer be minted by it or its siblings).
    pub async fn close(&self) -> Result<()> {
        self.minter.release().await
    }
}
