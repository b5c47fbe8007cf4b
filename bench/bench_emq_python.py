#!/usr/bin/env python3
"""emq's Python package, benchmarked like the anchors' bench_python.py runs BullMQ Python.
Usage: bench_emq_python.py OUT.jsonl  (bench/run.sh drives it; needs `pip install ./python`)

Same scenarios, counts and payload as shared/bench/anchors/bench_python.py: add_sequential,
add_bulk_1000, process_c1, process_c10, latency. FLUSHALL before every scenario run (point it at
a throwaway Redis only). Jobs use remove_on_complete=True; the handler is an async no-op.
Writes one JSON object per scenario run (one line each) with the field names emq-bench uses,
"impl": "emq-python". Knobs: REDIS_PORT (6390), REPS (1), N_JOBS (20000), N_LATENCY (1000),
SCENARIO_TIMEOUT_S (120), BENCH_COMMANDSTATS (1: CONFIG RESETSTAT before and INFO commandstats
after each timed section, like emq-bench; 0 to skip).

Measurement: processing ends when the worker's own `stats()["completed"]` counter reaches N
(polled every ~1 ms; BullMQ Python counts its worker's `completed` events); in latency,
add -> completed is stamped by the worker's own `completed` event (`worker.on`), as on BullMQ's side.
"""
import asyncio
import json
import math
import os
import platform
import socket
import sys
import time

import emq


def env_int(name, default):
    try:
        v = int(os.environ.get(name, ""))
        return v if v > 0 else default
    except ValueError:
        return default


CFG = {
    "host": "127.0.0.1",
    "port": env_int("REDIS_PORT", 6390),
    "reps": env_int("REPS", 1),
    "jobs": env_int("N_JOBS", 20000),
    "batch": 1000,
    "concurrencies": [1, 10],
    "latencyJobs": env_int("N_LATENCY", 1000),
    "latencyGapMs": 2,
    "scenarioTimeoutS": env_int("SCENARIO_TIMEOUT_S", 120),
    "warmupJobs": 1000,
    "commandstats": os.environ.get("BENCH_COMMANDSTATS", "1") == "1",
}
URL = f"redis://{CFG['host']}:{CFG['port']}"
now = time.perf_counter


class Deadline:
    def __init__(self, seconds, what):
        self.end = now() + seconds
        self.seconds = seconds
        self.what = what

    def check(self):
        if now() > self.end:
            raise TimeoutError(f"timeout after {self.seconds} s in {self.what}")


def percentile(sorted_xs, p):
    if not sorted_xs:
        return float("nan")
    idx = min(len(sorted_xs) - 1, math.ceil(p / 100 * len(sorted_xs)) - 1)
    return sorted_xs[max(0, idx)]


class Admin:
    """A tiny blocking RESP client for FLUSHALL / INFO / CONFIG RESETSTAT, independent of emq."""

    def __init__(self, host, port):
        self.sock = socket.create_connection((host, port), timeout=30)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.f = self.sock.makefile("rb")

    def cmd(self, *args):
        out = [f"*{len(args)}\r\n".encode()]
        for a in args:
            b = str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(b), b))
        self.sock.sendall(b"".join(out))
        line = self.f.readline().rstrip(b"\r\n")
        kind, rest = line[:1], line[1:]
        if kind in (b"+", b":"):
            return rest.decode()
        if kind == b"-":
            raise RuntimeError(f"redis error: {rest.decode()}")
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return ""
            data = self.f.read(n + 2)
            return data[:n].decode()
        raise RuntimeError(f"unsupported reply {line!r}")

    def info(self, section):
        d = {}
        for ln in self.cmd("INFO", section).splitlines():
            if ":" in ln and not ln.startswith("#"):
                k, v = ln.split(":", 1)
                d[k] = v
        return d

    def redis_cpu_s(self):
        i = self.info("cpu")
        return float(i["used_cpu_user_main_thread"]) + float(i["used_cpu_sys_main_thread"])

    def commandstats_per_job(self, n):
        out = {}
        for cmd, fields in self.info("commandstats").items():
            if not cmd.startswith("cmdstat_"):
                continue
            cmd = cmd[len("cmdstat_"):]
            if cmd == "info" or cmd.startswith("config"):
                continue
            kv = dict(x.split("=", 1) for x in fields.split(",") if "=" in x)
            out[cmd] = {"calls_per_job": float(kv.get("calls", 0)) / n,
                        "usec_per_job": float(kv.get("usec", 0)) / n}
        return out

    def close(self):
        self.sock.close()


ADMIN = None


class CpuMark:
    def __init__(self):
        if CFG["commandstats"]:
            ADMIN.cmd("CONFIG", "RESETSTAT")
        self.redis0 = ADMIN.redis_cpu_s()
        self.client0 = time.process_time()

    def result(self, n, t0, t1):
        client = time.process_time() - self.client0
        redis1 = ADMIN.redis_cpu_s()
        r = {"jobs_per_s": n / (t1 - t0), "elapsed_s": t1 - t0,
             "redis_cpu_us_per_job": (redis1 - self.redis0) * 1e6 / n,
             "client_cpu_us_per_job": client * 1e6 / n}
        if CFG["commandstats"]:
            r["commandstats_per_job"] = ADMIN.commandstats_per_job(n)
        return r


async def add_sequential(name, n):
    """(a) queue.add awaited one at a time."""
    q = await emq.Queue.connect(URL, name)
    try:
        dl = Deadline(CFG["scenarioTimeoutS"], "add_sequential")
        cpu = CpuMark()
        t0 = now()
        for i in range(n):
            await q.add("j", {"i": i}, remove_on_complete=True)
            if i % 1024 == 0:
                dl.check()
        return cpu.result(n, t0, now())
    finally:
        await q.close()


async def add_bulk_chunks(q, n, what):
    dl = Deadline(CFG["scenarioTimeoutS"], what)
    opts = {"remove_on_complete": True}
    for start in range(0, n, CFG["batch"]):
        end = min(n, start + CFG["batch"])
        await q.add_bulk([("j", {"i": i}, opts) for i in range(start, end)])
        dl.check()


async def add_bulk(name, n):
    """(c) add_bulk in chunks of 1,000."""
    q = await emq.Queue.connect(URL, name)
    try:
        cpu = CpuMark()
        t0 = now()
        await add_bulk_chunks(q, n, "add_bulk")
        return cpu.result(n, t0, now())
    finally:
        await q.close()


async def noop(job):
    return None


async def process_preloaded(name, n, concurrency):
    """(d) drain n preloaded jobs with an async no-op handler; worker start -> last completion."""
    q = await emq.Queue.connect(URL, name)
    worker = None
    try:
        await add_bulk_chunks(q, n, "preload")
        waiting = (await q.counts())["waiting"]
        if waiting != n:
            raise RuntimeError(f"preload: {waiting} waiting, expected {n}")
        dl = Deadline(CFG["scenarioTimeoutS"], f"process_c{concurrency}")
        cpu = CpuMark()
        t0 = now()
        worker = emq.Worker(q, noop, concurrency=concurrency)
        while True:
            s = worker.stats()
            if s["completed"] + s["failed"] >= n:
                t1 = now()
                break
            dl.check()
            await asyncio.sleep(0.001)
        res = cpu.result(n, t0, t1)
        stats = worker.stats()
        await worker.close()
        worker = None
        if stats["failed"]:
            raise RuntimeError(f"{stats['failed']} jobs failed")
        c = await q.counts()
        if c["waiting"] + c["active"] + c["completed"] + c["failed"]:
            raise RuntimeError(f"leftover jobs after drain: {c}")
        return res
    finally:
        if worker is not None:
            await worker.close()
        await q.close()


async def latency(name, n):
    """(e) idle worker (concurrency 1); add one job at a time (closed loop)."""
    q = await emq.Queue.connect(URL, name)
    starts = [0.0] * n
    cur = {"i": -1, "event": None}

    async def handler(job):
        i = job.data["i"]
        starts[i] = now()
        if i == cur["i"] and cur["event"] is not None:
            cur["event"].set()
        return None

    worker = emq.Worker(q, handler, concurrency=1)
    # Completion as an event, like BullMQ's side: the worker's own "completed" event (called on
    # this loop once the completion is recorded).
    completed = {}
    seen = asyncio.Event()

    def on_completed(job, _result):
        completed[job.id] = now()
        seen.set()

    worker.on("completed", on_completed)

    async def done_at(job_id):
        while job_id not in completed:
            seen.clear()
            await seen.wait()
        return completed.pop(job_id)

    try:
        await asyncio.sleep(0.3)  # let the worker connect and reach its blocking wait
        dl = Deadline(CFG["scenarioTimeoutS"], "latency")
        add_rtt, to_start, to_done = [], [], []
        for i in range(n):
            cur["i"] = i
            cur["event"] = asyncio.Event()
            t0 = now()
            job_id = await q.add("j", {"i": i}, remove_on_complete=True)
            t_added = now()
            await asyncio.wait_for(cur["event"].wait(), 10)
            t_done = await asyncio.wait_for(done_at(job_id), 10)
            add_rtt.append(t_added - t0)
            to_start.append(starts[i] - t0)
            to_done.append(t_done - t0)
            dl.check()
            await asyncio.sleep(CFG["latencyGapMs"] / 1000)

        def stats(xs):
            s = sorted(xs)
            return percentile(s, 50) * 1000, percentile(s, 99) * 1000

        a50, a99 = stats(add_rtt)
        s50, s99 = stats(to_start)
        d50, d99 = stats(to_done)
        return {"add_rtt_p50_ms": a50, "add_rtt_p99_ms": a99,
                "start_p50_ms": s50, "start_p99_ms": s99,
                "done_p50_ms": d50, "done_p99_ms": d99,
                "done_observed_by": "the worker's own completed event (worker.on)"}
    finally:
        await worker.close()
        await q.close()


def scenario_list(n):
    items = [
        ("add_sequential", lambda name: add_sequential(name, n)),
        ("add_bulk_1000", lambda name: add_bulk(name, n)),
    ]
    for c in CFG["concurrencies"]:
        items.append((f"process_c{c}", lambda name, c=c: process_preloaded(name, n, c)))
    items.append(("latency", lambda name: latency(name, CFG["latencyJobs"])))
    return items


async def main(out_path):
    global ADMIN
    ADMIN = Admin(CFG["host"], CFG["port"])
    versions = {"python": platform.python_version(), "emq": emq.__version__,
                "native": os.path.basename(emq._emq.__file__)}
    print(f"bench_emq_python: {versions}", file=sys.stderr)
    errors = 0
    t_start = now()
    with open(out_path, "w") as out:
        try:
            ADMIN.cmd("FLUSHALL")
            await add_sequential("warm", CFG["warmupJobs"])
            ADMIN.cmd("FLUSHALL")
            await process_preloaded("warm", CFG["warmupJobs"], 10)
        except Exception as exc:
            print(f"bench_emq_python: warm-up failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 2
        for rep in range(CFG["reps"]):
            for sid, fn in scenario_list(CFG["jobs"]):
                ADMIN.cmd("FLUSHALL")
                line = {"impl": "emq-python", "scenario": sid, "rep": rep}
                try:
                    line.update(await asyncio.wait_for(fn(f"bench-{sid}"),
                                                       CFG["scenarioTimeoutS"] + 5))
                except Exception as exc:
                    errors += 1
                    line["error"] = f"{type(exc).__name__}: {exc}"
                    print(f"bench_emq_python: rep {rep} {sid}: {line['error']}", file=sys.stderr)
                if rep == 0 and sid == "add_sequential":
                    line["versions"] = versions
                out.write(json.dumps(line) + "\n")
                out.flush()
            print(f"bench_emq_python: rep {rep + 1}/{CFG['reps']} done "
                  f"({now() - t_start:.0f}s)", file=sys.stderr)
    ADMIN.cmd("FLUSHALL")
    ADMIN.close()
    return 1 if errors else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: bench_emq_python.py OUT.jsonl")
    sys.exit(asyncio.run(main(sys.argv[1])))
