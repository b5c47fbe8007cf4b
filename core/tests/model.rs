//! Model-based test (issue 16): a seeded random sequence of add / claim / complete / fail / crash /
//! sweep / pause / resume / cancel / late completion, run against a small reference model and a
//! real server at once. After every step the model and the server must agree on each job's state,
//! the order of the ready jobs, the counts per state, and the queue's audit must be clean.
//!
//! The server side is driven by the very scripts a worker runs (`claim`, `complete`, `fail`,
//! `renew`, `sweep`, `recover`) and by the `Queue` API (add, pause, resume, cancel), so each step is
//! one transition the model can predict. A *crash* is a worker that stops without finishing: its
//! lease is run out (renewed to 0 ms, as if the lease had passed) and its token is kept as a stale
//! one, for a *late completion* later (which must be refused and change nothing). A *sweep* is the
//! stall sweep plus the recovery of each id it returns.
//!
//! Bounded: `EMQ_MODEL_STEPS` steps per topology (300 by default, a few seconds) and at most
//! `EMQ_MODEL_SECS` seconds (60); `EMQ_MODEL_SEED` replays a run (the seed is printed).

mod common;

use emq::testing::script;
use emq::{CancelOutcome, JobId, JobOptions, JobPart, JobState, Queue};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

/// Stalls a job may have before a sweep fails it (the recover script's `max_stalls`).
const MAX_STALLS: u32 = 1;
const LEASE_MS: u64 = 60_000;
const MAX_EVENTS: u64 = 1_000;

#[derive(Clone, Debug, PartialEq)]
enum St {
    /// In wait, or in paused while the queue is paused (the model's `ready` holds the order).
    Ready,
    /// Leased with `token`; `crashed`: its worker is gone and its lease ran out.
    Active {
        token: String,
        crashed: bool,
    },
    Completed,
    Failed,
}

#[derive(Clone, Debug)]
struct MJob {
    id: JobId,
    attempts: u32,
    atts: u32,
    stalls: u32,
    cancel: bool,
    st: St,
}

#[derive(Default)]
struct Model {
    jobs: Vec<MJob>,
    /// Indexes of the ready jobs, next to be claimed first.
    ready: VecDeque<usize>,
    paused: bool,
    /// (job index, token) of leases that were lost: a late completion with one is refused.
    stale: Vec<(usize, String)>,
}

impl Model {
    fn index(&self, id: JobId) -> usize {
        self.jobs
            .iter()
            .position(|j| j.id == id)
            .expect("a job of the model")
    }
    fn in_state(&self, f: impl Fn(&St) -> bool) -> Vec<usize> {
        (0..self.jobs.len())
            .filter(|&i| f(&self.jobs[i].st))
            .collect()
    }
    fn live(&self) -> Vec<usize> {
        self.in_state(|s| matches!(s, St::Active { crashed: false, .. }))
    }
}

fn token_of(m: &Model, i: usize) -> String {
    match &m.jobs[i].st {
        St::Active { token, .. } => token.clone(),
        other => panic!("job {i} is {other:?}, not active"),
    }
}

async fn claim(q: &Queue) -> Option<(JobId, String)> {
    let reply: Vec<redis::Value> = script::CLAIM
        .on(q.name(), None)
        .unwrap()
        .arg(1)
        .arg(LEASE_MS)
        .arg(MAX_EVENTS)
        .arg(1) // starts at once: a started lease, charged if it stalls
        .invoke(q.store())
        .await
        .unwrap();
    let mut it = reply.into_iter().skip(1);
    match (it.next(), it.next()) {
        (Some(id), Some(token)) => {
            let id: String = redis::from_redis_value(id).unwrap();
            let token: String = redis::from_redis_value(token).unwrap();
            assert!(it.next().is_none(), "one job asked for, more claimed");
            Some((JobId::parse(&id).unwrap(), token))
        }
        _ => None,
    }
}

/// Completes one job with `token`; true when the server took it (false: the lease was lost).
async fn complete(q: &Queue, id: JobId, token: &str) -> bool {
    let (lost, next): (Vec<i64>, Vec<redis::Value>) = script::COMPLETE
        .on(q.name(), None)
        .unwrap()
        .key(&q.name().job_key(id, JobPart::Record))
        .key(&q.name().job_key(id, JobPart::Logs))
        .arg(0)
        .arg(LEASE_MS)
        .arg(MAX_EVENTS)
        .arg(0) // no next job starts
        .arg("") // no leased-ahead start to report
        .arg("") // no latencies to count
        .arg(id)
        .arg(token)
        .arg("\"done\"")
        .arg("1") // keep the record; no dedup key
        .invoke(q.store())
        .await
        .unwrap();
    assert!(next.len() <= 1, "no next job asked for: {next:?}");
    assert!(
        lost.is_empty() || lost == [1],
        "one job completed: {lost:?}"
    );
    lost.is_empty()
}

async fn fail(q: &Queue, id: JobId, token: &str, retry: bool) -> String {
    script::FAIL
        .on(q.name(), Some(id))
        .unwrap()
        .arg(id)
        .arg(token)
        .arg(json!({"code": "handler_failed", "message": "model", "stack": ""}).to_string())
        .arg(0)
        .arg(if retry { "1" } else { "0" })
        .arg("1")
        .arg(MAX_EVENTS)
        .arg(1) // the attempts the worker ran with (the record's own win)
        .invoke(q.store())
        .await
        .unwrap()
}

/// The worker holding `id` is gone and its lease has passed: renewed to 0 ms, it is expired now.
async fn run_out_lease(q: &Queue, id: JobId, token: &str) {
    let lost: Vec<String> = script::RENEW
        .on(q.name(), None)
        .unwrap()
        .arg(0)
        .arg(id)
        .arg(token)
        .invoke(q.store())
        .await
        .unwrap();
    assert!(lost.is_empty(), "the lease of {id} was held: {lost:?}");
}

/// The stall sweep and the recovery of each id it returns, in its order: (id, outcome) pairs.
async fn sweep(q: &Queue) -> Vec<(JobId, String)> {
    // The sweep lock only spaces out sweeps of many workers; each model step is a sweep of its own.
    let _: i64 = redis::cmd("DEL")
        .arg(&q.keys().sweep)
        .query_async(&mut q.store().conn())
        .await
        .unwrap();
    // An expiry set in the same millisecond as the sweep is not past it yet.
    tokio::time::sleep(Duration::from_millis(2)).await;
    let ids: Vec<String> = script::SWEEP
        .on(q.name(), None)
        .unwrap()
        .arg(60_000)
        .arg(1_000)
        .arg(MAX_EVENTS)
        .invoke(q.store())
        .await
        .unwrap();
    let mut out = Vec::new();
    for id in ids.iter().map(|s| JobId::parse(s).unwrap()) {
        let r: String = script::RECOVER
            .on(q.name(), Some(id))
            .unwrap()
            .arg(id)
            .arg(MAX_STALLS)
            .arg("1")
            .arg(MAX_EVENTS)
            .invoke(q.store())
            .await
            .unwrap();
        out.push((id, r));
    }
    out
}

/// The model and the server agree on every job's state, the ready order, the counts, the attempts
/// and stalls of each job; the audit is clean.
async fn check(q: &Queue, m: &Model, step: usize, op: &str) {
    let ctx = format!("step {step} ({op})");
    let ready_state = if m.paused {
        JobState::Paused
    } else {
        JobState::Waiting
    };
    let ready: Vec<JobId> = m.ready.iter().map(|&i| m.jobs[i].id).collect();
    assert_eq!(
        q.list_ids(ready_state, 0, 10_000).await.unwrap(),
        ready,
        "{ctx}: ready jobs in order"
    );
    let other_ready = if m.paused {
        JobState::Waiting
    } else {
        JobState::Paused
    };
    assert!(
        q.list_ids(other_ready, 0, 10_000).await.unwrap().is_empty(),
        "{ctx}: nothing in {other_ready:?}"
    );
    let sorted = |mut v: Vec<JobId>| {
        v.sort();
        v
    };
    for (state, want) in [
        (
            JobState::Active,
            m.in_state(|s| matches!(s, St::Active { .. })),
        ),
        (JobState::Completed, m.in_state(|s| *s == St::Completed)),
        (JobState::Failed, m.in_state(|s| *s == St::Failed)),
    ] {
        let want: Vec<JobId> = sorted(want.iter().map(|&i| m.jobs[i].id).collect());
        let got = sorted(q.list_ids(state, 0, 10_000).await.unwrap());
        assert_eq!(got, want, "{ctx}: jobs {state:?}");
    }
    let c = q.counts().await.unwrap();
    let n = |f: &dyn Fn(&St) -> bool| m.in_state(f).len() as u64;
    assert_eq!(
        (c.get(ready_state), c.active, c.completed, c.failed),
        (
            m.ready.len() as u64,
            n(&|s| matches!(s, St::Active { .. })),
            n(&|s| *s == St::Completed),
            n(&|s| *s == St::Failed),
        ),
        "{ctx}: counts {c:?}"
    );
    assert_eq!(c.total(), m.jobs.len() as u64, "{ctx}: jobs held {c:?}");
    for j in &m.jobs {
        let got = q.get(j.id).await.unwrap().expect("the job's record");
        let state = match j.st {
            St::Ready => ready_state,
            St::Active { .. } => JobState::Active,
            St::Completed => JobState::Completed,
            St::Failed => JobState::Failed,
        };
        assert_eq!(
            (got.state, got.attempts_made, got.stalls),
            (Some(state), j.atts, j.stalls),
            "{ctx}: state, attempts and stalls of {}",
            j.id
        );
    }
    let a = q.audit().await.unwrap();
    assert!(a.ok(), "{ctx}: audit {:?}", a.problems);
    let crashed = n(&|s| matches!(s, St::Active { crashed: true, .. }));
    assert_eq!(a.stalled_pending, crashed, "{ctx}: stalled-pending");
}

async fn run_model(
    q: Queue,
    seed: u64,
    steps: usize,
    deadline: Instant,
) -> HashMap<&'static str, u32> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut m = Model::default();
    let mut done: HashMap<&'static str, u32> = HashMap::new();
    for step in 0..steps {
        assert!(
            Instant::now() < deadline,
            "seed {seed}: past the time bound at step {step}"
        );
        let roll = rng.gen_range(0..100);
        let op: &'static str = match roll {
            0..=15 => "add",
            16..=39 => "claim",
            40..=49 => "complete",
            50..=58 => "fail",
            59..=68 => "crash",
            69..=77 => "sweep",
            78..=80 => "pause",
            81..=86 => "resume",
            87..=92 => "cancel",
            _ => "late_complete",
        };
        let pick =
            |rng: &mut StdRng, v: &[usize]| (!v.is_empty()).then(|| v[rng.gen_range(0..v.len())]);
        let applied = match op {
            "add" => {
                let attempts = rng.gen_range(1..=3);
                let opts = JobOptions {
                    attempts,
                    ..JobOptions::default()
                };
                let id = q.add("model", json!(m.jobs.len()), opts).await.unwrap();
                m.jobs.push(MJob {
                    id,
                    attempts,
                    atts: 0,
                    stalls: 0,
                    cancel: false,
                    st: St::Ready,
                });
                m.ready.push_back(m.jobs.len() - 1);
                true
            }
            "claim" => {
                let got = claim(&q).await;
                if m.paused || m.ready.is_empty() {
                    assert_eq!(got, None, "step {step}: nothing to claim");
                    false
                } else {
                    let i = m.ready.pop_front().unwrap();
                    let (id, token) = got.unwrap_or_else(|| panic!("step {step}: a claim"));
                    assert_eq!(
                        id, m.jobs[i].id,
                        "step {step}: the oldest ready job is claimed"
                    );
                    m.jobs[i].st = St::Active {
                        token,
                        crashed: false,
                    };
                    true
                }
            }
            "complete" => match pick(&mut rng, &m.live()) {
                Some(i) => {
                    let token = token_of(&m, i);
                    assert!(
                        complete(&q, m.jobs[i].id, &token).await,
                        "step {step}: completed"
                    );
                    m.jobs[i].st = St::Completed;
                    m.jobs[i].atts += 1;
                    true
                }
                None => false,
            },
            "fail" => match pick(&mut rng, &m.live()) {
                Some(i) => {
                    let retry = rng.gen_bool(0.7);
                    let token = token_of(&m, i);
                    let r = fail(&q, m.jobs[i].id, &token, retry).await;
                    let j = &mut m.jobs[i];
                    j.atts += 1;
                    let want = if retry && j.atts < j.attempts {
                        j.st = St::Ready;
                        m.ready.push_front(i);
                        "retry"
                    } else {
                        j.st = St::Failed;
                        "failed"
                    };
                    assert_eq!(r, want, "step {step}: fail outcome");
                    true
                }
                None => false,
            },
            "crash" => match pick(&mut rng, &m.live()) {
                Some(i) => {
                    let token = token_of(&m, i);
                    run_out_lease(&q, m.jobs[i].id, &token).await;
                    m.stale.push((i, token.clone()));
                    m.jobs[i].st = St::Active {
                        token,
                        crashed: true,
                    };
                    true
                }
                None => false,
            },
            "sweep" => {
                let recovered = sweep(&q).await;
                let mut want: Vec<JobId> = m
                    .in_state(|s| matches!(s, St::Active { crashed: true, .. }))
                    .iter()
                    .map(|&i| m.jobs[i].id)
                    .collect();
                let mut got: Vec<JobId> = recovered.iter().map(|(id, _)| *id).collect();
                want.sort();
                got.sort();
                assert_eq!(
                    got, want,
                    "step {step}: the sweep recovers the crashed jobs"
                );
                for (id, r) in &recovered {
                    let i = m.index(*id);
                    let j = &mut m.jobs[i];
                    j.stalls += 1;
                    j.atts += 1;
                    let want = if j.stalls <= MAX_STALLS && !j.cancel {
                        j.st = St::Ready;
                        m.ready.push_front(i);
                        "wait"
                    } else {
                        j.st = St::Failed;
                        "failed"
                    };
                    assert_eq!(r, want, "step {step}: recovery of {id}");
                }
                !recovered.is_empty()
            }
            "pause" => {
                q.pause().await.unwrap();
                m.paused = true;
                true
            }
            "resume" => {
                q.resume().await.unwrap();
                m.paused = false;
                true
            }
            "cancel" => match pick(&mut rng, &(0..m.jobs.len()).collect::<Vec<_>>()) {
                Some(i) => {
                    let r = q.cancel(m.jobs[i].id, "model").await.unwrap();
                    let j = &mut m.jobs[i];
                    let want = match j.st {
                        St::Ready => {
                            j.st = St::Failed;
                            m.ready.retain(|&k| k != i);
                            CancelOutcome::Cancelled
                        }
                        St::Active { .. } => {
                            j.cancel = true;
                            CancelOutcome::Requested
                        }
                        St::Completed | St::Failed => CancelOutcome::Finished,
                    };
                    assert_eq!(r, want, "step {step}: cancel of {}", j.id);
                    true
                }
                None => false,
            },
            "late_complete" => match pick(&mut rng, &(0..m.stale.len()).collect::<Vec<_>>()) {
                Some(s) => {
                    let (i, token) = m.stale[s].clone();
                    // A crashed job still under its (run-out) lease is stalled-pending: the token
                    // is that job's only lease, so only late completions of recovered jobs count.
                    if matches!(&m.jobs[i].st, St::Active { token: t, .. } if *t == token) {
                        false
                    } else {
                        assert!(
                            !complete(&q, m.jobs[i].id, &token).await,
                            "step {step}: a late completion of {} is refused",
                            m.jobs[i].id
                        );
                        true
                    }
                }
                None => false,
            },
            _ => unreachable!(),
        };
        if applied {
            *done.entry(op).or_default() += 1;
        }
        check(&q, &m, step, op).await;
    }
    done
}

#[tokio::test]
async fn the_server_follows_the_model_step_by_step() {
    let steps: usize = std::env::var("EMQ_MODEL_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    let secs: u64 = std::env::var("EMQ_MODEL_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let seed: u64 = std::env::var("EMQ_MODEL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::thread_rng().gen());
    println!("model: seed {seed} (EMQ_MODEL_SEED={seed} replays it), {steps} steps per topology");
    let deadline = Instant::now() + Duration::from_secs(secs);
    for (topology, store) in common::both().await {
        let started = Instant::now();
        // A few queues per topology, each from its own seed: a queue grows, so several short
        // sequences reach more states than one long one.
        let mut total: HashMap<&'static str, u32> = HashMap::new();
        let runs = steps.div_ceil(150).max(1);
        for r in 0..runs {
            let q = common::queue_on(&store, "model").await;
            let s = seed.wrapping_add(r as u64);
            let done = run_model(q, s, steps / runs, deadline).await;
            for (k, v) in done {
                *total.entry(k).or_default() += v;
            }
        }
        println!(
            "model {topology}: {} steps in {:?}, applied {total:?}",
            steps,
            started.elapsed()
        );
        for op in [
            "add", "claim", "complete", "fail", "crash", "sweep", "cancel",
        ] {
            assert!(
                total.get(op).copied().unwrap_or(0) > 0 || steps < 100,
                "{topology}: seed {seed} never applied {op}"
            );
        }
    }
}
