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
    data = {"emq": {}, "node": {}, "python": {}}
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
    for p in sorted(glob.glob(os.path.join(out_dir, "emq_rep*.jsonl"))):
        try:
            with open(p) as f:
                for line in f:
                    line = line.strip()
                    if not line:
                        continue
                    r = json.loads(line)
                    if "error" in r:
                        errors.append(f"emq: rep {os.path.basename(p)} {r['scenario']}: {r['error']}")
                    else:
                        data["emq"].setdefault(r["scenario"], []).append(r)
        except (OSError, ValueError) as e:
            errors.append(f"{os.path.basename(p)}: {e}")
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
    L.append(f"Settings: REPS={reps} (round-robin: BullMQ Node, BullMQ Python, emq, BullMQ memory probe, "
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
    if loads:
        L.append("Load average (1/5/15 min) during the run: " + "; ".join(loads) + ". A load well "
                 f"above nproc = {os.cpu_count()} means other processes competed for the cores, which "
                 "depresses every implementation's jobs/s.\n")
    vs = ", ".join(f"{k} {v}" for k, v in versions.items() if v)
    if vs:
        L.append(f"Peers: {vs}. emq: this working tree (`emq-bench`, release build).\n")

    # ---- targets
    L.append("## Targets\n")
    L.append("| target | emq | BullMQ Node | measured | goal | verdict |")
    L.append("|---|---:|---:|---:|---|---|")

    def verdict(ok):
        return "n/a" if ok is None else ("**met**" if ok else "**not met**")

    for c in ("process_c1", "process_c10", "process_c100"):
        e = summ(emq.get(c), "redis_cpu_us_per_job")
        n = summ(node.get(c), "redis_cpu_us_per_job")
        r = ratio(e, n)
        L.append(f"| Redis CPU µs per processed job, {c} | {cell(e)} | {cell(n)} | emq ÷ Node = {fr(r)} "
                 f"| ≤ 0.33 | {verdict(None if r is None else r <= 1 / 3)} |")
    e = summ(emq.get("process_c100"), "jobs_per_s")
    n = summ(node.get("process_c100"), "jobs_per_s")
    r = ratio(e, n)
    L.append(f"| processing throughput c100 (jobs/s) | {cell(e)} | {cell(n)} | emq ÷ Node = {fr(r)} | ≥ 3 "
             f"| {verdict(None if r is None else r >= 3)} |")
    e = summ(emq.get("add_bulk_1000"), "jobs_per_s")
    n = summ(node.get("add_bulk_1000"), "jobs_per_s")
    r = ratio(e, n)
    L.append(f"| bulk add, chunks of 1,000 (jobs/s) | {cell(e)} | {cell(n)} | emq ÷ Node = {fr(r)} | ≥ 4 "
             f"| {verdict(None if r is None else r >= 4)} |")
    e = summ(emq.get("latency"), "start_p50_ms")
    n = summ(node.get("latency"), "start_p50_ms")
    p = summ(py.get("latency"), "start_p50_ms")
    r = ratio(e, n)
    L.append(f"| p50 add → handler start (ms) | {cell(e)} | {cell(n)} (Python {cell(p)}) | emq ÷ Node = {fr(r)} "
             f"| ≤ 1 (no worse) | {verdict(None if r is None else r <= 1)} |")
    e = summ(emq.get("memory"), "bytes_per_waiting_job")
    n = summ(node.get("memory"), "bytes_per_waiting_job")
    r = ratio(e, n)
    L.append(f"| Redis memory per waiting job (bytes) | {cell(e)} | {cell(n)} | emq ÷ Node = {fr(r)} "
             "| reported (no numeric goal given) | – |")
    L.append("")
    L.append("The Redis-CPU target is stated per processed job without a concurrency, so it is shown "
             "for each of c1, c10 and c100.\n")

    # ---- throughput
    L.append(f"## Throughput (jobs/s, {n_jobs} jobs of `{{\"i\": i}}` per run)\n")
    L.append("| scenario | emq | BullMQ Node | BullMQ Python | emq ÷ Node | emq ÷ Python |")
    L.append("|---|---:|---:|---:|---:|---:|")
    for sid, label in THROUGHPUT:
        e, n, p = (summ(d.get(sid), "jobs_per_s") for d in (emq, node, py))
        L.append(f"| {label} | {cell(e)} | {cell(n)} | {cell(p) if sid in py else 'not run'} | "
                 f"{fr(ratio(e, n))} | {fr(ratio(e, p))} |")
    L.append("")
    L.append("(d) times from starting the worker to the last completion (emq: the worker's own "
             "completed counter, polled every ≤1 ms; BullMQ: the worker's `completed` event). emq jobs use "
             "`remove_on_complete: true`, BullMQ `removeOnComplete: true`. BullMQ Python does not run "
             "(b) or c100 (see the anchors' README).\n")

    # ---- cpu
    L.append("## CPU per job (µs)\n")
    L.append("Redis: main-thread `used_cpu_user_main_thread + used_cpu_sys_main_thread` from `INFO cpu` "
             "before/after the timed section, ÷ jobs. Client: the benchmark process's CPU "
             "(emq: `getrusage(RUSAGE_SELF)`; Node `process.cpuUsage`; Python `time.process_time`).\n")
    L.append("| scenario | emq Redis | Node Redis | Python Redis | emq client | Node client | Python client |")
    L.append("|---|---:|---:|---:|---:|---:|---:|")
    for sid, label in THROUGHPUT:
        row = [cell(summ(d.get(sid), "redis_cpu_us_per_job")) if sid in d else "not run"
               for d in (emq, node, py)]
        row += [cell(summ(d.get(sid), "client_cpu_us_per_job")) if sid in d else "not run"
                for d in (emq, node, py)]
        L.append(f"| {label} | " + " | ".join(row) + " |")
    L.append("")

    # ---- latency
    L.append(f"## Latency, idle worker (ms, {n_lat} jobs per run)\n")
    L.append("Closed loop: t0, add, wait for the handler's first line and for completion, pause 2 ms, "
             "repeat. emq's add → completed is observed by a `queue.events(None)` subscriber "
             "(XREAD BLOCK on its own connection) seeing the job's `completed` event; BullMQ's by the "
             "worker's in-process `completed` event. emq's add → handler start is stamped on the "
             "handler's first line (signalled with a tokio `Notify`).\n")
    L.append("| interval | emq p50 | Node p50 | Python p50 | emq p99 | Node p99 | Python p99 |")
    L.append("|---|---:|---:|---:|---:|---:|---:|")
    for key, label in LATENCY:
        row = [cell(summ(d.get("latency"), f"{key}_p50_ms")) for d in (emq, node, py)]
        row += [cell(summ(d.get("latency"), f"{key}_p99_ms")) for d in (emq, node, py)]
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
    L.append("`CONFIG RESETSTAT` before and `INFO commandstats` after each timed section of emq-bench; "
             "calls and µs per job, median over repetitions. `evalsha` µs include the commands its "
             "scripts run (which are also listed on their own).\n")
    for sid in ("add_sequential", "add_bulk_1000", "process_c1", "process_c100"):
        runs = [r for r in emq.get(sid, []) if isinstance(r.get("commandstats_per_job"), dict)]
        if not runs:
            continue
        cmds = sorted({c for r in runs for c in r["commandstats_per_job"]})
        rows = []
        for c in cmds:
            calls = statistics.median(r["commandstats_per_job"].get(c, {}).get("calls_per_job", 0) for r in runs)
            us = statistics.median(r["commandstats_per_job"].get(c, {}).get("usec_per_job", 0) for r in runs)
            rows.append((us, c, calls))
        rows.sort(reverse=True)
        L.append(f"**{sid}**: " + ", ".join(f"`{c}` {calls:.2f} calls / {us:.1f} µs"
                                           for us, c, calls in rows if calls >= 0.005) + "\n")

    L.append("## Errors\n")
    L.append("\n".join(f"- {e}" for e in errors) + "\n" if errors else "None.\n")
    with open(md_path, "w") as f:
        f.write("\n".join(L))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
