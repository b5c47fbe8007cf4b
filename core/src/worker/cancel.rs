//! Following the queue's `cancels` stream and telling the handlers of cancelled jobs this worker holds.

use super::*;

/// Follows the queue's `cancels` stream (a blocking XREAD on a dedicated connection, so a
/// request reaches the worker within one round trip) and tells the handler of each cancelled job
/// this worker holds; a request for a job not registered yet is kept for a while, for a claim on
/// its way. Its place in the stream is pinned before the worker's first claim (see
/// [`Shared::cancels_followed`]).
pub(super) async fn cancel_loop(s: Arc<Shared>) {
    let k = s.queue.keys();
    let mut backoff = Duration::from_millis(100);
    #[cfg(feature = "testing")]
    if let Some(d) = follow_delay(s.queue.name().as_str()) {
        tokio::time::sleep(d).await;
    }
    let mut stream = loop {
        match crate::events::EventStream::new(s.queue.store().clone(), k.cancels.clone(), None)
            .await
        {
            Ok(st) => {
                s.cancels_followed.send_replace(true);
                break st;
            }
            Err(e) => {
                s.trouble("cannot follow the cancels stream; will retry", &e);
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

/// Waits until [`cancel_loop`] follows the `cancels` stream (or the worker stops).
pub(super) async fn cancels_followed(s: &Shared) {
    let mut rx = s.cancels_followed.subscribe();
    tokio::select! {
        _ = rx.wait_for(|followed| *followed) => {}
        _ = s.stop.notified() => {}
    }
}

#[cfg(feature = "testing")]
static FOLLOW_DELAYS: std::sync::Mutex<Option<HashMap<String, Duration>>> =
    std::sync::Mutex::new(None);

/// For `core/tests` (feature `testing`): a worker on `queue` starts following its `cancels`
/// stream only after `delay`, as a worker whose task is slow to be scheduled would.
#[cfg(feature = "testing")]
#[doc(hidden)]
pub fn delay_cancel_follow(queue: &str, delay: Duration) {
    let mut g = FOLLOW_DELAYS.lock().unwrap_or_else(|p| p.into_inner());
    g.get_or_insert_with(HashMap::new)
        .insert(queue.to_string(), delay);
}

#[cfg(feature = "testing")]
fn follow_delay(queue: &str) -> Option<Duration> {
    let g = FOLLOW_DELAYS.lock().unwrap_or_else(|p| p.into_inner());
    g.as_ref().and_then(|m| m.get(queue).copied())
}
