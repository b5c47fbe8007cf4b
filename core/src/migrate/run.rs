//! The migration's steps on one source queue: its containers read, an emq id claimed per job
//! (stored before the copy, so a re-run reuses it), the copies written in batches through the add
//! scripts, and the sources deleted once copied.

use super::source::*;
use super::*;
use crate::error::{Error, ErrorCode, Result};
use crate::job_id::JobId;
use crate::keyspace::Family;
use crate::queue::{NewJob, Queue, MAX_LOG_LINES};
use crate::script;
use futures::future::join_all;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};

pub(super) struct Migration<'a> {
    /// Where this pass writes: the target queue, or one partition of a partitioned target.
    pub(super) q: &'a Queue,
    /// The queue `migrate_from_bullmq` was called on (a partitioned one's logical handle).
    pub(super) target: &'a Queue,
    /// For a partitioned target: this pass's partition (its index) and the partitions. Each
    /// source job belongs to one pass (see [`Migration::mine`]).
    pub(super) part: Option<(usize, &'a crate::queue::partition_set::Partitions)>,
    pub(super) o: &'a MigrateOptions,
    pub(super) src: Source,
    pub(super) report: MigrateReport,
    /// Ids of the source schedulers migrated (their pending runs are not copied).
    pub(super) schedulers: HashSet<String>,
    /// Flows that move whole (a parent and its children, all in this queue and not started).
    pub(super) flows: Vec<Flow>,
    /// The source keys of those flows' children: not copied on their own.
    pub(super) flow_children: HashSet<String>,
}

/// A source flow planned for copying: its parent and children as read.
pub(super) struct Flow {
    pub(super) parent: Read,
    /// Each child, with the container it waits in.
    pub(super) children: Vec<(Read, &'static str)>,
}

impl Migration<'_> {
    pub(super) fn conn(&self) -> crate::store::Conn {
        self.q.store().conn()
    }

    /// True when source job `field` (its hash `fields`) is this pass's: always for a plain
    /// target; for a partitioned one, when the partition of its copy's group, else its dedup key
    /// (where an add with either goes), else its source key, is this pass's. Its copy, its id
    /// mapping (`migrated`, in that partition's slot beside the copy) and its report rows are
    /// written by that pass alone.
    pub(super) fn mine(&self, field: &str, fields: &HashMap<String, String>) -> bool {
        let Some((i, p)) = self.part else {
            return true;
        };
        let o = map_options(&opts_of(fields), 0, &mut Default::default());
        let key = o.group.as_deref().or(o.dedup.as_deref()).unwrap_or(field);
        p.key_index(key) == i
    }

    /// True when a source job reported without its hash (a skipped one) is this pass's: by its
    /// source key.
    pub(super) fn mine_by_key(&self, field: &str) -> bool {
        self.part.map_or(true, |(i, p)| p.key_index(field) == i)
    }

    /// A list's ids, oldest first (BullMQ pushes on the left and takes from the right).
    pub(super) async fn list_ids(&self, list: &str) -> Result<Vec<(String, Option<f64>)>> {
        let mut ids: Vec<String> = redis::cmd("LRANGE")
            .arg(self.src.key(list))
            .arg(0)
            .arg(-1)
            .query_async(&mut self.conn())
            .await?;
        ids.reverse();
        Ok(ids.into_iter().map(|i| (i, None)).collect())
    }

    /// A sorted set's ids and scores, lowest score first.
    pub(super) async fn zset_ids(&self, set: &str) -> Result<Vec<(String, Option<f64>)>> {
        let v: Vec<(String, f64)> = redis::cmd("ZRANGE")
            .arg(self.src.key(set))
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query_async(&mut self.conn())
            .await?;
        Ok(v.into_iter().map(|(i, s)| (i, Some(s))).collect())
    }

    /// Active jobs: a live lock means a BullMQ worker runs it (skipped); without one it is copied
    /// as waiting (BullMQ would recover it as stalled).
    pub(super) async fn active(&mut self) -> Result<()> {
        let ids = self.list_ids("active").await?;
        if ids.is_empty() {
            return Ok(());
        }
        let locks = join_all(ids.iter().map(|(id, _)| {
            let mut c = self.conn();
            let key = format!("{}:lock", self.src.job(id));
            async move {
                redis::cmd("EXISTS")
                    .arg(key)
                    .query_async::<i64>(&mut c)
                    .await
            }
        }))
        .await;
        let mut free = Vec::new();
        for ((id, s), lock) in ids.into_iter().zip(locks) {
            if lock? == 1 {
                if !self.mine_by_key(&self.src.job(&id)) {
                    continue;
                }
                self.report.row("active").read += 1;
                self.report.skip(
                    "active",
                    &id,
                    "active: its lock lives (a BullMQ worker holds it; stop it and run again)"
                        .into(),
                );
            } else {
                free.push((id, s));
            }
        }
        self.copy("active", "active", Kind::List, free).await
    }
}

impl Migration<'_> {
    /// The emq id of each source job: the one stored by an earlier run (`pending`), else one minted
    /// now and stored first (HSETNX: a racing run's id wins, and is read back).
    pub(super) async fn claim_ids(
        &self,
        fields: &[&str],
        pending: &HashMap<String, JobId>,
    ) -> Result<Vec<JobId>> {
        let mapping = self.q.name().key(Family::Migrated);
        let mut ids: Vec<JobId> = Vec::with_capacity(fields.len());
        let mut fresh = Vec::new();
        for f in fields {
            match pending.get(*f) {
                Some(id) => ids.push(*id),
                None => {
                    let id = self.q.mint_id()?;
                    ids.push(id);
                    fresh.push((ids.len() - 1, id));
                }
            }
        }
        if fresh.is_empty() {
            return Ok(ids);
        }
        let mut pipe = redis::pipe();
        for (i, id) in &fresh {
            pipe.cmd("HSETNX")
                .arg(&mapping)
                .arg(fields[*i])
                .arg(id.to_string());
        }
        let set: Vec<i64> = pipe.query_async(&mut self.conn()).await?;
        let lost: Vec<usize> = fresh
            .iter()
            .zip(set)
            .filter(|(_, s)| *s == 0)
            .map(|((i, _), _)| *i)
            .collect();
        for i in lost {
            let v: String = redis::cmd("HGET")
                .arg(&mapping)
                .arg(fields[i])
                .query_async(&mut self.conn())
                .await?;
            if v.contains('|') {
                return Err(Error::new(
                    ErrorCode::InvalidState,
                    format!(
                        "{} was migrated by another run meanwhile; run one migration at a time",
                        fields[i]
                    ),
                ));
            }
            ids[i] = JobId::parse(&v)?;
        }
        Ok(ids)
    }

    /// Copies one source container's jobs, a batch at a time. `state` names the report row,
    /// `container` the source key the ids were read from.
    pub(super) async fn copy(
        &mut self,
        state: &str,
        container: &str,
        kind: Kind,
        ids: Vec<(String, Option<f64>)>,
    ) -> Result<()> {
        let batch = self.o.batch;
        for chunk in ids.chunks(batch) {
            self.copy_batch(state, container, kind, chunk).await?;
        }
        Ok(())
    }

    pub(super) async fn copy_batch(
        &mut self,
        state: &str,
        container: &str,
        kind: Kind,
        chunk: &[(String, Option<f64>)],
    ) -> Result<()> {
        let mapping = self.q.name().key(Family::Migrated);
        let fields: Vec<String> = chunk.iter().map(|(id, _)| self.src.job(id)).collect();
        // The source hashes (each may be on another node) and the marks, concurrently.
        let hashes = join_all(fields.iter().map(|f| {
            let mut c = self.conn();
            let f = f.clone();
            async move {
                redis::cmd("HGETALL")
                    .arg(f)
                    .query_async::<HashMap<String, String>>(&mut c)
                    .await
            }
        }))
        .await;
        let marks: Vec<Option<String>> = redis::cmd("HMGET")
            .arg(&mapping)
            .arg(&fields)
            .query_async(&mut self.conn())
            .await?;
        let mut todo: Vec<Read> = Vec::new();
        let mut done_before: Vec<(String, String)> = Vec::new();
        let mut pending: HashMap<String, JobId> = HashMap::new();
        for ((((id, score), field), hash), mark) in chunk.iter().zip(&fields).zip(hashes).zip(marks)
        {
            let hash = hash?;
            if !self.mine(field, &hash) {
                continue; // another partition's pass copies it
            }
            if self.flow_children.contains(field) {
                continue; // copied with its flow (copy_flows)
            }
            self.report.row(state).read += 1;
            if let Some(mark) = &mark {
                if mark.contains('|') {
                    self.report.row(state).already += 1;
                    done_before.push((id.clone(), field.clone()));
                    continue;
                }
            }
            if hash.is_empty() {
                self.report.skip(
                    state,
                    id,
                    "gone: its job hash no longer exists in the source".into(),
                );
                continue;
            }
            if hash.contains_key("parentKey") || hash.contains_key("parent") {
                self.report.skip(
                    state,
                    id,
                    "flow: a child of a parent job (flows are not migrated; let BullMQ finish it)"
                        .into(),
                );
                continue;
            }
            if let Some(rjk) = hash.get("rjk") {
                if self.schedulers.contains(rjk) {
                    self.report.skip(
                        state,
                        id,
                        "scheduler run: the next run of a migrated scheduler (the emq scheduler makes its own)"
                            .into(),
                    );
                    continue;
                }
            }
            if let Some(mark) = mark {
                pending.insert(field.clone(), JobId::parse(&mark)?);
            }
            todo.push(Read {
                source_id: id.clone(),
                field: field.clone(),
                fields: hash,
                due_ms: match kind {
                    Kind::Delayed => score.map(bullmq_due_ms),
                    _ => None,
                },
            });
        }
        if self.o.delete_source {
            self.delete_sources(container, &done_before).await?;
        }
        if todo.is_empty() {
            return Ok(());
        }
        if self.o.dry_run {
            for r in &todo {
                let opts = opts_of(&r.fields);
                map_options(&opts, attempts_made(&r.fields), &mut self.report.not_mapped);
            }
            self.report.row(state).written += todo.len() as u64;
            return Ok(());
        }
        let fields: Vec<&str> = todo.iter().map(|r| r.field.as_str()).collect();
        let ids = self.claim_ids(&fields, &pending).await?;
        let now = self.q.server_time_ms().await?;
        let written_state = match kind {
            Kind::Finished => state,
            Kind::Delayed => "delayed",
            Kind::Prioritized => "prioritized",
            Kind::List => "waiting",
        };
        if kind == Kind::Finished {
            let mut calls = Vec::with_capacity(todo.len());
            for (r, id) in todo.iter().zip(&ids) {
                calls.push(self.finished_call(state, r, *id, now)?);
            }
            let _: Vec<i64> = script::pipeline(self.q.store(), &calls).await?;
        } else {
            let mut jobs = Vec::with_capacity(todo.len());
            for (r, id) in todo.iter().zip(&ids) {
                let opts = opts_of(&r.fields);
                let mut o =
                    map_options(&opts, attempts_made(&r.fields), &mut self.report.not_mapped);
                o.id = Some(*id);
                if kind == Kind::Delayed {
                    // LIFO applies when it is due.
                    o.delay_ms = r.due_ms.map_or(0, |d| d.saturating_sub(now));
                } else {
                    // A ready job's place is its order: added oldest first, each at the back.
                    o.lifo = false;
                }
                jobs.push(NewJob {
                    name: r.fields.get("name").cloned().unwrap_or_default(),
                    data: data_of(&r.fields),
                    options: o,
                });
            }
            // In order: one add_bulk call of more than one add.lua batch sends its batches
            // concurrently, so a later one may land first.
            let mut got = Vec::with_capacity(todo.len());
            for part in chunked(jobs, ORDERED_ADD) {
                got.extend(self.q.add_bulk(part).await?);
            }
            self.copy_logs(&todo, &ids, &got).await?;
            if !self.o.pause_per_batch.is_zero() {
                // Tests only: the widest window a crash can hit, copies written and not marked.
                tokio::time::sleep(self.o.pause_per_batch).await;
            }
            let mut pipe = redis::pipe();
            let mut deduplicated = 0;
            for ((r, id), held) in todo.iter().zip(&ids).zip(&got) {
                if held != id {
                    // Its dedup id was held by a job copied before: it is that job now, as in
                    // BullMQ had both been added while the first waited.
                    deduplicated += 1;
                    self.report.skip(
                        state,
                        &r.source_id,
                        format!(
                            "deduplicated: its deduplication id is held by the copied job {held}"
                        ),
                    );
                    pipe.cmd("HSET")
                        .arg(&mapping)
                        .arg(&r.field)
                        .arg(format!("{held}|deduplicated"))
                        .ignore();
                    continue;
                }
                pipe.cmd("HSET")
                    .arg(&mapping)
                    .arg(&r.field)
                    .arg(format!("{id}|{written_state}"))
                    .arg(format!("={id}"))
                    .arg(&r.field)
                    .ignore();
            }
            let _: () = pipe.query_async(&mut self.conn()).await?;
            self.report.row(state).written += (todo.len() - deduplicated) as u64;
        }
        if kind == Kind::Finished {
            self.copy_logs(&todo, &ids, &ids).await?;
            self.report.row(state).written += todo.len() as u64;
        }
        if self.o.delete_source {
            let gone: Vec<(String, String)> = todo
                .iter()
                .map(|r| (r.source_id.clone(), r.field.clone()))
                .collect();
            self.delete_sources(container, &gone).await?;
        }
        Ok(())
    }

    /// Appends each source job's log lines (`<prefix>:<queue>:<id>:logs`) to its copy's log:
    /// the lines the copy lacks, so a re-run after a crash neither repeats nor drops one (a
    /// copy whose log already holds [`MAX_LOG_LINES`] is left as it is, and so is a copy that
    /// already ran and was removed). `got` is what the adds returned: a job deduplicated into
    /// another (`got` ≠ `ids`) keeps its lines out of the other's log.
    pub(super) async fn copy_logs(
        &mut self,
        todo: &[Read],
        ids: &[JobId],
        got: &[JobId],
    ) -> Result<()> {
        let sources = join_all(todo.iter().map(|r| {
            let mut c = self.conn();
            let key = format!("{}:logs", r.field);
            async move {
                redis::cmd("LRANGE")
                    .arg(key)
                    .arg(0)
                    .arg(-1)
                    .query_async::<Vec<String>>(&mut c)
                    .await
            }
        }))
        .await;
        for ((lines, id), held) in sources.into_iter().zip(ids).zip(got) {
            let lines = lines?;
            if lines.is_empty() || id != held {
                continue;
            }
            let have = self.q.logs(*id).await?.len() as u64;
            if have >= MAX_LOG_LINES {
                continue;
            }
            for line in lines.iter().skip(have as usize) {
                match self.q.log(*id, line).await {
                    Ok(_) => self.report.log_lines += 1,
                    Err(e) if e.code() == ErrorCode::JobNotFound => break,
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(())
    }

    pub(super) fn finished_call(
        &mut self,
        state: &str,
        r: &Read,
        id: JobId,
        now: u64,
    ) -> Result<script::Invocation> {
        let f = &r.fields;
        let atts = attempts_made(f);
        let opts = opts_of(f);
        let mut o = map_options(&opts, 0, &mut self.report.not_mapped);
        o.lifo = false;
        let finished = field_u64(f, "finishedOn").unwrap_or(now);
        let processed = field_u64(f, "processedOn");
        let created = field_u64(f, "timestamp").unwrap_or(finished);
        let outcome = if state == "failed" {
            let stack = f
                .get("stacktrace")
                .and_then(|t| serde_json::from_str::<Vec<Value>>(t).ok())
                .and_then(|v| v.last().and_then(|s| s.as_str().map(String::from)));
            let mut failure = json!({
                "code": "handler_failed",
                "message": f.get("failedReason").cloned().unwrap_or_default(),
            });
            if let Some(s) = stack {
                failure["stack"] = Value::String(s);
            }
            failure.to_string()
        } else {
            match f.get("returnvalue") {
                Some(t) if serde_json::from_str::<serde::de::IgnoredAny>(t).is_ok() => t.clone(),
                Some(t) => Value::String(t.clone()).to_string(),
                None => "null".into(),
            }
        };
        let name = self.q.name();
        Ok(script::MIGRATE_FINISHED
            .prepare()
            .key(&name.job_key(id, crate::keyspace::JobPart::Record))
            .key(&name.key(if state == "failed" {
                Family::Failed
            } else {
                Family::Completed
            }))
            .key(&name.key(Family::Meta))
            .key(&name.key(Family::Migrated))
            .arg(id)
            .arg(&r.field)
            .arg(state)
            .arg(f.get("name").map(String::as_str).unwrap_or(""))
            .arg(serde_json::to_string(&data_of(f))?)
            .arg(o.compact_json())
            .arg(o.attempts)
            .arg(atts)
            .arg(outcome)
            .arg(now.saturating_sub(finished))
            .arg(processed.map_or(-1, |p| finished.saturating_sub(p) as i64))
            .arg(now.saturating_sub(created)))
    }

    /// Deletes copied source jobs: out of their container, then their hash, lock and logs.
    pub(super) async fn delete_sources(
        &mut self,
        container: &str,
        jobs: &[(String, String)],
    ) -> Result<()> {
        if jobs.is_empty() {
            return Ok(());
        }
        let ckey = self.src.key(container);
        let is_list = matches!(container, "wait" | "paused" | "active");
        let results = join_all(jobs.iter().map(|(id, field)| {
            let mut c = self.conn();
            let (ckey, id, field) = (ckey.clone(), id.clone(), field.clone());
            async move {
                let cmd = if is_list {
                    redis::cmd("LREM").arg(&ckey).arg(0).arg(&id).clone()
                } else {
                    redis::cmd("ZREM").arg(&ckey).arg(&id).clone()
                };
                let _: i64 = cmd.query_async(&mut c).await?;
                let mut n = 0;
                for key in [
                    field.clone(),
                    format!("{field}:logs"),
                    format!("{field}:lock"),
                    format!("{field}:dependencies"),
                ] {
                    n += redis::cmd("DEL")
                        .arg(key)
                        .query_async::<i64>(&mut c)
                        .await?;
                }
                Ok::<i64, redis::RedisError>(n)
            }
        }))
        .await;
        for r in results {
            if r? > 0 {
                self.report.source_deleted += 1;
            }
        }
        Ok(())
    }
}
