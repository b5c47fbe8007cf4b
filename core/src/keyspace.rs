//! The owned keyspace: validated queue names and the only builders of keys.
//!
//! Every per-queue key is `emq:{q}:<type>` (or `emq:{q}:<jobId>:<part>` for a job's own keys), so all
//! of a queue's keys share one hash tag and one cluster slot. The core's own cross-queue keys live
//! under `{emq}:`. A [`Key`] can only be made here, from a [`QueueName`] and, for per-job keys, a
//! [`JobId`]; scripts accept nothing else as a key.
//!
//! Rules on a queue name (the tag between the braces), each with its own message:
//! - the caller may write `orders` or `{orders}`: the wrap is idempotent;
//! - not empty; at most [`MAX_QUEUE_NAME_BYTES`] bytes of UTF-8;
//! - no `:`, `{` or `}` (a cluster hashes the text between the first `{` and the next `}`), except
//!   in the one form the core gives a partition of a partitioned queue, `<name>:p<index>.<salt>`
//!   (`partitions.rs`): no plain name has a `:`, so partitions and plain queues never collide;
//! - no whitespace and no control characters (they make keys unreadable in every tool);
//! - not `emq` in any letter case (`{emq}` is the core's namespace);
//! - any other Unicode is allowed and kept byte for byte (no normalisation: `é` and `e\u{301}` are two
//!   queues).

use crate::error::{Error, ErrorCode, Result};
use crate::hash_slot::key_slot;
use crate::job_id::JobId;
use std::fmt;

/// Longest queue name, in bytes of UTF-8.
pub const MAX_QUEUE_NAME_BYTES: usize = 128;

/// The prefix of every per-queue key.
pub const PREFIX: &str = "emq";

/// A validated queue name: the tag that goes between the braces.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QueueName {
    tag: String,
}

fn invalid(name: &str, rule: &str) -> Error {
    Error::new(
        ErrorCode::InvalidQueueName,
        format!("invalid queue name {name:?}: {rule}"),
    )
}

impl QueueName {
    /// Validates `name` (bare `orders` or braced `{orders}`) and wraps it.
    pub fn new(name: &str) -> Result<QueueName> {
        let tag = match name.strip_prefix('{') {
            Some(rest) => rest.strip_suffix('}').ok_or_else(|| {
                invalid(
                    name,
                    "a braced name must be exactly `{name}` (unbalanced `{`)",
                )
            })?,
            None => name,
        };
        if tag.is_empty() {
            return Err(invalid(name, "the name is empty"));
        }
        if tag.len() > MAX_QUEUE_NAME_BYTES {
            return Err(invalid(
                name,
                &format!("longer than {MAX_QUEUE_NAME_BYTES} bytes"),
            ));
        }
        if let Some((base, suffix)) = tag.split_once(':') {
            if let Some((index, salt)) = partition_suffix(suffix) {
                let base = QueueName::new(base)?;
                return Ok(QueueName::partition(&base, index, salt));
            }
        }
        if let Some(c) = tag.chars().find(|c| matches!(c, ':' | '{' | '}')) {
            return Err(invalid(
                name,
                &format!("`{c}` is not allowed inside the hash tag"),
            ));
        }
        if tag.chars().any(char::is_whitespace) {
            return Err(invalid(name, "whitespace is not allowed"));
        }
        if tag.chars().any(char::is_control) {
            return Err(invalid(name, "control characters are not allowed"));
        }
        if tag.eq_ignore_ascii_case(PREFIX) {
            return Err(invalid(
                name,
                "`emq` is reserved for the core's own keys ({emq}:…)",
            ));
        }
        Ok(QueueName {
            tag: tag.to_string(),
        })
    }

    /// Partition `index` of the partitioned queue `base`, its tag `<base>:p<index>.<salt>`: the one
    /// form of tag with a `:`, which no plain queue name can have, so a partition never shares keys
    /// with a plain queue or with `{emq}` (see `partitions.rs` for how `salt` spreads them).
    pub(crate) fn partition(base: &QueueName, index: u16, salt: u32) -> QueueName {
        QueueName {
            tag: format!("{}:p{index}.{salt}", base.tag),
        }
    }

    /// For a partition's name, the partitioned queue's name and the partition's index.
    pub fn partition_of(&self) -> Option<(QueueName, u16)> {
        let (base, suffix) = self.tag.split_once(':')?;
        let (index, _) = partition_suffix(suffix)?;
        Some((
            QueueName {
                tag: base.to_string(),
            },
            index,
        ))
    }

    /// The bare name (the hash tag's text).
    pub fn as_str(&self) -> &str {
        &self.tag
    }

    /// The braced form, `{name}`; `QueueName::new` of it gives the same queue.
    pub fn braced(&self) -> String {
        format!("{{{}}}", self.tag)
    }

    /// The cluster slot every key of this queue lives in.
    pub fn slot(&self) -> u16 {
        key_slot(&self.braced())
    }

    /// The key of a queue-wide family.
    pub fn key(&self, family: Family) -> Key {
        Key::new(
            format!("{PREFIX}:{{{}}}:{}", self.tag, family.suffix()),
            family.role(),
        )
    }

    /// The key of one part of one job.
    pub fn job_key(&self, id: JobId, part: JobPart) -> Key {
        match part.suffix() {
            "" => Key::new(format!("{PREFIX}:{{{}}}:{id}", self.tag), part.role()),
            suffix => Key::new(
                format!("{PREFIX}:{{{}}}:{id}:{suffix}", self.tag),
                part.role(),
            ),
        }
    }

    /// The v1 (EchoMQ 1.x) spelling of a family's key, for the keyspace figure only; never used.
    pub fn v1_key(&self, family: Family) -> String {
        format!("{PREFIX}:{}:{}", self.tag, family.suffix())
    }
}

impl fmt::Display for QueueName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.tag)
    }
}

impl std::str::FromStr for QueueName {
    type Err = Error;
    fn from_str(s: &str) -> Result<QueueName> {
        QueueName::new(s)
    }
}

/// `p<index>.<salt>` in canonical decimal (no sign, no leading zero), or None.
fn partition_suffix(suffix: &str) -> Option<(u16, u32)> {
    let (index, salt) = suffix.strip_prefix('p')?.split_once('.')?;
    let canonical = |t: &str| {
        !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) && (t == "0" || !t.starts_with('0'))
    };
    if !canonical(index) || !canonical(salt) {
        return None;
    }
    Some((index.parse().ok()?, salt.parse().ok()?))
}

/// Every queue-wide key of one queue, built once.
#[derive(Clone, Debug)]
pub struct QueueKeys {
    /// `emq:{q}:wait`
    pub wait: Key,
    /// `emq:{q}:active`
    pub active: Key,
    /// `emq:{q}:paused`
    pub paused: Key,
    /// `emq:{q}:delayed`
    pub delayed: Key,
    /// `emq:{q}:prioritized`
    pub prioritized: Key,
    /// `emq:{q}:completed`
    pub completed: Key,
    /// `emq:{q}:failed`
    pub failed: Key,
    /// `emq:{q}:waiting-children`
    pub waiting_children: Key,
    /// `emq:{q}:stalled`
    pub stalled: Key,
    /// `emq:{q}:events`
    pub events: Key,
    /// `emq:{q}:meta`
    pub meta: Key,
    /// `emq:{q}:dedup`
    pub dedup: Key,
    /// `emq:{q}:leases`
    pub leases: Key,
    /// `emq:{q}:sweep`
    pub sweep: Key,
    /// `emq:{q}:marker`
    pub marker: Key,
    /// `emq:{q}:limiter`
    pub limiter: Key,
    /// `emq:{q}:metrics`
    pub metrics: Key,
    /// `emq:{q}:schedulers`
    pub schedulers: Key,
    /// `emq:{q}:schedule-due`
    pub schedule_due: Key,
    /// `emq:{q}:groups`
    pub groups: Key,
    /// `emq:{q}:group-counts`
    pub group_counts: Key,
    /// `emq:{q}:group-windows`
    pub group_windows: Key,
    /// `emq:{q}:dedup-expiry`
    pub dedup_expiry: Key,
    /// `emq:{q}:waiters`
    pub waiters: Key,
    /// `emq:{q}:handoff`
    pub handoff: Key,
    /// `emq:{q}:delayed-priority`
    pub delayed_priority: Key,
    /// `emq:{q}:cancels`
    pub cancels: Key,
    /// `emq:{q}:workers`
    pub workers: Key,
    /// `emq:{q}:worker-info`
    pub worker_info: Key,
    /// `emq:{q}:group-ready`
    pub group_ready: Key,
    /// `emq:{q}:group-turns`
    pub group_turns: Key,
    /// `emq:{q}:group-parked`
    pub group_parked: Key,
    /// `emq:{q}:group-state`
    pub group_state: Key,
    /// `emq:{q}:group-names`
    pub group_names: Key,
    /// `emq:{q}:dead-letters`
    pub dead_letters: Key,
    /// `emq:{q}:batches`
    pub batches: Key,
    /// `emq:{q}:batch-pending`
    pub batch_pending: Key,
}

impl QueueName {
    /// All queue-wide keys of this queue.
    pub fn keys(&self) -> QueueKeys {
        QueueKeys {
            wait: self.key(Family::Wait),
            active: self.key(Family::Active),
            paused: self.key(Family::Paused),
            delayed: self.key(Family::Delayed),
            prioritized: self.key(Family::Prioritized),
            completed: self.key(Family::Completed),
            failed: self.key(Family::Failed),
            waiting_children: self.key(Family::WaitingChildren),
            stalled: self.key(Family::Stalled),
            events: self.key(Family::Events),
            meta: self.key(Family::Meta),
            dedup: self.key(Family::Dedup),
            leases: self.key(Family::Leases),
            sweep: self.key(Family::Sweep),
            marker: self.key(Family::Marker),
            limiter: self.key(Family::Limiter),
            metrics: self.key(Family::Metrics),
            schedulers: self.key(Family::Schedulers),
            schedule_due: self.key(Family::ScheduleDue),
            groups: self.key(Family::Groups),
            group_counts: self.key(Family::GroupCounts),
            group_windows: self.key(Family::GroupWindows),
            dedup_expiry: self.key(Family::DedupExpiry),
            waiters: self.key(Family::Waiters),
            handoff: self.key(Family::Handoff),
            delayed_priority: self.key(Family::DelayedPriority),
            cancels: self.key(Family::Cancels),
            workers: self.key(Family::Workers),
            worker_info: self.key(Family::WorkerInfo),
            group_ready: self.key(Family::GroupReady),
            group_turns: self.key(Family::GroupTurns),
            group_parked: self.key(Family::GroupParked),
            group_state: self.key(Family::GroupState),
            group_names: self.key(Family::GroupNames),
            dead_letters: self.key(Family::DeadLetters),
            batches: self.key(Family::Batches),
            batch_pending: self.key(Family::BatchPending),
        }
    }
}

/// A datastore key built by this module. There is no way to make one from a `&str` outside it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    // Shared text: an invocation clones the queue's fixed keys on every call (a count, not a copy).
    text: std::sync::Arc<str>,
    role: &'static str,
    // Its cluster slot, computed once (every invocation checks the one-slot rule on every key).
    slot: u16,
}

impl Key {
    fn new(text: String, role: &'static str) -> Key {
        let slot = key_slot(&text);
        Key {
            text: text.into(),
            role,
            slot,
        }
    }

    /// The key's text.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Its cluster slot.
    pub fn slot(&self) -> u16 {
        self.slot
    }

    /// What the key is, in the words of a script header's `KEYS` names: a family's suffix with `_`
    /// for `-` (`waiting_children`), `record` or `logs` for a job's parts, `version` or `nodes` for
    /// the core's keys. An invocation is refused when a key's role is not the one its header names
    /// at that position (see `script::Invocation::check`).
    pub fn role(&self) -> &'static str {
        self.role
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl redis::ToRedisArgs for Key {
    fn write_redis_args<W: ?Sized + redis::RedisWrite>(&self, out: &mut W) {
        out.write_arg(self.text.as_bytes())
    }
}

/// Queue-wide key families. Each is `emq:{q}:<suffix>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// LIST of job ids ready to run, oldest at the right (LPUSH in, RPOP out).
    Wait,
    /// ZSET of job ids leased to a worker, scored by lease expiry (server ms). v1 kept a LIST and a
    /// per-job lock string; an ordered lease index lets the stalled sweep select expired leases
    /// from one declared key.
    Active,
    /// LIST of job ids waiting while the queue is paused.
    Paused,
    /// ZSET of job ids by due time (server ms).
    Delayed,
    /// ZSET of ready job ids by priority then order.
    Prioritized,
    /// ZSET of completed job ids by finish time.
    Completed,
    /// ZSET of failed job ids by finish time.
    Failed,
    /// ZSET of parent job ids waiting for their children.
    WaitingChildren,
    /// SET of job ids whose lease expired, moved out of `active` by the sweep, pending recovery.
    Stalled,
    /// STREAM of lifecycle events.
    Events,
    /// HASH of queue settings and counters (paused flag, sequence numbers, retention).
    Meta,
    /// HASH from a user's dedup key (data) to the job id holding it.
    Dedup,
    /// HASH from an active job id to its lease token (replaces v1's per-job `:lock` string, which a
    /// select-then-claim fetch could not write without touching undeclared keys).
    Leases,
    /// STRING lock that lets one worker at a time run the stalled sweep.
    Sweep,
    /// LIST that wakes blocked workers (a marker per ready job, never a job id).
    Marker,
    /// STRING counter of jobs started in the current rate-limit window (expires with it).
    Limiter,
    /// HASH of finished-job counts per minute (`c:<minute>`, `f:<minute>`), trimmed to a window.
    Metrics,
    /// HASH from a scheduler id (user data) to its spec (JSON).
    Schedulers,
    /// ZSET of scheduler ids by their next due time (server ms).
    ScheduleDue,
    /// HASH from a grouped job's id to its group (user data), held from its add until it finishes
    /// or is removed, so a script that moves the job finds its group without reading its record.
    /// While the job waits in `group-ready` the value is that job's member there (`<group>\0…`).
    Groups,
    /// HASH from a group key (user data) to the jobs of that group started in its current window.
    GroupCounts,
    /// ZSET of group keys by the end of their current rate-limit window (server ms); ended windows
    /// are trimmed with their counts.
    GroupWindows,
    /// ZSET of dedup keys (user data) held for a TTL, by when they expire (server ms); expired ones
    /// leave the dedup hash when the worker trims.
    DedupExpiry,
    /// ZSET of workers about to block on the marker (`<worker>|<lease ms>`), scored by when their
    /// wait ends (server ms). An add that finds one (and an empty, unlimited queue) leases its job
    /// at once and hands it over in `handoff`, consuming the entry.
    Waiters,
    /// LIST of jobs handed to a blocked worker by the add itself: each entry carries the job's id,
    /// lease token and record, so the worker starts it without another round trip. The job is
    /// already in `active` with its lease; an entry nobody took goes first in the next claim, or back
    /// to wait (uncounted) when that lease expires.
    Handoff,
    /// HASH from a delayed job's id to its priority, for the delayed jobs that have one (added with
    /// a delay, retried after a backoff, or held by their group's limit), so the claim that
    /// promotes a due job puts it in `prioritized`, not `wait`, without reading its record.
    DelayedPriority,
    /// STREAM: cancel requests for running jobs (id, reason), read by every worker; capped.
    Cancels,
    /// ZSET of the live workers of this queue (worker id), scored by when their registration lapses
    /// (server ms): each heartbeat pushes it on; a closed worker leaves, a lapsed one is pruned.
    Workers,
    /// HASH from a live worker's id to its description (JSON: host, pid, language, concurrency,
    /// running, started and last-beat stamps on the server's clock).
    WorkerInfo,
    /// HASH kept by `emq migrate` (core/src/migrate/): from a source job (its BullMQ key,
    /// `<prefix>:<queue>:<id>`, data) to the emq job id minted for it (`<id>` while the copy may not
    /// exist yet, `<id>|<state>` once it does), and from `=<emq id>` back to the source key.
    Migrated,
    /// ZSET (every score 0, ordered by member) of the grouped jobs ready to run, each member
    /// `<group>\0<priority:7><order:16><id>`: one group's jobs are one lexicographic range, in the
    /// order they run (priority, then FIFO; LIFO and interrupted runs ahead). See `core/src/groups.rs`.
    GroupReady,
    /// ZSET of the groups that may run now, by their pass (stride scheduling, virtual time): the
    /// claim serves the lowest pass and advances it by 1,000,000 / weight per job.
    GroupTurns,
    /// ZSET of the groups with ready jobs that may not run now (paused, or at their concurrency
    /// cap), by the pass they left with; a freed slot or a resume moves a group back to the turns.
    GroupParked,
    /// HASH of each group's settings and running count: `w|<g>` weight, `c|<g>` concurrency,
    /// `m|<g>` most waiting, `p|<g>` paused, `r|<g>` jobs of the group in `active`.
    GroupState,
    /// ZSET (every score 0) of the groups known to the queue, by name, for `Queue::groups`.
    GroupNames,
    /// ZSET of failed job ids on their way to a dead-letter queue (`core/src/dead_letter.rs`), by
    /// when they failed (server ms): written in the failure's own script, emptied once the copy
    /// is in the dead-letter queue (another slot, so a second step).
    DeadLetters,
    /// ZSET of the batches created on this queue (`core/src/batch.rs`), by when they were created
    /// (server ms); each batch's own keys are [`BatchPart`]s.
    Batches,
    /// ZSET of the outcomes of this queue's batched jobs on their way to their batch (another slot,
    /// so a second step), each member `<c|f>|<job id>|<batch queue>|<batch id>`, by when the job
    /// finished (server ms): written in the job's finish script, removed once the batch counted it.
    BatchPending,
}

impl Family {
    /// Every family, in the order of the keyspace table.
    pub const ALL: [Family; 38] = [
        Family::Wait,
        Family::Active,
        Family::Paused,
        Family::Delayed,
        Family::Prioritized,
        Family::Completed,
        Family::Failed,
        Family::WaitingChildren,
        Family::Stalled,
        Family::Events,
        Family::Meta,
        Family::Dedup,
        Family::Leases,
        Family::Sweep,
        Family::Marker,
        Family::Limiter,
        Family::Metrics,
        Family::Schedulers,
        Family::ScheduleDue,
        Family::Groups,
        Family::GroupCounts,
        Family::GroupWindows,
        Family::DedupExpiry,
        Family::Waiters,
        Family::Handoff,
        Family::DelayedPriority,
        Family::Cancels,
        Family::Workers,
        Family::WorkerInfo,
        Family::Migrated,
        Family::GroupReady,
        Family::GroupTurns,
        Family::GroupParked,
        Family::GroupState,
        Family::GroupNames,
        Family::DeadLetters,
        Family::Batches,
        Family::BatchPending,
    ];

    /// The `<type>` part of the key.
    pub const fn suffix(self) -> &'static str {
        match self {
            Family::Wait => "wait",
            Family::Active => "active",
            Family::Paused => "paused",
            Family::Delayed => "delayed",
            Family::Prioritized => "prioritized",
            Family::Completed => "completed",
            Family::Failed => "failed",
            Family::WaitingChildren => "waiting-children",
            Family::Stalled => "stalled",
            Family::Events => "events",
            Family::Meta => "meta",
            Family::Dedup => "dedup",
            Family::Leases => "leases",
            Family::Sweep => "sweep",
            Family::Marker => "marker",
            Family::Limiter => "limiter",
            Family::Metrics => "metrics",
            Family::Schedulers => "schedulers",
            Family::ScheduleDue => "schedule-due",
            Family::Groups => "groups",
            Family::GroupCounts => "group-counts",
            Family::GroupWindows => "group-windows",
            Family::DedupExpiry => "dedup-expiry",
            Family::Waiters => "waiters",
            Family::Handoff => "handoff",
            Family::DelayedPriority => "delayed-priority",
            Family::Cancels => "cancels",
            Family::Workers => "workers",
            Family::WorkerInfo => "worker-info",
            Family::Migrated => "migrated",
            Family::GroupReady => "group-ready",
            Family::GroupTurns => "group-turns",
            Family::GroupParked => "group-parked",
            Family::GroupState => "group-state",
            Family::GroupNames => "group-names",
            Family::DeadLetters => "dead-letters",
            Family::Batches => "batches",
            Family::BatchPending => "batch-pending",
        }
    }
    /// The name a script header gives a key of this family: the suffix, with `_` for `-`.
    pub const fn role(self) -> &'static str {
        match self {
            Family::WaitingChildren => "waiting_children",
            Family::ScheduleDue => "schedule_due",
            Family::GroupCounts => "group_counts",
            Family::GroupWindows => "group_windows",
            Family::DedupExpiry => "dedup_expiry",
            Family::DelayedPriority => "delayed_priority",
            Family::WorkerInfo => "worker_info",
            Family::GroupReady => "group_ready",
            Family::GroupTurns => "group_turns",
            Family::GroupParked => "group_parked",
            Family::GroupState => "group_state",
            Family::GroupNames => "group_names",
            Family::DeadLetters => "dead_letters",
            Family::BatchPending => "batch_pending",
            other => other.suffix(),
        }
    }

    /// The datastore type behind the key.
    pub const fn redis_type(self) -> &'static str {
        match self {
            Family::Wait | Family::Paused | Family::Marker | Family::Handoff => "list",
            Family::Active
            | Family::ScheduleDue
            | Family::GroupWindows
            | Family::DedupExpiry
            | Family::Waiters
            | Family::Workers
            | Family::Delayed
            | Family::Prioritized
            | Family::Completed
            | Family::Failed
            | Family::WaitingChildren
            | Family::GroupReady
            | Family::GroupTurns
            | Family::GroupParked
            | Family::GroupNames
            | Family::DeadLetters
            | Family::Batches
            | Family::BatchPending => "zset",
            Family::Stalled => "set",
            Family::Events | Family::Cancels => "stream",
            Family::Meta
            | Family::Dedup
            | Family::Leases
            | Family::Metrics
            | Family::Schedulers
            | Family::Groups
            | Family::GroupCounts
            | Family::DelayedPriority
            | Family::WorkerInfo
            | Family::Migrated
            | Family::GroupState => "hash",
            Family::Sweep | Family::Limiter => "string",
        }
    }
}

/// The parts of one job, each `emq:{q}:<jobId>[:<part>]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JobPart {
    /// HASH: name, data, options, attempts, result, failure, stamps.
    Record,
    /// LIST: the job's log lines.
    Logs,
}

impl JobPart {
    /// Every part.
    pub const ALL: [JobPart; 2] = [JobPart::Record, JobPart::Logs];

    /// The `<part>` suffix ("" for the record itself).
    pub const fn suffix(self) -> &'static str {
        match self {
            JobPart::Record => "",
            JobPart::Logs => "logs",
        }
    }

    /// The name a script header gives this part: `record` or `logs`.
    pub const fn role(self) -> &'static str {
        match self {
            JobPart::Record => "record",
            JobPart::Logs => "logs",
        }
    }
}

/// The parts of one batch (`core/src/batch.rs`), each `emq:{q}:batch:<batchId>[:<part>]`, in the
/// slot of the queue that created it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BatchPart {
    /// HASH: description, counters (total, completed, failed), the callbacks' specs and pinned ids.
    Record,
    /// HASH from each job counted in (its id) to `<state>|<its queue>`, state `p` pending, `c`
    /// completed, `f` failed: what makes counting in and recording an outcome idempotent.
    Jobs,
    /// ZSET of the batch's failed jobs (`<queue>:<id>`), by when they failed (server ms).
    Failed,
}

impl BatchPart {
    /// Every part.
    pub const ALL: [BatchPart; 3] = [BatchPart::Record, BatchPart::Jobs, BatchPart::Failed];

    /// The `<part>` suffix ("" for the record itself).
    pub const fn suffix(self) -> &'static str {
        match self {
            BatchPart::Record => "",
            BatchPart::Jobs => "jobs",
            BatchPart::Failed => "failed",
        }
    }

    /// The name a script header gives this part: `batch`, `batch_jobs`, `batch_failed`.
    pub const fn role(self) -> &'static str {
        match self {
            BatchPart::Record => "batch",
            BatchPart::Jobs => "batch_jobs",
            BatchPart::Failed => "batch_failed",
        }
    }

    /// The datastore type behind the key.
    pub const fn redis_type(self) -> &'static str {
        match self {
            BatchPart::Record | BatchPart::Jobs => "hash",
            BatchPart::Failed => "zset",
        }
    }
}

impl QueueName {
    /// The key of one part of one batch created on this queue.
    pub fn batch_key(&self, id: JobId, part: BatchPart) -> Key {
        match part.suffix() {
            "" => Key::new(format!("{PREFIX}:{{{}}}:batch:{id}", self.tag), part.role()),
            suffix => Key::new(
                format!("{PREFIX}:{{{}}}:batch:{id}:{suffix}", self.tag),
                part.role(),
            ),
        }
    }
}

/// The core's own cross-queue keys, under the `{emq}` tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CoreKey {
    /// STRING: the wire version of the keyspace.
    Version,
    /// HASH: node-id leases for job-id minting.
    Nodes,
    /// SET: the names of the queues in use (written by a queue handle's first add and by every
    /// worker heartbeat; `registry::repair` adds queues found by SCAN).
    Queues,
    /// HASH: partitioned queue name → its partition count, written once (`partitions.rs`).
    Partitions,
}

impl CoreKey {
    /// Every core key.
    pub const ALL: [CoreKey; 4] = [
        CoreKey::Version,
        CoreKey::Nodes,
        CoreKey::Queues,
        CoreKey::Partitions,
    ];

    /// The key.
    pub fn key(self) -> Key {
        match self {
            CoreKey::Version => Key::new(format!("{{{PREFIX}}}:version"), "version"),
            CoreKey::Nodes => Key::new(format!("{{{PREFIX}}}:nodes"), "nodes"),
            CoreKey::Queues => Key::new(format!("{{{PREFIX}}}:queues"), "queues"),
            CoreKey::Partitions => Key::new(format!("{{{PREFIX}}}:partitions"), "partitions"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_idempotently() {
        let a = QueueName::new("orders").unwrap();
        let b = QueueName::new("{orders}").unwrap();
        assert_eq!(a, b);
        assert_eq!(a.key(Family::Wait).as_str(), "emq:{orders}:wait");
        assert_eq!(QueueName::new(&a.braced()).unwrap(), a);
    }

    #[test]
    fn rejects_each_rule_with_its_message() {
        for (name, needle) in [
            ("", "empty"),
            ("{}", "empty"),
            ("a:b", "`:`"),
            ("a{b", "`{`"),
            ("a}b", "`}`"),
            ("{a", "unbalanced"),
            ("{{a}}", "`{`"),
            ("emq", "reserved"),
            ("EMQ", "reserved"),
            ("{emq}", "reserved"),
            ("a b", "whitespace"),
            ("a\u{7}b", "control"),
        ] {
            let err = QueueName::new(name).unwrap_err();
            assert_eq!(err.code(), ErrorCode::InvalidQueueName, "{name:?}");
            assert!(
                err.message().contains(needle),
                "{name:?}: {}",
                err.message()
            );
        }
        let long = "x".repeat(MAX_QUEUE_NAME_BYTES + 1);
        assert!(QueueName::new(&long)
            .unwrap_err()
            .message()
            .contains("longer"));
        assert!(QueueName::new(&"x".repeat(MAX_QUEUE_NAME_BYTES)).is_ok());
        assert!(QueueName::new("zahlungen-ü-支払い").is_ok());
    }

    #[test]
    fn roles_are_the_suffixes_in_header_spelling() {
        let q = QueueName::new("orders").unwrap();
        for f in Family::ALL {
            assert_eq!(f.role(), f.suffix().replace('-', "_"), "{f:?}");
            assert_eq!(q.key(f).role(), f.role());
        }
        let id = crate::JobId::from_parts(1, 1, 1);
        assert_eq!(q.job_key(id, JobPart::Record).role(), "record");
        assert_eq!(q.job_key(id, JobPart::Logs).role(), "logs");
        assert_eq!(CoreKey::Nodes.key().role(), "nodes");
    }

    #[test]
    fn core_keys_share_the_emq_tag() {
        for k in CoreKey::ALL {
            assert_eq!(crate::hash_slot::hash_tag(k.key().as_str()), Some("emq"));
        }
    }
}
