//! Worker-control latencies (issue 14), opt-in scenarios (`SCENARIOS=cancel_latency,wait_latency`):
//!
//! - `cancel_latency`: a job runs (its handler waits on [`JobContext::cancelled`]); the producer
//!   calls [`Queue::cancel`] and the time until the handler sees the interrupt is stamped. One job
//!   at a time, closed loop; the worker's default options (lease 30 s, renewed every lease / 3).
//! - `wait_latency`: add, then [`Queue::wait`] for the result (the `completed` event through the
//!   events stream, as a producer would): add → result seen by the producer, one job at a time,
//!   with an idle worker at concurrency 1.
//!
//! Both report p50 / p99 / max in milliseconds.

use crate::{e2s, open, percentile, BResult, Cfg};
use emq::{JobContext, JobOptions, Worker};
use serde_json::{json, Map, Value};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

fn summary(mut ms: Vec<f64>) -> Map<String, Value> {
    ms.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let mut m = Map::new();
    m.insert("n".into(), json!(ms.len()));
    m.insert("p50_ms".into(), json!(percentile(&ms, 50.0)));
    m.insert("p99_ms".into(), json!(percentile(&ms, 99.0)));
    m.insert(
        "max_ms".into(),
        json!(ms.last().copied().unwrap_or(f64::NAN)),
    );
    m
}

pub(crate) async fn cancel_latency(cfg: &Cfg, name: &str, n: u64) -> BResult<Map<String, Value>> {
    let q = open(cfg, name).await?;
    let (started_tx, mut started) = mpsc::unbounded_channel::<()>();
    let (seen_tx, mut seen) = mpsc::unbounded_channel::<Instant>();
    let worker = Worker::builder(q.clone())
        .concurrency(1)
        .handler(move |job: JobContext| {
            let (started_tx, seen_tx) = (started_tx.clone(), seen_tx.clone());
            async move {
                let _ = started_tx.send(());
                job.cancelled().await;
                let _ = seen_tx.send(Instant::now());
                Ok(Value::Null)
            }
        })
        .run()
        .map_err(e2s)?;
    let mut ms = Vec::with_capacity(n as usize);
    for i in 0..n {
        let id = q
            .add("c", json!({ "i": i }), JobOptions::default())
            .await
            .map_err(e2s)?;
        tokio::time::timeout(cfg.timeout, started.recv())
            .await
            .map_err(|_| format!("job {i} did not start"))?;
        let t0 = Instant::now();
        q.cancel(id, "bench").await.map_err(e2s)?;
        let t1 = tokio::time::timeout(Duration::from_secs(10), seen.recv())
            .await
            .map_err(|_| format!("job {i}: the handler did not see the cancel within 10 s"))?
            .ok_or("worker gone")?;
        ms.push(t1.duration_since(t0).as_secs_f64() * 1e3);
    }
    worker.close().await.map_err(e2s)?;
    q.close().await.map_err(e2s)?;
    Ok(summary(ms))
}

pub(crate) async fn wait_latency(cfg: &Cfg, name: &str, n: u64) -> BResult<Map<String, Value>> {
    let q = open(cfg, name).await?;
    let worker = Worker::builder(q.clone())
        .concurrency(1)
        .handler(|job: JobContext| {
            let v = job.data()["i"].clone();
            futures::future::ready(Ok(v))
        })
        .run()
        .map_err(e2s)?;
    let mut ms = Vec::with_capacity(n as usize);
    for i in 0..n {
        let t0 = Instant::now();
        let id = q
            .add("c", json!({ "i": i }), JobOptions::default())
            .await
            .map_err(e2s)?;
        let got = q.wait(id, cfg.timeout).await.map_err(e2s)?;
        let t1 = Instant::now();
        match got {
            Ok(v) if v == json!(i) => {}
            other => return Err(format!("job {i}: wait returned {other:?}")),
        }
        ms.push(t1.duration_since(t0).as_secs_f64() * 1e3);
        tokio::time::sleep(cfg.latency_gap).await;
    }
    worker.close().await.map_err(e2s)?;
    q.close().await.map_err(e2s)?;
    Ok(summary(ms))
}
