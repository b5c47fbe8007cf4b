//! emq-webload: the load generator of bench/web.sh (issue 30 item 1).
//!
//! One thread, one epoll loop, keep-alive HTTP/1.1 connections opened up front, at most one
//! request in flight per connection (no pipelining).
//!
//! * `--mode open` (default): requests are scheduled at fixed intervals (`--rate` per second) from
//!   a start time; a timerfd (absolute CLOCK_MONOTONIC, no timer slack) wakes the loop at each
//!   scheduled time, and every request that is due goes out on an idle connection. A request's
//!   latency is measured from its **scheduled** send time, not the time it actually went out, so a
//!   server (or generator) that falls behind is charged for the whole wait: the correction for
//!   coordinated omission that wrk2 makes. If no connection is idle the request waits in a queue
//!   (counted in `queued`; its wait is part of its latency); `--conns` should be large enough that
//!   this stays 0. The first `--warmup` seconds are not measured; the window is the next
//!   `--duration` seconds of scheduled sends. Then sending stops and the loop waits (up to
//!   `--drain` seconds) for the window's answers; a request still unanswered then counts as an
//!   error and enters the latencies with its wait so far.
//! * `--mode closed`: every connection sends its next request as soon as its answer arrives; the
//!   throughput is the answers received inside the window ÷ its length (latency from the actual
//!   send).
//!
//! CPU of other processes (`--pid NAME=PID`, repeatable): read at the window's first scheduled
//! send and again after the drain: `utime + stime` of /proc/PID/stat (clock ticks, all threads)
//! and the sum of /proc/PID/task/*/schedstat run times (ns, all threads alive at both reads).
//! The generator's own CPU (getrusage) over the same span is reported too, so that one can see it
//! is not the bottleneck (it is one thread: near 100 % of the span would mean it is), and the whole
//! machine's busy and steal time (/proc/stat), so that what other processes took is visible.
//!
//! Prints one JSON object on stdout.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::io::AsRawFd;

fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn die(msg: &str) -> ! {
    eprintln!("emq-webload: {msg}");
    std::process::exit(2);
}

struct Args {
    host: String,
    port: u16,
    path: String,
    mode: String,
    rate: f64,
    duration: f64,
    warmup: f64,
    drain: f64,
    conns: usize,
    pids: Vec<(String, i32)>,
}

fn parse_args() -> Args {
    let mut a = Args {
        host: "127.0.0.1".into(),
        port: 0,
        path: "/enqueue".into(),
        mode: "open".into(),
        rate: 1000.0,
        duration: 10.0,
        warmup: 2.0,
        drain: 10.0,
        conns: 128,
        pids: Vec::new(),
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < argv.len() {
        let k = argv[i].as_str();
        let v = argv.get(i + 1).cloned().unwrap_or_else(|| die(&format!("{k} needs a value")));
        match k {
            "--host" => a.host = v,
            "--port" => a.port = v.parse().unwrap_or_else(|_| die("bad --port")),
            "--path" => a.path = v,
            "--mode" => a.mode = v,
            "--rate" => a.rate = v.parse().unwrap_or_else(|_| die("bad --rate")),
            "--duration" => a.duration = v.parse().unwrap_or_else(|_| die("bad --duration")),
            "--warmup" => a.warmup = v.parse().unwrap_or_else(|_| die("bad --warmup")),
            "--drain" => a.drain = v.parse().unwrap_or_else(|_| die("bad --drain")),
            "--conns" => a.conns = v.parse().unwrap_or_else(|_| die("bad --conns")),
            "--pid" => {
                let (n, p) = v.split_once('=').unwrap_or_else(|| die("--pid wants NAME=PID"));
                a.pids.push((n.to_string(), p.parse().unwrap_or_else(|_| die("bad pid"))));
            }
            _ => die(&format!("unknown argument {k}")),
        }
        i += 2;
    }
    if a.port == 0 {
        die("--port is required");
    }
    if a.mode != "open" && a.mode != "closed" {
        die("--mode is open or closed");
    }
    if a.rate <= 0.0 || a.duration <= 0.0 || a.conns == 0 {
        die("--rate, --duration and --conns must be positive");
    }
    a
}

/// (utime + stime in seconds, schedstat run time in seconds) of a process, all threads.
fn proc_cpu(pid: i32) -> (f64, f64) {
    let tck = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the ")" of comm: state is field 3, utime 14, stime 15.
    let ticks = stat
        .rfind(')')
        .map(|p| {
            let f: Vec<&str> = stat[p + 2..].split_whitespace().collect();
            let u: f64 = f.get(11).and_then(|s| s.parse().ok()).unwrap_or(0.0);
            let s: f64 = f.get(12).and_then(|s| s.parse().ok()).unwrap_or(0.0);
            (u + s) / tck
        })
        .unwrap_or(f64::NAN);
    let mut sched = 0.0;
    match std::fs::read_dir(format!("/proc/{pid}/task")) {
        Ok(rd) => {
            for e in rd.flatten() {
                let p = e.path().join("schedstat");
                if let Ok(s) = std::fs::read_to_string(p) {
                    if let Some(ns) = s.split_whitespace().next().and_then(|x| x.parse::<f64>().ok()) {
                        sched += ns / 1e9;
                    }
                }
            }
        }
        Err(_) => sched = f64::NAN,
    }
    (ticks, sched)
}

fn self_cpu() -> f64 {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// The whole machine from /proc/stat's "cpu" line, in seconds: (busy, steal). Busy is user + nice +
/// system + irq + softirq (guest time is inside user); steal is time the hypervisor ran something
/// else while a vCPU of this machine wanted to run.
fn machine_cpu() -> (f64, f64) {
    let tck = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let s = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let Some(line) = s.lines().find(|l| l.starts_with("cpu ")) else { return (f64::NAN, f64::NAN) };
    let f: Vec<f64> = line.split_whitespace().skip(1).map(|x| x.parse().unwrap_or(0.0)).collect();
    let g = |i: usize| f.get(i).copied().unwrap_or(0.0);
    ((g(0) + g(1) + g(2) + g(5) + g(6)) / tck, g(7) / tck)
}

struct Snapshot {
    t: u64,
    own: f64,
    machine: (f64, f64),
    procs: Vec<(f64, f64)>,
}

fn snapshot(pids: &[(String, i32)]) -> Snapshot {
    Snapshot { t: now_ns(), own: self_cpu(), machine: machine_cpu(), procs: pids.iter().map(|(_, p)| proc_cpu(*p)).collect() }
}

struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    /// Scheduled time of the request in flight, and whether it belongs to the window.
    inflight: Option<(u64, bool)>,
}

fn connect(host: &str, port: u16) -> TcpStream {
    let s = TcpStream::connect((host, port)).unwrap_or_else(|e| die(&format!("connect {host}:{port}: {e}")));
    s.set_nodelay(true).ok();
    s.set_nonblocking(true).unwrap();
    s
}

fn epoll_add(ep: i32, fd: i32, data: u64) {
    let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: data };
    if unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, fd, &mut ev) } != 0 {
        die("epoll_ctl");
    }
}

/// One complete response at the front of `buf`: (its length, its status), or None if incomplete.
fn parse_response(buf: &[u8]) -> Option<(usize, u16)> {
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = &buf[..end];
    let status = std::str::from_utf8(head.get(9..12)?).ok()?.parse::<u16>().unwrap_or(0);
    let text = String::from_utf8_lossy(head).to_ascii_lowercase();
    let cl = text
        .split("\r\n")
        .find_map(|l| l.strip_prefix("content-length:").map(|v| v.trim().parse::<usize>().unwrap_or(0)))
        .unwrap_or_else(|| die("a response without Content-Length (chunked answers are not supported)"));
    let total = end + 4 + cl;
    if buf.len() >= total {
        Some((total, status))
    } else {
        None
    }
}

fn pct(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let idx = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[idx] as f64 / 1000.0
}

fn stats_json(mut v: Vec<u64>) -> String {
    v.sort_unstable();
    let mean = if v.is_empty() { f64::NAN } else { v.iter().sum::<u64>() as f64 / v.len() as f64 / 1000.0 };
    let j = |x: f64| if x.is_finite() { format!("{x:.1}") } else { "null".into() };
    format!(
        "{{\"n\":{},\"mean\":{},\"p50\":{},\"p90\":{},\"p99\":{},\"p999\":{},\"max\":{}}}",
        v.len(),
        j(mean),
        j(pct(&v, 0.50)),
        j(pct(&v, 0.90)),
        j(pct(&v, 0.99)),
        j(pct(&v, 0.999)),
        j(pct(&v, 1.0))
    )
}

fn main() {
    let a = parse_args();
    let open = a.mode == "open";
    let req = format!("GET {} HTTP/1.1\r\nHost: {}:{}\r\n\r\n", a.path, a.host, a.port).into_bytes();

    // Timers as exact as the kernel gives them (the default slack is 50 µs).
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1, 0, 0, 0) };

    let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if ep < 0 {
        die("epoll_create1");
    }
    let tfd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) };
    if tfd < 0 {
        die("timerfd_create");
    }
    const TIMER: u64 = u64::MAX;
    epoll_add(ep, tfd, TIMER);

    let mut conns: Vec<Conn> = Vec::with_capacity(a.conns);
    let mut idle: VecDeque<usize> = VecDeque::with_capacity(a.conns);
    for i in 0..a.conns {
        let s = connect(&a.host, a.port);
        epoll_add(ep, s.as_raw_fd(), i as u64);
        conns.push(Conn { stream: s, buf: Vec::with_capacity(4096), inflight: None });
        idle.push_back(i);
    }

    let interval = 1e9 / a.rate;
    let t0 = now_ns() + 20_000_000;
    let warm_end = t0 + (a.warmup * 1e9) as u64;
    let end = warm_end + (a.duration * 1e9) as u64;
    let sched = |k: u64| t0 + (k as f64 * interval) as u64;

    let arm = |at: u64| {
        let its = libc::itimerspec {
            it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: libc::timespec { tv_sec: (at / 1_000_000_000) as i64, tv_nsec: (at % 1_000_000_000) as i64 },
        };
        unsafe { libc::timerfd_settime(tfd, libc::TFD_TIMER_ABSTIME, &its, std::ptr::null_mut()) };
    };

    let mut lat: Vec<u64> = Vec::with_capacity((a.rate * (a.duration + 1.0)) as usize + 1024);
    let mut lag: Vec<u64> = Vec::with_capacity(lat.capacity());
    let mut pending: VecDeque<(u64, bool)> = VecDeque::new();
    let mut next_k: u64 = 0;
    let mut sending = true;
    let mut inflight = 0usize;
    let mut max_inflight = 0usize;
    let mut queued = 0u64;
    let mut sent_window = 0u64;
    let mut done_window = 0u64;
    let mut errors = 0u64;
    let mut non200 = 0u64;
    let mut reconnects = 0u64;
    let mut snap_a: Option<Snapshot> = None;
    let mut drain_deadline = 0u64;
    let mut end_armed = false;
    let mut rbuf = vec![0u8; 65536];
    let mut events: Vec<libc::epoll_event> = vec![libc::epoll_event { events: 0, u64: 0 }; 256];

    // send on connection c a request scheduled at s
    macro_rules! send {
        ($c:expr, $s:expr, $win:expr) => {{
            let c: usize = $c;
            let n = now_ns();
            if $win && open {
                lag.push(n.saturating_sub($s));
            }
            match conns[c].stream.write(&req) {
                Ok(w) if w == req.len() => {}
                _ => die("a request did not go out in one write"),
            }
            conns[c].inflight = Some(($s, $win));
            inflight += 1;
            if inflight > max_inflight {
                max_inflight = inflight;
            }
            if $win {
                sent_window += 1;
            }
        }};
    }

    if open {
        arm(t0);
    } else {
        while now_ns() < t0 {}
        arm(warm_end);
        let ids: Vec<usize> = idle.drain(..).collect();
        for c in ids {
            let n = now_ns();
            send!(c, n, n >= warm_end);
        }
    }

    loop {
        let timeout = if sending { -1 } else { 50 };
        let n = unsafe { libc::epoll_wait(ep, events.as_mut_ptr(), events.len() as i32, timeout) };
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            die("epoll_wait");
        }
        for e in &events[..n as usize] {
            let data = e.u64;
            if data == TIMER {
                let mut x = [0u8; 8];
                unsafe { libc::read(tfd, x.as_mut_ptr() as *mut libc::c_void, 8) };
                continue;
            }
            let c = data as usize;
            let mut eof = false;
            loop {
                match conns[c].stream.read(&mut rbuf) {
                    Ok(0) => {
                        eof = true;
                        break;
                    }
                    Ok(k) => {
                        conns[c].buf.extend_from_slice(&rbuf[..k]);
                        if k < rbuf.len() {
                            break;
                        }
                    }
                    Err(ref e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(_) => {
                        eof = true;
                        break;
                    }
                }
            }
            while let Some((len, status)) = parse_response(&conns[c].buf) {
                conns[c].buf.drain(..len);
                let t = now_ns();
                let Some((s, win)) = conns[c].inflight.take() else { die("an answer with no request in flight") };
                inflight -= 1;
                if status != 200 {
                    non200 += 1;
                }
                let in_window = if open { win } else { t >= warm_end && t < end };
                if in_window {
                    lat.push(t - s);
                    done_window += 1;
                }
                if !open {
                    if t < end {
                        let n = now_ns();
                        send!(c, n, n >= warm_end);
                    }
                } else if let Some((s2, w2)) = pending.pop_front() {
                    send!(c, s2, w2);
                } else {
                    idle.push_back(c);
                }
            }
            if eof {
                // The server closed it: count a request lost with it, open a new one.
                if conns[c].inflight.take().is_some() {
                    inflight -= 1;
                    errors += 1;
                }
                reconnects += 1;
                let s = connect(&a.host, a.port);
                epoll_add(ep, s.as_raw_fd(), c as u64);
                conns[c] = Conn { stream: s, buf: Vec::with_capacity(4096), inflight: None };
                if open && sending {
                    idle.push_back(c);
                }
            }
        }
        let t = now_ns();
        if open && sending {
            while next_k < u64::MAX && sched(next_k) <= t {
                let s = sched(next_k);
                if s >= end {
                    break;
                }
                next_k += 1;
                let win = s >= warm_end;
                if win && snap_a.is_none() {
                    snap_a = Some(snapshot(&a.pids));
                }
                if let Some(c) = idle.pop_front() {
                    send!(c, s, win);
                } else {
                    pending.push_back((s, win));
                    queued += 1;
                }
            }
            if sched(next_k) >= end {
                sending = false;
                drain_deadline = t + (a.drain * 1e9) as u64;
            } else {
                arm(sched(next_k));
            }
        }
        if !open && sending {
            if snap_a.is_none() && t >= warm_end {
                snap_a = Some(snapshot(&a.pids));
            }
            if t >= end {
                // The closed loop's CPU is read at the window's end; its answers after that are not counted.
                break;
            }
            if snap_a.is_some() && !end_armed {
                arm(end);
                end_armed = true;
            }
        }
        if !sending && ((inflight == 0 && pending.is_empty()) || t >= drain_deadline) {
            break;
        }
    }
    let snap_b = snapshot(&a.pids);
    let snap_a = snap_a.unwrap_or_else(|| die("the window never started"));

    // Unanswered requests of the window: errors, with their wait so far as latency.
    let tend = snap_b.t;
    let mut unanswered = 0u64;
    if open {
        for c in &conns {
            if let Some((s, true)) = c.inflight {
                lat.push(tend - s);
                unanswered += 1;
            }
        }
        for (s, w) in &pending {
            if *w {
                lat.push(tend - s);
                unanswered += 1;
            }
        }
    }
    let span = (snap_b.t - snap_a.t) as f64 / 1e9;
    let mut procs = Vec::new();
    for (i, (name, pid)) in a.pids.iter().enumerate() {
        let (ta, sa) = snap_a.procs[i];
        let (tb, sb) = snap_b.procs[i];
        procs.push(format!("\"{name}\":{{\"pid\":{pid},\"ticks_s\":{:.4},\"sched_s\":{:.6}}}", tb - ta, sb - sa));
    }
    let j = |x: f64| if x.is_finite() { format!("{x:.3}") } else { "null".into() };
    println!(
        "{{\"mode\":\"{}\",\"rate\":{},\"duration_s\":{},\"warmup_s\":{},\"conns\":{},\"sent\":{},\"completed\":{},\
         \"throughput\":{},\"errors\":{},\"unanswered\":{},\"non200\":{},\"reconnects\":{},\"queued\":{},\"max_inflight\":{},\
         \"span_s\":{},\"gen_cpu_s\":{},\"machine_busy_s\":{},\"machine_steal_s\":{},\"lat_us\":{},\"send_lag_us\":{},\"cpu\":{{{}}}}}",
        a.mode,
        a.rate,
        a.duration,
        a.warmup,
        a.conns,
        sent_window,
        done_window,
        j(done_window as f64 / a.duration),
        errors + unanswered,
        unanswered,
        non200,
        reconnects,
        queued,
        max_inflight,
        j(span),
        j(snap_b.own - snap_a.own),
        j(snap_b.machine.0 - snap_a.machine.0),
        j(snap_b.machine.1 - snap_a.machine.1),
        stats_json(lat),
        stats_json(lag),
        procs.join(",")
    );
}
