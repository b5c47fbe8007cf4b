//! Background maintenance: the stalled sweep (one worker at a time), firing due job schedulers, retention trims.

use super::*;

pub(super) async fn sweep_loop(s: Arc<Shared>) {
    loop {
        if let Err(e) = sweep_once(&s).await {
            s.trouble("stalled sweep failed; will retry", &e);
        }
        // Dead-letter moves a crash cut between their steps (core/src/dead_letter.rs).
        if let Err(e) =
            crate::dead_letter::forward_due(&s.queue, crate::dead_letter::DEAD_LETTER_GRACE, 100)
                .await
        {
            s.trouble("finishing dead-letter moves failed; will retry", &e);
        }
        // Batched outcomes a crash left on their way to their batches (core/src/batch/).
        if let Err(e) = crate::batch::settle_due(&s.queue, crate::batch::BATCH_GRACE, 100).await {
            s.trouble("recording batched outcomes failed; will retry", &e);
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
        if r == "dead_letter" {
            if let Err(e) = crate::dead_letter::forward(q, id).await {
                s.trouble(
                    "could not move a stalled job to its dead-letter queue yet; will retry",
                    &e,
                );
            }
        }
        // 'unstarted': leased ahead and never started, given back uncounted (not a stall).
        if r == "wait" || r == "failed" || r == "dead_letter" {
            s.recovered.fetch_add(1, Ordering::Relaxed);
            let to = if r == "dead_letter" {
                "failed".into()
            } else {
                r
            };
            emit(&s.events, || WorkerEvent::Stalled { job_id: id, to });
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
                s.trouble("firing schedulers failed; will retry", &e);
                Duration::from_secs(1)
            }
        };
        tokio::time::sleep(wait).await;
    }
}

/// How soon after a job asking for its own retention was recorded as finished its worker trims
/// to it (jobs finishing meanwhile share the trim).
pub const JOB_RETENTION_DELAY: Duration = Duration::from_millis(100);

/// Per-job retention (`remove_on_complete: {count, age}`, [`Removal::Within`]) as a worker applies
/// it: the latest one per state of the jobs it finished (the latest job's wins, as in BullMQ where
/// each job's finish trims by its own option), noted once the outcome is recorded and trimmed to
/// within [`JOB_RETENTION_DELAY`] after, and again at every periodic trim. Like the queue-wide trim it is select-then-act ([`Queue::trim`]): the
/// ids are not known in advance, so `select_finished.lua` picks them and `remove_finished.lua`,
/// each key declared, removes them.
///
/// [`Removal::Within`]: crate::options::Removal::Within
#[derive(Default)]
pub(super) struct JobRetention {
    latest: Mutex<[Option<Retention>; 2]>,
    wake: Notify,
}

impl JobRetention {
    /// Notes the removal option of a job that finished in `state` (completed or failed).
    pub(super) fn finished(&self, state: JobState, removal: crate::options::Removal) {
        let Some(r) = removal.retention() else { return };
        let slot = usize::from(state == JobState::Failed);
        self.latest.lock().unwrap_or_else(|p| p.into_inner())[slot] = Some(r);
        self.wake.notify_one();
    }

    fn latest(&self) -> [Option<Retention>; 2] {
        *self.latest.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Reads the queue's job defaults again every [`crate::job_defaults::DEFAULTS_REFRESH`] (the
/// fetch loop read them before its first claim).
pub(super) async fn defaults_loop(s: Arc<Shared>) {
    loop {
        tokio::time::sleep(crate::job_defaults::DEFAULTS_REFRESH).await;
        if let Err(e) = s.refresh_defaults().await {
            s.trouble("reading the queue's job defaults failed; will retry", &e);
        }
    }
}

/// Every `trim_interval`: the metrics trim, dedup expiry and the queue-wide retention; then, and
/// soon after a job asking for one finished, the per-job retentions ([`JobRetention`]).
pub(super) async fn trim_loop(s: Arc<Shared>) {
    let mut next = tokio::time::Instant::now() + s.opts.trim_interval;
    loop {
        let periodic = tokio::select! {
            _ = tokio::time::sleep_until(next) => true,
            _ = s.job_retention.wake.notified() => {
                tokio::time::sleep(JOB_RETENTION_DELAY).await;
                false
            }
        };
        if periodic {
            next = tokio::time::Instant::now() + s.opts.trim_interval;
            if let Err(e) = s.queue.trim_metrics().await {
                s.trouble("metrics trim failed; will retry", &e);
            }
            if let Err(e) = s.queue.expire_dedup().await {
                s.trouble("dedup expiry failed; will retry", &e);
            }
            for (state, keep) in [
                (JobState::Completed, s.opts.completed),
                (JobState::Failed, s.opts.failed),
            ] {
                if let Err(e) = s.queue.trim(state, keep).await {
                    s.trouble("retention trim failed; will retry", &e);
                }
            }
        }
        let [completed, failed] = s.job_retention.latest();
        for (state, keep) in [(JobState::Completed, completed), (JobState::Failed, failed)] {
            if let Some(keep) = keep {
                if let Err(e) = s.queue.trim(state, keep).await {
                    s.trouble("a job's retention trim failed; will retry", &e);
                }
            }
        }
    }
}
