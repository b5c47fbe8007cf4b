//! The dashboard's job and queue operations beyond the basics of `api.rs`: one job's actions
//! (with cancel and change priority), its timeline and flow, bulk actions on selected jobs, finding
//! jobs (by id, by dedup key, by name in a bounded scan), the schedulers, and a queue's fair groups
//! (listed sorted, paused, resumed, weighed, capped).

use super::api::{api_err, ApiError, ApiResult, App, Shared};
use crate::commands::groups::{self, Sort};
use crate::commands::queues::{registered, Repair};
use crate::connect::server_time_ms;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use emq::lookup::{MAX_EVENT_SCAN, MAX_NAME_SCAN};
use emq::spec::{JobSpec, Millis, ScheduleSpec};
use emq::{Error, ErrorCode, Job, JobId, JobOptions, JobState, Moved, Queue, Schedule};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};

/// Most jobs one bulk action names.
pub const MAX_BULK: usize = 200;
/// Most children of a flow parent shown (each read for its state).
const MAX_CHILDREN: usize = 100;
/// Most matches one name search returns.
const NAME_MATCHES: usize = 25;
/// Next runs shown per scheduler.
const NEXT_RUNS: usize = 5;
/// Groups on one page of the Groups page, by default and at most.
const GROUP_PAGE: u64 = 50;
const MAX_GROUP_PAGE: u64 = 500;

/// What one job action did.
pub struct Outcome {
    /// It took effect (for a cancel of a running job: the request was sent).
    pub done: bool,
    /// The core's word for it (`moved`, `not_found`, the state it was in, `cancelled`, …).
    pub what: String,
}

fn moved(m: Moved) -> Outcome {
    Outcome {
        done: m == Moved::Moved,
        what: m.as_str().to_string(),
    }
}

/// retry | promote | remove | cancel | priority on one job.
pub async fn act_on(
    q: &Queue,
    id: JobId,
    action: &str,
    priority: Option<u32>,
    reason: Option<&str>,
) -> emq::Result<Outcome> {
    Ok(match action {
        "retry" => moved(q.retry(id).await?),
        "promote" => moved(q.promote(id).await?),
        "remove" => moved(q.remove(id).await?),
        "priority" => {
            let p = priority.ok_or_else(|| {
                Error::new(
                    ErrorCode::InvalidOption,
                    "priority needs a `priority` number",
                )
            })?;
            moved(q.change_priority(id, p).await?)
        }
        "cancel" => {
            let reason = reason
                .map(str::trim)
                .filter(|r| !r.is_empty())
                .unwrap_or("cancelled from emq ui");
            let c = q.cancel(id, reason).await?;
            Outcome {
                done: matches!(
                    c,
                    emq::CancelOutcome::Cancelled | emq::CancelOutcome::Requested
                ),
                what: c.as_str().to_string(),
            }
        }
        other => {
            return Err(Error::new(
                ErrorCode::InvalidOption,
                format!("no job action {other:?} (retry, promote, remove, cancel, priority)"),
            ))
        }
    })
}

/// A stream entry id's server time in ms (`<ms>-<seq>`).
fn entry_ms(stream_id: &str) -> u64 {
    stream_id
        .split('-')
        .next()
        .and_then(|ms| ms.parse().ok())
        .unwrap_or(0)
}

/// The job's timeline: its events among the newest stream entries, each at the server time of its
/// entry id, and the record's own instants.
pub async fn timeline(q: &Queue, job: &Job) -> emq::Result<Value> {
    let since = job.created_ms.saturating_sub(1_000);
    let (events, whole) = q.job_events(job.id, since, MAX_EVENT_SCAN).await?;
    let events: Vec<Value> = events
        .into_iter()
        .map(|e| {
            let fields: serde_json::Map<String, Value> = e
                .fields
                .into_iter()
                .filter(|(k, _)| !matches!(k.as_str(), "ev" | "id" | "ids"))
                .map(|(k, v)| (k, Value::String(v)))
                .collect();
            json!({
                "at_ms": entry_ms(&e.stream_id),
                "stream_id": e.stream_id,
                "kind": e.kind,
                "fields": fields,
            })
        })
        .collect();
    Ok(json!({
        "events": events,
        "scanned": MAX_EVENT_SCAN,
        "since_ms": since,
        "whole_stream": whole,
        "created_ms": job.created_ms,
        "processed_ms": job.processed_ms,
        "finished_ms": job.finished_ms,
    }))
}

fn split_ref(r: &str) -> Option<(&str, JobId)> {
    let (q, id) = r.rsplit_once(':')?;
    Some((q, JobId::parse(id).ok()?))
}

async fn state_of(app: &App, queue: &str, id: JobId) -> Option<String> {
    let q = app.queue(queue).await.ok()?;
    match q.get(id).await {
        Ok(Some(j)) => Some(j.state.map_or("unknown", |s| s.as_str()).to_string()),
        Ok(None) => Some("gone".into()),
        Err(_) => None,
    }
}

/// The job's flow: its parent (with its state) and its children as the record lists them (each
/// with its state in its own queue).
pub async fn flow(app: &App, q: &Queue, job: &Job) -> emq::Result<Value> {
    let parent = match job.parent.as_deref().and_then(split_ref) {
        Some((pq, pid)) => json!({
            "queue": pq,
            "id": pid.to_string(),
            "state": state_of(app, pq, pid).await,
        }),
        None => Value::Null,
    };
    let children = q.flow_children(job.id).await?;
    let total = children.len();
    let mut shown = Vec::new();
    for c in children.into_iter().take(MAX_CHILDREN) {
        shown.push(json!({
            "queue": c.queue,
            "id": c.id.to_string(),
            "status": c.status,
            "value": c.value,
            "state": state_of(app, &c.queue, c.id).await,
        }));
    }
    Ok(json!({"parent": parent, "children": shown, "children_total": total}))
}

#[derive(Deserialize)]
pub struct FindQuery {
    by: String,
    text: String,
    state: Option<String>,
    offset: Option<u64>,
}

/// GET find: `by=id` (the job), `by=dedup` (the live holder of a dedup key: one HGET), `by=name`
/// (names containing the text, in a bounded scan of one state: at most `MAX_NAME_SCAN` ids from
/// `offset`, with where to go on).
pub async fn find(
    State(app): State<Shared>,
    Path(queue): Path<String>,
    Query(f): Query<FindQuery>,
) -> ApiResult {
    let e = |e| api_err(&app, e);
    let q = app.queue(&queue).await.map_err(e)?;
    let text = f.text.trim();
    let mut scan = Value::Null;
    let mut note = Value::Null;
    // A name scan reads its matches' records itself, in the state it scanned; an id or a dedup
    // key's holder is read with its state (`get`).
    let mut listed: Option<Vec<Job>> = None;
    let ids: Vec<JobId> = match f.by.as_str() {
        "id" => vec![JobId::parse(text).map_err(e)?],
        "dedup" => match q.find_by_dedup(text).await.map_err(e)? {
            Some(h) => {
                if let Some(until) = h.until_ms {
                    note = json!({"held_until_ms": until, "holder": h.id.to_string()});
                }
                vec![h.id]
            }
            None => vec![],
        },
        "name" => {
            let state = JobState::parse(f.state.as_deref().unwrap_or("waiting")).map_err(e)?;
            let s = q
                .find_by_name(
                    state,
                    text,
                    f.offset.unwrap_or(0),
                    MAX_NAME_SCAN,
                    NAME_MATCHES,
                )
                .await
                .map_err(e)?;
            scan = json!(s);
            scan["state"] = json!(state.as_str());
            listed = Some(s.jobs);
            vec![]
        }
        other => {
            return Err(e(Error::new(
                ErrorCode::InvalidOption,
                format!("find by {other:?}: by id, dedup or name"),
            )))
        }
    };
    let mut jobs: Vec<Value> = listed
        .unwrap_or_default()
        .iter()
        .map(super::api::job_json)
        .collect();
    for id in ids {
        if let Some(j) = q.get_as_stored(id).await.map_err(e)? {
            jobs.push(super::api::job_json(&j));
        }
    }
    let now = server_time_ms(&app.store).await.map_err(e)?;
    Ok(Json(json!({
        "by": f.by,
        "text": text,
        "jobs": jobs,
        "scan": scan,
        "note": note,
        "now_ms": now,
        "read_only": app.read_only,
        "datastore": app.secrets.shown_url(),
    })))
}

#[derive(Deserialize)]
pub struct BulkBody {
    action: String,
    ids: Vec<String>,
    priority: Option<u32>,
    reason: Option<String>,
}

/// POST bulk: one action on each named job (at most `MAX_BULK`); what became of each.
pub async fn bulk(
    State(app): State<Shared>,
    Path(queue): Path<String>,
    Json(b): Json<BulkBody>,
) -> ApiResult {
    let e = |e| api_err(&app, e);
    let q = app.queue(&queue).await.map_err(e)?;
    if b.ids.is_empty() || b.ids.len() > MAX_BULK {
        return Err(e(Error::new(
            ErrorCode::InvalidOption,
            format!("a bulk action names 1 to {MAX_BULK} jobs"),
        )));
    }
    // Every id, the action and its priority are checked before the first action.
    let ids: Vec<JobId> = b
        .ids
        .iter()
        .map(|s| JobId::parse(s))
        .collect::<emq::Result<_>>()
        .map_err(e)?;
    check_bulk(&b.action, b.priority).map_err(e)?;
    let mut results = Vec::new();
    let (mut done, mut errors) = (0u64, 0u64);
    for id in ids {
        // One job's error is its own result: the others are still acted on, and what was done
        // before it is still reported.
        match act_on(&q, id, &b.action, b.priority, b.reason.as_deref()).await {
            Ok(o) => {
                done += u64::from(o.done);
                results.push(json!({"id": id.to_string(), "done": o.done, "outcome": o.what}));
            }
            Err(err) => {
                errors += 1;
                let message = app.secrets.scrub(err.message());
                eprintln!(
                    "emq ui: bulk {} {id}: error[{}]: {message}",
                    b.action,
                    err.code().as_str()
                );
                results.push(json!({
                    "id": id.to_string(),
                    "done": false,
                    "outcome": "error",
                    "error": {"code": err.code().as_str(), "message": message},
                }));
            }
        }
    }
    let refused = results.len() as u64 - done;
    Ok(Json(json!({
        "ok": true,
        "action": b.action,
        "priority": b.priority,
        "count": done,
        "refused": refused,
        "errors": errors,
        "results": results,
    })))
}

/// A bulk action's name and, for `priority`, its number (the core's bound), checked once for all
/// its jobs.
fn check_bulk(action: &str, priority: Option<u32>) -> emq::Result<()> {
    match action {
        "retry" | "promote" | "remove" | "cancel" => Ok(()),
        "priority" => {
            let p = priority.ok_or_else(|| invalid("priority needs a `priority` number"))?;
            JobOptions {
                priority: p,
                ..JobOptions::default()
            }
            .validate()
        }
        other => Err(invalid(format!(
            "no bulk action {other:?} (retry, promote, remove, cancel, priority)"
        ))),
    }
}

/// GET every scheduler of every registered queue, with its next runs.
pub async fn schedulers(State(app): State<Shared>) -> ApiResult {
    let e = |e| api_err(&app, e);
    let names = registered(&app.store, Repair::Never).await.map_err(e)?;
    let now = server_time_ms(&app.store).await.map_err(e)?;
    let mut all = Vec::new();
    for n in names {
        let q = app.queue(n.as_str()).await.map_err(e)?;
        let list = q.schedulers().await.map_err(e)?;
        if list.is_empty() {
            continue;
        }
        let instants = q.scheduler_instants().await.map_err(e)?;
        for s in list {
            let at = instants.get(&s.id).copied().unwrap_or_default();
            let mut v = json!(s);
            v["queue"] = json!(n.as_str());
            v["next_runs_ms"] = json!(at.next_runs(&s, NEXT_RUNS));
            v["end_ms"] = json!(at.end_ms);
            all.push(v);
        }
    }
    Ok(Json(json!({
        "schedulers": all,
        "now_ms": now,
        "read_only": app.read_only,
        "datastore": app.secrets.shown_url(),
    })))
}

/// GET one scheduler's stored spec (for the edit form).
pub async fn scheduler(
    State(app): State<Shared>,
    Path((queue, id)): Path<(String, String)>,
) -> ApiResult {
    let e = |e| api_err(&app, e);
    let q = app.queue(&queue).await.map_err(e)?;
    match q.scheduler_spec(&id).await.map_err(e)? {
        Some(spec) => Ok(Json(json!({"queue": queue, "id": id, "spec": spec}))),
        None => Err(ApiError(
            StatusCode::NOT_FOUND,
            "not_found".into(),
            format!("no scheduler {id:?} on {queue}"),
        )),
    }
}

/// The scheduler form's fields; any other field is refused (as every binding refuses it).
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct SchedulerBody {
    name: Option<String>,
    /// The payload as JSON text.
    data: Option<String>,
    every_ms: Option<u64>,
    cron: Option<String>,
    tz: Option<String>,
    limit: Option<u64>,
    end_after_ms: Option<u64>,
    first_after_ms: Option<u64>,
    /// Job options as a JSON object (the core's `JobOptions` fields).
    options: Option<Value>,
}

/// POST upsert | remove on one scheduler.
pub async fn scheduler_action(
    State(app): State<Shared>,
    Path((queue, id, action)): Path<(String, String, String)>,
    body: Option<Json<SchedulerBody>>,
) -> ApiResult {
    let e = |e| api_err(&app, e);
    let q = app.queue(&queue).await.map_err(e)?;
    match action.as_str() {
        "remove" => {
            let existed = q.remove_scheduler(&id).await.map_err(e)?;
            Ok(Json(
                json!({"ok": true, "action": "remove", "existed": existed}),
            ))
        }
        "upsert" => {
            let b = body.map(|Json(b)| b).unwrap_or_default();
            let schedule = schedule_from(b).map_err(e)?;
            let created = q.upsert_scheduler(&id, schedule).await.map_err(e)?;
            // A queue first used by a scheduler is listed (the registry is written on adds).
            q.register().await.map_err(e)?;
            Ok(Json(
                json!({"ok": true, "action": "upsert", "created": created}),
            ))
        }
        other => Err(e(Error::new(
            ErrorCode::InvalidOption,
            format!("no scheduler action {other:?} (upsert, remove)"),
        ))),
    }
}

#[derive(Deserialize)]
pub struct GroupsQuery {
    sort: Option<String>,
    offset: Option<u64>,
    limit: Option<u64>,
}

/// GET one page of a queue's groups, sorted by `waiting` (the backlog, largest first; the
/// default), `running` or `name`, with the queue's summary.
pub async fn groups(
    State(app): State<Shared>,
    Path(queue): Path<String>,
    Query(p): Query<GroupsQuery>,
) -> ApiResult {
    let e = |e| api_err(&app, e);
    let q = app.queue(&queue).await.map_err(e)?;
    let sort = match p.sort.as_deref().unwrap_or("waiting") {
        "waiting" => Sort::Waiting,
        "running" => Sort::Running,
        "name" => Sort::Name,
        other => {
            return Err(e(invalid(format!(
                "sort groups by waiting, running or name, not {other:?}"
            ))))
        }
    };
    let offset = p.offset.unwrap_or(0);
    let limit = p.limit.unwrap_or(GROUP_PAGE).clamp(1, MAX_GROUP_PAGE);
    let page = groups::read(&q, sort, offset, limit).await.map_err(e)?;
    let now = server_time_ms(&app.store).await.map_err(e)?;
    let summary = crate::commands::queues::summary(&q, now).await.map_err(e)?;
    let mut v = json!(page);
    v["summary"] = json!(summary);
    v["now_ms"] = json!(now);
    v["read_only"] = json!(app.read_only);
    v["datastore"] = json!(app.secrets.shown_url());
    Ok(Json(v))
}

/// The body of pause and resume.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct GroupBody {
    group: String,
}

/// The body of weight. A number past u32's range is passed on as its largest, which the core
/// refuses with its bounds.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct WeightBody {
    group: String,
    weight: u64,
}

/// The body of concurrency and max-waiting: `group` absent or null is the default of every group;
/// `limit` must be given, null lifts the cap.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct CapBody {
    #[serde(default)]
    group: Option<String>,
    #[serde(deserialize_with = "Option::deserialize")]
    limit: Option<u64>,
}

/// A JSON body as one action's typed body; anything else (not JSON, a field it does not have, a
/// field missing or of the wrong type) is `invalid_option`.
pub(super) fn body_of<T: DeserializeOwned>(action: &str, body: &Bytes) -> emq::Result<T> {
    serde_json::from_slice(body).map_err(|err| invalid(format!("the body of {action}: {err}")))
}

/// POST pause | resume (`{"group"}`), weight (`{"group", "weight"}`), concurrency | max-waiting
/// (`{"group"?, "limit": n | null}`) on a queue's groups; every value checked by the core.
pub async fn group_action(
    State(app): State<Shared>,
    Path((queue, action)): Path<(String, String)>,
    body: Bytes,
) -> ApiResult {
    let e = |e| api_err(&app, e);
    let q = app.queue(&queue).await.map_err(e)?;
    let group: Option<String> = match action.as_str() {
        "pause" | "resume" => {
            let b: GroupBody = body_of(&action, &body).map_err(e)?;
            if action == "pause" {
                q.pause_group(&b.group).await.map_err(e)?;
            } else {
                q.resume_group(&b.group).await.map_err(e)?;
            }
            Some(b.group)
        }
        "weight" => {
            let b: WeightBody = body_of(&action, &body).map_err(e)?;
            q.set_group_weight(&b.group, groups::saturate_u32(b.weight))
                .await
                .map_err(e)?;
            Some(b.group)
        }
        "concurrency" => {
            let b: CapBody = body_of(&action, &body).map_err(e)?;
            q.set_group_concurrency(b.limit.map(groups::saturate_u32), b.group.as_deref())
                .await
                .map_err(e)?;
            b.group
        }
        "max-waiting" => {
            let b: CapBody = body_of(&action, &body).map_err(e)?;
            q.set_group_max_waiting(b.limit, b.group.as_deref())
                .await
                .map_err(e)?;
            b.group
        }
        other => {
            return Err(e(invalid(format!(
                "no group action {other:?} (pause, resume, weight, concurrency, max-waiting)"
            ))))
        }
    };
    Ok(Json(json!({"ok": true, "action": action, "group": group})))
}

pub(super) fn invalid(msg: impl Into<String>) -> Error {
    Error::new(ErrorCode::InvalidOption, msg.into())
}

/// The form's fields as the core's [`ScheduleSpec`], converted (and every value checked) by the
/// core, as every binding's are. Adapting the form is all that happens here: an empty field is a
/// field not given (`every_ms`, `limit` and `end_after_ms` of 0 too: the form's "none"), and the
/// payload is JSON text.
fn schedule_from(b: SchedulerBody) -> emq::Result<Schedule> {
    let name = b.name.unwrap_or_default();
    if name.trim().is_empty() {
        return Err(invalid("a scheduler needs the name of the job it adds"));
    }
    let data = match b.data.as_deref().map(str::trim) {
        None | Some("") => Value::Null,
        Some(t) => emq::job::payload_from_text("the scheduled job's data", t)?,
    };
    let given = |t: Option<String>| t.filter(|t| !t.trim().is_empty());
    let ms = |v: Option<u64>| v.filter(|&m| m > 0).map(|m| Millis(m as f64));
    let options: JobSpec = match b.options {
        None | Some(Value::Null) => JobSpec::default(),
        Some(v) => serde_json::from_value(v).map_err(|err| invalid(format!("options: {err}")))?,
    };
    let spec = ScheduleSpec {
        name,
        data: Some(data),
        every: ms(b.every_ms),
        cron: given(b.cron),
        tz: given(b.tz),
        first_after: b.first_after_ms.map(|m| Millis(m as f64)),
        end_after: ms(b.end_after_ms),
        limit: b.limit.filter(|&l| l > 0).map(|l| l as f64),
        options,
    };
    Schedule::try_from(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_bodies_are_typed_and_refuse_unknown_fields() {
        let b = |v: Value| Bytes::from(v.to_string());
        let g: GroupBody = body_of("pause", &b(json!({"group": "t1"}))).unwrap();
        assert_eq!(g.group, "t1");
        for bad in [
            json!({}),
            json!({"group": "t1", "grup": 1}),
            json!({"group": 5}),
        ] {
            let err = body_of::<GroupBody>("pause", &b(bad.clone())).unwrap_err();
            assert_eq!(err.code(), ErrorCode::InvalidOption, "{bad}");
        }
        assert!(body_of::<GroupBody>("pause", &Bytes::from_static(b"{oops")).is_err());
        let w: WeightBody = body_of("weight", &b(json!({"group": "t", "weight": 3}))).unwrap();
        assert_eq!(w.weight, 3);
        assert!(body_of::<WeightBody>("weight", &b(json!({"group": "t", "weight": -1}))).is_err());
        // The cap must be given; null lifts it; no group is every group's default.
        let c: CapBody = body_of("concurrency", &b(json!({"limit": null}))).unwrap();
        assert_eq!((c.group, c.limit), (None, None));
        let c: CapBody = body_of("concurrency", &b(json!({"group": "t", "limit": 4}))).unwrap();
        assert_eq!((c.group.as_deref(), c.limit), (Some("t"), Some(4)));
        let err = body_of::<CapBody>("concurrency", &b(json!({"group": "t"}))).unwrap_err();
        assert!(err.message().contains("limit"), "{}", err.message());
        assert!(body_of::<CapBody>("concurrency", &b(json!({"limit": 1, "lmit": 2}))).is_err());
    }

    #[test]
    fn a_schedule_needs_a_name_and_one_repeat() {
        let b = |every, cron: Option<&str>| SchedulerBody {
            name: Some("n".into()),
            every_ms: every,
            cron: cron.map(String::from),
            ..SchedulerBody::default()
        };
        assert!(schedule_from(b(Some(1000), None)).is_ok());
        assert!(schedule_from(b(None, Some("* * * * *"))).is_ok());
        assert_eq!(
            schedule_from(b(None, None)).unwrap_err().code(),
            ErrorCode::InvalidOption
        );
        assert!(schedule_from(b(Some(1000), Some("* * * * *"))).is_err());
        let mut bad = b(Some(1000), None);
        bad.data = Some("{not json".into());
        assert_eq!(
            schedule_from(bad).unwrap_err().code(),
            ErrorCode::InvalidPayload
        );
        let mut opts = b(Some(1000), None);
        opts.options = Some(json!({"priority": "high"}));
        assert_eq!(
            schedule_from(opts).unwrap_err().code(),
            ErrorCode::InvalidOption
        );
    }

    #[test]
    fn the_scheduler_form_refuses_what_every_binding_refuses() {
        // An option the core does not know is refused, not silently dropped (the form read the
        // options as JobOptions, which ignored unknown fields).
        let mut opts = SchedulerBody {
            name: Some("n".into()),
            every_ms: Some(1000),
            ..SchedulerBody::default()
        };
        opts.options = Some(json!({"atempts": 3}));
        let err = schedule_from(opts).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidOption);
        assert!(err.message().contains("atempts"), "{}", err.message());
        // The options the bindings take, in their spelling, arrive as given.
        let mut ok = SchedulerBody {
            name: Some("n".into()),
            every_ms: Some(1000),
            ..SchedulerBody::default()
        };
        ok.options =
            Some(json!({"attempts": 3, "priority": 2, "backoff": {"type": "fixed", "delay": 500}}));
        let s = schedule_from(ok).unwrap();
        assert_eq!(s.options.attempts, 3);
        assert_eq!(s.options.priority, 2);
        // A field the form does not have is refused too.
        let unknown: Result<SchedulerBody, _> =
            serde_json::from_value(json!({"name": "n", "every_ms": 1000, "evry": 5}));
        assert!(unknown.is_err());
        // An empty zone field is the default zone.
        let cron = SchedulerBody {
            name: Some("n".into()),
            cron: Some("0 9 * * *".into()),
            tz: Some(String::new()),
            ..SchedulerBody::default()
        };
        match schedule_from(cron).unwrap().repeat {
            emq::Repeat::Cron { tz, .. } => assert_eq!(tz, "UTC"),
            other => panic!("{other:?}"),
        }
    }
}
