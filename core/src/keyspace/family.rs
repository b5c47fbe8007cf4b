//! The queue-wide key families (`emq:{q}:<suffix>`), their table, and every family's key of one
//! queue built once ([`QueueKeys`]).

use super::{Key, QueueName};

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
    /// ZSET of the batches created on this queue (`core/src/batch/`), by when they were created
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
