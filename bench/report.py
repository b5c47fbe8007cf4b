#!/usr/bin/env python3
"""Side-by-side report of emq against the BullMQ anchors. Usage: report.py OUT_DIR RESULTS.md

Reads OUT_DIR/node_rep*.json and python_rep*.json (the anchors' bench_node.js and
bench_python.py, one repetition each), emq_rep*.jsonl (emq-bench, one JSON object per line),
bullmq_mem_rep*.json (bullmq_mem.js) and step_errors.txt. Environment: BENCH_COMMAND, BENCH_T0,
BENCH_REPS. Standard library only. Numbers are reported as measured; nothing is adjusted.
"""
import datetime
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import time

THROUGHPUT = [
    ("add_sequential", "(a) add, awaited one at a time"),
    ("add_concurrent_1000", "(b) add ×1,000 concurrent"),
    ("add_bulk_1000", "(c) bulk add, chunks of 1,000"),
    ("process_c1", "(d) process, concurrency 1"),
    ("process_c10", "(d) process, concurrency 10"),
    ("process_c100", "(d) process, concurrency 100"),
]
LATENCY = [("add_rtt", "add round trip"), ("start", "add → handler start"),
           ("done", "add → completed")]


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def collect(out_dir):
    """{impl: {scenario: [sample, ...]}}, errors"""
    data = {"emq": {}, "emqpy": {}, "emqnode": {}, "node": {}, "python": {}, "kotlin": {}}
    errors = []
    versions = {}
    for impl in ("node", "python"):
        for p in sorted(glob.glob(os.path.join(out_dir, f"{impl}_rep*.json"))):
            raw = load_json(p)
            if raw is None:
                errors.append(f"{os.path.basename(p)}: unreadable")
                continue
            versions.update({f"{impl}:{k}": v for k, v in raw.get("versions", {}).items()})
            for sid, runs in raw.get("scenarios", {}).items():
                data[impl].setdefault(sid, []).extend(runs)
            errors += [f"{impl}: {e}" for e in raw.get("errors", [])]
    for p in sorted(glob.glob(os.path.join(out_dir, "bullmq_mem_rep*.json"))):
        raw = load_json(p)
        if raw is None:
            errors.append(f"{os.path.basename(p)}: unreadable")
            continue
        data["node"].setdefault("memory", []).extend(raw["scenarios"].get("memory", []))
        errors += [f"bullmq_mem: {e}" for e in raw.get("errors", [])]
    for key, prefix in (("emq", "emq"), ("emqpy", "emqpy"), ("emqnode", "emqnode")):
        for p in sorted(glob.glob(os.path.join(out_dir, f"{prefix}_rep*.jsonl"))):
            try:
                with open(p) as f:
                    for line in f:
                        line = line.strip()
                        if not line:
                            continue
                        r = json.loads(line)
                        if "versions" in r:
                            versions.update({f"{key}:{k}": v for k, v in r["versions"].items()})
                        if "error" in r:
                            errors.append(f"{key}: {os.path.basename(p)} {r['scenario']}: {r['error']}")
                        else:
                            data[key].setdefault(r["scenario"], []).append(r)
            except (OSError, ValueError) as e:
                errors.append(f"{os.path.basename(p)}: {e}")
    # Kotlin (bindings/uniffi BenchTest): one printed line per repetition.
    for p in sorted(glob.glob(os.path.join(out_dir, "kotlin_rep*.txt"))):
        try:
            with open(p) as f:
                text = f.read()
        except OSError as e:
            errors.append(f"{os.path.basename(p)}: {e}")
            continue
        m = re.search(r"emq-uniffi bench: added (\d+) jobs in [0-9.]+ s \(([0-9.]+) adds/s\); "
                      r"processed in ([0-9.]+) s: ([0-9.]+) jobs/s", text)
        if m:
            data["kotlin"].setdefault("process_c10", []).append(
                {"jobs_per_s": float(m.group(4)), "n_jobs": int(m.group(1)),
                 "adds_per_s_200_concurrent": float(m.group(2)), "line": m.group(0)})
        else:
            errors.append(f"{os.path.basename(p)}: no 'emq-uniffi bench:' line")
    try:
        with open(os.path.join(out_dir, "step_errors.txt")) as f:
            errors += [ln.strip() for ln in f if ln.strip()]
    except OSError:
        pass
    return data, errors, versions


def summ(runs, key):
    xs = [r.get(key) for r in runs or [] if isinstance(r.get(key), (int, float))]
    if not xs:
        return None
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs)}


def fnum(x):
    if x is None:
        return "n/a"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def cell(s):
    if not s:
        return "n/a"
    if s["n"] == 1:
        return f"**{fnum(s['median'])}**"
    return f"**{fnum(s['median'])}** [{fnum(s['min'])}–{fnum(s['max'])}]"


def ratio(a, b):
    if not a or not b or not b["median"]:
        return None
    return a["median"] / b["median"]


def fr(r):
    return "n/a" if r is None else f"{r:.2f}"


def first_line(args):
    try:
        return subprocess.run(args, capture_output=True, text=True,
                              timeout=10).stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return None


def paired(mine, peer, sid, key, peer_key=None):
    """Per-repetition ratios mine ÷ peer (the i-th sample of each side comes from the i-th
    repetition, whose sides ran back to back), or None when either side lacks the figure."""
    a = [r.get(key) for r in mine.get(sid, [])]
    b = [r.get(peer_key or key) for r in peer.get(sid, [])]
    xs = [x / y for x, y in zip(a, b) if isinstance(x, (int, float)) and isinstance(y, (int, float)) and y]
    return xs or None


def second_round(L, data):
    """Issue 19's targets: a target is met only when the ratio of every repetition clears it
    (the whole range, not the median alone)."""
    emq, emqpy, emqnode = data["emq"], data["emqpy"], data["emqnode"]
    node, py, kt = data["node"], data["python"], data["kotlin"]
    L.append("## Targets, second round (issue 19)\n")
    L.append("Each ratio is computed per repetition (emq's figure ÷ the peer's of the same "
             "repetition); the cell shows the median [min–max] of those ratios, and a target is "
             "**met** only when the whole range clears it. Absolute figures are in the tables below.\n")
    L.append("| binding | target | ratio median [range] | goal | verdict |")
    L.append("|---|---|---:|---|---|")

    def row(binding, label, xs, goal_txt, ok):
        if not xs:
            L.append(f"| {binding} | {label} | n/a | {goal_txt} | not measured |")
            return
        rng = f"**{fr(statistics.median(xs))}** [{fr(min(xs))}–{fr(max(xs))}]"
        v = "**met**" if all(ok(x) for x in xs) else "**not met**"
        L.append(f"| {binding} | {label} | {rng} | {goal_txt} | {v} |")

    def absolute(binding, label, runs, key, goal_txt, ok, unit):
        xs = [r.get(key) for r in runs or [] if isinstance(r.get(key), (int, float))]
        if not xs:
            L.append(f"| {binding} | {label} | n/a | {goal_txt} | not measured |")
            return
        rng = f"**{fnum(statistics.median(xs))}** [{fnum(min(xs))}–{fnum(max(xs))}] {unit}"
        v = "**met**" if all(ok(x) for x in xs) else "**not met**"
        L.append(f"| {binding} | {label} | {rng} | {goal_txt} | {v} |")

    ge = lambda g: (lambda r: r >= g)  # noqa: E731
    le = lambda g: (lambda r: r <= g)  # noqa: E731
    for binding, mine in (("Rust", emq), ("Python", emqpy), ("Node", emqnode)):
        row(binding, "one-at-a-time add, jobs/s ÷ BullMQ Node",
            paired(mine, node, "add_sequential", "jobs_per_s"), "≥ 1.5", ge(1.5))
    row("Rust", "Redis CPU per one-at-a-time add ÷ BullMQ Node",
        paired(emq, node, "add_sequential", "redis_cpu_us_per_job"), "≤ 0.6", le(0.6))
    row("Rust", "client CPU per one-at-a-time add ÷ BullMQ Node",
        paired(emq, node, "add_sequential", "client_cpu_us_per_job"), "≤ 0.3", le(0.3))
    for binding, mine in (("Python", emqpy), ("Node", emqnode)):
        row(binding, "client CPU per one-at-a-time add ÷ BullMQ Node",
            paired(mine, node, "add_sequential", "client_cpu_us_per_job"), "≤ 0.8", le(0.8))
    for sid, goal in (("process_c1", 15), ("process_c10", 10), ("process_c100", 10)):
        absolute("Rust", f"Redis CPU per processed job, {sid[8:]}", emq.get(sid),
                 "redis_cpu_us_per_job", f"≤ {goal} µs", le(goal), "µs")
    for binding, mine, sids in (("Python", emqpy, ("process_c1", "process_c10")),
                                ("Node", emqnode, ("process_c1", "process_c10", "process_c100"))):
        for sid in sids:
            row(binding, f"Redis CPU per processed job, {sid[8:]}, ÷ Rust's",
                paired(mine, emq, sid, "redis_cpu_us_per_job"), "≤ 1.3", le(1.3))
    row("Rust", "Redis memory per waiting job ÷ BullMQ Node",
        paired(emq, node, "memory", "bytes_per_waiting_job"), "≤ 0.7", le(0.7))
    for binding, mine, peer, pname in (("Rust", emq, node, "BullMQ Node"),
                                       ("Python", emqpy, py, "BullMQ Python"),
                                       ("Node", emqnode, node, "BullMQ Node")):
        for q in ("p50", "p99"):
            row(binding, f"add → completed {q} ÷ {pname}",
                paired(mine, peer, "latency", f"done_{q}_ms"), "≤ 0.7", le(0.7))
    for binding, mine in (("Rust", emq), ("Python", emqpy), ("Node", emqnode)):
        row(binding, "add → handler start p99 ÷ BullMQ Node",
            paired(mine, node, "latency", "start_p99_ms"), "≤ 0.5", le(0.5))
    k = [r.get("jobs_per_s") for r in kt.get("process_c10", [])]
    r = [r.get("jobs_per_s") for r in emq.get("process_c10", [])]
    hop = [1e6 / a - 1e6 / b for a, b in zip(k, r) if a and b]
    if hop:
        L.append(f"| Kotlin | processing c10 (BenchTest, 2,000 jobs, release library, its own harness "
                 f"Redis), jobs/s | **{fnum(statistics.median(k))}** [{fnum(min(k))}–{fnum(max(k))}]; "
                 f"the JVM hop ≈ {fnum(statistics.median(hop))} µs per job [{fnum(min(hop))}–"
                 f"{fnum(max(hop))}] (1/Kotlin − 1/Rust jobs/s, same repetition) | row in the table "
                 f"| **met** (reported) |")
    else:
        L.append("| Kotlin | processing c10 | n/a | row in the table | not measured |")
    L.append("")


def main():
    out_dir, md_path = sys.argv[1:3]
    data, errors, versions = collect(out_dir)
    emq, node, py = data["emq"], data["node"], data["python"]
    n_jobs = os.environ.get("N_JOBS", "20000")
    n_lat = os.environ.get("N_LATENCY", "1000")
    reps = os.environ.get("BENCH_REPS", "?")
    cmd = os.environ.get("BENCH_COMMAND", "bash bench/run.sh")
    generated = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    cpu = None
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), None)
    except OSError:
        pass
    redis_v = first_line(["redis-server", "--version"])
    total = None
    if os.environ.get("BENCH_T0"):
        total = time.time() - float(os.environ["BENCH_T0"])

    L = []
    L.append("# emq vs BullMQ: side-by-side benchmark results\n")
    L.append(f"Generated {generated} by `{cmd}` (run from the repository root)"
             + (f", which took {total:.0f} s" if total else "") + ".\n")
    L.append(f"Machine: nproc = {os.cpu_count()} ({cpu or '?'}); {redis_v or 'redis-server ?'}. "
             "Redis, the clients and the OS share these cores, so jobs/s is noisy; the µs/job "
             "columns are steadier.\n")
    L.append(f"Settings: REPS={reps} (each repetition runs both sides, BullMQ first in odd repetitions "
             "and emq first in even ones: BullMQ Node, BullMQ Python, BullMQ memory probe; emq Rust "
             "(`emq-bench`), emq Python (`bench/bench_emq_python.py`), emq Node (`bench/bench_emq_node.js`); "
             f"each with REPS=1 per repetition), N_JOBS={n_jobs}, N_LATENCY={n_lat}. "
             "One private redis-server on 127.0.0.1:6390, started like `shared/bench/anchors/run.sh` "
             "starts it; FLUSHALL before every scenario run. Cells are **median** [min–max] over the "
             "repetitions (a single number when there was one repetition).\n")
    if n_jobs != "20000" or n_lat != "1000":
        L.append(f"**Not the default job counts** (20,000 / 1,000): this run used N_JOBS={n_jobs}, "
                 f"N_LATENCY={n_lat}.\n")
    loads = []
    for name in ("loadavg_start.txt", "loadavg_end.txt"):
        try:
            with open(os.path.join(out_dir, name)) as f:
                loads.append(f"{name[8:-4]} {' '.join(f.read().split()[:3])}")
        except OSError:
            pass
    try:
        with open("/proc/loadavg") as f:
            loads.append(f"report {' '.join(f.read().split()[:3])}")
    except OSError:
        pass
    for name in ("uptime_start.txt", "uptime_end.txt"):
        try:
            with open(os.path.join(out_dir, name)) as f:
                L.append(f"`uptime` at the {name[7:-4]} of the repetitions: `{f.read().strip()}`\n")
        except OSError:
            pass
    if os.environ.get("BENCH_PIN", "0") == "1":
        L.append(f"**Pinned** (BENCH_PIN=1): redis-server on core 0, every "
                 "benchmark client (BullMQ's and emq's) on "
                 + (f"cores 1–{os.cpu_count() - 1}" if os.cpu_count() > 2 else "core 1")
                 + " (`taskset`), so "
                 "every request crosses between cores, as to a Redis on its own host. Unpinned, the "
                 "scheduler put Redis and the client on one core in some runs and on two in others, and "
                 "on this virtual machine the two modes differ by several times (see \"Where the time "
                 "goes\" below: one-core and cross-core runs of the same loop). The Kotlin row's "
                 "harness Redis runs on the clients' cores.\n")
    else:
        L.append("Unpinned (the default; BENCH_PIN=1 pins Redis to core 0 and the clients to the others): "
                 "the scheduler places Redis and the clients, as the anchors' run.sh does. On this "
                 "virtual machine a request between two cores costs each side several times the CPU of "
                 "one on a single core, so figures jump between a one-core and a cross-core mode from run "
                 "to run (see \"Where the time goes\" below).\n")
    if loads:
        L.append("Load average (1/5/15 min) during the run: " + "; ".join(loads) + ". A load well "
                 f"above nproc = {os.cpu_count()} means other processes competed for the cores, which "
                 "depresses every implementation's jobs/s.\n")
    vs = ", ".join(f"{k} {v}" for k, v in versions.items() if v)
    if vs:
        L.append(f"Versions: {vs}. emq: this working tree (`emq-bench`, release build; the Python "
                 "package from `pip install ./python` (maturin, release); the Node addon from "
                 "`bash node/build.sh` (release)).\n")

    # ---- targets
    emqpy, emqnode, kt = data["emqpy"], data["emqnode"], data["kotlin"]
    L.append("## Targets\n")
    L.append("Every ratio divides two numbers of this run (medians over its repetitions).\n")
    L.append("| binding | target | emq | peer | measured | goal | verdict |")
    L.append("|---|---|---:|---:|---:|---|---|")

    def verdict(ok):
        return "n/a" if ok is None else ("**met**" if ok else "**not met**")

    def target(binding, label, mine, sid, key, peer, peer_name, goal_txt, test):
        e = summ(mine.get(sid), key)
        n = summ(peer.get(sid), key)
        r = ratio(e, n)
        L.append(f"| {binding} | {label} | {cell(e)} | {peer_name} {cell(n)} | {fr(r)} | {goal_txt} "
                 f"| {verdict(None if r is None else test(r))} |")

    le3 = lambda r: r <= 1 / 3  # noqa: E731
    # Python
    target("Python", "processing c10, jobs/s, ÷ BullMQ Python", emqpy, "process_c10", "jobs_per_s",
           py, "BullMQ Python", "≥ 10", lambda r: r >= 10)
    target("Python", "processing c10, jobs/s, ÷ BullMQ Node", emqpy, "process_c10", "jobs_per_s",
           node, "BullMQ Node", "≥ 1", lambda r: r >= 1)
    for c in ("process_c1", "process_c10"):
        target("Python", f"Redis CPU µs per processed job, {c}, ÷ BullMQ Python", emqpy, c,
               "redis_cpu_us_per_job", py, "BullMQ Python", "≤ 0.33", le3)
    # Node
    target("Node", "processing c100, jobs/s, ÷ BullMQ Node", emqnode, "process_c100", "jobs_per_s",
           node, "BullMQ Node", "≥ 2", lambda r: r >= 2)
    for c in ("process_c1", "process_c10", "process_c100"):
        target("Node", f"Redis CPU µs per processed job, {c}, ÷ BullMQ Node", emqnode, c,
               "redis_cpu_us_per_job", node, "BullMQ Node", "≤ 0.33", le3)
    target("Node", "bulk add (chunks of 1,000), jobs/s, ÷ BullMQ Node", emqnode, "add_bulk_1000",
           "jobs_per_s", node, "BullMQ Node", "≥ 3", lambda r: r >= 3)
    # Rust
    for c in ("process_c1", "process_c10", "process_c100"):
        target("Rust", f"Redis CPU µs per processed job, {c}, ÷ BullMQ Node", emq, c,
               "redis_cpu_us_per_job", node, "BullMQ Node", "≤ 0.33", le3)
    target("Rust", "processing c100, jobs/s, ÷ BullMQ Node", emq, "process_c100", "jobs_per_s",
           node, "BullMQ Node", "≥ 3", lambda r: r >= 3)
    target("Rust", "bulk add (chunks of 1,000), jobs/s, ÷ BullMQ Node", emq, "add_bulk_1000",
           "jobs_per_s", node, "BullMQ Node", "≥ 4", lambda r: r >= 4)
    target("Rust", "p50 add → handler start (ms), ÷ BullMQ Node", emq, "latency", "start_p50_ms",
           node, "BullMQ Node", "≤ 1 (no worse)", lambda r: r <= 1)
    # Kotlin: reported, no target
    k = summ(kt.get("process_c10"), "jobs_per_s")
    if k:
        L.append(f"| Kotlin | processing c10, jobs/s (BenchTest: {kt['process_c10'][0]['n_jobs']} jobs, "
                 f"its own emq-harness Redis, release library) | {cell(k)} | Rust {cell(summ(emq.get('process_c10'), 'jobs_per_s'))}, "
                 f"Python {cell(summ(emqpy.get('process_c10'), 'jobs_per_s'))}, Node "
                 f"{cell(summ(emqnode.get('process_c10'), 'jobs_per_s'))}, BullMQ Node "
                 f"{cell(summ(node.get('process_c10'), 'jobs_per_s'))} | – | reported (no target) | – |")
    else:
        L.append("| Kotlin | processing c10, jobs/s | not run | – | – | reported (no target) | – |")
    e = summ(emq.get("memory"), "bytes_per_waiting_job")
    n = summ(node.get("memory"), "bytes_per_waiting_job")
    L.append(f"| Rust | Redis memory per waiting job (bytes), ÷ BullMQ Node | {cell(e)} | BullMQ Node {cell(n)} "
             f"| {fr(ratio(e, n))} | reported (no numeric goal given) | – |")
    L.append("")
    L.append("The Redis-CPU targets are stated per processed job without a concurrency, so they are "
             "shown for each concurrency the peer runs. BullMQ Python runs c1 and c10 only.\n")

    second_round(L, data)

    IMPLS = [("emq Rust", emq), ("emq Python", emqpy), ("emq Node", emqnode),
             ("BullMQ Node", node), ("BullMQ Python", py)]

    # ---- throughput
    L.append(f"## Throughput (jobs/s, {n_jobs} jobs of `{{\"i\": i}}` per run)\n")
    L.append("| scenario | " + " | ".join(n for n, _ in IMPLS)
             + " | Rust ÷ BullMQ Node | Python ÷ BullMQ Python | Node ÷ BullMQ Node |")
    L.append("|---|" + "---:|" * (len(IMPLS) + 3))
    for sid, label in THROUGHPUT:
        cells = [cell(summ(d.get(sid), "jobs_per_s")) if sid in d else "not run" for _, d in IMPLS]
        r1 = fr(ratio(summ(emq.get(sid), "jobs_per_s"), summ(node.get(sid), "jobs_per_s")))
        r2 = fr(ratio(summ(emqpy.get(sid), "jobs_per_s"), summ(py.get(sid), "jobs_per_s")))
        r3 = fr(ratio(summ(emqnode.get(sid), "jobs_per_s"), summ(node.get(sid), "jobs_per_s")))
        L.append(f"| {label} | " + " | ".join(cells) + f" | {r1} | {r2} | {r3} |")
    L.append("")
    L.append("(d) times from starting the worker to the last completion (emq Rust: the worker's own "
             "completed counter, polled every ≤1 ms; emq Python and Node: `worker.stats()` polled every "
             "~1 ms; BullMQ: the worker's `completed` event). emq jobs use `remove_on_complete` "
             "(`removeOnComplete`) true, BullMQ `removeOnComplete: true`. emq Python does not run (b) or "
             "c100, to match BullMQ Python (see the anchors' README). emq workers run with their default "
             "options, which include leasing ahead: a worker holds up to concurrency + prefetch jobs "
             "(prefetch = 2 × concurrency, 16..256, used once its jobs prove shorter than 50 ms), and a "
             "completion waits up to 2 ms for others to share its call while every slot has a buffered "
             "job; handlers still run at most `concurrency` at once. BullMQ has no such option.\n")

    # ---- cpu
    L.append("## CPU per job (µs)\n")
    L.append("Redis: main-thread `used_cpu_user_main_thread + used_cpu_sys_main_thread` from `INFO cpu` "
             "before/after the timed section, ÷ jobs. Client: the benchmark process's CPU, all threads "
             "(emq Rust: `getrusage(RUSAGE_SELF)`; Node, emq Node: `process.cpuUsage`; Python, emq Python: "
             "`time.process_time`).\n")
    L.append("| scenario | " + " | ".join(f"{n} Redis" for n, _ in IMPLS) + " | "
             + " | ".join(f"{n} client" for n, _ in IMPLS) + " |")
    L.append("|---|" + "---:|" * (2 * len(IMPLS)))
    for sid, label in THROUGHPUT:
        row = [cell(summ(d.get(sid), "redis_cpu_us_per_job")) if sid in d else "not run" for _, d in IMPLS]
        row += [cell(summ(d.get(sid), "client_cpu_us_per_job")) if sid in d else "not run" for _, d in IMPLS]
        L.append(f"| {label} | " + " | ".join(row) + " |")
    L.append("")

    # ---- latency
    L.append(f"## Latency, idle worker (ms, {n_lat} jobs per run)\n")
    L.append("Closed loop: t0, add, wait for the handler's first line and for completion, pause 2 ms, "
             "repeat. add → handler start is stamped on the handler's first line everywhere. add → "
             "completed, the same way on every side: the worker's own in-process `completed` event, "
             "called once the completion is recorded (emq Rust: `WorkerBuilder::on_event`; emq Python: "
             "`worker.on('completed')`; emq Node: `worker.on('completed')`; BullMQ: the worker's "
             "`completed` event).\n")
    L.append("| interval | " + " | ".join(f"{n} p50" for n, _ in IMPLS) + " | "
             + " | ".join(f"{n} p99" for n, _ in IMPLS) + " |")
    L.append("|---|" + "---:|" * (2 * len(IMPLS)))
    for key, label in LATENCY:
        row = [cell(summ(d.get("latency"), f"{key}_p50_ms")) for _, d in IMPLS]
        row += [cell(summ(d.get("latency"), f"{key}_p99_ms")) for _, d in IMPLS]
        L.append(f"| {label} | " + " | ".join(row) + " |")
    L.append("")

    # ---- memory
    L.append("## Memory per waiting job (bytes)\n")
    L.append(f"`INFO memory` used_memory after − before adding {n_jobs} jobs with bulk add and no "
             "worker, ÷ jobs (BullMQ Node measured by `bench/bullmq_mem.js`, not part of the anchors).\n")
    L.append("| | emq | BullMQ Node |")
    L.append("|---|---:|---:|")
    L.append(f"| bytes per waiting job | {cell(summ(emq.get('memory'), 'bytes_per_waiting_job'))} | "
             f"{cell(summ(node.get('memory'), 'bytes_per_waiting_job'))} |")
    L.append("")

    # ---- commandstats
    L.append("## Where emq's Redis time goes (INFO commandstats, per job)\n")
    L.append("`CONFIG RESETSTAT` before and `INFO commandstats` after each timed section of emq-bench, "
             "bench_emq_python.py and bench_emq_node.js; calls and µs per job, median over repetitions (bulk add runs one EVALSHA per chunk of "
             "1,000, so 0.001 calls per job). `evalsha` µs include the commands its scripts run (which are also listed on their own). "
             "commandstats µs are wall time inside Redis, so they run above `INFO cpu` on a busy machine.\n")
    for iname, d, sids in (("emq Rust", emq, ("add_sequential", "add_bulk_1000", "process_c1", "process_c10", "process_c100")),
                           ("emq Python", data["emqpy"], ("add_bulk_1000", "process_c1", "process_c10")),
                           ("emq Node", data["emqnode"], ("add_bulk_1000", "process_c10", "process_c100"))):
        for sid in sids:
            runs = [r for r in d.get(sid, []) if isinstance(r.get("commandstats_per_job"), dict)]
            if not runs:
                continue
            cmds = sorted({c for r in runs for c in r["commandstats_per_job"]})
            rows = []
            for c in cmds:
                calls = statistics.median(r["commandstats_per_job"].get(c, {}).get("calls_per_job", 0) for r in runs)
                us = statistics.median(r["commandstats_per_job"].get(c, {}).get("usec_per_job", 0) for r in runs)
                rows.append((us, c, calls))
            rows.sort(reverse=True)
            L.append(f"**{iname}, {sid}**: " + ", ".join(f"`{c}` {calls:{'.2f' if calls >= 0.01 else '.3f'}} calls / {us:.1f} µs"
                                                      for us, c, calls in rows if calls >= 0.005 or us >= 0.05) + "\n")

    if os.environ.get("BENCH_KOTLIN", "0") != "1":
        L.append("## Kotlin\n")
        L.append("Not run (BENCH_KOTLIN unset): bindings/uniffi's BenchTest is a JUnit test run by "
                 "`mvn -q -B test -Dtest=BenchTest -Demq.repo=<root> -Demq.profile=release` in "
                 "bindings/uniffi/kotlin. With BENCH_KOTLIN=1 run.sh builds the release `libemq_uniffi.so`, "
                 "`emq-harness` and `emq`, and generates the Kotlin sources from that library; BenchTest starts its own Redis through the harness rather than using this run's, "
                 "and times 2,000 jobs only. Set BENCH_KOTLIN=1 to add it.\n")
    else:
        for r in data["kotlin"].get("process_c10", []):
            L.append(f"Kotlin BenchTest printed: `{r['line']}`\n")

    L.append("## Errors\n")
    L.append("\n".join(f"- {e}" for e in errors) + "\n" if errors else "None.\n")
    # Sections measured by hand (counts, migrate) follow HAND_MARK in RESULTS.md; a run keeps them.
    kept = ""
    if os.path.exists(md_path):
        with open(md_path) as f:
            old = f.read()
        if HAND_MARK in old:
            kept = "\n" + old[old.index(HAND_MARK):]
    with open(md_path, "w") as f:
        f.write("\n".join(L) + kept)
    return 1 if errors else 0


HAND_MARK = "<!-- measured by hand below this line: bench/report.py keeps it -->"


if __name__ == "__main__":
    sys.exit(main())
