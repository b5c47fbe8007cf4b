//! Flows that move whole: a BullMQ parent waiting for children that all wait, unstarted, in the
//! same queue, copied as one emq flow; the rest stay in BullMQ, reported.

use super::{run::*, source::*};
use crate::error::Result;
use crate::flow::FlowJob;
use crate::job_id::JobId;
use crate::keyspace::Family;
use std::collections::HashMap;

impl Migration<'_> {
    /// Plans the flows that move whole: a parent in `waiting-children` whose children all wait,
    /// not started, in this queue (`ready`), none finished yet and none a parent itself; the rest
    /// stay in BullMQ, reported.
    pub(super) async fn plan_flows(&mut self, ready: &[(&'static str, Kind, Ids)]) -> Result<()> {
        let parents = self.zset_ids("waiting-children").await?;
        if parents.is_empty() {
            return Ok(());
        }
        let mut waiting: HashMap<String, (&'static str, Option<f64>)> = HashMap::new();
        for (container, _, ids) in ready {
            for (id, score) in ids {
                waiting.insert(self.src.job(id), (*container, *score));
            }
        }
        for (pid, _) in parents {
            let pfield = self.src.job(&pid);
            let mut c = self.conn();
            let phash: HashMap<String, String> = redis::cmd("HGETALL")
                .arg(&pfield)
                .query_async(&mut c)
                .await?;
            let deps: Vec<String> = redis::cmd("SMEMBERS")
                .arg(format!("{pfield}:dependencies"))
                .query_async(&mut c)
                .await?;
            let mut done = 0u64;
            for part in ["processed", "failed", "unsuccessful"] {
                let key = format!("{pfield}:{part}");
                let kind: String = redis::cmd("TYPE").arg(&key).query_async(&mut c).await?;
                let n: u64 = match kind.as_str() {
                    "hash" => redis::cmd("HLEN").arg(&key).query_async(&mut c).await?,
                    "set" => redis::cmd("SCARD").arg(&key).query_async(&mut c).await?,
                    "zset" => redis::cmd("ZCARD").arg(&key).query_async(&mut c).await?,
                    _ => 0,
                };
                done += n;
            }
            let reason = if phash.is_empty() {
                Some("gone: its job hash no longer exists in the source")
            } else if phash.contains_key("parentKey") {
                Some("flow: a nested flow (its parent has a parent; let BullMQ finish it)")
            } else if done > 0 {
                Some("flow: some of its children already finished in BullMQ (let BullMQ finish it)")
            } else if deps.is_empty() {
                Some("flow: no pending children listed (let BullMQ finish it)")
            } else if deps.iter().any(|d| !waiting.contains_key(d)) {
                Some("flow: a child is active, in another queue or a parent itself (let BullMQ finish it)")
            } else {
                None
            };
            // Another partition's pass moves (or reports) it; its children are not copied on
            // their own by this one either.
            if !self.mine(&pfield, &phash) {
                if reason.is_none() {
                    self.flow_children.extend(deps);
                }
                continue;
            }
            self.report.row("waiting-children").read += 1;
            if let Some(reason) = reason {
                self.report.skip("waiting-children", &pid, reason.into());
                continue;
            }
            let mut children = Vec::new();
            for d in deps {
                let (container, score) = waiting[&d];
                let h: HashMap<String, String> =
                    redis::cmd("HGETALL").arg(&d).query_async(&mut c).await?;
                let source_id = d
                    .strip_prefix(&format!("{}:", self.src.base))
                    .unwrap_or(&d)
                    .to_string();
                children.push((
                    Read {
                        source_id,
                        field: d.clone(),
                        fields: h,
                        due_ms: if container == "delayed" {
                            score.map(bullmq_due_ms)
                        } else {
                            None
                        },
                    },
                    container,
                ));
            }
            for (child, _) in &children {
                self.flow_children.insert(child.field.clone());
            }
            self.flows.push(Flow {
                parent: Read {
                    source_id: pid,
                    field: pfield,
                    fields: phash,
                    due_ms: None,
                },
                children,
            });
        }
        Ok(())
    }

    /// Copies the planned flows with `Queue::add_flow` (ids stored first, as for every job).
    pub(super) async fn copy_flows(&mut self) -> Result<()> {
        let mapping = self.q.name().key(Family::Migrated);
        let flows = std::mem::take(&mut self.flows);
        for flow in flows {
            let n = flow.children.len() as u64;
            let mut fields: Vec<&str> = vec![flow.parent.field.as_str()];
            fields.extend(flow.children.iter().map(|(c, _)| c.field.as_str()));
            let marks: Vec<Option<String>> = redis::cmd("HMGET")
                .arg(&mapping)
                .arg(&fields)
                .query_async(&mut self.conn())
                .await?;
            if marks[0].as_deref().is_some_and(|m| m.contains('|')) {
                self.report.row("waiting-children").already += 1;
                self.report.row("flow-children").read += n;
                self.report.row("flow-children").already += n;
                if self.o.delete_source {
                    self.delete_flow_source(&flow).await?;
                }
                continue;
            }
            self.report.row("waiting-children").written += 1;
            self.report.row("flow-children").read += n;
            self.report.row("flow-children").written += n;
            if self.o.dry_run {
                continue;
            }
            let mut pending = HashMap::new();
            for (f, m) in fields.iter().zip(&marks) {
                if let Some(m) = m {
                    pending.insert(
                        f.to_string(),
                        JobId::parse(m.split('|').next().unwrap_or(""))?,
                    );
                }
            }
            let ids = self.claim_ids(&fields, &pending).await?;
            let now = self.q.server_time_ms().await?;
            let job = |this: &mut Self, r: &Read, id: JobId| {
                let mut o = map_options(
                    &opts_of(&r.fields),
                    attempts_made(&r.fields),
                    &mut this.report.not_mapped,
                );
                o.id = Some(id);
                o.delay_ms = r.due_ms.map_or(0, |d| d.saturating_sub(now));
                if r.due_ms.is_none() {
                    o.lifo = false;
                }
                // The target's name: on a partitioned target each job goes to its partition.
                FlowJob {
                    queue: this.target.name().to_string(),
                    name: r.fields.get("name").cloned().unwrap_or_default(),
                    data: data_of(&r.fields),
                    options: o,
                    children: Vec::new(),
                }
            };
            let mut parent = job(self, &flow.parent, ids[0]);
            parent.options.delay_ms = 0;
            for ((child, _), id) in flow.children.iter().zip(&ids[1..]) {
                let c = job(self, child, *id);
                parent.children.push(c);
            }
            self.target.add_flow(parent).await?;
            let mut pipe = redis::pipe();
            for (f, id) in fields.iter().zip(&ids) {
                pipe.cmd("HSET")
                    .arg(&mapping)
                    .arg(*f)
                    .arg(format!("{id}|flow"))
                    .arg(format!("={id}"))
                    .arg(*f)
                    .ignore();
            }
            let _: () = pipe.query_async(&mut self.conn()).await?;
            if self.o.delete_source {
                self.delete_flow_source(&flow).await?;
            }
        }
        Ok(())
    }

    pub(super) async fn delete_flow_source(&mut self, flow: &Flow) -> Result<()> {
        for (child, container) in &flow.children {
            let one = [(child.source_id.clone(), child.field.clone())];
            self.delete_sources(container, &one).await?;
        }
        let one = [(flow.parent.source_id.clone(), flow.parent.field.clone())];
        self.delete_sources("waiting-children", &one).await?;
        Ok(())
    }
}
