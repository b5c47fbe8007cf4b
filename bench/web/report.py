"""Markdown section for bench/web.sh (issue 30 item 1). Usage: report.py OUT_DIR [RESULTS.md]

Reads OUT_DIR/runs.jsonl (one line per generator run) and OUT_DIR/meta.txt, prints the section,
and, given RESULTS.md, replaces the text between BEGIN and END there (appends it at the end, below
bench/report.py's hand-measured line, the first time), so bench/report.py's runs keep it and the
hand-written notes after END stay. Cells are
median [min–max] over the repetitions; the emq ÷ BullMQ ratios are taken per repetition (the two
runs of one repetition, pinning mode, language and load, which ran one after the other) and a
target is met only when the whole range of its ratio clears it. "Server CPU" is the service
process plus redis-server, each the sum of its threads' run times (/proc/PID/task/*/schedstat)
from the window's first scheduled send to its last answer, divided by the window's requests.
"""

import json
import statistics
import sys
from collections import defaultdict

out = sys.argv[1]
rows = [json.loads(line) for line in open(f"{out}/runs.jsonl")]
meta = {}
for line in open(f"{out}/meta.txt"):
    k, _, v = line.rstrip("\n").partition("=")
    meta[k] = v

BEGIN = "<!-- web: begin (bench/web/report.py writes this section; bench/web.sh) -->"
END = "<!-- web: end -->"
HAND_MARK = "<!-- measured by hand below this line: bench/report.py keeps it -->"
LIBS = ("bullmq", "emq")
NAME = {"bullmq": "BullMQ", "emq": "emq", "none": "none (no enqueue)"}
LANG = {"node": "Node (`node:http`)", "python": "Python (aiohttp)"}
PIN = {1: "pinned", 0: "unpinned"}
TARGET = 0.8
TARGET_LOADS = (60, 90)


def fmt(x, nd):
    if x is None:
        return "–"
    if nd == 0:
        return f"{x:,.0f}"
    return f"{x:,.{nd}f}"


def cell(vals, nd, bold=True):
    vals = [v for v in vals if v is not None]
    if not vals:
        return "–"
    m = statistics.median(vals)
    mid = f"**{fmt(m, nd)}**" if bold else fmt(m, nd)
    if len(vals) == 1:
        return mid
    return f"{mid} [{fmt(min(vals), nd)}–{fmt(max(vals), nd)}]"


def per_req(r, who):
    n = r["gen"]["sent"]
    return r["gen"]["cpu"][who]["sched_s"] * 1e6 / n if n else None


def server(r):
    a, b = per_req(r, "service"), per_req(r, "redis")
    return None if a is None or b is None else a + b


def ms(r, p):
    v = r["gen"]["lat_us"][p]
    return None if v is None else v / 1000


sat = [r for r in rows if r["phase"] == "sat"]
load = [r for r in rows if r["phase"] == "load"]
pins = sorted({r["pin"] for r in rows}, reverse=True)
langs = [lang for lang in ("node", "python") if any(r["lang"] == lang for r in rows)]
loads = sorted({r["load"] for r in load})
reps = sorted({r["rep"] for r in load})

L = [BEGIN, "## Web service, open loop (`bench/web.sh`, issue 30 item 1)", ""]
L.append(
    f"Generated {meta.get('date_start', '?')} by `{meta.get('command', '?')}` (from the repository root), "
    f"which took {meta.get('elapsed_s', '?')} s; {len(reps)} repetitions. Versions: {meta.get('redis', '?')}; "
    f"node {meta.get('node', '?')}, bullmq {meta.get('bullmq_node', '?')}, ioredis {meta.get('ioredis', '?')}, "
    f"emq Node package {meta.get('emq_node', '?')}; Python {meta.get('python', '?')} with {meta.get('python_pkgs', '?')}; "
    f"commit {meta.get('git', '?')}. `uptime` at the start: {meta.get('uptime_start', '?').strip()}; at the end: "
    f"{meta.get('uptime_end', '?').strip()} (nproc = {meta.get('nproc', '?')}; the machine is shared)."
)
L.append("")

# Saturation.
sat_closed = [r for r in rows if r["phase"] == "sat_closed"]
probe_s = next((r["gen"]["duration_s"] for r in rows if r["phase"] == "sat_probe"), "?")
L.append(
    "Saturation, per side: its closed-loop maximum (every connection sends its next request when its answer "
    f"arrives; {sat_closed[0]['gen']['conns'] if sat_closed else '?'} connections, "
    f"{sat_closed[0]['gen']['duration_s'] if sat_closed else '?'} s measured after 1 s), then open-loop probes at "
    f"100 %, 90 %, 80 %, ... of it ({probe_s} s measured after 1 s); the first with p99 under 50 ms and no error is "
    f"the sustained rate. {len({r['rep'] for r in sat})} runs per side, the libraries alternating first. BullMQ's "
    "median sustained rate is the saturation rate the loads are percentages of."
)
L.append("")
L.append("| mode | language | BullMQ closed loop req/s | BullMQ sustained req/s | emq closed loop req/s | emq sustained req/s | loads (req/s) |")
L.append("|---|---|---:|---:|---:|---:|---|")
for pin in pins:
    for lang in langs:
        s = {lib: [r for r in sat if r["pin"] == pin and r["lang"] == lang and r["lib"] == lib] for lib in LIBS}
        rates = sorted({(r["load"], round(r["gen"]["rate"])) for r in load if r["pin"] == pin and r["lang"] == lang})
        L.append(
            f"| {PIN[pin]} | {LANG[lang]} | {cell([r['closed'] for r in s['bullmq']], 0)} | "
            f"{cell([r['open'] for r in s['bullmq']], 0)} | {cell([r['closed'] for r in s['emq']], 0)} | "
            f"{cell([r['open'] for r in s['emq']], 0)} | {', '.join(f'{lo} %: {ra:,}' for lo, ra in rates)} |"
        )
L.append("")

# The open-loop table.
L.append("Open loop: per run, one service process (warmed by a 8-connection closed loop first), "
         f"{load[0]['gen']['warmup_s'] if load else '?'} s at the rate not measured, then "
         f"{load[0]['gen']['duration_s'] if load else '?'} s measured; latency from each request's scheduled send time; "
         "CPU per request of the service process (all threads) and of redis-server, separately.")
L.append("")
L.append("| mode | language | load | library | req/s | service CPU µs/req | Redis CPU µs/req | server CPU µs/req | p50 ms | p99 ms | p99.9 ms | errors |")
L.append("|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
groups = defaultdict(list)
for r in load:
    groups[(r["pin"], r["lang"], r["load"], r["lib"])].append(r)
for pin in pins:
    for lang in langs:
        for lo in loads:
            for lib in LIBS + ("none",):
                g = groups.get((pin, lang, lo, lib), [])
                if not g:
                    continue
                L.append(
                    f"| {PIN[pin]} | {lang} | {lo} % | {NAME[lib]} | {fmt(g[0]['gen']['rate'], 0)} | "
                    f"{cell([per_req(r, 'service') for r in g], 1)} | {cell([per_req(r, 'redis') for r in g], 1)} | "
                    f"{cell([server(r) for r in g], 1)} | {cell([ms(r, 'p50') for r in g], 2)} | "
                    f"{cell([ms(r, 'p99') for r in g], 2)} | {cell([ms(r, 'p999') for r in g], 2)} | "
                    f"{sum(r['gen']['errors'] for r in g)} |"
                )
L.append("")


def ratios(pin, lang, lo, f):
    out = []
    for rep in reps:
        e = [r for r in groups.get((pin, lang, lo, "emq"), []) if r["rep"] == rep]
        b = [r for r in groups.get((pin, lang, lo, "bullmq"), []) if r["rep"] == rep]
        if e and b:
            ve, vb = f(e[0]), f(b[0])
            if ve is not None and vb:
                out.append(ve / vb)
    return out


L.append("emq ÷ BullMQ, per repetition (same mode, language and load):")
L.append("")
L.append("| mode | language | load | service CPU | Redis CPU | server CPU | p50 | p99 | p99.9 |")
L.append("|---|---|---:|---:|---:|---:|---:|---:|---:|")
for pin in pins:
    for lang in langs:
        for lo in loads:
            L.append(
                f"| {PIN[pin]} | {lang} | {lo} % | {cell(ratios(pin, lang, lo, lambda r: per_req(r, 'service')), 2)} | "
                f"{cell(ratios(pin, lang, lo, lambda r: per_req(r, 'redis')), 2)} | {cell(ratios(pin, lang, lo, server), 2)} | "
                f"{cell(ratios(pin, lang, lo, lambda r: ms(r, 'p50')), 2)} | {cell(ratios(pin, lang, lo, lambda r: ms(r, 'p99')), 2)} | "
                f"{cell(ratios(pin, lang, lo, lambda r: ms(r, 'p999')), 2)} |"
            )
L.append("")

L.append(f"Verdicts (targets: emq's server CPU per request ≤ {TARGET}× BullMQ's and p99 ≤ {TARGET}× BullMQ's at "
         f"{' and '.join(f'{x} %' for x in TARGET_LOADS)} load; met only when every repetition's ratio clears it):")
L.append("")
L.append("| mode | language | load | server CPU ≤ 0.8× | p99 ≤ 0.8× |")
L.append("|---|---|---:|---|---|")
for pin in pins:
    for lang in langs:
        for lo in TARGET_LOADS:
            if lo not in loads:
                continue
            vs = []
            for f in (server, lambda r: ms(r, "p99")):
                rs = ratios(pin, lang, lo, f)
                if not rs:
                    vs.append("–")
                else:
                    ok = max(rs) <= TARGET
                    vs.append(f"{'**met**' if ok else '**not met**'}: {cell(rs, 2, False)}")
            L.append(f"| {PIN[pin]} | {lang} | {lo} % | {vs[0]} | {vs[1]} |")
L.append("")

# The generator's own health.
gen_pct = [100 * r["gen"]["gen_cpu_s"] / r["gen"]["span_s"] for r in load if r["gen"]["span_s"]]
lag99 = [r["gen"]["send_lag_us"]["p99"] for r in load if r["gen"]["send_lag_us"]["p99"] is not None]
lag50 = [r["gen"]["send_lag_us"]["p50"] for r in load if r["gen"]["send_lag_us"]["p50"] is not None]
queued = sum(r["gen"]["queued"] for r in load)
maxinf = max((r["gen"]["max_inflight"] for r in load), default=0)
errs = sum(r["gen"]["errors"] for r in load)
short = [r for r in load if r["gen"]["completed"] < r["gen"]["sent"]]
tick_dev = []
for r in load:
    for who in ("service", "redis"):
        c = r["gen"]["cpu"][who]
        if c["sched_s"] > 0.05:
            tick_dev.append(abs(c["ticks_s"] - c["sched_s"]) / c["sched_s"])
other = []
steal = 0.0
for r in load:
    g = r["gen"]
    if g.get("machine_busy_s") is None:
        continue
    mine = g["cpu"]["service"]["sched_s"] + g["cpu"]["redis"]["sched_s"] + g["gen_cpu_s"]
    other.append(100 * (g["machine_busy_s"] - mine) / g["span_s"])
    steal += g.get("machine_steal_s") or 0.0
L.append(
    f"The generator (one thread, epoll and a timerfd): its own CPU {cell(gen_pct, 0, False)} % of one core over the "
    f"open-loop runs (max {max(gen_pct, default=0):.0f} %); its lateness (actual − scheduled send) p50 "
    f"{cell(lag50, 0, False)} µs and p99 {cell(lag99, 0, False)} µs per run (included in the latencies above, as it "
    f"should be); requests that found no idle connection: {queued}; most requests in flight at once: {maxinf} of "
    f"{load[0]['gen']['conns'] if load else '?'} connections; errors (non-200, lost or unanswered): {errs}; runs with "
    f"answers missing at the end: {len(short)}. /proc/PID/stat utime+stime agrees with the schedstat sums within "
    f"{100 * max(tick_dev, default=0):.1f} % (runs with more than 50 ms of CPU). CPU taken during the open-loop "
    f"windows by everything else on the machine (/proc/stat busy time minus the service, Redis and the generator): "
    f"{cell(other, 0, False)} % of one core (max {max(other, default=0):.0f} %); steal time reported by the "
    f"hypervisor over all windows: {steal:.2f} s."
)
L.append("")
L.append(END)
section = "\n".join(L) + "\n"
print(section, end="")
if len(sys.argv) > 2:
    md = sys.argv[2]
    old = open(md).read()
    if BEGIN in old and END in old:
        new = old[: old.index(BEGIN)] + section + old[old.index(END) + len(END) + 1 :]
    else:
        if HAND_MARK not in old:
            old = old.rstrip("\n") + "\n\n" + HAND_MARK + "\n"
        new = old.rstrip("\n") + "\n\n" + section
    with open(md, "w") as f:
        f.write(new)
    print(f"bench/web/report.py: wrote the section into {md}", file=sys.stderr)
