//! Shared machinery of the chaos suite (`core/tests/chaos_*.rs`): the profile (short in CI, long
//! by hand with `EMQ_CHAOS=long`), the JSON-lines report (`EMQ_CHAOS_REPORT=<file>`, rendered into
//! RELIABILITY.md by `tests/chaos/run.sh`), worker child processes whose stdout tells which job
//! ran where (a ledger of runs), and a TCP proxy on 127.0.0.1 the test can partition and heal.
#![allow(dead_code)]

use emq::{JobContext, Queue, Retention, Worker, WorkerOptions};
use emq_harness::{RedisCluster, RedisServer};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The env var that makes a test binary's `chaos_worker_child` test run as a worker.
pub const CHILD_ENV: &str = "EMQ_CHAOS_CHILD";
/// Longest a worker child lives (it is normally stopped by the test well before).
pub const CHILD_LIFETIME: Duration = Duration::from_secs(240);

/// Short (CI, the default) or long (`EMQ_CHAOS=long`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    Short,
    Long,
}

impl Profile {
    pub fn get() -> Profile {
        match std::env::var("EMQ_CHAOS").as_deref() {
            Ok("long") => Profile::Long,
            _ => Profile::Short,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Profile::Short => "short",
            Profile::Long => "long",
        }
    }
    /// `short` in the short profile, `long` in the long one.
    pub fn pick<T>(self, short: T, long: T) -> T {
        match self {
            Profile::Short => short,
            Profile::Long => long,
        }
    }
}

/// Appends one scenario's figures to `$EMQ_CHAOS_REPORT` (JSON lines) and prints them.
pub fn report(scenario: &str, mut figures: Value) {
    figures["scenario"] = json!(scenario);
    figures["profile"] = json!(Profile::get().name());
    println!("CHAOS {figures}");
    if let Ok(path) = std::env::var("EMQ_CHAOS_REPORT") {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .expect("open the chaos report");
        writeln!(f, "{figures}").unwrap();
    }
}

/// True when this process is a worker child (tests other than the child body then return).
pub fn is_child() -> bool {
    std::env::var(CHILD_ENV).is_ok()
}

/// Microseconds since the Unix epoch on this machine's clock: the stamps children print with
/// `STARTED`/`DONE`, and the end the ledger gives a run whose child was killed.
pub fn now_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64
}

/// Body of a worker child: `url|queue|lease_ms|sleep_ms|tag|concurrency`. Prints `STARTED <id>
/// <µs>` when a handler starts, `DONE <id> <µs>` when it returns (µs: [`now_us`]), and `STATS <lease_lost> <completed>` every
/// 100 ms; the handler's result is `{"by": tag}`. Lives at most [`CHILD_LIFETIME`].
pub async fn child_body() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let p: Vec<String> = spec.split('|').map(str::to_string).collect();
    let (url, name) = (p[0].clone(), p[1].clone());
    let lease_ms: u64 = p[2].parse().unwrap();
    let sleep_ms: u64 = p[3].parse().unwrap();
    let tag = p[4].clone();
    let concurrency: usize = p[5].parse().unwrap();
    let opts = if url.contains(',') {
        emq::ConnectOptions::seeds(url.split(',').map(str::to_string))
    } else {
        emq::ConnectOptions::new(url)
    };
    // A child started while the storm has the datastore down (its restart) connects once it is
    // back.
    let opts = opts.guarded(true);
    let mut tries = 0;
    let q = loop {
        match Queue::connect(opts.clone(), &name).await {
            Ok(q) => break q,
            Err(_) if tries < 200 => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("connect: {e}"),
        }
    };
    let w = Worker::builder(q)
        .options(WorkerOptions {
            concurrency,
            lease: Duration::from_millis(lease_ms),
            stalled_interval: Duration::from_millis(lease_ms / 2),
            block_timeout: Duration::from_millis(300),
            // A job a killed worker had leased ahead (prefetch) is charged a stall today (issue 16,
            // defect 2, another branch): allow many, so the suite measures loss, not that policy.
            max_stalls: 1_000,
            completed: Retention::KEEP_ALL,
            ..WorkerOptions::default()
        })
        .handler(move |job: JobContext| {
            let tag = tag.clone();
            async move {
                println!("STARTED {} {}", job.id(), now_us());
                tokio::time::sleep(Duration::from_millis(sleep_ms)).await;
                println!("DONE {} {}", job.id(), now_us());
                Ok(json!({ "by": tag }))
            }
        })
        .run()
        .unwrap();
    let until = Instant::now() + CHILD_LIFETIME;
    while Instant::now() < until {
        let s = w.stats();
        println!("STATS {} {}", s.lease_lost, s.completed);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(w);
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

pub const SIGKILL: i32 = 9;
pub const SIGCONT: i32 = 18;
pub const SIGSTOP: i32 = 19;

/// Sends `sig` to `pid` (a process this test started).
pub fn signal(pid: u32, sig: i32) {
    let rc = unsafe { libc_kill(pid as i32, sig) };
    assert_eq!(rc, 0, "kill({pid}, {sig})");
}

/// One line a child printed, and when the parent read it.
struct Event {
    child: usize,
    line: String,
    at: Instant,
}

/// One run of a job on a child.
#[derive(Clone, Debug)]
pub struct Run {
    pub child: usize,
    pub started: Instant,
    pub done: bool,
    /// The handler's own start and end stamps ([`now_us`]) when the child printed them; a run
    /// whose child was killed ends at the kill.
    pub start_us: Option<u64>,
    pub end_us: Option<u64>,
}

/// A fault injected on a child: when, until when (a kill never heals), and the jobs it had running.
#[derive(Clone, Debug)]
struct Fault {
    child: usize,
    at: Instant,
    /// When it began, in µs since the epoch ([`now_us`], the runs' stamps).
    at_us: u64,
    healed: Option<Instant>,
    killed: bool,
    in_flight: Vec<String>,
}

/// Worker child processes of one test binary and the ledger of what ran where.
pub struct Fleet {
    exe: std::path::PathBuf,
    test_fn: &'static str,
    children: Vec<Option<Child>>,
    tx: Sender<Event>,
    rx: Receiver<Event>,
    pub runs: HashMap<String, Vec<Run>>,
    stats: HashMap<usize, (u64, u64)>,
    faults: Vec<Fault>,
    /// Kill/stall to next start elsewhere, per job in flight on a faulted child.
    pub recovery_ms: Vec<u64>,
}

impl Fleet {
    /// Children run `test_fn` of this test binary (a test that calls [`child_body`]).
    pub fn new(test_fn: &'static str) -> Fleet {
        let (tx, rx) = channel();
        Fleet {
            exe: std::env::current_exe().unwrap(),
            test_fn,
            children: Vec::new(),
            tx,
            rx,
            runs: HashMap::new(),
            stats: HashMap::new(),
            faults: Vec::new(),
            recovery_ms: Vec::new(),
        }
    }

    /// Starts a worker child; returns its number (also its tag, the `by` of its results).
    pub fn spawn(
        &mut self,
        url: &str,
        queue: &str,
        lease_ms: u64,
        sleep_ms: u64,
        conc: usize,
    ) -> usize {
        let mut cmd = Command::new(&self.exe);
        cmd.args(["--exact", self.test_fn, "--nocapture", "--test-threads=1"]);
        self.spawn_command(cmd, url, queue, lease_ms, sleep_ms, conc)
    }

    /// Starts a worker child from another program speaking the same protocol (`EMQ_CHAOS_CHILD`
    /// in, `STARTED`/`DONE` lines out: `tests/chaos/worker.py`, `tests/chaos/worker.js`).
    pub fn spawn_command(
        &mut self,
        mut cmd: Command,
        url: &str,
        queue: &str,
        lease_ms: u64,
        sleep_ms: u64,
        conc: usize,
    ) -> usize {
        let n = self.children.len();
        let spec = format!("{url}|{queue}|{lease_ms}|{sleep_ms}|{n}|{conc}");
        let mut child = cmd
            .env(CHILD_ENV, spec)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn a worker child");
        let out = child.stdout.take().unwrap();
        let tx = self.tx.clone();
        std::thread::spawn(move || {
            // Ends at the child's EOF (it dies or exits within CHILD_LIFETIME).
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                // libtest may print "test chaos_worker_child ... " before a line, with no newline.
                for key in ["STARTED ", "DONE ", "STATS "] {
                    if let Some(at) = line.find(key) {
                        let ev = Event {
                            child: n,
                            line: line[at..].to_string(),
                            at: Instant::now(),
                        };
                        if tx.send(ev).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        self.children.push(Some(child));
        n
    }

    pub fn pid(&self, n: usize) -> u32 {
        self.children[n].as_ref().expect("a live child").id()
    }

    pub fn live(&self) -> Vec<usize> {
        (0..self.children.len())
            .filter(|&i| self.children[i].is_some())
            .collect()
    }

    /// Reads every line the children printed so far into the ledger.
    pub fn pump(&mut self) {
        while let Ok(ev) = self.rx.try_recv() {
            let mut parts = ev.line.split_whitespace();
            match parts.next() {
                Some("STARTED") => {
                    let id = parts.next().unwrap_or_default().to_string();
                    let start_us = parts.next().and_then(|s| s.parse().ok());
                    for f in &self.faults {
                        if f.child != ev.child && f.in_flight.contains(&id) {
                            // The first start elsewhere after the fault: recovery.
                            let earlier = self.runs[&id].iter().any(|r| r.started > f.at);
                            if !earlier {
                                self.recovery_ms
                                    .push(ev.at.duration_since(f.at).as_millis() as u64);
                            }
                        }
                    }
                    // A line read after its child was killed (it was still in the pipe when the
                    // kill marked the child's runs ended): the run ended at the kill too. Left
                    // open, it counted as running for the rest of the test.
                    let killed_at = self
                        .faults
                        .iter()
                        .find(|f| f.child == ev.child && f.killed)
                        .map(|f| f.at_us);
                    self.runs.entry(id).or_default().push(Run {
                        child: ev.child,
                        started: ev.at,
                        done: false,
                        start_us,
                        end_us: killed_at,
                    });
                }
                Some("DONE") => {
                    let id = parts.next().unwrap_or_default().to_string();
                    let end_us = parts.next().and_then(|s| s.parse().ok());
                    if let Some(r) = self
                        .runs
                        .get_mut(&id)
                        .and_then(|v| v.iter_mut().rev().find(|r| r.child == ev.child))
                    {
                        r.done = true;
                        // The handler's own stamp wins over a kill's (its line came late).
                        if end_us.is_some() {
                            r.end_us = end_us;
                        }
                    }
                }
                Some("STATS") => {
                    let a: u64 = parts.next().and_then(|s| s.parse().ok()).unwrap_or(0);
                    let b: u64 = parts.next().and_then(|s| s.parse().ok()).unwrap_or(0);
                    self.stats.insert(ev.child, (a, b));
                }
                _ => {}
            }
        }
    }

    fn in_flight(&self, n: usize) -> Vec<String> {
        self.runs
            .iter()
            .filter(|(_, v)| v.iter().any(|r| r.child == n && !r.done))
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// SIGKILLs child `n` and reaps it.
    pub fn kill(&mut self, n: usize) {
        self.pump();
        let mut c = self.children[n].take().expect("a live child");
        signal(c.id(), SIGKILL);
        let at = Instant::now();
        let at_us = now_us();
        c.wait().unwrap();
        let in_flight = self.in_flight(n);
        for id in &in_flight {
            for r in self.runs.get_mut(id).into_iter().flatten() {
                if r.child == n && !r.done {
                    r.end_us = Some(at_us);
                }
            }
        }
        self.faults.push(Fault {
            child: n,
            at,
            at_us,
            healed: None,
            killed: true,
            in_flight,
        });
    }

    /// Marks the start of a fault on child `n` that it survives (frozen, partitioned).
    pub fn fault_begins(&mut self, n: usize) {
        self.pump();
        let in_flight = self.in_flight(n);
        self.faults.push(Fault {
            child: n,
            at: Instant::now(),
            at_us: now_us(),
            healed: None,
            killed: false,
            in_flight,
        });
    }

    /// Marks the end of child `n`'s open fault.
    pub fn fault_ends(&mut self, n: usize) {
        self.pump();
        let now = Instant::now();
        for f in self.faults.iter_mut().filter(|f| f.child == n) {
            f.healed.get_or_insert(now);
        }
    }

    pub fn freeze(&mut self, n: usize) {
        self.fault_begins(n);
        signal(self.pid(n), SIGSTOP);
    }

    pub fn thaw(&mut self, n: usize) {
        signal(self.pid(n), SIGCONT);
        self.fault_ends(n);
    }

    /// `(lease_lost, completed)` the child last printed.
    pub fn stats(&self, n: usize) -> (u64, u64) {
        self.stats.get(&n).copied().unwrap_or((0, 0))
    }

    /// The live children running a job now (by the ledger).
    pub fn busy(&mut self) -> Vec<usize> {
        self.pump();
        self.live()
            .into_iter()
            .filter(|&n| !self.in_flight(n).is_empty())
            .collect()
    }

    /// The jobs the last faulted child had running when the fault began.
    pub fn last_in_flight(&self) -> Vec<String> {
        self.faults
            .last()
            .map(|f| f.in_flight.clone())
            .unwrap_or_default()
    }

    pub fn faults(&self) -> usize {
        self.faults.len()
    }

    /// A run is explained when its child was killed afterwards, or faulted while it ran.
    fn explained(&self, run: &Run) -> bool {
        self.faults.iter().any(|f| {
            f.child == run.child && (f.killed || f.healed.map_or(true, |h| run.started <= h))
        })
    }

    /// Jobs that ran more than once; panics if any of their extra runs is not explained by a
    /// fault on the child that ran it.
    pub fn check_double_runs(&self) -> usize {
        let mut twice = 0;
        for (id, runs) in &self.runs {
            if runs.len() < 2 {
                continue;
            }
            twice += 1;
            let unexplained: Vec<&Run> = runs.iter().filter(|r| !self.explained(r)).collect();
            assert!(
                unexplained.len() <= 1,
                "job {id} ran {} times, {} of them on children no fault touched: {runs:?}",
                runs.len(),
                unexplained.len()
            );
        }
        twice
    }

    /// The most runs of one group's jobs (`group_of`: job id -> group) that ran at once, per group,
    /// from the handlers' own stamps (a run that ends when another starts does not overlap it; a
    /// run with no end yet counts as running).
    pub fn most_at_once(&self, group_of: &HashMap<String, String>) -> HashMap<String, usize> {
        let mut edges: HashMap<&str, Vec<(u64, i32)>> = HashMap::new();
        for (id, runs) in &self.runs {
            let Some(g) = group_of.get(id) else { continue };
            for r in runs {
                let Some(start) = r.start_us else { continue };
                let (from, to) = (start, r.end_us.unwrap_or(u64::MAX));
                let e = edges.entry(g.as_str()).or_default();
                e.push((from, 1));
                e.push((to, -1));
            }
        }
        edges
            .into_iter()
            .map(|(g, mut e)| {
                // Ends before starts at the same instant.
                e.sort();
                let (mut now, mut most) = (0i32, 0i32);
                for (_, d) in e {
                    now += d;
                    most = most.max(now);
                }
                (g.to_string(), most as usize)
            })
            .collect()
    }

    /// Each fault as (child, killed, µs since the epoch it began, last 8 digits), oldest first.
    pub fn kill_times(&self) -> Vec<(usize, bool, u64)> {
        self.faults
            .iter()
            .map(|f| (f.child, f.killed, f.at_us % 100_000_000))
            .collect()
    }

    /// Children that printed DONE for `id`.
    pub fn done_by(&self, id: &str) -> HashSet<usize> {
        self.runs
            .get(id)
            .map(|v| v.iter().filter(|r| r.done).map(|r| r.child).collect())
            .unwrap_or_default()
    }

    /// Kills every live child (end of a test).
    pub fn stop_all(&mut self) {
        for c in self.children.iter_mut() {
            if let Some(mut c) = c.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for c in self.children.iter_mut().flatten() {
            // A frozen child must be able to die.
            let _ = unsafe { libc_kill(c.id() as i32, SIGCONT) };
        }
        self.stop_all();
    }
}

/// A TCP proxy from a free 127.0.0.1 port to `target`: while partitioned it moves no bytes in
/// either direction (what the peers see of a network that drops packets: their kernels hold the
/// data, nothing arrives, nothing is refused); healed, everything held flows on. Lives until
/// dropped, at most `PROXY_LIFETIME`.
pub struct Proxy {
    port: u16,
    cut: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
}

pub const PROXY_LIFETIME: Duration = Duration::from_secs(600);

impl Proxy {
    pub fn start(target: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let cut = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let (cut2, stop2) = (cut.clone(), stop.clone());
        std::thread::spawn(move || {
            let until = Instant::now() + PROXY_LIFETIME;
            while !stop2.load(Ordering::Relaxed) && Instant::now() < until {
                match listener.accept() {
                    Ok((client, _)) => {
                        let Ok(server) = TcpStream::connect(("127.0.0.1", target)) else {
                            continue;
                        };
                        for (a, b) in [
                            (client.try_clone().unwrap(), server.try_clone().unwrap()),
                            (server, client),
                        ] {
                            let (cut, stop) = (cut2.clone(), stop2.clone());
                            std::thread::spawn(move || pump(a, b, cut, stop, until));
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        Proxy { port, cut, stop }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    pub fn partition(&self) {
        self.cut.store(true, Ordering::SeqCst);
    }

    pub fn heal(&self) {
        self.cut.store(false, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn pump(
    mut from: TcpStream,
    mut to: TcpStream,
    cut: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    until: Instant,
) {
    from.set_read_timeout(Some(Duration::from_millis(20))).ok();
    let mut buf = vec![0u8; 64 * 1024];
    while !stop.load(Ordering::Relaxed) && Instant::now() < until {
        if cut.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(10));
            continue;
        }
        match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => break,
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}

/// Measures how long jobs stranded by a fault stay in `active`: a job is out once the stall sweep
/// counted it (its `stalls` went up) or it finished. Polls every 25 ms on its own task.
pub struct StrandWatch {
    pending: Arc<std::sync::Mutex<Vec<(emq::JobId, Instant, u32)>>>,
    pub out_ms: Arc<std::sync::Mutex<Vec<u64>>>,
    stop: Arc<AtomicBool>,
}

impl StrandWatch {
    pub fn start(q: Queue) -> StrandWatch {
        let w = StrandWatch {
            pending: Arc::default(),
            out_ms: Arc::default(),
            stop: Arc::default(),
        };
        let (pending, out, stop) = (w.pending.clone(), w.out_ms.clone(), w.stop.clone());
        tokio::spawn(async move {
            let until = Instant::now() + Duration::from_secs(900);
            while !stop.load(Ordering::Relaxed) && Instant::now() < until {
                let now: Vec<_> = pending.lock().unwrap().clone();
                for (id, at, stalls) in now {
                    let Ok(Some(job)) = q.get(id).await else {
                        continue;
                    };
                    if job.stalls > stalls || job.finished_ms.is_some() {
                        out.lock().unwrap().push(at.elapsed().as_millis() as u64);
                        pending.lock().unwrap().retain(|p| p.0 != id);
                    }
                }
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
        });
        w
    }

    /// Watches `ids`, stranded at `at`, whose stall counts were read just after the fault.
    pub async fn watch(&self, q: &Queue, ids: &[String], at: Instant) {
        for id in ids {
            let id = emq::JobId::parse(id).unwrap();
            if let Ok(Some(job)) = q.get(id).await {
                if job.finished_ms.is_none() {
                    self.pending.lock().unwrap().push((id, at, job.stalls));
                }
            }
        }
    }

    /// The longest stay in `active` after a fault, and how many jobs are still being watched.
    pub fn worst(&self) -> (u64, usize) {
        let worst = self
            .out_ms
            .lock()
            .unwrap()
            .iter()
            .copied()
            .max()
            .unwrap_or(0);
        (worst, self.pending.lock().unwrap().len())
    }
}

impl Drop for StrandWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Polls `f` every 25 ms until it holds or `limit` passes; returns whether it held.
pub async fn eventually<F, Fut>(limit: Duration, mut f: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let until = Instant::now() + limit;
    loop {
        if f().await {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// The master of `cluster` on `port` and its replica (the node a failover promotes).
pub fn master_and_replica(cluster: &RedisCluster, port: u16) -> (&RedisServer, &RedisServer) {
    let master = cluster
        .nodes()
        .iter()
        .find(|n| n.port() == port)
        .expect("a master on that port");
    let replica = cluster
        .nodes()
        .iter()
        .find(|n| {
            n.cli(&["INFO", "replication"])
                .map(|i| i.contains(&format!("master_port:{port}")))
                .unwrap_or(false)
        })
        .expect("the master's replica");
    (master, replica)
}

/// A master killed and failed over ([`fail_over`]): when it died, and when its replica took over.
pub struct FailedOver {
    pub killed: Instant,
    pub promoted: Instant,
}

/// SIGKILLs the master on `port`, asserts that its replica takes over within 30 s, then brings
/// the old master back (as a replica of its successor, as an operator would restart it), so that
/// durable adds to its slots find a replica again.
pub async fn fail_over(cluster: &mut RedisCluster, port: u16) -> FailedOver {
    let (master, replica) = master_and_replica(cluster, port);
    signal(master.pid(), SIGKILL);
    let killed = Instant::now();
    let took_over = eventually(Duration::from_secs(30), || async {
        replica
            .cli(&["ROLE"])
            .map(|r| r.starts_with("master"))
            .unwrap_or(false)
    })
    .await;
    assert!(took_over, "the replica of the master on {port} took over");
    let promoted = Instant::now();
    cluster.restart_node(port).expect("the old master back");
    FailedOver { killed, promoted }
}
