//! Flows: a parent job that waits for its children, in its own queue or in others.
//!
//! Other queues live in other slots, so no script spans a parent and a child. Adding a flow mints
//! every id first, then adds each parent (`add_parent.lua`, in `waiting-children`, its pending
//! children listed in its own record) before its children (`add.lua`, each carrying its parent as
//! `<queue>:<id>`). A child's completion (or final failure) takes two steps: `child_done.lua` on the
//! parent's queue records the outcome and, when nothing is pending, moves the parent to wait; then
//! the child's own completion. The first step is idempotent, so a worker dying between the two only
//! means the child is recovered and re-run, and the parent still completes exactly once.
//!
//! A job of a flow (a parent or a child) in a partitioned queue goes to one partition, chosen as
//! any add's is with its id settled (`Partitions::job_index`: its group's, its dedup key's, else
//! its id's) before its parent is written, and the references between jobs name that partition
//! (`<partition>:<id>`), so every step above stays a plain queue's. What a caller reads back
//! ([`FlowIds`], [`Queue::children_results`]) names the logical queue.

use crate::error::{Error, ErrorCode, Result};
use crate::handler::JobContext;
use crate::job::Job;
use crate::job_id::JobId;
use crate::keyspace::{JobPart, QueueName};
use crate::options::JobOptions;
use crate::queue::{NewJob, Queue};
use crate::script;
use serde_json::Value;
use std::collections::HashMap;

/// A job of a flow and its children.
#[derive(Clone, Debug)]
pub struct FlowJob {
    /// The queue it goes to (any queue on the same store).
    pub queue: String,
    /// Its name.
    pub name: String,
    /// Its payload.
    pub data: Value,
    /// Its options (`parent_policy` says what its failure does to its parent).
    pub options: JobOptions,
    /// Jobs that must finish before it runs.
    pub children: Vec<FlowJob>,
}

/// The ids a flow was given, in the shape of the flow. As JSON (what every binding and the
/// dashboard show): `{"queue", "id", "children": [...]}`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct FlowIds {
    /// The job's queue.
    pub queue: String,
    /// Its id.
    pub id: JobId,
    /// Its children's ids.
    pub children: Vec<FlowIds>,
}

fn mint_tree(q: &Queue, flow: &FlowJob) -> Result<FlowIds> {
    let queue = QueueName::new(&flow.queue)?.to_string();
    // Every node is checked here, before the first write: a bad grandchild must not leave its
    // ancestors added and waiting for a child that never comes.
    flow.options.validate()?;
    if !flow.children.is_empty() && flow.options.delay_ms > 0 {
        return Err(Error::new(
            ErrorCode::InvalidOption,
            "a flow's parent starts when its last child is done, so it takes no delay \
             (delay its children instead)",
        ));
    }
    Ok(FlowIds {
        queue,
        id: match flow.options.id {
            Some(id) => id,
            None => q.mint_id()?,
        },
        children: flow
            .children
            .iter()
            .map(|c| mint_tree(q, c))
            .collect::<Result<_>>()?,
    })
}

impl Queue {
    /// Adds a flow (idempotent: retrying with the same ids, e.g. after a timeout, adds nothing
    /// twice). Returns the ids in the flow's shape.
    pub async fn add_flow(&self, flow: FlowJob) -> Result<FlowIds> {
        let ids = mint_tree(self, &flow)?;
        let home = self.home_of(&flow.queue, ids.id, &flow.options).await?;
        self.add_flow_node(&flow, &ids, home, "", None).await?;
        Ok(ids)
    }

    /// The queue a job `id` with `options` goes to in `queue`: the queue, or for a partitioned
    /// one the partition any add would pick for it (its id settled).
    async fn home_of(&self, queue: &str, id: JobId, options: &JobOptions) -> Result<Queue> {
        let q = self.queue_opened(queue).await?;
        Ok(match &q.spread() {
            Some(p) => p.members[p.job_index(id, options)].clone(),
            None => q,
        })
    }

    fn add_flow_node<'a>(
        &'a self,
        flow: &'a FlowJob,
        ids: &'a FlowIds,
        q: Queue,
        parent: &'a str,
        trace: Option<&'a crate::trace::TraceContext>,
    ) -> futures::future::BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            // A child without a trace context of its own joins its parent's trace.
            let trace = flow.options.trace.as_ref().or(trace);
            let mut options = flow.options.clone();
            options.trace = trace.cloned();
            crate::job::check_payload("a flow job's payload", &flow.data)?;
            let data = serde_json::to_string(&flow.data)?;
            if flow.children.is_empty() {
                let job = NewJob {
                    name: flow.name.clone(),
                    data: Value::Null,
                    options,
                };
                let inv = q.add_invocation_with_parent(&[(ids.id, &job, data)], parent)?;
                let _: Vec<String> = inv.invoke(q.store()).await?;
                q.register_after_add().await;
                return Ok(());
            }
            // Each child's queue (its partition), settled before the parent names it.
            let mut homes = Vec::with_capacity(flow.children.len());
            for (child, child_ids) in flow.children.iter().zip(&ids.children) {
                homes.push(
                    self.home_of(&child.queue, child_ids.id, &child.options)
                        .await?,
                );
            }
            let mut inv = script::ADD_PARENT
                .on(q.name(), Some(ids.id))?
                .arg(ids.id)
                .arg(&flow.name)
                .arg(data)
                .arg(options.compact_json())
                .arg(options.attempts)
                .arg(parent)
                .arg(options.priority)
                .arg(q.max_events);
            for (c, home) in ids.children.iter().zip(&homes) {
                inv = inv.arg(format!("{}:{}", home.name(), c.id));
            }
            let _: i64 = inv.invoke(q.store()).await?;
            q.register_after_add().await;
            let me = format!("{}:{}", q.name(), ids.id);
            for ((child, child_ids), home) in flow.children.iter().zip(&ids.children).zip(homes) {
                self.add_flow_node(child, child_ids, home, &me, trace)
                    .await?;
            }
            Ok(())
        })
    }

    /// The results of a parent's children, by `<queue>:<id>` (failed children under the `ignore`
    /// policy appear as `{"failed": …}`).
    /// A child in a partitioned queue is named by its logical queue.
    pub async fn children_results(&self, parent: JobId) -> Result<HashMap<String, Value>> {
        let home = self.holder_of(parent).await?;
        let all: HashMap<String, String> = redis::cmd("HGETALL")
            .arg(home.name().job_key(parent, JobPart::Record))
            .query_async(&mut home.store().conn())
            .await?;
        let mut out = HashMap::new();
        for (field, value) in all {
            let v: Value = serde_json::from_str(&value).unwrap_or(Value::Null);
            if let Some(child) = field.strip_prefix("child:") {
                out.insert(logical_ref(child), v);
            } else if let Some(child) = field.strip_prefix("child_failed:") {
                out.insert(logical_ref(child), serde_json::json!({ "failed": v }));
            }
        }
        Ok(out)
    }
}

/// A child for [`JobContext::add_child`] / [`Queue::add_child`]: checked as any job is, and with
/// no dedup key (an add that found it held would return another job, which would never report to
/// this parent).
fn check_child(options: &JobOptions) -> Result<()> {
    options.validate()?;
    if options.dedup.is_some() {
        return Err(Error::new(
            ErrorCode::InvalidOption,
            "a child job cannot have a dedup key",
        ));
    }
    if options.batch.is_some() || options.batch_done.is_some() {
        return Err(Error::new(
            ErrorCode::InvalidOption,
            "batch and batch_done are written by emq alone",
        ));
    }
    Ok(())
}

/// Adds `job` to `queue` as a child of `parent` (in `parent_q`), then counts it in there
/// (`child_attach.lua`) under the parent's lease `token` ('' for a parent waiting for its
/// children). The add comes first, so no parent ever waits for a child that was never added: a
/// child that finishes before it is counted in leaves its outcome in its running parent
/// (`child_done.lua`). A given parent that is not waiting for children refuses it, and the child,
/// added but not counted, is removed again.
async fn add_child_to(
    parent_q: &Queue,
    parent: JobId,
    token: &str,
    queue: &str,
    job: NewJob,
) -> Result<JobId> {
    check_child(&job.options)?;
    crate::job::check_payload("a child job's payload", &job.data)?;
    let id = match job.options.id {
        Some(id) => id,
        None => parent_q.mint_id()?,
    };
    let q = parent_q.home_of(queue, id, &job.options).await?;
    let data = serde_json::to_string(&job.data)?;
    let me = format!("{}:{}", parent_q.name(), parent);
    let bare = NewJob {
        name: job.name,
        data: Value::Null,
        options: job.options,
    };
    let _: Vec<String> = q
        .add_invocation_with_parent(&[(id, &bare, data)], &me)?
        .invoke(q.store())
        .await?;
    q.register_after_add().await;
    let r: String = script::CHILD_ATTACH
        .on(parent_q.name(), Some(parent))?
        .arg(parent)
        .arg(token)
        .arg(format!("{}:{}", q.name(), id))
        .invoke(parent_q.store())
        .await?;
    match r.as_str() {
        "attached" | "known" => Ok(id),
        "lost" => Err(Error::new(
            ErrorCode::LeaseLost,
            format!("job {parent}'s run lost its lease: child {id} was added, its outcome is kept for the job's next run"),
        )),
        other => {
            // Not counted in anywhere: take it back (a child that already ran stays done).
            let _ = q.remove(id).await;
            Err(if other == "missing" {
                Error::new(
                    ErrorCode::JobNotFound,
                    format!("no job {parent} in queue {}", parent_q.name()),
                )
            } else {
                Error::new(
                    ErrorCode::InvalidState,
                    format!("job {parent} is not waiting for its children (a running job adds its own with its job's add_child)"),
                )
            })
        }
    }
}

impl JobContext {
    /// Adds a child job to `queue` (any queue on this store) that this job waits for, as for the
    /// children of a flow: when this run returns, the job goes to waiting-children instead of
    /// completed, and once its last child is done it runs again, its children's results in
    /// [`Queue::children_results`] (a run should check them, so it ends the second time). A child
    /// that fails for good fails this job under its `parent_policy` `fail` (the default), counts as
    /// done under `ignore`, and is dropped under `remove`. Returns the child's id.
    /// A child given no trace context joins this job's trace (a binding gives it its consumer
    /// span's; so does the `otel` feature). `invalid_option` for a dedup key or bad options; `lease_lost` when this run has
    /// lost its lease (the child was added: its outcome is kept for the job's next run).
    pub async fn add_child(
        &self,
        queue: &str,
        name: &str,
        data: Value,
        mut options: JobOptions,
    ) -> Result<JobId> {
        // With the `otel` feature, the run's span (current while the handler runs) is the context.
        #[cfg(feature = "otel")]
        if options.trace.is_none() {
            options.trace = crate::otel::current();
        }
        if options.trace.is_none() {
            options.trace = self.job.trace();
        }
        let job = NewJob {
            name: name.to_string(),
            data,
            options,
        };
        let id = add_child_to(&self.queue, self.job.id, &self.token, queue, job).await?;
        self.children
            .store(true, std::sync::atomic::Ordering::SeqCst);
        Ok(id)
    }
}

impl Queue {
    /// Adds a child job to `queue` for `parent`, a job of this queue that is waiting for its
    /// children (a flow's parent, or a job whose run added children): it waits for this one too.
    /// A running job adds its own with [`JobContext::add_child`]. `invalid_state` when the parent
    /// is not waiting for children (it runs, has finished, or never had children), `job_not_found`
    /// when there is no such job; the child is not added then.
    pub async fn add_child(
        &self,
        parent: JobId,
        queue: &str,
        name: &str,
        data: Value,
        options: JobOptions,
    ) -> Result<JobId> {
        let job = NewJob {
            name: name.to_string(),
            data,
            options,
        };
        let home = self.holder_of(parent).await?;
        add_child_to(&home, parent, "", queue, job).await
    }
}

/// `<queue>:<id>` with a partition's name given as its logical queue's.
fn logical_ref(text: &str) -> String {
    match parse_ref(text) {
        Ok((q, id)) => match q.partition_of() {
            Some((base, _)) => format!("{base}:{id}"),
            None => text.to_string(),
        },
        Err(_) => text.to_string(),
    }
}

/// Parses `<queue>:<id>` (the queue may be a partition, `<queue>:p<i>.<salt>`) through both gates.
fn parse_ref(text: &str) -> Result<(QueueName, JobId)> {
    let (q, id) = text.rsplit_once(':').ok_or_else(|| {
        Error::new(
            ErrorCode::InvalidJobId,
            format!("{text:?} is not a <queue>:<id> reference"),
        )
    })?;
    Ok((QueueName::new(q)?, JobId::parse(id)?))
}

/// The second step of a child's completion (`Ok(result)`) or final failure (`Err(failure)`).
pub(crate) async fn notify_parent(
    child_queue: &Queue,
    parent: &str,
    child: JobId,
    outcome: std::result::Result<&Value, &Value>,
    job: &Job,
) -> Result<String> {
    let (pq, pid) = parse_ref(parent)?;
    let q = child_queue.queue(pq.as_str())?;
    let policy = job
        .options
        .get("parent_policy")
        .and_then(Value::as_str)
        .unwrap_or("fail")
        .to_string();
    let (kind, value) = match outcome {
        Ok(v) => ("ok", v),
        Err(v) => ("failed", v),
    };
    script::CHILD_DONE
        .on(q.name(), Some(pid))?
        .arg(pid)
        .arg(format!("{}:{}", child_queue.name(), child))
        .arg(kind)
        .arg(serde_json::to_string(value)?)
        .arg(policy)
        .arg(q.max_events)
        .invoke(q.store())
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_ids_serialise_as_every_binding_shows_them() {
        let id = |n: u16| JobId::from_parts(1_700_000_000_000, 1, n);
        let ids = FlowIds {
            queue: "parents".into(),
            id: id(1),
            children: vec![FlowIds {
                queue: "kids".into(),
                id: id(2),
                children: vec![],
            }],
        };
        assert_eq!(
            serde_json::to_value(&ids).unwrap(),
            serde_json::json!({
                "queue": "parents",
                "id": id(1).to_string(),
                "children": [{"queue": "kids", "id": id(2).to_string(), "children": []}],
            })
        );
    }
}
