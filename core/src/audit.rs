//! The audit: checks a queue's invariants. Run it on a quiet queue (no worker or producer between
//! its reads) — after a test, a chaos run, or by an operator (`emq audit`).
//!
//! Invariants: every job id is in exactly one state container; every id in a container has a
//! record; every active job has a lease token and every token belongs to an active job (an active job
//! whose lease expired is "stalled-pending", which is allowed; a stalled job whose run never
//! started holds the mark `-|a` in leases until it is recovered); jobs added minus jobs deleted equals
//! jobs held; every dedup entry points at a job that is waiting or active; every hand-off entry names
//! an active job under the lease it carries; the groups hash names only live grouped jobs (a ready
//! one by its group-ready member, and every group-ready job), and each group's running count equals
//! its jobs in active (so the counts sum to the grouped jobs in active); a job with a priority never
//! sits in wait or paused, and a delayed one has its priority in the delayed-priority hash (which
//! names delayed jobs only); each batch the queue created counts its jobs as its jobs' states
//! say, and its failed set holds its failed jobs.

use crate::error::Result;
use crate::job_id::JobId;
use crate::keyspace::JobPart;
use crate::queue::Queue;
use std::collections::{HashMap, HashSet};

/// What the audit found.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct AuditReport {
    /// Jobs held in any container.
    pub jobs: u64,
    /// Active jobs whose lease has expired (waiting for the sweep).
    pub stalled_pending: u64,
    /// Each broken invariant, in words.
    pub problems: Vec<String>,
}

impl AuditReport {
    /// True when no invariant is broken.
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }
}

impl Queue {
    /// Checks the queue's invariants.
    pub async fn audit(&self) -> Result<AuditReport> {
        if let Some(p) = &self.spread() {
            // Each partition is a queue of its own: its report, its problems named by it.
            let all = crate::queue::partitioned::each(p, |m| Box::pin(m.audit_here())).await?;
            let mut out = AuditReport::default();
            for (m, r) in p.members.iter().zip(all) {
                out.jobs += r.jobs;
                out.stalled_pending += r.stalled_pending;
                out.problems
                    .extend(r.problems.into_iter().map(|x| format!("{}: {x}", m.name())));
            }
            return Ok(out);
        }
        self.audit_here().await
    }

    /// [`Queue::audit`] of this queue's own slot (a plain queue, or one partition).
    pub(crate) async fn audit_here(&self) -> Result<AuditReport> {
        let k = self.keys();
        let mut conn = self.store().conn();
        let mut report_early = Vec::new();
        let mut pipe = redis::pipe();
        pipe.cmd("LRANGE").arg(&k.wait).arg(0).arg(-1);
        pipe.cmd("LRANGE").arg(&k.paused).arg(0).arg(-1);
        for z in [
            &k.active,
            &k.delayed,
            &k.prioritized,
            &k.completed,
            &k.failed,
            &k.waiting_children,
        ] {
            pipe.cmd("ZRANGE").arg(z).arg(0).arg(-1);
        }
        pipe.cmd("SMEMBERS").arg(&k.stalled);
        pipe.cmd("ZRANGE").arg(&k.group_ready).arg(0).arg(-1);
        let mut lists: Vec<Vec<String>> = pipe.query_async(&mut conn).await?;
        // The grouped ready jobs: each member of group-ready ends with its job's id.
        let members = lists.pop().unwrap_or_default();
        let mut member_of: HashMap<String, String> = HashMap::new();
        let mut ready_grouped = Vec::new();
        for m in members {
            match crate::groups::member_id(m.as_bytes()) {
                Some(id) => {
                    member_of.insert(id.clone(), m);
                    ready_grouped.push(id);
                }
                None => report_early.push(format!("group-ready member {m:?} names no job")),
            }
        }
        lists.push(ready_grouped);
        let names = [
            "wait",
            "paused",
            "active",
            "delayed",
            "prioritized",
            "completed",
            "failed",
            "waiting-children",
            "stalled",
            "group-ready",
        ];
        let mut report = AuditReport {
            problems: report_early,
            ..AuditReport::default()
        };
        let mut seen: HashMap<String, &str> = HashMap::new();
        for (name, ids) in names.iter().zip(&lists) {
            for id in ids {
                if let Some(other) = seen.insert(id.clone(), name) {
                    report
                        .problems
                        .push(format!("job {id} is in {other} and in {name}"));
                }
            }
        }
        report.jobs = seen.len() as u64;
        let mut ids = Vec::new();
        for id in seen.keys() {
            match JobId::parse(id) {
                Ok(j) => ids.push(j),
                Err(_) => report
                    .problems
                    .push(format!("{id:?} in a container is not a job id")),
            }
        }
        for chunk in ids.chunks(1_000) {
            let mut pipe = redis::pipe();
            for id in chunk {
                pipe.cmd("EXISTS")
                    .arg(self.name().job_key(*id, JobPart::Record));
            }
            let exists: Vec<i64> = pipe.query_async(&mut conn).await?;
            for (id, e) in chunk.iter().zip(exists) {
                if e == 0 {
                    report
                        .problems
                        .push(format!("job {id} is held but has no record"));
                }
            }
        }
        let leases: HashMap<String, String> = redis::cmd("HGETALL")
            .arg(&k.leases)
            .query_async(&mut conn)
            .await?;
        let active: Vec<(String, f64)> = redis::cmd("ZRANGE")
            .arg(&k.active)
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query_async(&mut conn)
            .await?;
        let now = self.server_time_ms().await? as f64;
        let active_set: HashSet<&String> = active.iter().map(|(id, _)| id).collect();
        for (id, expiry) in &active {
            if !leases.contains_key(id) {
                report
                    .problems
                    .push(format!("active job {id} has no lease token"));
            }
            if *expiry < now {
                report.stalled_pending += 1;
            }
        }
        for (id, lease) in &leases {
            // A stalled job whose run never started keeps a mark here until recover.lua.
            if lease == "-|a" && lists[8].contains(id) {
                continue;
            }
            if !active_set.contains(id) {
                report
                    .problems
                    .push(format!("lease token for {id}, which is not active"));
            }
        }
        // Every hand-off entry names an active job under the lease it carries.
        let entries: Vec<Vec<u8>> = redis::cmd("LRANGE")
            .arg(&k.handoff)
            .arg(0)
            .arg(-1)
            .query_async(&mut conn)
            .await?;
        for entry in entries {
            match crate::handoff::parse(&entry) {
                Ok(h) => {
                    let id = h.job.id.to_string();
                    let token = leases.get(&id).and_then(|l| l.split('|').next());
                    if token != Some(h.token.as_str()) {
                        report.problems.push(format!(
                            "hand-off entry for {id} does not hold its lease ({token:?})"
                        ));
                    }
                }
                Err(e) => report.problems.push(format!("hand-off entry: {e}")),
            }
        }
        let meta: HashMap<String, String> = redis::cmd("HGETALL")
            .arg(&k.meta)
            .query_async(&mut conn)
            .await?;
        // The groups hash names live grouped jobs only (any state but completed and failed), a
        // job in group-ready by its member there; each group's running count is its jobs in
        // active (lib/groups.lua).
        let groups: HashMap<String, String> = redis::cmd("HGETALL")
            .arg(&k.groups)
            .query_async(&mut conn)
            .await?;
        let mut active_per_group: HashMap<String, i64> = HashMap::new();
        for (id, v) in &groups {
            let group = v.split('\0').next().unwrap_or_default();
            match seen.get(id.as_str()) {
                None | Some(&("completed" | "failed")) => report.problems.push(format!(
                    "group entry for job {id}, which is {:?}, not live",
                    seen.get(id.as_str())
                )),
                Some(&"group-ready") => {
                    if member_of.get(id) != Some(v) {
                        report.problems.push(format!(
                            "group entry for ready job {id} is not its group-ready member"
                        ));
                    }
                }
                Some(&"active") => *active_per_group.entry(group.to_string()).or_default() += 1,
                Some(_) => {
                    if v.contains('\0') {
                        report.problems.push(format!(
                            "group entry for job {id}, which is not ready, names a group-ready member"
                        ));
                    }
                }
            }
        }
        for (id, m) in &member_of {
            if groups.get(id) != Some(m) {
                report
                    .problems
                    .push(format!("group-ready job {id} has no group entry naming it"));
            }
        }
        let state: HashMap<String, String> = redis::cmd("HGETALL")
            .arg(&k.group_state)
            .query_async(&mut conn)
            .await?;
        let mut running: HashMap<String, i64> = HashMap::new();
        for (field, v) in &state {
            if let Some(g) = field.strip_prefix("r|") {
                running.insert(g.to_string(), v.parse().unwrap_or(-1));
            }
        }
        for g in running.keys().chain(active_per_group.keys()) {
            let (counted, held) = (
                running.get(g).copied().unwrap_or(0),
                active_per_group.get(g).copied().unwrap_or(0),
            );
            if counted != held {
                report.problems.push(format!(
                    "group {g:?} counts {counted} running, but {held} of its jobs are active"
                ));
            }
        }
        self.audit_priorities(&mut conn, &seen, &ids, &mut report)
            .await?;
        let get = |f: &str| meta.get(f).and_then(|v| v.parse::<i64>().ok()).unwrap_or(0);
        let (added, gone) = (get("added"), get("gone"));
        if added - gone != report.jobs as i64 {
            report.problems.push(format!(
                "{added} jobs added and {gone} deleted, so {} should be held, but {} are",
                added - gone,
                report.jobs
            ));
        }
        let dedup: HashMap<String, String> = redis::cmd("HGETALL")
            .arg(&k.dedup)
            .query_async(&mut conn)
            .await?;
        // TTL holds ("<id>|<until ms>") outlive their jobs on purpose.
        for (key, id) in dedup.into_iter().filter(|(_, v)| !v.contains('|')) {
            match seen.get(&id) {
                Some(
                    &("wait" | "paused" | "active" | "delayed" | "prioritized" | "stalled"
                    | "group-ready"),
                ) => {}
                other => report
                    .problems
                    .push(format!("dedup key {key:?} points at job {id} in {other:?}")),
            }
        }
        // The batches this queue created, and its batched outcomes on their way (core/src/batch/).
        crate::batch::audit(self, &mut report.problems).await?;
        Ok(report)
    }
}

impl Queue {
    /// A job with a priority keeps it wherever it waits: never in wait or paused (it would run in
    /// arrival order), and while delayed, with its priority in the delayed-priority hash, which
    /// names delayed jobs only.
    async fn audit_priorities(
        &self,
        conn: &mut crate::store::Conn,
        seen: &HashMap<String, &str>,
        ids: &[JobId],
        report: &mut AuditReport,
    ) -> Result<()> {
        let held: HashMap<String, String> = redis::cmd("HGETALL")
            .arg(&self.keys().delayed_priority)
            .query_async(conn)
            .await?;
        for id in held.keys() {
            if seen.get(id.as_str()) != Some(&"delayed") {
                report.problems.push(format!(
                    "delayed-priority entry for job {id}, which is {:?}, not delayed",
                    seen.get(id.as_str())
                ));
            }
        }
        let resting: Vec<&JobId> = ids
            .iter()
            .filter(|id| {
                matches!(
                    seen.get(id.to_string().as_str()),
                    Some(&("wait" | "paused" | "delayed"))
                )
            })
            .collect();
        let own: Vec<Option<u64>> = self.record_field(conn, &resting, "priority").await?;
        for (id, priority) in resting.iter().zip(own) {
            let Some(priority) = priority.filter(|p| *p > 0) else {
                continue;
            };
            let id = id.to_string();
            let place = seen[id.as_str()];
            if place != "delayed" {
                report.problems.push(format!(
                    "job {id} of priority {priority} is in {place}, not prioritized"
                ));
            } else if held.get(&id) != Some(&priority.to_string()) {
                report.problems.push(format!(
                    "delayed job {id} of priority {priority} has {:?} in delayed-priority",
                    held.get(&id)
                ));
            }
        }
        Ok(())
    }

    /// One field of each job's record (None where it is not set), read in pipelined chunks.
    async fn record_field<T: redis::FromRedisValue>(
        &self,
        conn: &mut crate::store::Conn,
        ids: &[&JobId],
        field: &str,
    ) -> Result<Vec<Option<T>>> {
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(1_000) {
            let mut pipe = redis::pipe();
            for id in chunk {
                pipe.cmd("HGET")
                    .arg(self.name().job_key(**id, JobPart::Record))
                    .arg(field);
            }
            let part: Vec<Option<T>> = pipe.query_async(conn).await?;
            out.extend(part);
        }
        Ok(out)
    }
}
