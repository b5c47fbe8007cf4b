//! The dashboard's Dead letters page: the dead-lettered jobs a queue holds (with their origin,
//! attempts and last failure: the core's [`emq::Queue::dead_letters`]), where this queue's own
//! failed jobs go ([`emq::Queue::dead_letter`]), and replaying them to their queues
//! ([`emq::Queue::replay_dead_letters`]), some by id or all.

use super::api::{api_err, ApiResult, Shared};
use super::ops::{body_of, invalid};
use crate::commands::dlq::letter_json;
use crate::connect::server_time_ms;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::Json;
use emq::JobId;
use serde::Deserialize;
use serde_json::{json, Value};

/// Dead-lettered jobs shown, by default and at most.
const LETTERS: u64 = 100;
const MAX_LETTERS: u64 = 1_000;
/// Most jobs one replay names.
const MAX_REPLAY: usize = 500;

#[derive(Deserialize)]
pub struct LettersQuery {
    limit: Option<u64>,
}

/// GET the dead-lettered jobs a queue holds (at most `limit`) and its own dead-letter queue.
pub async fn list(
    State(app): State<Shared>,
    Path(queue): Path<String>,
    Query(p): Query<LettersQuery>,
) -> ApiResult {
    let e = |e| api_err(&app, e);
    let q = app.queue(&queue).await.map_err(e)?;
    let limit = p.limit.unwrap_or(LETTERS).clamp(1, MAX_LETTERS);
    let jobs: Vec<Value> = q
        .dead_letters(limit)
        .await
        .map_err(e)?
        .iter()
        .map(letter_json)
        .collect();
    let target = q.dead_letter().await.map_err(e)?;
    let now = server_time_ms(&app.store).await.map_err(e)?;
    Ok(Json(json!({
        "queue": queue,
        "now_ms": now,
        "dead_letter": target,
        "limit": limit,
        "jobs": jobs,
        "read_only": app.read_only,
    })))
}

/// The body of replay: `{"ids": [...]}` (at most [`MAX_REPLAY`]) or `{"all": true}`.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct ReplayBody {
    #[serde(default)]
    ids: Option<Vec<String>>,
    #[serde(default)]
    all: bool,
}

/// POST replay: the named dead-lettered jobs (or all not running) go back to their queues,
/// attempts reset; answers what went where.
pub async fn replay(
    State(app): State<Shared>,
    Path(queue): Path<String>,
    body: Bytes,
) -> ApiResult {
    let e = |e| api_err(&app, e);
    let q = app.queue(&queue).await.map_err(e)?;
    let b: ReplayBody = body_of("replay", &body).map_err(e)?;
    let done = match (b.ids, b.all) {
        (None, true) => q.replay_dead_letters(None).await.map_err(e)?,
        (Some(ids), false) if !ids.is_empty() && ids.len() <= MAX_REPLAY => {
            let ids: Vec<JobId> = ids
                .iter()
                .map(|t| JobId::parse(t))
                .collect::<emq::Result<_>>()
                .map_err(e)?;
            q.replay_dead_letters(Some(&ids)).await.map_err(e)?
        }
        _ => {
            return Err(e(invalid(format!(
                "replay takes {{\"ids\": [1 to {MAX_REPLAY} ids]}} or {{\"all\": true}}"
            ))))
        }
    };
    Ok(Json(
        json!({"ok": true, "action": "replay", "replayed": done}),
    ))
}
