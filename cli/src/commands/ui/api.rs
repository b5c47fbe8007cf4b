//! The dashboard's routes: the embedded page, the JSON API (reads and actions, all through the
//! core's `Queue` API), and the live events over server-sent events.

use super::security::{self, Secrets};
use super::{batches, dead_letters, latency, ops};
use crate::commands::queues::{open_all, registered, summary, Repair};
use crate::connect::server_time_ms;
use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use emq::{Error, ErrorCode, IdMinter, Job, JobId, JobState, Queue, QueueName, Store};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::broadcast;

const INDEX: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const QUEUE_PAGES_JS: &str = include_str!("assets/queue_pages.js");
const APP_CSS: &str = include_str!("assets/app.css");

/// Most jobs on one page of a queue.
const MAX_PAGE: u64 = 200;
/// How often the event hub looks for new queues.
const HUB_REFRESH: Duration = Duration::from_secs(3);

/// What every handler shares.
pub struct App {
    pub(super) store: Store,
    minter: Arc<IdMinter>,
    pub(super) secrets: Secrets,
    token: Option<String>,
    pub(super) read_only: bool,
    live: broadcast::Sender<Value>,
    followed: Mutex<HashMap<QueueName, emq::TaskHandle>>,
}

pub(super) type Shared = Arc<App>;

impl App {
    /// Opens the id minter and starts the event hub.
    pub async fn start(
        store: Store,
        secrets: Secrets,
        token: Option<String>,
        read_only: bool,
    ) -> emq::Result<Shared> {
        let minter = Arc::new(IdMinter::start(store.clone()).await?);
        let (live, _) = broadcast::channel(1024);
        let app = Arc::new(App {
            store,
            minter,
            secrets,
            token,
            read_only,
            live,
            followed: Mutex::new(HashMap::new()),
        });
        let hub = app.clone();
        tokio::spawn(async move {
            // Queues made before the registry: one bounded SCAN at start when it is empty, in the
            // background (pages list what is registered meanwhile).
            if let Ok(names) = registered(&hub.store, Repair::IfEmpty).await {
                for n in names {
                    hub.follow(n);
                }
            }
            loop {
                if let Ok(names) = emq::registry::logical_queues(&hub.store).await {
                    // A queue that left the registry (obliterated) is no longer followed.
                    hub.followed
                        .lock()
                        .expect("followed")
                        .retain(|q, _| names.contains(q));
                    for n in names {
                        hub.follow(n);
                    }
                }
                tokio::time::sleep(HUB_REFRESH).await;
            }
        });
        Ok(app)
    }

    /// Follows one queue's events into the broadcast (once per queue).
    fn follow(self: &Arc<Self>, name: QueueName) {
        let mut followed = self.followed.lock().expect("followed");
        if followed.contains_key(&name) {
            return;
        }
        let live = self.live.clone();
        let (store, minter, queue) = (self.store.clone(), self.minter.clone(), name.clone());
        let task = emq::TaskHandle::spawn(async move {
            // With its stored partition count (a partitioned queue's events are its partitions').
            let q = loop {
                match super::super::queues::open_one(&store, &minter, queue.as_str()).await {
                    Ok(q) => break q,
                    Err(_) => tokio::time::sleep(Duration::from_secs(1)).await,
                }
            };
            let mut stream = None;
            loop {
                if stream.is_none() {
                    match q.events(None).await {
                        Ok(s) => stream = Some(s),
                        Err(_) => {
                            tokio::time::sleep(Duration::from_secs(1)).await;
                            continue;
                        }
                    }
                }
                let s = stream.as_mut().expect("stream");
                match s.next_batch(Duration::from_secs(2), 200).await {
                    Ok(events) => {
                        for e in events {
                            let _ = live.send(json!({
                                "queue": q.name().as_str(),
                                "kind": e.kind,
                                "job_id": e.job_id.map(|id| id.to_string()),
                            }));
                        }
                    }
                    Err(_) => tokio::time::sleep(Duration::from_secs(1)).await,
                }
            }
        });
        followed.insert(name, task);
    }

    /// Opens queue `name` with its stored partition count (a partitioned queue's handle spans
    /// its partitions).
    pub(super) async fn queue(&self, name: &str) -> emq::Result<Queue> {
        super::super::queues::open_one(&self.store, &self.minter, name).await
    }
}

/// An API error: `{"error": {"code", "message"}}` with the message scrubbed of secrets.
pub(super) struct ApiError(pub StatusCode, pub String, pub String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.0,
            Json(json!({"error": {"code": self.1, "message": self.2}})),
        )
            .into_response()
    }
}

pub(super) type ApiResult = Result<Json<Value>, ApiError>;

pub(super) fn api_err(app: &App, e: Error) -> ApiError {
    let status = match e.code() {
        ErrorCode::JobNotFound => StatusCode::NOT_FOUND,
        c if crate::exit::code_for(c) == crate::exit::INVALID_INPUT => StatusCode::BAD_REQUEST,
        ErrorCode::InvalidState => StatusCode::CONFLICT,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    let message = app.secrets.scrub(e.message());
    eprintln!("emq ui: error[{}]: {message}", e.code().as_str());
    ApiError(status, e.code().as_str().to_string(), message)
}

/// The routes, behind the access check.
pub fn router(app: Shared) -> Router {
    Router::new()
        .route("/", get(|| async { Html(INDEX) }))
        .route(
            "/app.js",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
                    APP_JS,
                )
            }),
        )
        .route(
            "/queue_pages.js",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
                    QUEUE_PAGES_JS,
                )
            }),
        )
        .route(
            "/app.css",
            get(|| async { ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], APP_CSS) }),
        )
        .route("/login", get(login))
        .route("/api/overview", get(overview))
        .route("/api/workers", get(workers))
        .route("/api/queues/{queue}/jobs", get(jobs))
        .route("/api/queues/{queue}/jobs/{id}", get(job))
        .route("/api/queues/{queue}/jobs/{id}/{action}", post(job_action))
        .route("/api/queues/{queue}/find", get(ops::find))
        .route("/api/queues/{queue}/bulk", post(ops::bulk))
        .route("/api/schedulers", get(ops::schedulers))
        .route("/api/queues/{queue}/schedulers/{id}", get(ops::scheduler))
        .route(
            "/api/queues/{queue}/schedulers/{id}/{action}",
            post(ops::scheduler_action),
        )
        .route("/api/queues/{queue}/groups", get(ops::groups))
        .route(
            "/api/queues/{queue}/groups/{action}",
            post(ops::group_action),
        )
        .route("/api/queues/{queue}/batches", get(batches::list))
        .route("/api/queues/{queue}/batches/{id}", get(batches::one))
        .route(
            "/api/queues/{queue}/batches/{id}/cancel",
            post(batches::cancel),
        )
        .route("/api/queues/{queue}/dead-letters", get(dead_letters::list))
        .route("/api/queues/{queue}/metrics", get(latency::metrics))
        .route(
            "/api/queues/{queue}/dead-letters/replay",
            post(dead_letters::replay),
        )
        .route("/api/queues/{queue}/{action}", post(queue_action))
        .route("/api/events", get(events))
        .layer(middleware::from_fn_with_state(app.clone(), guard))
        .layer(middleware::map_response(headers))
        .layer(middleware::from_fn(timing))
        .with_state(app)
}

/// `Server-Timing: app;dur=<ms>` on every response: the server's time for it (read by the
/// benchmark, `bench/ui_bench.sh`, and visible in a browser's network panel).
async fn timing(req: Request, next: Next) -> Response {
    let t = std::time::Instant::now();
    let mut res = next.run(req).await;
    let ms = t.elapsed().as_secs_f64() * 1000.0;
    if let Ok(v) = format!("app;dur={ms:.2}").parse() {
        res.headers_mut().insert("server-timing", v);
    }
    res
}

/// Headers on every response: no framing, no sniffing, a strict content policy, no caching.
async fn headers(mut res: Response) -> Response {
    let h = res.headers_mut();
    for (k, v) in [
        ("x-frame-options", "DENY"),
        ("x-content-type-options", "nosniff"),
        ("referrer-policy", "no-referrer"),
        ("cache-control", "no-store"),
        (
            "content-security-policy",
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
             connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
        ),
    ] {
        h.insert(k, v.parse().expect("static header"));
    }
    res
}

/// The access check of every request (see the module docs of `ui`).
async fn guard(State(app): State<Shared>, req: Request, next: Next) -> Response {
    let path = req.uri().path().to_string();
    match &app.token {
        None => {
            if !security::loopback_host(req.headers()) {
                return (
                    StatusCode::FORBIDDEN,
                    "this dashboard answers only to a loopback Host",
                )
                    .into_response();
            }
        }
        Some(token) if path != "/login" => {
            let ok = security::request_token(req.headers())
                .map(|t| security::same_secret(&t, token))
                .unwrap_or(false);
            if !ok {
                return (
                    StatusCode::UNAUTHORIZED,
                    Html(
                        "<!doctype html><title>emq ui</title><p>An access token is required: \
                          open <code>/login?token=YOUR_TOKEN</code> once, or send \
                          <code>Authorization: Bearer YOUR_TOKEN</code>.</p>",
                    ),
                )
                    .into_response();
            }
        }
        Some(_) => {}
    }
    if req.method() == axum::http::Method::POST {
        if let Some((status, code, message)) =
            security::action_refusal(req.headers(), app.read_only)
        {
            return ApiError(status, code.into(), message).into_response();
        }
    }
    next.run(req).await
}

#[derive(Deserialize)]
struct LoginQuery {
    token: Option<String>,
}

/// `/login?token=…`: sets the token cookie and goes to the overview.
async fn login(State(app): State<Shared>, Query(q): Query<LoginQuery>) -> Response {
    match (&app.token, q.token) {
        (Some(want), Some(given)) if security::same_secret(&given, want) => (
            StatusCode::SEE_OTHER,
            [
                (
                    header::SET_COOKIE,
                    format!(
                        "{}={given}; HttpOnly; SameSite=Strict; Path=/",
                        security::COOKIE
                    ),
                ),
                (header::LOCATION, "/".to_string()),
            ],
        )
            .into_response(),
        (None, _) => (StatusCode::SEE_OTHER, [(header::LOCATION, "/")]).into_response(),
        _ => (StatusCode::UNAUTHORIZED, "wrong token").into_response(),
    }
}

/// Every registered queue with counts, paused, oldest waiting age, per-minute finished counts
/// over the metrics window, and its workers.
async fn overview(State(app): State<Shared>) -> ApiResult {
    let e = |e| api_err(&app, e);
    let names = registered(&app.store, Repair::Never).await.map_err(e)?;
    let now = server_time_ms(&app.store).await.map_err(e)?;
    let mut queues = Vec::new();
    for q in open_all(&app.store, &names).await.map_err(e)? {
        let s = summary(&q, now).await.map_err(e)?;
        let m = q.metrics().await.map_err(e)?;
        let ws = q.workers().await.map_err(e)?;
        queues.push(json!({
            "summary": s,
            "completed_per_minute": m.completed_per_minute,
            "failed_per_minute": m.failed_per_minute,
            "workers": ws,
        }));
    }
    Ok(Json(json!({
        "datastore": app.secrets.shown_url(),
        "read_only": app.read_only,
        "now_ms": now,
        "window_minutes": emq::metrics::METRICS_WINDOW_MINUTES,
        "queues": queues,
    })))
}

/// Every live worker of every registered queue.
async fn workers(State(app): State<Shared>) -> ApiResult {
    let e = |e| api_err(&app, e);
    let all = crate::commands::queues::workers_of(&app.store, &[])
        .await
        .map_err(e)?;
    let now = server_time_ms(&app.store).await.map_err(e)?;
    Ok(Json(
        json!({"now_ms": now, "read_only": app.read_only, "datastore": app.secrets.shown_url(), "workers": all}),
    ))
}

#[derive(Deserialize)]
struct JobsQuery {
    state: Option<String>,
    offset: Option<u64>,
    limit: Option<u64>,
}

/// A job as the pages show it: its JSON, and `unreadable` ({code, message}) when a stored field
/// of it could not be read (that field is null then).
pub(crate) fn job_json(j: &Job) -> Value {
    let mut v = j.to_json();
    if let (Some(e), Some(o)) = (j.unreadable(), v.as_object_mut()) {
        o.insert(
            "unreadable".into(),
            json!({"code": e.code().as_str(), "message": e.message()}),
        );
    }
    v
}

/// One page of the jobs in one state, newest first.
async fn jobs(
    State(app): State<Shared>,
    Path(queue): Path<String>,
    Query(p): Query<JobsQuery>,
) -> ApiResult {
    let e = |e| api_err(&app, e);
    let q = app.queue(&queue).await.map_err(e)?;
    let state = JobState::parse(p.state.as_deref().unwrap_or("waiting")).map_err(e)?;
    let offset = p.offset.unwrap_or(0);
    let limit = p.limit.unwrap_or(25).clamp(1, MAX_PAGE);
    let now = server_time_ms(&app.store).await.map_err(e)?;
    let s = summary(&q, now).await.map_err(e)?;
    let in_state = s.counts.get(state);
    let list = q
        .list_newest_first(state, in_state, offset, limit)
        .await
        .map_err(e)?;
    Ok(Json(json!({
        "summary": s,
        "read_only": app.read_only,
        "datastore": app.secrets.shown_url(),
        "now_ms": now,
        "state": state.as_str(),
        "offset": offset,
        "limit": limit,
        "in_state": in_state,
        "jobs": list.iter().map(job_json).collect::<Vec<_>>(),
    })))
}

/// One job, with its logs, its timeline (its events among the stream's newest entries, at the
/// server's times) and its flow (parent and children, each with its state).
async fn job(State(app): State<Shared>, Path((queue, id)): Path<(String, String)>) -> ApiResult {
    let e = |e| api_err(&app, e);
    let q = app.queue(&queue).await.map_err(e)?;
    let id = JobId::parse(&id).map_err(e)?;
    let Some(job) = q.get_as_stored(id).await.map_err(e)? else {
        return Err(e(crate::commands::job::not_found(&queue, id)));
    };
    let logs = q.logs(id).await.map_err(e)?;
    let now = server_time_ms(&app.store).await.map_err(e)?;
    let timeline = ops::timeline(&q, &job).await.map_err(e)?;
    let flow = ops::flow(&app, &q, &job).await.map_err(e)?;
    Ok(Json(json!({
        "job": job_json(&job),
        "logs": logs,
        "timeline": timeline,
        "flow": flow,
        "now_ms": now,
        "read_only": app.read_only,
        "datastore": app.secrets.shown_url(),
    })))
}

#[derive(Deserialize, Default)]
struct JobActionBody {
    priority: Option<u32>,
    reason: Option<String>,
}

/// POST retry | promote | remove | cancel (`reason`) | priority (`priority`) on one job.
async fn job_action(
    State(app): State<Shared>,
    Path((queue, id, action)): Path<(String, String, String)>,
    body: Option<Json<JobActionBody>>,
) -> ApiResult {
    let e = |e| api_err(&app, e);
    let q = app.queue(&queue).await.map_err(e)?;
    let id = JobId::parse(&id).map_err(e)?;
    let body = body.map(|Json(b)| b).unwrap_or_default();
    let outcome = ops::act_on(&q, id, &action, body.priority, body.reason.as_deref())
        .await
        .map_err(e)?;
    if outcome.done {
        Ok(Json(
            json!({"ok": true, "action": action, "id": id.to_string(), "outcome": outcome.what}),
        ))
    } else {
        Err(ApiError(
            StatusCode::CONFLICT,
            "invalid_state".into(),
            format!("{action} refused: {} ({})", outcome.what, id),
        ))
    }
}

#[derive(Deserialize, Default)]
struct QueueActionBody {
    state: Option<String>,
    grace_ms: Option<u64>,
    delayed: Option<bool>,
}

/// POST pause | resume | drain | clean | retry-failed on a queue.
async fn queue_action(
    State(app): State<Shared>,
    Path((queue, action)): Path<(String, String)>,
    body: Option<Json<QueueActionBody>>,
) -> ApiResult {
    let e = |e| api_err(&app, e);
    let q = app.queue(&queue).await.map_err(e)?;
    let body = body.map(|Json(b)| b).unwrap_or_default();
    let n: u64 = match action.as_str() {
        "pause" => q.pause().await.map(|_| 0),
        "resume" => q.resume().await.map(|_| 0),
        "drain" => q.drain(body.delayed.unwrap_or(false)).await,
        "retry-failed" => q.retry_failed().await,
        "clean" => {
            let state = JobState::parse(body.state.as_deref().unwrap_or("completed")).map_err(e)?;
            if !matches!(state, JobState::Completed | JobState::Failed) {
                return Err(e(Error::new(
                    ErrorCode::InvalidOption,
                    "clean takes completed or failed",
                )));
            }
            q.clean(
                state,
                Duration::from_millis(body.grace_ms.unwrap_or(0)),
                10_000,
            )
            .await
        }
        other => Err(Error::new(
            ErrorCode::InvalidOption,
            format!("no queue action {other:?} (pause, resume, drain, clean, retry-failed)"),
        )),
    }
    .map_err(e)?;
    Ok(Json(json!({"ok": true, "action": action, "count": n})))
}

/// The queues' events as server-sent events (`data: {"queue", "kind", "job_id"}`).
async fn events(State(app): State<Shared>, _h: HeaderMap) -> impl IntoResponse {
    let rx = app.live.subscribe();
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        let ev = match rx.recv().await {
            Ok(v) => SseEvent::default().data(v.to_string()),
            Err(broadcast::error::RecvError::Lagged(_)) => {
                SseEvent::default().event("lagged").data("{}")
            }
            Err(broadcast::error::RecvError::Closed) => return None,
        };
        Some((Ok::<_, std::convert::Infallible>(ev), rx))
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}
