//! The dashboard's Metrics page data: a queue's jobs completed and failed per minute and its run
//! and wait times per minute as p50 / p95 / p99 (each the upper bound of the histogram bucket
//! holding it: the core's `emq::latency`), over the metrics window, with the lifetime figures; and
//! its last day per hour with its backlog (the core's `emq::metrics_history`).

use super::api::{api_err, ApiResult, Shared};
use crate::connect::server_time_ms;
use axum::extract::{Path, State};
use axum::Json;
use emq::latency::{Histogram, LATENCY_BUCKETS_MS};
use emq::metrics::METRICS_WINDOW_MINUTES;
use emq::metrics_history::{HourMetrics, METRICS_DAY_HOURS};
use serde_json::{json, Value};

/// p50, p95 and p99 of one histogram (bucket bounds, ms), and its count and mean.
fn quantiles(h: &Histogram) -> Value {
    let n = h.count();
    json!({
        "count": n,
        "p50": h.quantile_bound_ms(0.50),
        "p95": h.quantile_bound_ms(0.95),
        "p99": h.quantile_bound_ms(0.99),
        "mean_ms": if n == 0 { None } else { Some(h.sum_ms as f64 / n as f64) },
    })
}

fn per_minute(series: &[(u64, Histogram)]) -> Vec<Value> {
    series
        .iter()
        .map(|(minute, h)| {
            let mut v = quantiles(h);
            v["minute"] = json!(minute);
            v
        })
        .collect()
}

/// One hour of the day view: its counts, its largest backlog, its run and wait quantiles.
fn hour(h: &HourMetrics) -> Value {
    json!({
        "hour": h.hour,
        "completed": h.completed,
        "failed": h.failed,
        "backlog_max": h.backlog_max,
        "run": quantiles(&h.run),
        "wait": quantiles(&h.wait),
    })
}

/// GET a queue's metrics for its Metrics page.
pub async fn metrics(State(app): State<Shared>, Path(queue): Path<String>) -> ApiResult {
    let e = |e| api_err(&app, e);
    let q = app.queue(&queue).await.map_err(e)?;
    let m = q.metrics().await.map_err(e)?;
    let day = q.metrics_history().await.map_err(e)?;
    let now = server_time_ms(&app.store).await.map_err(e)?;
    let summary = crate::commands::queues::summary(&q, now).await.map_err(e)?;
    Ok(Json(json!({
        "queue": queue,
        "now_ms": now,
        "window_minutes": METRICS_WINDOW_MINUTES,
        "buckets_ms": LATENCY_BUCKETS_MS,
        "completed_per_minute": m.completed_per_minute,
        "failed_per_minute": m.failed_per_minute,
        "run_per_minute": per_minute(&m.run_per_minute),
        "wait_per_minute": per_minute(&m.wait_per_minute),
        "day_hours": METRICS_DAY_HOURS + 1,
        "hours": day.hours.iter().map(hour).collect::<Vec<_>>(),
        "backlog_per_minute": day.backlog_per_minute,
        "run": quantiles(&m.run),
        "wait": quantiles(&m.wait),
        "summary": summary,
        "read_only": app.read_only,
        "datastore": app.secrets.shown_url(),
    })))
}
