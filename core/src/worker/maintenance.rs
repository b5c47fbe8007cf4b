//! Background maintenance: the stalled sweep (one worker at a time), firing due job schedulers, retention trims.

use super::*;

pub(super) async fn sweep_loop(s: Arc<Shared>) {
    loop {
        if let Err(e) = sweep_once(&s).await {
            tracing::warn!(error = %e, "stalled sweep failed; will retry");
        }
        tokio::time::sleep(s.opts.stalled_interval).await;
    }
}

pub(super) async fn sweep_once(s: &Shared) -> Result<()> {
    let q = &s.queue;
    let ids: Vec<String> = script::SWEEP
        .on(s.queue.name(), None)?
        .arg(s.opts.stalled_interval.as_millis() as u64)
        .arg(1_000)
        .arg(q.max_events)
        .invoke(q.store())
        .await?;
    for id in ids.iter().filter_map(|t| JobId::parse(t).ok()) {
        let r: String = script::RECOVER
            .on(s.queue.name(), Some(id))?
            .arg(id)
            .arg(s.opts.max_stalls)
            .arg(
                if s.opts.failed == Retention::KEEP_ALL || s.opts.failed.count != Some(0) {
                    "1"
                } else {
                    "0"
                },
            )
            .arg(q.max_events)
            .invoke(q.store())
            .await?;
        // 'unstarted': leased ahead and never started, given back uncounted (not a stall).
        if r == "wait" || r == "failed" {
            s.recovered.fetch_add(1, Ordering::Relaxed);
        }
    }
    Ok(())
}

/// Fires due job schedulers (exactly once across workers: the fire script re-checks due-ness).
pub(super) async fn scheduler_loop(s: Arc<Shared>) {
    loop {
        let wait = match s.queue.fire_due_schedulers().await {
            Ok((_, Some(next_ms))) => Duration::from_millis(next_ms.clamp(20, 1_000)),
            Ok((_, None)) => Duration::from_secs(1),
            Err(e) => {
                tracing::warn!(error = %e, "firing schedulers failed; will retry");
                Duration::from_secs(1)
            }
        };
        tokio::time::sleep(wait).await;
    }
}

pub(super) async fn trim_loop(s: Arc<Shared>) {
    loop {
        tokio::time::sleep(s.opts.trim_interval).await;
        if let Err(e) = s.queue.trim_metrics().await {
            tracing::warn!(error = %e, "metrics trim failed; will retry");
        }
        if let Err(e) = s.queue.expire_dedup().await {
            tracing::warn!(error = %e, "dedup expiry failed; will retry");
        }
        for (state, keep) in [
            (JobState::Completed, s.opts.completed),
            (JobState::Failed, s.opts.failed),
        ] {
            if let Err(e) = s.queue.trim(state, keep).await {
                tracing::warn!(error = %e, "retention trim failed; will retry");
            }
        }
    }
}
