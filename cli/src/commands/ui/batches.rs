//! The dashboard's Batches page: a queue's batches newest first with their progress (the core's
//! [`emq::Queue::batches`]), one batch with a page of its failed jobs ([`emq::Batch::status`]),
//! and cancelling one ([`emq::Batch::cancel`]).

use super::api::{api_err, ApiResult, Shared};
use crate::commands::batches::state_word;
use crate::connect::server_time_ms;
use axum::extract::{Path, Query, State};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

/// Batches on one page, by default; failed jobs shown per page of one batch.
const BATCH_PAGE: u64 = 25;
const FAILED_PAGE: u64 = 50;

#[derive(Deserialize)]
pub struct PageQuery {
    offset: Option<u64>,
    limit: Option<u64>,
}

fn with_state(status: &emq::BatchStatus, mut v: Value) -> Value {
    v["state"] = json!(state_word(status));
    v
}

/// GET one page of a queue's batches (`offset`, `limit` up to the core's bound), newest first,
/// each with its state word, and the queue's summary.
pub async fn list(
    State(app): State<Shared>,
    Path(queue): Path<String>,
    Query(p): Query<PageQuery>,
) -> ApiResult {
    let e = |e| api_err(&app, e);
    let q = app.queue(&queue).await.map_err(e)?;
    let offset = p.offset.unwrap_or(0);
    let page = q
        .batches(offset, p.limit.unwrap_or(BATCH_PAGE))
        .await
        .map_err(e)?;
    let now = server_time_ms(&app.store).await.map_err(e)?;
    let summary = crate::commands::queues::summary(&q, now).await.map_err(e)?;
    let batches: Vec<Value> = page
        .batches
        .iter()
        .map(|b| with_state(&b.status, json!(b)))
        .collect();
    Ok(Json(json!({
        "queue": queue,
        "total": page.total,
        "offset": offset,
        "batches": batches,
        "summary": summary,
        "now_ms": now,
        "read_only": app.read_only,
        "datastore": app.secrets.shown_url(),
    })))
}

/// GET one batch: its counts, state and a page of its failed jobs (`offset`).
pub async fn one(
    State(app): State<Shared>,
    Path((queue, id)): Path<(String, String)>,
    Query(p): Query<PageQuery>,
) -> ApiResult {
    let e = |e| api_err(&app, e);
    let q = app.queue(&queue).await.map_err(e)?;
    let offset = p.offset.unwrap_or(0);
    let status = q
        .open_batch(&id)
        .map_err(e)?
        .status(offset, FAILED_PAGE)
        .await
        .map_err(e)?;
    let mut v = with_state(&status, json!(status));
    v["queue"] = json!(queue);
    v["offset"] = json!(offset);
    v["read_only"] = json!(app.read_only);
    Ok(Json(v))
}

/// POST cancel: the batch is cancelled (its jobs without an outcome cancelled, no callback falls
/// due); answers how many jobs were cancelled or told.
pub async fn cancel(
    State(app): State<Shared>,
    Path((queue, id)): Path<(String, String)>,
) -> ApiResult {
    let e = |e| api_err(&app, e);
    let q = app.queue(&queue).await.map_err(e)?;
    let n = q.open_batch(&id).map_err(e)?.cancel().await.map_err(e)?;
    Ok(Json(json!({"ok": true, "action": "cancel", "jobs": n})))
}
