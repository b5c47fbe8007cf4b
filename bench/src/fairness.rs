//! `emq-bench fairness [REDIS_URL]`: the fair-groups benchmark (core/src/groups.rs). Run by hand,
//! never in CI: `bench/fairness.sh` drives it side by side with BullMQ (`bench/bullmq_fairness.js`).
//!
//! Scenarios, each a JSON line on stdout (`impl` emq, `scenario`, `side` grouped or ungrouped):
//!
//! - `starve_cold_c{C}[_p0]`: FAIR_STARVE_JOBS (100,000) jobs of group A are queued (add_bulk,
//!   chunks of 1,000), then one job of group B, then a worker starts (concurrency C; `_p0`:
//!   `prefetch: Some(0)`, so every job it starts was leased by a claim made after the one before
//!   it ended). The handler numbers every start; the line reports `a_started_before_b` (starts
//!   before B's) and `ms_add_to_start` (B's add called → B's handler's first line).
//! - `starve_live_c{C}[_p0]`: the same 100,000 A jobs, the worker started first; once
//!   FAIR_LIVE_AFTER (1,000) A jobs have started, B is added. `started_after_add_before_b` counts
//!   the starts after B's add was called and before B's (jobs the worker had leased ahead before B
//!   existed count too: at `_p0` and C = 1 that is at most the one job in flight).
//!   Ungrouped (side `ungrouped`: no `group` option anywhere) the queue is FIFO and B waits for A.
//!   The handler starts of one claim's batch run concurrently (C > 1), so only at C = 1 with
//!   prefetch 0 is the start order the claim order.
//! - `starve_many_{cold,live}_c1_p0`: the same, the A jobs spread round-robin over
//!   FAIR_STARVE_GROUPS (10) groups `A0`..`A9`: 11 active groups with B.
//! - `weights_3to1`: groups A (weight 3) and B (weight 1), FAIR_WEIGHT_JOBS (10,000) jobs each
//!   queued, a worker at concurrency 10; the shares of the first FAIR_WEIGHT_JOBS starts, and the
//!   A:B ratio of every window of 1,000 starts.
//! - `groups_c{10,100}`: FAIR_JOBS (50,000) jobs spread round-robin over FAIR_GROUPS (10,000)
//!   groups (side grouped) or the same jobs with no group (side ungrouped) preloaded, then
//!   drained with a no-op handler; jobs/s and Redis CPU per processed job, measured as `process`
//!   in main.rs (INFO cpu of the redis-server before and after; main thread, the existing method,
//!   and `used_cpu_sys + used_cpu_user` of the whole process), plus INFO commandstats per job.
//!
//! FAIR_REP (default 0) is the repetition's index: even ones run the grouped side of each pair
//! first, odd ones the ungrouped side, so a slow phase of the shared machine does not always fall
//! on the same side. REPS (default 1) repetitions in one process continue from FAIR_REP.
//! FAIR_SCENARIOS (comma list of scenario names, or their prefixes ending before a `_`: e.g.
//! `starve,weights,groups`) runs a subset, FAIR_SIDE (`grouped` or `ungrouped`) one side
//! (bench/fairness_profile.sh uses both). FLUSHALL runs before every scenario run.

use crate::{
    commandstats_per_job, cpu_mark, e2s, env_u64, open, rmc, Admin, BResult, Cfg, CpuMark,
};
use emq::{JobContext, JobOptions, NewJob, Queue, Worker, WorkerOptions};
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

struct FairCfg {
    starve_jobs: u64,
    starve_groups: u64,
    live_after: u64,
    weight_jobs: u64,
    jobs: u64,
    groups: u64,
    rep0: u64,
    /// FAIR_SIDE: only the grouped (`grouped`) or the ungrouped (`ungrouped`) side.
    side: Option<bool>,
    only: Option<Vec<String>>,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn opts(group: Option<String>) -> JobOptions {
    JobOptions { group, ..rmc() }
}

/// `used_cpu_sys + used_cpu_user` of the whole redis-server (INFO cpu).
async fn redis_cpu_total_s(admin: &mut Admin) -> BResult<f64> {
    Ok(admin.info_field("cpu", "used_cpu_sys").await?
        + admin.info_field("cpu", "used_cpu_user").await?)
}

/// add_bulk in chunks of `cfg.batch`: job `i` of `0..n` built by `job(i)`.
async fn load(cfg: &Cfg, q: &Queue, n: u64, job: impl Fn(u64) -> NewJob) -> BResult<()> {
    let mut start = 0;
    while start < n {
        let end = n.min(start + cfg.batch);
        q.add_bulk((start..end).map(&job).collect())
            .await
            .map_err(e2s)?;
        start = end;
    }
    Ok(())
}

/// Every handler start numbered, in the order the handlers began.
#[derive(Default)]
struct Starts {
    seq: AtomicU64,
    /// B's number and the instant its handler began.
    b: Mutex<Option<(u64, Instant)>>,
    /// The group letter of each of the first `order_cap` starts (weights).
    order: Mutex<Vec<u8>>,
    order_cap: u64,
    notify: Notify,
}

impl Starts {
    fn handler(
        self: &Arc<Self>,
    ) -> impl Fn(JobContext) -> futures::future::Ready<emq::HandlerResult> + Send + Sync + 'static
    {
        let st = self.clone();
        move |job: JobContext| {
            let t = Instant::now();
            let k = st.seq.fetch_add(1, Ordering::SeqCst);
            let g = job.data()["g"].as_str().and_then(|s| s.bytes().next());
            if g == Some(b'B') {
                let mut b = st.b.lock().unwrap();
                if b.is_none() {
                    *b = Some((k, t));
                }
            }
            if k < st.order_cap {
                st.order.lock().unwrap().push(g.unwrap_or(b'?'));
            }
            st.notify.notify_one();
            futures::future::ready(Ok(Value::Null))
        }
    }

    /// Waits until `done` holds (checked at every start and every 5 ms), at most `limit`.
    async fn wait_for(
        &self,
        limit: Duration,
        what: &str,
        done: impl Fn(&Self) -> bool,
    ) -> BResult<()> {
        let t0 = Instant::now();
        while !done(self) {
            if t0.elapsed() > limit {
                return Err(format!(
                    "timeout after {limit:?} waiting for {what} ({} started)",
                    self.seq.load(Ordering::SeqCst)
                ));
            }
            let _ = tokio::time::timeout(Duration::from_millis(5), self.notify.notified()).await;
        }
        Ok(())
    }
}

fn worker_opts(concurrency: usize, prefetch: Option<usize>) -> WorkerOptions {
    WorkerOptions {
        concurrency,
        prefetch,
        ..WorkerOptions::default()
    }
}

/// Starvation: 100,000 jobs of A, then one of B (see the module doc).
/// One starvation case: whether the jobs have groups, whether B is added before the worker starts,
/// the worker's concurrency and prefetch, and over how many groups A's jobs are spread.
#[derive(Clone, Copy)]
struct Starve {
    grouped: bool,
    cold: bool,
    concurrency: usize,
    prefetch: Option<usize>,
    a_groups: u64,
}

async fn starvation(
    cfg: &Cfg,
    fc: &FairCfg,
    name: &str,
    case: Starve,
) -> BResult<Map<String, Value>> {
    let Starve {
        grouped,
        cold,
        concurrency,
        prefetch,
        a_groups,
    } = case;
    let q = open(cfg, name).await?;
    let n = fc.starve_jobs;
    let group = |g: &str| grouped.then(|| g.to_string());
    let a_group = |i: u64| match a_groups {
        1 => "A".to_string(),
        k => format!("A{}", i % k),
    };
    let t_load = Instant::now();
    load(cfg, &q, n, |i| NewJob {
        name: "a".into(),
        data: json!({"g": "A", "i": i}),
        options: opts(group(&a_group(i))),
    })
    .await?;
    let load_s = t_load.elapsed().as_secs_f64();
    let st = Arc::new(Starts::default());
    let start_worker = || {
        Worker::builder(q.clone())
            .options(worker_opts(concurrency, prefetch))
            .handler(st.handler())
            .run()
            .map_err(e2s)
    };
    let add_b = || q.add("b", json!({"g": "B"}), opts(group("B")));
    let (worker, seq_at_add, t_add, t_added) = if cold {
        let t_add = Instant::now();
        add_b().await.map_err(e2s)?;
        let t_added = Instant::now();
        (start_worker()?, 0, t_add, t_added)
    } else {
        let w = start_worker()?;
        st.wait_for(cfg.timeout, "the first A jobs", |s| {
            s.seq.load(Ordering::SeqCst) >= fc.live_after
        })
        .await?;
        let seq_at_add = st.seq.load(Ordering::SeqCst);
        let t_add = Instant::now();
        add_b().await.map_err(e2s)?;
        (w, seq_at_add, t_add, Instant::now())
    };
    let waited = st
        .wait_for(cfg.timeout, "B's start", |s| s.b.lock().unwrap().is_some())
        .await;
    let b = *st.b.lock().unwrap();
    worker.close().await.map_err(e2s)?;
    q.close().await.map_err(e2s)?;
    waited?;
    let (kb, tb) = b.expect("B started");
    let mut m = Map::new();
    m.insert("a_jobs".into(), json!(n));
    m.insert("a_groups".into(), json!(if grouped { a_groups } else { 0 }));
    m.insert("a_started_before_b".into(), json!(kb));
    m.insert("started_after_add_before_b".into(), json!(kb - seq_at_add));
    m.insert("ms_add_to_start".into(), json!(ms(tb - t_add)));
    m.insert("b_add_rtt_ms".into(), json!(ms(t_added - t_add)));
    m.insert("load_jobs_per_s".into(), json!(n as f64 / load_s));
    Ok(m)
}

/// Weights 3:1: the shares of the first `fc.weight_jobs` starts.
async fn weights(cfg: &Cfg, fc: &FairCfg, name: &str) -> BResult<Map<String, Value>> {
    let q = open(cfg, name).await?;
    let n = fc.weight_jobs;
    q.set_group_weight("A", 3).await.map_err(e2s)?;
    q.set_group_weight("B", 1).await.map_err(e2s)?;
    for g in ["A", "B"] {
        load(cfg, &q, n, |i| NewJob {
            name: "w".into(),
            data: json!({"g": g, "i": i}),
            options: opts(Some(g.to_string())),
        })
        .await?;
    }
    let st = Arc::new(Starts {
        order_cap: n,
        ..Starts::default()
    });
    let worker = Worker::builder(q.clone())
        .options(worker_opts(10, None))
        .handler(st.handler())
        .run()
        .map_err(e2s)?;
    let waited = st
        .wait_for(cfg.timeout, "the weighted starts", |s| {
            s.seq.load(Ordering::SeqCst) >= n
        })
        .await;
    worker.close().await.map_err(e2s)?;
    q.close().await.map_err(e2s)?;
    waited?;
    let order = st.order.lock().unwrap().clone();
    let count = |xs: &[u8], g: u8| xs.iter().filter(|x| **x == g).count() as f64;
    let (a, b) = (count(&order, b'A'), count(&order, b'B'));
    let win: Vec<f64> = order
        .chunks(1000)
        .filter(|c| c.len() == 1000)
        .map(|c| count(c, b'A') / count(c, b'B').max(1.0))
        .collect();
    let mut m = Map::new();
    m.insert("starts".into(), json!(order.len()));
    m.insert("a".into(), json!(a));
    m.insert("b".into(), json!(b));
    m.insert("share_a".into(), json!(a / (a + b)));
    m.insert("ratio_a_b".into(), json!(a / b.max(1.0)));
    m.insert(
        "window_ratio_min".into(),
        json!(win.iter().copied().fold(f64::INFINITY, f64::min)),
    );
    m.insert(
        "window_ratio_max".into(),
        json!(win.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
    );
    m.insert(
        "first_20".into(),
        json!(String::from_utf8_lossy(&order[..order.len().min(20)])),
    );
    Ok(m)
}

/// Many groups: n jobs over `fc.groups` groups (or none), preloaded, drained by a no-op worker.
async fn many_groups(
    cfg: &Cfg,
    fc: &FairCfg,
    admin: &mut Admin,
    name: &str,
    grouped: bool,
    concurrency: usize,
) -> BResult<Map<String, Value>> {
    let q = open(cfg, name).await?;
    let n = fc.jobs;
    let groups = fc.groups;
    let group = |i: u64| grouped.then(|| format!("g{:05}", i % groups));
    let add_mark = cpu_mark(admin, false).await?;
    let add_total0 = redis_cpu_total_s(admin).await?;
    let t_add = Instant::now();
    load(cfg, &q, n, |i| NewJob {
        name: "j".into(),
        data: json!({ "i": i }),
        options: opts(group(i)),
    })
    .await?;
    let add = add_mark.result(admin, n, t_add.elapsed(), false).await?;
    let add_total = redis_cpu_total_s(admin).await? - add_total0;
    if grouped {
        let page = q.groups(0, 10_000).await.map_err(e2s)?;
        let want = groups.min(n).min(10_000) as usize;
        if page.len() < want {
            return Err(format!("{} groups listed, expected {want}", page.len()));
        }
    }

    let mark: CpuMark = cpu_mark(admin, cfg.commandstats).await?;
    let total0 = redis_cpu_total_s(admin).await?;
    let t0 = Instant::now();
    let worker = Worker::builder(q.clone())
        .concurrency(concurrency)
        .handler(crate::noop)
        .run()
        .map_err(e2s)?;
    let t1 = loop {
        let s = worker.stats();
        if s.completed + s.failed >= n {
            break Instant::now();
        }
        if t0.elapsed() > cfg.timeout {
            return Err(format!(
                "timeout after {:?} ({} completed)",
                cfg.timeout, s.completed
            ));
        }
        tokio::time::sleep(Duration::from_micros(200)).await;
    };
    let total = redis_cpu_total_s(admin).await? - total0;
    let mut m = mark.result(admin, n, t1 - t0, false).await?;
    if cfg.commandstats {
        m.insert(
            "commandstats_per_job".into(),
            commandstats_per_job(admin, n).await?,
        );
    }
    m.insert(
        "redis_cpu_total_us_per_job".into(),
        json!(total * 1e6 / n as f64),
    );
    m.insert("add_jobs_per_s".into(), add["jobs_per_s"].clone());
    m.insert(
        "add_redis_cpu_us_per_job".into(),
        add["redis_cpu_us_per_job"].clone(),
    );
    m.insert(
        "add_redis_cpu_total_us_per_job".into(),
        json!(add_total * 1e6 / n as f64),
    );
    let stats = worker.stats();
    worker.close().await.map_err(e2s)?;
    if stats.failed > 0 {
        return Err(format!("{} jobs failed", stats.failed));
    }
    let c = q.counts().await.map_err(e2s)?;
    if c.waiting + c.active + c.completed + c.failed > 0 {
        return Err(format!("leftover jobs after drain: {c:?}"));
    }
    q.close().await.map_err(e2s)?;
    Ok(m)
}

/// One scenario run: (scenario, side) → its figures.
async fn run_one(
    cfg: &Cfg,
    fc: &FairCfg,
    admin: &mut Admin,
    scenario: &str,
    grouped: bool,
) -> BResult<Map<String, Value>> {
    let name = format!("fair-{scenario}");
    match scenario {
        "starve_cold_c10"
        | "starve_live_c10"
        | "starve_cold_c1_p0"
        | "starve_live_c1_p0"
        | "starve_many_cold_c1_p0"
        | "starve_many_live_c1_p0" => {
            let c1 = scenario.ends_with("_c1_p0");
            let case = Starve {
                grouped,
                cold: scenario.contains("_cold_"),
                concurrency: if c1 { 1 } else { 10 },
                prefetch: if c1 { Some(0) } else { None },
                a_groups: if scenario.starts_with("starve_many") {
                    fc.starve_groups
                } else {
                    1
                },
            };
            starvation(cfg, fc, &name, case).await
        }
        "weights_3to1" => weights(cfg, fc, &name).await,
        "groups_c10" => many_groups(cfg, fc, admin, &name, grouped, 10).await,
        "groups_c100" => many_groups(cfg, fc, admin, &name, grouped, 100).await,
        other => Err(format!("unknown fairness scenario {other}")),
    }
}

/// (scenario, whether it has an ungrouped side)
const PLAN: [(&str, bool); 9] = [
    ("starve_cold_c10", true),
    ("starve_live_c10", true),
    ("starve_cold_c1_p0", false),
    ("starve_live_c1_p0", false),
    ("starve_many_cold_c1_p0", false),
    ("starve_many_live_c1_p0", false),
    ("weights_3to1", false),
    ("groups_c10", true),
    ("groups_c100", true),
];

pub(crate) async fn fairness_main(cfg: Cfg, admin: &mut Admin) -> i32 {
    let fc = FairCfg {
        starve_jobs: env_u64("FAIR_STARVE_JOBS", 100_000),
        starve_groups: env_u64("FAIR_STARVE_GROUPS", 10),
        live_after: env_u64("FAIR_LIVE_AFTER", 1_000),
        weight_jobs: env_u64("FAIR_WEIGHT_JOBS", 10_000),
        jobs: env_u64("FAIR_JOBS", 50_000),
        groups: env_u64("FAIR_GROUPS", 10_000),
        rep0: std::env::var("FAIR_REP")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0),
        side: match std::env::var("FAIR_SIDE").as_deref() {
            Ok("grouped") => Some(true),
            Ok("ungrouped") => Some(false),
            _ => None,
        },
        only: std::env::var("FAIR_SCENARIOS")
            .ok()
            .filter(|s| !s.is_empty())
            .map(|s| s.split(',').map(str::to_string).collect()),
    };
    let t_start = Instant::now();
    // Warm-up (not recorded): script loading, both paths of the claim.
    let warm = async {
        let wfc = FairCfg {
            jobs: 2_000,
            groups: 100,
            only: None,
            ..fc
        };
        for grouped in [true, false] {
            admin.flushall().await?;
            many_groups(&cfg, &wfc, admin, "fair-warm", grouped, 10).await?;
        }
        BResult::Ok(())
    }
    .await;
    if let Err(e) = warm {
        eprintln!("emq-bench fairness: warm-up failed: {e}");
        return 2;
    }
    let mut errors = 0;
    for rep in fc.rep0..fc.rep0 + cfg.reps {
        for (scenario, paired) in PLAN {
            let wanted = match &fc.only {
                None => true,
                Some(o) => o
                    .iter()
                    .any(|s| scenario == s || scenario.starts_with(&format!("{s}_"))),
            };
            if !wanted {
                continue;
            }
            let sides: &[bool] = match (paired, rep % 2 == 0) {
                (false, _) => &[true],
                (true, true) => &[true, false],
                (true, false) => &[false, true],
            };
            for &grouped in sides {
                if fc.side.is_some_and(|g| g != grouped) {
                    continue;
                }
                if let Err(e) = admin.flushall().await {
                    eprintln!("emq-bench fairness: flushall: {e}");
                    return 2;
                }
                let r = tokio::time::timeout(
                    cfg.timeout + Duration::from_secs(15),
                    run_one(&cfg, &fc, admin, scenario, grouped),
                )
                .await
                .unwrap_or_else(|_| Err(format!("timeout after {:?}", cfg.timeout)));
                let mut line = Map::new();
                line.insert("impl".into(), json!("emq"));
                line.insert("scenario".into(), json!(scenario));
                line.insert(
                    "side".into(),
                    json!(if grouped { "grouped" } else { "ungrouped" }),
                );
                line.insert("rep".into(), json!(rep));
                match r {
                    Ok(m) => line.extend(m),
                    Err(e) => {
                        errors += 1;
                        eprintln!("emq-bench fairness: rep {rep} {scenario}: {e}");
                        line.insert("error".into(), json!(e));
                    }
                }
                println!("{}", Value::Object(line));
            }
        }
        eprintln!(
            "emq-bench fairness: rep {rep} done ({:.0}s)",
            t_start.elapsed().as_secs_f64()
        );
    }
    let _ = admin.flushall().await;
    i32::from(errors > 0)
}
