//! Fair groups: tenants that share one queue. A job added with the `group` option waits in its
//! group, and every claim serves the groups (and the ungrouped jobs, as one group of weight 1) in
//! turn, so a group with one job is never behind another group's 100,000. This module owns the
//! settings calls ([`Queue::set_group_weight`], [`Queue::set_group_concurrency`],
//! [`Queue::set_group_max_waiting`], [`Queue::pause_group`], [`Queue::resume_group`]), the view
//! ([`Queue::groups`], [`GroupInfo`]) and the rule on group names; the transitions are in
//! `lua/lib/groups.lua` and the scripts that move jobs.
//!
//! **The algorithm: stride scheduling (virtual time).** Each group that may run has a *pass* in the
//! `group-turns` sorted set; a claim serves the lowest pass and advances it by 1,000,000 / weight
//! per job, so a group of weight 3 runs three jobs for each one of a group of weight 1 while both
//! have work. The queue keeps a virtual time (`gvt` in meta, the pass of the last job served); a
//! group that becomes ready joins at its own pass or the virtual time, whichever is later, so an
//! idle hour earns no burst. Chosen over deficit round-robin because one sorted set gives the next
//! group in O(log n) with no per-round state, a claim can take several jobs of one group in a row
//! (as many as keep its pass at or below the next group's) in one range read, and a group's
//! standing is one number that survives a restart of every worker.
//!
//! **Wire rule 3.** No key is per group. A group's ready jobs are one lexicographic range of the
//! `group-ready` sorted set (member `<group>\0<priority><order><id>`, every score 0), so priorities
//! and LIFO order jobs inside a group; its weight, concurrency cap, cap on waiting jobs, pause flag
//! and running count are fields of the `group-state` hash; groups at their cap or paused sit in
//! `group-parked`; `groups` maps each grouped job to its group for the scripts that move it. Every
//! one is a declared key of the queue's slot.
//!
//! **Concurrency.** A group's running count goes up when a claim leases its jobs and down in every
//! script where a job leaves `active` (complete, fail, delay, release, remove, the stalled sweep),
//! so at most `n` jobs of a group are leased at once across all workers. The one exception any
//! lease has: a worker frozen past its lease, whose job was recovered and leased again, may still
//! run its handler when it wakes.

use crate::error::{Error, ErrorCode, Result};
use crate::queue::Queue;
use crate::script;

pub use crate::options::{check_group_name, MAX_GROUP_NAME};

/// The largest weight a group can have (the smallest is 1, every group's default).
pub const MAX_GROUP_WEIGHT: u32 = 1_000;
/// The largest per-group concurrency cap.
pub const MAX_GROUP_CONCURRENCY: u32 = 1_000_000;
/// The largest cap on a group's waiting jobs (Lua numbers are exact up to 2^53).
pub const MAX_GROUP_WAITING: u64 = 1_000_000_000_000;

/// One group of a queue, as [`Queue::groups`] reads it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct GroupInfo {
    /// The group's name (the `group` job option).
    pub name: String,
    /// Jobs of the group ready to run (not delayed, not running).
    pub waiting: u64,
    /// Jobs of the group leased to workers now.
    pub running: u64,
    /// Its weight (1 unless set).
    pub weight: u32,
    /// Most jobs of the group running at once: its own cap, else the queue's default, else none.
    pub concurrency: Option<u32>,
    /// Most jobs of the group waiting: its own cap, else the queue's default, else none.
    pub max_waiting: Option<u64>,
    /// Whether the group is paused (`Queue::pause_group`).
    pub paused: bool,
}

impl Queue {
    async fn group_set(&self, setting: &str, group: Option<&str>, value: String) -> Result<()> {
        if let Some(p) = &self.spread_now().await? {
            return match group {
                Some(g) => p.for_key(g).group_set_here(setting, group, value).await,
                None => {
                    crate::queue::partitioned::each(p, |m| {
                        Box::pin(m.group_set_here(setting, None, value.clone()))
                    })
                    .await?;
                    Ok(())
                }
            };
        }
        self.group_set_here(setting, group, value).await
    }

    /// `group_set` on this queue's own slot (a plain queue, or one partition).
    pub(crate) async fn group_set_here(
        &self,
        setting: &str,
        group: Option<&str>,
        value: String,
    ) -> Result<()> {
        if let Some(g) = group {
            check_group_name(g)?;
        }
        let _: i64 = script::GROUP_SET
            .on(self.name(), None)?
            .arg(setting)
            .arg(group.unwrap_or(""))
            .arg(value)
            .invoke(self.store())
            .await?;
        Ok(())
    }

    /// Sets a group's weight, 1 to [`MAX_GROUP_WEIGHT`]: while groups have work, one of weight 3
    /// runs three jobs for each job of a group of weight 1. Every group's weight is 1 unless set.
    pub async fn set_group_weight(&self, group: &str, weight: u32) -> Result<()> {
        if !(1..=MAX_GROUP_WEIGHT).contains(&weight) {
            return Err(Error::new(
                ErrorCode::InvalidOption,
                format!("a group weight must be a whole number from 1 to {MAX_GROUP_WEIGHT}"),
            ));
        }
        self.group_set("w", Some(group), weight.to_string()).await
    }

    /// Sets (or with None lifts) the most jobs of one group (`group`), or by default of every group
    /// (`group` None), running at once across all workers. A group's own cap wins over the default.
    pub async fn set_group_concurrency(
        &self,
        limit: Option<u32>,
        group: Option<&str>,
    ) -> Result<()> {
        let value = match limit {
            Some(n) if !(1..=MAX_GROUP_CONCURRENCY).contains(&n) => {
                return Err(Error::new(
                    ErrorCode::InvalidOption,
                    format!(
                        "a group concurrency must be from 1 to {MAX_GROUP_CONCURRENCY} (pause the group to stop it)"
                    ),
                ))
            }
            Some(n) => n.to_string(),
            None => String::new(),
        };
        self.group_set("c", group, value).await
    }

    /// Sets (or with None lifts) the most jobs of one group (`group`), or by default of every group
    /// (`group` None), waiting to run. An add that would pass it is refused with
    /// [`ErrorCode::GroupFull`] and writes nothing; delayed jobs count once they are due.
    pub async fn set_group_max_waiting(
        &self,
        limit: Option<u64>,
        group: Option<&str>,
    ) -> Result<()> {
        let value = match limit {
            Some(n) if !(1..=MAX_GROUP_WAITING).contains(&n) => {
                return Err(Error::new(
                    ErrorCode::InvalidOption,
                    format!("a group's most waiting jobs must be from 1 to {MAX_GROUP_WAITING}"),
                ))
            }
            Some(n) => n.to_string(),
            None => String::new(),
        };
        self.group_set("m", group, value).await
    }

    /// Stops handing out jobs of one group; its jobs keep waiting (and adds still land) while the
    /// rest of the queue runs.
    pub async fn pause_group(&self, group: &str) -> Result<()> {
        self.group_set("p", Some(group), "1".into()).await
    }

    /// Hands out jobs of a paused group again.
    pub async fn resume_group(&self, group: &str) -> Result<()> {
        self.group_set("p", Some(group), String::new()).await
    }

    /// One page of the queue's groups, ordered by name: `limit` groups (at most 10,000) after the
    /// first `offset`. A group is listed while it has jobs waiting or running or a setting of its
    /// own.
    ///
    /// On a partitioned queue each group lives in one partition (its key routes its jobs and
    /// settings there): the page is merged by name from the first `offset + limit` groups of
    /// every partition.
    pub async fn groups(&self, offset: u64, limit: u64) -> Result<Vec<GroupInfo>> {
        let limit = limit.min(10_000);
        if let Some(p) = &self.spread() {
            let upto = offset.saturating_add(limit);
            let pages =
                crate::queue::partitioned::each(p, |m| Box::pin(m.groups_here(0, upto))).await?;
            let mut all: Vec<GroupInfo> = pages.into_iter().flatten().collect();
            all.sort_by(|a, b| a.name.cmp(&b.name));
            return Ok(all
                .into_iter()
                .skip(offset as usize)
                .take(limit as usize)
                .collect());
        }
        self.groups_here(offset, limit).await
    }

    /// One page of this queue's own groups (a plain queue, or one partition).
    pub(crate) async fn groups_here(&self, offset: u64, limit: u64) -> Result<Vec<GroupInfo>> {
        let reply: Vec<redis::Value> = script::GROUPS_LIST
            .on(self.name(), None)?
            .arg(offset)
            .arg(limit)
            .invoke(self.store())
            .await?;
        parse_groups(reply)
    }
}

/// The job id at the end of a `group-ready` member (`<group>\0<priority:7><order:16><id>`).
pub(crate) fn member_id(member: &[u8]) -> Option<String> {
    let nul = member.iter().position(|b| *b == 0)?;
    let id = member.get(nul + 1 + 23..)?;
    String::from_utf8(id.to_vec()).ok()
}

fn bad_reply(e: impl std::fmt::Display) -> Error {
    Error::new(ErrorCode::Internal, format!("unexpected groups reply: {e}"))
}

fn parse_groups(reply: Vec<redis::Value>) -> Result<Vec<GroupInfo>> {
    let mut it = reply.into_iter();
    let mut next_opt = |what: &str| -> Result<Option<String>> {
        let v = it.next().ok_or_else(|| bad_reply(format!("no {what}")))?;
        redis::from_redis_value(v).map_err(bad_reply)
    };
    let _total = next_opt("total")?;
    let default_conc = next_opt("default concurrency")?;
    let default_waiting = next_opt("default most waiting")?;
    let number = |v: Option<String>, what: &str| -> Result<Option<u64>> {
        v.map(|s| {
            s.parse::<u64>()
                .map_err(|e| bad_reply(format!("{what}: {e}")))
        })
        .transpose()
    };
    let default_conc = number(default_conc, "concurrency")?;
    let default_waiting = number(default_waiting, "most waiting")?;
    let mut out = Vec::new();
    while let Some(name) = next_opt("name").ok().flatten() {
        let waiting = number(next_opt("waiting")?, "waiting")?.unwrap_or(0);
        let running = number(next_opt("running")?, "running")?.unwrap_or(0);
        let weight = number(next_opt("weight")?, "weight")?.unwrap_or(1);
        let conc = number(next_opt("concurrency")?, "concurrency")?.or(default_conc);
        let max_waiting = number(next_opt("most waiting")?, "most waiting")?.or(default_waiting);
        let paused = number(next_opt("paused")?, "paused")?.unwrap_or(0) == 1;
        out.push(GroupInfo {
            name,
            waiting,
            running,
            weight: weight as u32,
            concurrency: conc.map(|c| c as u32),
            max_waiting,
            paused,
        });
    }
    Ok(out)
}
