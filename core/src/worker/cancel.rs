//! Following the queue's `cancels` stream and telling the handlers of cancelled jobs this worker holds.

use super::*;

/// Follows the queue's `cancels` stream (a blocking XREAD on a dedicated connection, so a
/// request reaches the worker within one round trip) and tells the handler of each cancelled job
/// this worker holds; a request for a job not registered yet is kept for a while, for a claim on
/// its way.
pub(super) async fn cancel_loop(s: Arc<Shared>) {
    let k = s.queue.keys();
    let mut backoff = Duration::from_millis(100);
    let mut stream = loop {
        match crate::events::EventStream::new(s.queue.store().clone(), k.cancels.clone(), None)
            .await
        {
            Ok(st) => break st,
            Err(e) => {
                tracing::warn!(error = %e, "cannot follow the cancels stream; will retry");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    };
    loop {
        match stream.next_batch(s.opts.block_timeout, 100).await {
            Ok(events) => {
                backoff = Duration::from_millis(100);
                for ev in events {
                    let Some(id) = ev.job_id else { continue };
                    let reason = ev.fields.get("reason").cloned().unwrap_or_default();
                    cancel_held(&s, id, reason);
                }
            }
            Err(e) => {
                tracing::debug!(error = %e, "reading the cancels stream failed; will retry");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    }
}

/// How long a cancel request for a job this worker does not hold (yet) is kept.
pub(super) const EARLY_CANCEL_TTL: Duration = Duration::from_secs(5);

/// Tells the handler of a held job that it is cancelled (or marks a buffered one), or keeps the
/// request for a job not registered yet.
pub(super) fn cancel_held(s: &Shared, id: JobId, reason: String) {
    let mut flights = s.flights.lock().expect("flights");
    if let Some(f) = flights.get_mut(&id) {
        match &f.interrupt {
            Some(tx) => {
                interrupt(tx, Interrupt::Cancelled(reason));
            }
            None => f.cancel = Some(reason),
        }
        return;
    }
    let mut early = s.early_cancels.lock().expect("early cancels");
    let now = Instant::now();
    early.retain(|_, (_, at)| now.duration_since(*at) < EARLY_CANCEL_TTL);
    if early.len() < 10_000 {
        early.insert(id, (reason, now));
    }
}
