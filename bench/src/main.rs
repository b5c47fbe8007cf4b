//! emq-bench: emq's side of the side-by-side benchmark against the BullMQ anchors
//! (`shared/bench/anchors/`). Run by hand, never in CI: `bench/run.sh` drives it.
//!
//! Usage: `emq-bench [REDIS_URL]` (default `redis://127.0.0.1:6390`); `emq-bench fairness
//! [REDIS_URL]` runs the fair-groups benchmark instead (`fairness.rs`, driven by bench/fairness.sh);
//! `emq-bench multiqueue [REDIS_URL]` the multi-queue worker's (`multiqueue.rs`, bench/multiqueue.sh).
//! `emq-bench partitions SEEDS` one queue plain or partitioned on a cluster (`partitions.rs`,
//! bench/partitions.sh). `emq-bench batch [REDIS_URL]` a batched job against a plain one
//! (`batch.rs`, bench/batch.sh).
//! Knobs (environment, like the anchors): REPS (default 1), N_JOBS (20000), N_LATENCY (1000),
//! SCENARIO_TIMEOUT_S (120), BENCH_COMMANDSTATS (default 1: CONFIG RESETSTAT before and INFO
//! commandstats after each timed section; 0 to skip), SCENARIOS (comma list; default all but the
//! opt-in `cancel_latency` and `wait_latency` of `control.rs`). Built with `--features otel`,
//! BENCH_TRACE=1 registers an OpenTelemetry SDK provider first (`trace.rs`, bench/tracing_rust.sh).
//!
//! Prints one JSON object per scenario run on stdout (one line each); progress goes to stderr.
//! FLUSHALL runs before every scenario run, so point it at a throwaway Redis only.

mod batch;
mod control;
mod fairness;
mod multiqueue;
mod partitions;
#[cfg(feature = "otel")]
mod trace;

use emq::{ConnectOptions, JobContext, JobOptions, NewJob, Queue, Worker, WorkerEvent};
use serde_json::{json, Map, Value};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, Notify};

type BResult<T> = Result<T, String>;

fn env_u64(name: &str, dflt: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|v| *v > 0)
        .unwrap_or(dflt)
}

struct Cfg {
    url: String,
    reps: u64,
    jobs: u64,
    batch: u64,
    latency_jobs: u64,
    latency_gap: Duration,
    timeout: Duration,
    warmup_jobs: u64,
    commandstats: bool,
}

// ---------------------------------------------------------------------------------------------
// A tiny RESP client for the admin commands (FLUSHALL, INFO, CONFIG RESETSTAT), so that the
// measurement connection is independent of emq's own connection handling.

struct Admin {
    conn: BufReader<TcpStream>,
}

impl Admin {
    async fn connect(url: &str) -> BResult<Admin> {
        let rest = url.strip_prefix("redis://").ok_or_else(|| {
            format!("only redis:// URLs are supported by the admin client: {url}")
        })?;
        let hostport = rest.split('/').next().unwrap_or(rest);
        let hostport = hostport.rsplit('@').next().unwrap_or(hostport);
        let stream = TcpStream::connect(hostport)
            .await
            .map_err(|e| format!("admin connect {hostport}: {e}"))?;
        stream.set_nodelay(true).ok();
        Ok(Admin {
            conn: BufReader::new(stream),
        })
    }

    async fn cmd(&mut self, args: &[&str]) -> BResult<String> {
        let mut buf = format!("*{}\r\n", args.len());
        for a in args {
            buf.push_str(&format!("${}\r\n{}\r\n", a.len(), a));
        }
        let io = |e: std::io::Error| format!("admin io: {e}");
        self.conn
            .get_mut()
            .write_all(buf.as_bytes())
            .await
            .map_err(io)?;
        let mut line = String::new();
        self.conn.read_line(&mut line).await.map_err(io)?;
        let line = line.trim_end().to_string();
        match line.chars().next() {
            Some('+') | Some(':') => Ok(line[1..].to_string()),
            Some('-') => Err(format!("redis error: {}", &line[1..])),
            Some('$') => {
                let len: i64 = line[1..].parse().map_err(|_| format!("bad reply {line}"))?;
                if len < 0 {
                    return Ok(String::new());
                }
                let mut data = vec![0u8; len as usize + 2];
                self.conn.read_exact(&mut data).await.map_err(io)?;
                data.truncate(len as usize);
                String::from_utf8(data).map_err(|e| e.to_string())
            }
            _ => Err(format!("unsupported reply: {line}")),
        }
    }

    async fn info_field(&mut self, section: &str, field: &str) -> BResult<f64> {
        let info = self.cmd(&["INFO", section]).await?;
        info.lines()
            .find_map(|l| l.strip_prefix(&format!("{field}:")))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .ok_or_else(|| format!("INFO {section} has no {field}"))
    }

    /// CPU seconds used so far by Redis's main thread (INFO cpu), as the anchors read it.
    async fn redis_cpu_s(&mut self) -> BResult<f64> {
        Ok(self.info_field("cpu", "used_cpu_user_main_thread").await?
            + self.info_field("cpu", "used_cpu_sys_main_thread").await?)
    }

    async fn flushall(&mut self) -> BResult<()> {
        self.cmd(&["FLUSHALL"]).await.map(|_| ())
    }
}

fn client_cpu_us() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 * 1e6 + t.tv_usec as f64;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

struct CpuMark {
    redis0: f64,
    client0: f64,
}

async fn cpu_mark(admin: &mut Admin, commandstats: bool) -> BResult<CpuMark> {
    if commandstats {
        admin.cmd(&["CONFIG", "RESETSTAT"]).await?;
    }
    Ok(CpuMark {
        redis0: admin.redis_cpu_s().await?,
        client0: client_cpu_us(),
    })
}

impl CpuMark {
    async fn result(
        &self,
        admin: &mut Admin,
        n: u64,
        elapsed: Duration,
        commandstats: bool,
    ) -> BResult<Map<String, Value>> {
        let client = client_cpu_us() - self.client0;
        let redis1 = admin.redis_cpu_s().await?;
        let secs = elapsed.as_secs_f64();
        let mut m = Map::new();
        m.insert("jobs_per_s".into(), json!(n as f64 / secs));
        m.insert("elapsed_s".into(), json!(secs));
        m.insert(
            "redis_cpu_us_per_job".into(),
            json!((redis1 - self.redis0) * 1e6 / n as f64),
        );
        m.insert("client_cpu_us_per_job".into(), json!(client / n as f64));
        if commandstats {
            m.insert(
                "commandstats_per_job".into(),
                commandstats_per_job(admin, n).await?,
            );
        }
        Ok(m)
    }
}

/// INFO commandstats since the last RESETSTAT, as calls and µs per job for each command.
async fn commandstats_per_job(admin: &mut Admin, n: u64) -> BResult<Value> {
    let info = admin.cmd(&["INFO", "commandstats"]).await?;
    let mut out = Map::new();
    for line in info.lines() {
        let Some(rest) = line.strip_prefix("cmdstat_") else {
            continue;
        };
        let Some((cmd, fields)) = rest.split_once(':') else {
            continue;
        };
        if cmd == "info" || cmd.starts_with("config") {
            continue; // the measurement's own commands
        }
        let mut calls = 0.0;
        let mut usec = 0.0;
        for kv in fields.split(',') {
            if let Some((k, v)) = kv.split_once('=') {
                match k {
                    "calls" => calls = v.parse().unwrap_or(0.0),
                    "usec" => usec = v.parse().unwrap_or(0.0),
                    _ => {}
                }
            }
        }
        out.insert(
            cmd.to_string(),
            json!({"calls_per_job": calls / n as f64, "usec_per_job": usec / n as f64}),
        );
    }
    Ok(Value::Object(out))
}

// ---------------------------------------------------------------------------------------------

fn rmc() -> JobOptions {
    // BullMQ's queues use defaultJobOptions { removeOnComplete: true }.
    JobOptions {
        remove_on_complete: emq::Removal::Now,
        ..JobOptions::default()
    }
}

async fn open(cfg: &Cfg, name: &str) -> BResult<Queue> {
    Queue::connect(ConnectOptions::new(cfg.url.clone()), name)
        .await
        .map_err(|e| format!("connect: {e}"))
}

/// Prints each scenario's line of repetition `rep` (tagged `impl` emq and `rep`) as JSON on stdout,
/// each error on stderr as `emq-bench <tool>: …`; the exit code: 1 when any scenario failed.
fn print_lines(tool: &str, rep: u64, lines: Vec<BResult<Value>>) -> i32 {
    let mut code = 0;
    for l in lines {
        match l {
            Ok(mut v) => {
                v["impl"] = json!("emq");
                v["rep"] = json!(rep);
                println!("{v}");
            }
            Err(e) => {
                eprintln!("emq-bench {tool}: {e}");
                code = 1;
            }
        }
    }
    code
}

fn e2s(e: emq::Error) -> String {
    e.to_string()
}

fn noop(_job: JobContext) -> futures::future::Ready<emq::HandlerResult> {
    futures::future::ready(Ok(Value::Null))
}

/// (a) add, awaited one at a time
async fn add_sequential(
    cfg: &Cfg,
    admin: &mut Admin,
    name: &str,
    n: u64,
) -> BResult<Map<String, Value>> {
    let q = open(cfg, name).await?;
    let mark = cpu_mark(admin, cfg.commandstats).await?;
    let t0 = Instant::now();
    for i in 0..n {
        q.add("j", json!({ "i": i }), rmc()).await.map_err(e2s)?;
    }
    let el = t0.elapsed();
    let r = mark.result(admin, n, el, cfg.commandstats).await?;
    q.close().await.map_err(e2s)?;
    Ok(r)
}

/// (b) add fired `batch` at a time, awaited together (join_all, like Promise.all)
async fn add_concurrent(
    cfg: &Cfg,
    admin: &mut Admin,
    name: &str,
    n: u64,
) -> BResult<Map<String, Value>> {
    let q = open(cfg, name).await?;
    let mark = cpu_mark(admin, cfg.commandstats).await?;
    let t0 = Instant::now();
    let mut start = 0;
    while start < n {
        let end = n.min(start + cfg.batch);
        let futs = (start..end).map(|i| q.add("j", json!({ "i": i }), rmc()));
        for r in futures::future::join_all(futs).await {
            r.map_err(e2s)?;
        }
        start = end;
    }
    let el = t0.elapsed();
    let r = mark.result(admin, n, el, cfg.commandstats).await?;
    q.close().await.map_err(e2s)?;
    Ok(r)
}

async fn add_bulk_chunks(cfg: &Cfg, q: &Queue, n: u64) -> BResult<()> {
    add_bulk_chunks_with(cfg, q, n, rmc()).await
}

/// [`add_bulk_chunks`] with these options on every job.
async fn add_bulk_chunks_with(cfg: &Cfg, q: &Queue, n: u64, options: JobOptions) -> BResult<()> {
    let mut start = 0;
    while start < n {
        let end = n.min(start + cfg.batch);
        let jobs = (start..end)
            .map(|i| NewJob {
                name: "j".into(),
                data: json!({ "i": i }),
                options: options.clone(),
            })
            .collect();
        q.add_bulk(jobs).await.map_err(e2s)?;
        start = end;
    }
    Ok(())
}

/// (c) add_bulk in chunks of `batch`
async fn add_bulk(cfg: &Cfg, admin: &mut Admin, name: &str, n: u64) -> BResult<Map<String, Value>> {
    let q = open(cfg, name).await?;
    let mark = cpu_mark(admin, cfg.commandstats).await?;
    let t0 = Instant::now();
    add_bulk_chunks(cfg, &q, n).await?;
    let el = t0.elapsed();
    let r = mark.result(admin, n, el, cfg.commandstats).await?;
    q.close().await.map_err(e2s)?;
    Ok(r)
}

/// (d) drain n preloaded jobs with a no-op handler; worker start -> last completion
async fn process(
    cfg: &Cfg,
    admin: &mut Admin,
    name: &str,
    n: u64,
    concurrency: usize,
) -> BResult<Map<String, Value>> {
    let q = open(cfg, name).await?;
    add_bulk_chunks(cfg, &q, n).await?;
    let c = q.counts().await.map_err(e2s)?;
    if c.waiting != n {
        return Err(format!("preload: {} waiting, expected {n}", c.waiting));
    }
    let mark = cpu_mark(admin, cfg.commandstats).await?;
    let t0 = Instant::now();
    let worker = Worker::builder(q.clone())
        .concurrency(concurrency)
        .handler(noop)
        .run()
        .map_err(e2s)?;
    // Completion is observed by polling the worker's own counters (in process, no Redis traffic);
    // the poll period (tokio's 1 ms timer) bounds the error of the end time.
    let t1 = loop {
        let s = worker.stats();
        if s.completed + s.failed >= n {
            break Instant::now();
        }
        if t0.elapsed() > cfg.timeout {
            return Err(format!(
                "timeout after {:?} in process_c{concurrency} ({} completed)",
                cfg.timeout, s.completed
            ));
        }
        tokio::time::sleep(Duration::from_micros(200)).await;
    };
    let r = mark.result(admin, n, t1 - t0, cfg.commandstats).await?;
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
    Ok(r)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let idx = ((p / 100.0) * sorted.len() as f64).ceil() as i64 - 1;
    sorted[idx.clamp(0, sorted.len() as i64 - 1) as usize]
}

/// (e) end-to-end latency with an idle worker: one job at a time, closed loop.
/// add -> start: the handler's first line stamps an Instant and signals a Notify.
/// add -> completed: the worker's own `completed` event ([`Worker::builder`]'s `on_event` hook,
/// called once the completion is recorded), the in-process event BullMQ's side is timed by too.
async fn latency(cfg: &Cfg, name: &str, n: u64) -> BResult<Map<String, Value>> {
    let q = open(cfg, name).await?;
    let starts: Arc<Mutex<Vec<Option<Instant>>>> = Arc::new(Mutex::new(vec![None; n as usize]));
    let started = Arc::new(Notify::new());
    let (s2, st2) = (starts.clone(), started.clone());
    let (tx, mut rx) = mpsc::unbounded_channel::<(emq::JobId, Instant)>();
    let worker = Worker::builder(q.clone())
        .concurrency(1)
        .on_event(Arc::new(move |e: WorkerEvent| {
            if let WorkerEvent::Completed { job, .. } = e {
                let _ = tx.send((job.id, Instant::now()));
            }
        }))
        .handler(move |job: JobContext| {
            let t = Instant::now();
            if let Some(i) = job.data()["i"].as_u64() {
                if let Some(slot) = s2.lock().unwrap().get_mut(i as usize) {
                    *slot = Some(t);
                }
            }
            st2.notify_one();
            futures::future::ready(Ok(Value::Null))
        })
        .run()
        .map_err(e2s)?;

    tokio::time::sleep(Duration::from_millis(200)).await; // worker reaches its blocking wait

    let mut add_rtt = Vec::with_capacity(n as usize);
    let mut to_start = Vec::with_capacity(n as usize);
    let mut to_done = Vec::with_capacity(n as usize);
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let result: BResult<()> = async {
        for i in 0..n {
            let t0 = Instant::now();
            let id = q.add("j", json!({ "i": i }), rmc()).await.map_err(e2s)?;
            let t_added = Instant::now();
            tokio::time::timeout(Duration::from_secs(10), async {
                loop {
                    if starts.lock().unwrap()[i as usize].is_some() {
                        break;
                    }
                    started.notified().await;
                }
            })
            .await
            .map_err(|_| format!("latency job {i}: handler never started"))?;
            let t_done = tokio::time::timeout(Duration::from_secs(10), async {
                while let Some((done_id, t)) = rx.recv().await {
                    if done_id == id {
                        return Some(t);
                    }
                }
                None
            })
            .await
            .ok()
            .flatten()
            .ok_or_else(|| format!("latency job {i}: no completed event"))?;
            let t_start = starts.lock().unwrap()[i as usize].expect("stamped");
            add_rtt.push(ms(t_added - t0));
            to_start.push(ms(t_start - t0));
            to_done.push(ms(t_done - t0));
            tokio::time::sleep(cfg.latency_gap).await;
        }
        Ok(())
    }
    .await;
    worker.close().await.map_err(e2s)?;
    q.close().await.map_err(e2s)?;
    result?;
    let mut m = Map::new();
    for (key, xs) in [("add_rtt", add_rtt), ("start", to_start), ("done", to_done)] {
        let mut s = xs;
        s.sort_by(|a, b| a.partial_cmp(b).unwrap());
        m.insert(format!("{key}_p50_ms"), json!(percentile(&s, 50.0)));
        m.insert(format!("{key}_p99_ms"), json!(percentile(&s, 99.0)));
    }
    m.insert(
        "done_observed_by".into(),
        json!("the worker's own completed event (on_event)"),
    );
    Ok(m)
}

/// (f) Redis memory per waiting job: INFO memory used_memory before/after adding n jobs, no worker.
async fn memory(cfg: &Cfg, admin: &mut Admin, name: &str, n: u64) -> BResult<Map<String, Value>> {
    memory_with(cfg, admin, name, n, None, rmc()).await
}

/// The options BullMQ users typically set on every job (`defaultJobOptions`): 3 attempts, an
/// exponential backoff from 1 s, removed on completion.
fn typical() -> emq::JobDefaults {
    emq::JobDefaults {
        attempts: Some(3),
        backoff: Some(emq::Backoff::Exponential {
            delay_ms: 1000,
            max_ms: 0,
        }),
        remove_on_complete: Some(emq::Removal::Now),
        ..Default::default()
    }
}

/// (g) memory per waiting job with the typical options: set once as the queue's job defaults
/// (`queue_defaults`), the jobs carrying none; or in every job's own options.
async fn memory_typical(
    cfg: &Cfg,
    admin: &mut Admin,
    name: &str,
    n: u64,
    queue_defaults: bool,
) -> BResult<Map<String, Value>> {
    let d = typical();
    if queue_defaults {
        return memory_with(cfg, admin, name, n, Some(d), JobOptions::default()).await;
    }
    let own = JobOptions {
        attempts: d.attempts.unwrap_or(1),
        backoff: d.backoff.unwrap_or(emq::Backoff::None),
        remove_on_complete: emq::Removal::Now,
        ..JobOptions::default()
    };
    memory_with(cfg, admin, name, n, None, own).await
}

/// Memory per waiting job: `n` jobs with options `own` bulk-added to a queue with `defaults`.
async fn memory_with(
    cfg: &Cfg,
    admin: &mut Admin,
    name: &str,
    n: u64,
    defaults: Option<emq::JobDefaults>,
    own: JobOptions,
) -> BResult<Map<String, Value>> {
    let q = open(cfg, name).await?;
    if let Some(d) = defaults {
        q.set_job_defaults(&d).await.map_err(e2s)?;
    }
    let m0 = admin.info_field("memory", "used_memory").await?;
    add_bulk_chunks_with(cfg, &q, n, own).await?;
    let m1 = admin.info_field("memory", "used_memory").await?;
    let c = q.counts().await.map_err(e2s)?;
    if c.waiting != n {
        return Err(format!("memory: {} waiting, expected {n}", c.waiting));
    }
    q.close().await.map_err(e2s)?;
    let mut m = Map::new();
    m.insert("bytes_per_waiting_job".into(), json!((m1 - m0) / n as f64));
    m.insert("used_memory_delta".into(), json!(m1 - m0));
    Ok(m)
}

async fn run_scenario(cfg: &Cfg, admin: &mut Admin, id: &str) -> BResult<Map<String, Value>> {
    let name = format!("bench-{id}");
    let n = cfg.jobs;
    match id {
        "add_sequential" => add_sequential(cfg, admin, &name, n).await,
        "add_concurrent_1000" => add_concurrent(cfg, admin, &name, n).await,
        "add_bulk_1000" => add_bulk(cfg, admin, &name, n).await,
        "process_c1" => process(cfg, admin, &name, n, 1).await,
        "process_c10" => process(cfg, admin, &name, n, 10).await,
        "process_c100" => process(cfg, admin, &name, n, 100).await,
        "latency" => latency(cfg, &name, cfg.latency_jobs).await,
        "memory" => memory(cfg, admin, &name, n).await,
        "memory_typical" => memory_typical(cfg, admin, &name, n, true).await,
        "memory_typical_own" => memory_typical(cfg, admin, &name, n, false).await,
        "cancel_latency" => control::cancel_latency(cfg, &name, cfg.latency_jobs).await,
        "wait_latency" => control::wait_latency(cfg, &name, cfg.latency_jobs).await,
        other => Err(format!("unknown scenario {other}")),
    }
}

const SCENARIOS: [&str; 8] = [
    "add_sequential",
    "add_concurrent_1000",
    "add_bulk_1000",
    "process_c1",
    "process_c10",
    "process_c100",
    "latency",
    "memory",
];

/// Scenarios run only when `SCENARIOS` names them (not part of the side-by-side table).
const OPT_IN: [&str; 4] = [
    "cancel_latency",
    "wait_latency",
    "memory_typical",
    "memory_typical_own",
];

#[tokio::main]
async fn main() {
    // The scenarios run in a spawned task, as an application's request handlers do on tokio's
    // multi-threaded runtime; a future driven by `block_on` on the main thread would hand every
    // reply across threads (a futex wake each way per call).
    let code = tokio::spawn(bench_main()).await.unwrap_or(2);
    std::process::exit(code);
}

async fn bench_main() -> i32 {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().is_some_and(|a| a == "partitions") {
        let seeds = args.get(1).cloned().unwrap_or_default();
        return partitions::partitions_main(seeds.split(',').map(str::to_string).collect()).await;
    }
    let fairness = args.first().is_some_and(|a| a == "fairness");
    let multiqueue = args.first().is_some_and(|a| a == "multiqueue");
    let batched = args.first().is_some_and(|a| a == "batch");
    if fairness || multiqueue || batched {
        args.remove(0);
    }
    let url = args
        .first()
        .cloned()
        .unwrap_or_else(|| "redis://127.0.0.1:6390".to_string());
    let cfg = Cfg {
        url,
        reps: env_u64("REPS", 1),
        jobs: env_u64("N_JOBS", 20_000),
        batch: 1000,
        latency_jobs: env_u64("N_LATENCY", 1000),
        latency_gap: Duration::from_millis(2),
        timeout: Duration::from_secs(env_u64("SCENARIO_TIMEOUT_S", 120)),
        warmup_jobs: 2000,
        commandstats: std::env::var("BENCH_COMMANDSTATS")
            .map(|v| v == "1")
            .unwrap_or(true),
    };
    let only: Option<Vec<String>> = std::env::var("SCENARIOS")
        .ok()
        .filter(|s| !s.is_empty())
        .map(|s| s.split(',').map(str::to_string).collect());
    let mut admin = match Admin::connect(&cfg.url).await {
        Ok(a) => a,
        Err(e) => {
            eprintln!("emq-bench: {e}");
            return 2;
        }
    };
    if fairness {
        return fairness::fairness_main(cfg, &mut admin).await;
    }
    if multiqueue {
        return multiqueue::multiqueue_main(cfg, &mut admin).await;
    }
    if batched {
        return batch::batch_main(cfg, &mut admin).await;
    }
    let t_start = Instant::now();
    let mut errors = 0;
    // BENCH_TRACE=1 (built with `--features otel`): an OpenTelemetry SDK provider, every span
    // counted (trace.rs).
    #[cfg(feature = "otel")]
    let traced = trace::install();
    #[cfg(not(feature = "otel"))]
    let traced = false;
    #[cfg(feature = "otel")]
    let spans = trace::spans;
    #[cfg(not(feature = "otel"))]
    let spans = || -> Option<u64> { None };

    // warm-up (not recorded): script loading, connection setup paths
    let warm = async {
        admin.flushall().await?;
        add_sequential(&cfg, &mut admin, "warm", cfg.warmup_jobs).await?;
        admin.flushall().await?;
        process(&cfg, &mut admin, "warm", cfg.warmup_jobs, 10).await?;
        BResult::Ok(())
    }
    .await;
    if let Err(e) = warm {
        eprintln!("emq-bench: warm-up failed: {e}");
        return 2;
    }

    for rep in 0..cfg.reps {
        for id in SCENARIOS.iter().chain(OPT_IN.iter()).copied() {
            let named = only.as_ref().is_some_and(|o| o.iter().any(|s| s == id));
            if (only.is_some() || OPT_IN.contains(&id)) && !named {
                continue;
            }
            if let Err(e) = admin.flushall().await {
                eprintln!("emq-bench: flushall: {e}");
                return 2;
            }
            let spans_before = spans();
            let r = tokio::time::timeout(
                cfg.timeout + Duration::from_secs(5),
                run_scenario(&cfg, &mut admin, id),
            )
            .await
            .unwrap_or_else(|_| Err(format!("timeout after {:?}", cfg.timeout)));
            let mut line = Map::new();
            line.insert("impl".into(), json!("emq"));
            line.insert("scenario".into(), json!(id));
            line.insert("rep".into(), json!(rep));
            line.insert("traced".into(), json!(traced));
            if let (Some(a), Some(b)) = (spans_before, spans()) {
                line.insert(
                    "spans_per_job".into(),
                    json!((b - a) as f64 / cfg.jobs as f64),
                );
            }
            match r {
                Ok(m) => line.extend(m),
                Err(e) => {
                    errors += 1;
                    eprintln!("emq-bench: rep {rep} {id}: {e}");
                    line.insert("error".into(), json!(e));
                }
            }
            println!("{}", Value::Object(line));
        }
        eprintln!(
            "emq-bench: rep {}/{} done ({:.0}s)",
            rep + 1,
            cfg.reps,
            t_start.elapsed().as_secs_f64()
        );
    }
    let _ = admin.flushall().await;
    i32::from(errors > 0)
}
