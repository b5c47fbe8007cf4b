//! Lease renewal: every in-flight job renewed in one `renew.lua` call; lost leases flagged to their handlers.

use super::*;
use std::collections::HashSet;

pub(super) async fn renew(
    s: &Shared,
    lease_ms: u64,
    pairs: &[(JobId, String)],
) -> Result<Vec<String>> {
    let mut lost = Vec::new();
    for chunk in pairs.chunks(500) {
        let mut inv = script::RENEW.on(s.queue.name(), None)?.arg(lease_ms);
        for (id, token) in chunk {
            inv = inv.arg(*id).arg(token);
        }
        let l: Vec<String> = inv.invoke(s.queue.store()).await?;
        lost.extend(l);
    }
    Ok(lost)
}

pub(super) async fn renew_loop(s: Arc<Shared>) {
    loop {
        let (groups, shortest) = {
            let flights = s.flights.lock().expect("flights");
            let mut groups: HashMap<u64, Vec<(JobId, String)>> = HashMap::new();
            let mut shortest = s.opts.lease.as_millis() as u64;
            for (id, f) in flights.iter() {
                groups
                    .entry(f.lease_ms)
                    .or_default()
                    .push((*id, f.token.clone()));
                shortest = shortest.min(f.lease_ms);
            }
            (groups, shortest)
        };
        for (lease_ms, pairs) in groups {
            let sent = Instant::now();
            match renew(&s, lease_ms, &pairs).await {
                Ok(lost) => {
                    let lost: HashSet<JobId> =
                        lost.iter().filter_map(|t| JobId::parse(t).ok()).collect();
                    let mut flights = s.flights.lock().expect("flights");
                    // Only the leases this call named (a job released and leased again meanwhile
                    // has a new token and its own reckoning).
                    for (id, token) in &pairs {
                        let Some(f) = flights.get_mut(id).filter(|f| &f.token == token) else {
                            continue;
                        };
                        if lost.contains(id) {
                            f.lost.store(true, Ordering::Relaxed);
                        } else {
                            // The server's lease now ends `lease_ms` after this call reached it
                            // (a job's own lease may be shorter than the claim's).
                            f.span = Duration::from_millis(lease_ms);
                            f.until = sent + f.span;
                        }
                    }
                }
                Err(e) => s.trouble("lease renewal failed; will retry", &e),
            }
        }
        tokio::time::sleep(Duration::from_millis((shortest / 3).max(50))).await;
    }
}

/// Reports that the runs of leased-ahead jobs have started (`started.lua`): from now on a stall of
/// theirs is charged. A lease found lost is flagged to its handler.
pub(super) async fn report_started(s: &Shared, pairs: &[(JobId, String)]) {
    let mut inv = match script::STARTED.on(s.queue.name(), None) {
        Ok(inv) => inv,
        Err(e) => {
            tracing::error!(error = %e, "emq: started refused before sending");
            return;
        }
    };
    for (id, token) in pairs {
        inv = inv.arg(*id).arg(token);
    }
    match inv.invoke::<Vec<String>>(s.queue.store()).await {
        Ok(lost) => {
            let flights = s.flights.lock().expect("flights");
            for id in lost.iter().filter_map(|t| JobId::parse(t).ok()) {
                if let Some(f) = flights.get(&id) {
                    f.lost.store(true, Ordering::Relaxed);
                }
            }
        }
        // The job's lease stays marked as leased ahead: if the worker dies during this run, the
        // job comes back uncounted once (its record then says so, and its next start is reported
        // before its handler runs).
        Err(e) => tracing::warn!(error = %e, "could not report a job's start"),
    }
}
