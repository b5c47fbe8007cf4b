//! The registry: [`Script`] (one file of `lua/`, its parsed header and its two compiled texts,
//! guarded and plain, each with its SHA) and the list of every script ([`ALL`] and one static per
//! file).

use super::{assemble::*, header::*, invocation::*};
use crate::error::{Error, ErrorCode, Result};
use crate::job_id::JobId;
use crate::keyspace::{BatchPart, Family, JobPart, QueueName};
use crate::store::Store;
use std::sync::OnceLock;

/// One script of `lua/`.
pub struct Script {
    pub(super) name: &'static str,
    pub(super) body: &'static str,
    pub(super) header: OnceLock<Result<Header, String>>,
    pub(super) compiled: [OnceLock<Compiled>; 2],
}

pub(super) struct Compiled {
    pub(super) source: String,
    pub(super) sha: String,
}

impl Script {
    /// A script from its file name (without `.lua`) and body.
    pub const fn new(name: &'static str, body: &'static str) -> Script {
        Script {
            name,
            body,
            header: OnceLock::new(),
            compiled: [OnceLock::new(), OnceLock::new()],
        }
    }

    #[cfg_attr(not(any(test, feature = "testing")), allow(dead_code))] // for core/tests
    /// The file name, without `.lua`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    #[cfg_attr(not(any(test, feature = "testing")), allow(dead_code))] // for core/tests
    /// The script's own text (without the guard).
    pub fn body(&self) -> &'static str {
        self.body
    }

    /// The parsed header.
    pub fn header(&self) -> Result<&Header> {
        self.header
            .get_or_init(|| parse_header(self.body))
            .as_ref()
            .map_err(|e| Error::new(ErrorCode::Internal, format!("{}.lua: {e}", self.name)))
    }

    fn compiled(&self, guarded: bool) -> &Compiled {
        self.compiled[guarded as usize].get_or_init(|| {
            let source = assemble(self.body, guarded);
            let sha = redis::Script::new(&source).get_hash().to_string();
            Compiled { source, sha }
        })
    }

    /// The full source sent to the server in the given mode.
    pub fn source(&self, guarded: bool) -> &str {
        &self.compiled(guarded).source
    }

    /// Its SHA1 in the given mode.
    pub fn sha(&self, guarded: bool) -> &str {
        &self.compiled(guarded).sha
    }

    /// Loads this script in the store's mode (on a cluster, SCRIPT LOAD is routed to every node).
    pub async fn load(&self, store: &Store) -> Result<()> {
        let mut conn = store.conn();
        let _: String = redis::cmd("SCRIPT")
            .arg("LOAD")
            .arg(self.source(store.guarded()))
            .query_async(&mut conn)
            .await?;
        Ok(())
    }

    /// Starts a call of this script.
    pub fn prepare(&'static self) -> Invocation {
        // Room for the header's keys and arguments (a repeating group's first round), so a call
        // does not grow its vectors as it is built.
        let (keys, args) = self
            .header()
            .map(|h| (h.keys.len(), h.argv.len()))
            .unwrap_or_default();
        Invocation {
            script: self,
            keys: Vec::with_capacity(keys),
            args: ArgBuf {
                bytes: Vec::new(),
                ends: Vec::with_capacity(args),
            },
        }
    }

    /// Starts a call with every fixed key bound by its header name: a family's key of `queue`
    /// for a family's name, `record` / `logs` of `job`, `batch` / `batch_jobs` / `batch_failed` of
    /// the batch `job` names. A caller adds only the repeating group's
    /// keys (if any) and the args. Refused (`internal`) when the header names a key that is not one
    /// role (`finished=completed|failed`: bind those with [`Script::prepare`] and
    /// [`Invocation::key`]) or a job part without a `job`.
    pub fn on(&'static self, queue: &QueueName, job: Option<JobId>) -> Result<Invocation> {
        let h = self.header()?;
        let fixed = h.keys.len() - usize::from(h.keys_repeat);
        let mut inv = self.prepare();
        for (name, roles) in h.keys[..fixed].iter().zip(&h.key_roles) {
            let refuse = |why: &str| {
                Error::new(
                    ErrorCode::Internal,
                    format!("{}.lua: KEYS {name}: {why}", self.name),
                )
            };
            let [role] = roles.as_slice() else {
                return Err(refuse("takes one of several keys; bind it with .key()"));
            };
            let key = match (role.as_str(), job) {
                ("record", Some(id)) => queue.job_key(id, JobPart::Record),
                ("logs", Some(id)) => queue.job_key(id, JobPart::Logs),
                ("batch", Some(id)) => queue.batch_key(id, BatchPart::Record),
                ("batch_jobs", Some(id)) => queue.batch_key(id, BatchPart::Jobs),
                ("batch_failed", Some(id)) => queue.batch_key(id, BatchPart::Failed),
                ("record" | "logs" | "batch" | "batch_jobs" | "batch_failed", None) => {
                    return Err(refuse("a job's or batch's key, and no id given"))
                }
                (role, _) => match Family::ALL.iter().find(|f| f.role() == role) {
                    Some(f) => queue.key(*f),
                    None => return Err(refuse("not a queue family")),
                },
            };
            inv.keys.push(key);
        }
        Ok(inv)
    }
}

macro_rules! scripts {
    ($($(#[$doc:meta])* $ident:ident => $file:literal,)*) => {
        $( $(#[$doc])* pub static $ident: Script = Script::new($file, include_str!(concat!("../../lua/", $file, ".lua")));)*
        /// Every script in `lua/`.
        #[cfg_attr(not(any(test, feature = "testing")), allow(dead_code))]
        pub static ALL: &[&Script] = &[$(&$ident),*];
    };
}

scripts! {
    /// Writes the wire version on first connect, returns the stored one.
    VERSION_CHECK => "version_check",
    /// Leases a node id for minting job ids.
    NODE_ACQUIRE => "node_acquire",
    /// Renews a node-id lease.
    NODE_RENEW => "node_renew",
    /// Releases a node-id lease.
    NODE_RELEASE => "node_release",
    /// Publishes a partitioned queue's grown layout, if it is still the one read.
    PARTITIONS_GROW => "partitions_grow",
    /// Adds a batch of jobs.
    ADD => "add",
    /// Adds jobs to a queue and counts them into a batch of that queue in the same call.
    BATCH_ADD => "batch_add",
    /// Adds one plain job (no delay, priority, dedup, group, parent or LIFO).
    ADD_ONE => "add_one",
    /// Leases ready jobs to a worker.
    CLAIM => "claim",
    /// Leases the job a wake-up marker named and returns its record.
    CLAIM_ID => "claim_id",
    /// Registers a worker that is about to block, so an add may hand it a job.
    WAIT_REGISTER => "wait_register",
    /// Completes a batch of jobs and leases the next ones.
    COMPLETE => "complete",
    /// Fails a job: retry or move to failed.
    FAIL => "fail",
    /// Renews leases of in-flight jobs.
    RENEW => "renew",
    /// Marks leased-ahead jobs as started (their stalls are charged from then on).
    STARTED => "started",
    /// Puts a running job back to delayed at its handler's request.
    DELAY_JOB => "delay_job",
    /// Gives unfinished jobs back on shutdown.
    RELEASE => "release",
    /// Selects stalled jobs (one sweeper at a time).
    SWEEP => "sweep",
    /// Recovers one stalled job.
    RECOVER => "recover",
    /// Reads a job and its state.
    JOB_STATE => "job_state",
    /// Removes one job.
    REMOVE_JOB => "remove_job",
    /// Selects finished jobs to trim or clean.
    SELECT_FINISHED => "select_finished",
    /// Removes a batch of finished jobs.
    REMOVE_FINISHED => "remove_finished",
    /// Pauses a queue.
    PAUSE => "pause",
    /// Resumes a queue.
    RESUME => "resume",
    /// Records progress.
    PROGRESS => "progress",
    /// Appends a log line.
    LOG => "log",
    /// Retries a failed job.
    RETRY_JOB => "retry_job",
    /// Promotes a delayed job.
    PROMOTE_JOB => "promote_job",
    /// Gives a job that has not finished a new priority.
    CHANGE_PRIORITY => "change_priority",
    /// Cancels a job: one not running yet ends cancelled, a running one's worker is told.
    CANCEL => "cancel",
    /// Replaces a delayed dedup holder's data and pushes its due time.
    DEBOUNCE => "debounce",
    /// Drops dedup keys whose TTL hold has ended.
    DEDUP_EXPIRE => "dedup_expire",
    /// Samples the backlog and folds per-minute metrics past the window into per-hour ones.
    METRICS_ROLLUP => "metrics_rollup",
    /// Creates or replaces a job scheduler.
    SCHEDULER_UPSERT => "scheduler_upsert",
    /// Deletes a job scheduler.
    SCHEDULER_REMOVE => "scheduler_remove",
    /// Selects due schedulers.
    SCHEDULERS_DUE => "schedulers_due",
    /// Fires one due scheduler.
    SCHEDULER_FIRE => "scheduler_fire",
    /// Adds a flow's parent, waiting for its children.
    ADD_PARENT => "add_parent",
    /// Records a child's outcome in its parent (the second, idempotent step).
    CHILD_DONE => "child_done",
    /// Counts a child added by a running job (or to a waiting parent) in its parent.
    CHILD_ATTACH => "child_attach",
    /// Ends a run that added children: the job waits for them, or runs again once they are done.
    CHILDREN_WAIT => "children_wait",
    /// Changes one fair-group setting (weight, concurrency, cap on waiting, pause).
    GROUP_SET => "group_set",
    /// Reads one page of the queue's groups.
    GROUPS_LIST => "groups_list",
    /// Registers or heartbeats a worker in the queue's worker registry.
    WORKER_BEAT => "worker_beat",
    /// Removes a closing worker from the registry.
    WORKER_GONE => "worker_gone",
    /// Lists the queue's live workers.
    WORKERS_LIST => "workers_list",
    /// Inserts one finished job copied by `emq migrate`, and marks its source migrated.
    MIGRATE_FINISHED => "migrate_finished",
    /// Pins the id a failed job's copy takes in its dead-letter queue (a dead-letter move's step 2).
    DEAD_LETTER_PIN => "dead_letter_pin",
    /// Ends a dead-letter move: the failed job leaves its queue once its copy is in the other.
    DEAD_LETTER_DONE => "dead_letter_done",
    /// Selects the dead-letter moves a crash interrupted.
    DEAD_LETTERS_DUE => "dead_letters_due",
    /// Creates a batch in its queue's slot (core/src/batch/).
    BATCH_CREATE => "batch_create",
    /// A batch inside a batch: created, and counted in its parent.
    BATCH_NEST => "batch_nest",
    /// Counts jobs into a batch before they are added (a batched add's first step).
    BATCH_COUNT => "batch_count",
    /// Counts out of a batch the jobs counted in whose ids belonged to jobs outside it (a batched
    /// add's last step, for a batch in another slot).
    BATCH_UNCOUNT => "batch_uncount",
    /// Seals a batch: done once every job counted in has its outcome.
    BATCH_SEAL => "batch_seal",
    /// Records a batched job's outcome in its batch once, and pins the callbacks that fall due.
    BATCH_RECORD => "batch_record",
    /// Marks a batch's callback added (the callback's last step).
    BATCH_CALLBACK_DONE => "batch_callback_done",
    /// Selects the batched outcomes a crash left on their way to their batch.
    BATCH_PENDING_DUE => "batch_pending_due",
    /// Cancels a batch: no more adds, no callbacks.
    BATCH_CANCEL => "batch_cancel",
    /// Reads the clock of the node that owns the queue.
    SERVER_TIME => "server_time",
    /// Starts a round of lending a partitioned queue's global concurrency and rate limit (its
    /// lease and version).
    SHARE_LEASE => "share_lease",
    /// Sets or lifts a partitioned queue's global concurrency or rate limit, with a new version
    /// for its shares.
    SHARE_TOTAL => "share_total",
    /// Reads, and sets, one partition's shares of its queue's limits (version-fenced).
    SHARE_SET => "share_set",
}
