#!/usr/bin/env python3
"""Writes the "Fair groups" section of bench/RESULTS.md from bench/fairness.sh's raw lines.

Usage: fairness_report.py OUT_DIR RESULTS.md. Reads OUT_DIR/emq_rep*.jsonl and bullmq_rep*.jsonl;
replaces the text between BEGIN and END in RESULTS.md (appends it at the end, below bench/report.py's
hand-measured line, the first time), so bench/report.py's runs keep it and hand-written notes
after END stay. Cells are median [min-max] over the repetitions; a target is met only when the
whole range clears it. Ratios grouped / ungrouped are taken per repetition (the two sides of one
repetition ran back to back), then summarised.
"""
import glob
import json
import os
import statistics
import sys
import time

BEGIN = "<!-- fairness: begin (bench/fairness_report.py writes this section; bench/fairness.sh) -->"
END = "<!-- fairness: end -->"
HAND_MARK = "<!-- measured by hand below this line: bench/report.py keeps it -->"


def load(out):
    rows, errors = [], []
    for path in sorted(glob.glob(os.path.join(out, "*_rep*.jsonl"))):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    r = json.loads(line)
                except ValueError:
                    errors.append(f"{os.path.basename(path)}: unreadable line")
                    continue
                if "error" in r:
                    errors.append(f"{r.get('impl')} {r.get('scenario')} {r.get('side')} rep {r.get('rep')}: {r['error']}")
                else:
                    rows.append(r)
    p = os.path.join(out, "step_errors.txt")
    if os.path.exists(p):
        errors += [l.strip() for l in open(p) if l.strip()]
    return rows, errors


def fmt(x):
    if x is None:
        return "–"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 100:
        return f"{x:.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def cell(xs, f=None):
    if not xs:
        return "–"
    if f is None:
        # Counts (every value a whole number) print as whole numbers.
        f = (lambda x: f"{x:,.0f}") if all(float(x).is_integer() for x in xs) else fmt
    if len(xs) == 1:
        return f"**{f(xs[0])}**"
    return f"**{f(statistics.median(xs))}** [{f(min(xs))}–{f(max(xs))}]"


def pick(rows, impl, scenario, side, key):
    return [r[key] for r in sorted(rows, key=lambda r: r["rep"])
            if r["impl"] == impl and r["scenario"] == scenario and r["side"] == side and key in r]


def per_rep_ratio(rows, scenario, key):
    g = {r["rep"]: r[key] for r in rows if r["impl"] == "emq" and r["scenario"] == scenario and r["side"] == "grouped" and key in r}
    u = {r["rep"]: r[key] for r in rows if r["impl"] == "emq" and r["scenario"] == scenario and r["side"] == "ungrouped" and key in r}
    return [g[k] / u[k] for k in sorted(g) if k in u and u[k]]


def verdict(xs, ok):
    if not xs:
        return "no data"
    return "**met**" if all(ok(x) for x in xs) else "**not met**"


def main():
    out, md_path = sys.argv[1], sys.argv[2]
    rows, errors = load(out)
    reps = sorted({r["rep"] for r in rows})
    # bench/fairness.sh leaves the run's command, start and end in run_info.json, so the report can
    # be written again from the same raw lines.
    info = {}
    p = os.path.join(out, "run_info.json")
    if os.path.exists(p):
        info = json.load(open(p))
    t0 = int(info.get("t0", os.environ.get("FAIR_T0", time.time())))
    t1 = int(info.get("t1", time.time()))
    took = t1 - t0
    cmd = info.get("command", os.environ.get("FAIR_COMMAND", "bash bench/fairness.sh"))
    ver = ""
    for name in ("redis_version.txt", "versions.txt"):
        p = os.path.join(out, name)
        if os.path.exists(p):
            ver += open(p).read().strip().replace("\n", "; ") + "; "
    load_s = open(os.path.join(out, "loadavg_start.txt")).read().split()[:3] if os.path.exists(os.path.join(out, "loadavg_start.txt")) else []
    load_e = open(os.path.join(out, "loadavg_end.txt")).read().split()[:3] if os.path.exists(os.path.join(out, "loadavg_end.txt")) else []
    n_starve = next((r["a_jobs"] for r in rows if "a_jobs" in r), None)

    L = [BEGIN, "## Fair groups (`bench/fairness.sh`)\n"]
    L.append(f"Generated {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(t1))} by `{cmd}` (from the repository root), "
             f"which took {took} s; {len(reps)} repetitions. Versions: {ver.strip('; ') or 'unknown'}; emq: this working tree "
             f"(`emq-bench fairness`, release). Load average (1/5/15 min) at the start {' '.join(load_s)}, at the end {' '.join(load_e)} "
             f"(nproc = {os.cpu_count()}; other agents share the machine).\n")
    L.append("One private redis-server (127.0.0.1, its own port), started like the anchors' and stopped by its pid; FLUSHALL before "
             "every scenario run. Each repetition runs BullMQ first in odd repetitions and emq first in even ones, and inside emq's "
             "run the grouped and the ungrouped side of each pair swap order every repetition. Cells: **median** [min–max] over the "
             "repetitions; a target is met only when the whole range clears it. Every job has `remove_on_complete` (BullMQ: "
             "`removeOnComplete: true`) and a no-op handler.\n")

    # --- targets
    T = ["### Targets\n", "| target | measured | goal | verdict |", "|---|---:|---|---|"]
    ng_starve = next((r["a_groups"] for r in rows if r.get("scenario", "").startswith("starve_many") and "a_groups" in r), None)
    for sc, what, active in [("starve_cold_c1_p0", "cold, concurrency 1, prefetch 0", 2),
                             ("starve_live_c1_p0", "live, concurrency 1, prefetch 0", 2),
                             ("starve_many_cold_c1_p0", f"cold, A spread over {ng_starve} groups, concurrency 1, prefetch 0", (ng_starve or 0) + 1),
                             ("starve_many_live_c1_p0", f"live, A spread over {ng_starve} groups, concurrency 1, prefetch 0", (ng_starve or 0) + 1)]:
        xs = pick(rows, "emq", sc, "grouped", "started_after_add_before_b")
        if xs:
            T.append(f"| starvation ({what}): jobs started (= claimed) after B's add, before B's; {n_starve:,} A jobs | {cell(xs)} | "
                     f"≤ {active} (the active groups) | {verdict(xs, lambda x, a=active: x <= a)} |")
    for sc, what in [("starve_cold_c10", "cold, concurrency 10"), ("starve_live_c10", "live, concurrency 10, default prefetch")]:
        xs = pick(rows, "emq", sc, "grouped", "started_after_add_before_b")
        if xs:
            T.append(f"| starvation ({what}): handler starts after B's add, before B's | {cell(xs)} | reported: not a claim count (see below) | – |")
    xs = pick(rows, "emq", "starve_cold_c10", "grouped", "ms_add_to_start") + pick(rows, "emq", "starve_live_c10", "grouped", "ms_add_to_start")
    if xs:
        T.append(f"| starvation, concurrency 10 (cold and live): ms from B's add to B's start | {cell(xs)} | reported | – |")
    xs = pick(rows, "emq", "weights_3to1", "grouped", "ratio_a_b")
    T.append(f"| weights 3:1, A:B over the first {fmt(pick(rows, 'emq', 'weights_3to1', 'grouped', 'starts')[0]) if xs else '?'} starts | {cell(xs)} | 2.85–3.15 (3 ± 5 %) | {verdict(xs, lambda x: 2.85 <= x <= 3.15)} |")
    for c in (10, 100):
        sc = f"groups_c{c}"
        r = per_rep_ratio(rows, sc, "redis_cpu_us_per_job")
        T.append(f"| {sc}: Redis CPU per processed job, grouped ÷ ungrouped (main thread) | {cell(r)} | ≤ 1.2 | {verdict(r, lambda x: x <= 1.2)} |")
        r2 = per_rep_ratio(rows, sc, "redis_cpu_total_us_per_job")
        T.append(f"| {sc}: Redis CPU per processed job, grouped ÷ ungrouped (used_cpu_sys + used_cpu_user) | {cell(r2)} | ≤ 1.2 | {verdict(r2, lambda x: x <= 1.2)} |")
        r3 = per_rep_ratio(rows, sc, "jobs_per_s")
        T.append(f"| {sc}: jobs/s, grouped ÷ ungrouped | {cell(r3)} | ≥ 0.8 | {verdict(r3, lambda x: x >= 0.8)} |")
    L += [t for t in T if t] + [""]

    # --- starvation
    S = ["### Starvation: one job of B behind the A jobs\n",
         f"Cold: {n_starve:,} jobs of A queued, then B's job, then the worker starts. Live: the worker starts on the {n_starve:,} A jobs; "
         f"once {os.environ.get('FAIR_LIVE_AFTER', '1000')} have started, B's job is added. *A before B* counts every A start before B's; "
         "*after add* counts the starts after B's add was called (cold: the same). *ms* is B's add called → B's handler's first line. "
         "emq ungrouped and BullMQ OSS (no groups: a FIFO queue) put every job in one line. At concurrency 10 the handlers of one "
         "claim's batch start concurrently (their start order is not the claim order), and in the live case the worker already "
         "holds up to 10 running + 64 prefetched A jobs (the default prefetch for short jobs) leased before B existed; so only the "
         "concurrency-1, prefetch-0 rows count claims. *many*: the A jobs spread round-robin over groups `A0`…\n" if n_starve else "",
         "| case | implementation | A before B | after add, before B | ms add → B starts | B's add round trip (ms) |",
         "|---|---|---:|---:|---:|---:|"]
    for sc, label in [("starve_cold_c10", "cold, c10"), ("starve_live_c10", "live, c10"),
                      ("starve_cold_c1_p0", "cold, c1, prefetch 0"), ("starve_live_c1_p0", "live, c1, prefetch 0"),
                      ("starve_many_cold_c1_p0", "many A groups, cold, c1, prefetch 0"),
                      ("starve_many_live_c1_p0", "many A groups, live, c1, prefetch 0")]:
        for impl, side, name in [("emq", "grouped", "emq, groups A and B"), ("emq", "ungrouped", "emq, ungrouped (FIFO)"),
                                 ("bullmq-node", "fifo", "BullMQ OSS Node (FIFO)")]:
            a = pick(rows, impl, sc, side, "a_started_before_b")
            if not a:
                continue
            S.append(f"| {label} | {name} | {cell(a)} | {cell(pick(rows, impl, sc, side, 'started_after_add_before_b'))} | "
                     f"{cell(pick(rows, impl, sc, side, 'ms_add_to_start'))} | {cell(pick(rows, impl, sc, side, 'b_add_rtt_ms'))} |")
    S.append("")
    S.append("Loading the A jobs (add_bulk / addBulk, chunks of 1,000), jobs/s: " + "; ".join(
        f"{name} {cell(pick(rows, impl, 'starve_cold_c10', side, 'load_jobs_per_s'))}"
        for impl, side, name in [("emq", "grouped", "emq grouped"), ("emq", "ungrouped", "emq ungrouped"), ("bullmq-node", "fifo", "BullMQ")]) + ".\n")
    L += [s for s in S if s is not None]

    # --- weights
    W = ["### Weights 3:1\n",
         "Groups A (weight 3) and B (weight 1), 10,000 jobs each queued (FAIR_WEIGHT_JOBS), a worker at concurrency 10; the shares "
         "of the first FAIR_WEIGHT_JOBS handler starts, and the A:B ratio of each window of 1,000 starts (min and max over the windows "
         "of a run).\n",
         "| A:B | A's share | window A:B, lowest | window A:B, highest |", "|---:|---:|---:|---:|",
         f"| {cell(pick(rows, 'emq', 'weights_3to1', 'grouped', 'ratio_a_b'))} | {cell([x * 100 for x in pick(rows, 'emq', 'weights_3to1', 'grouped', 'share_a')])} % | "
         f"{cell(pick(rows, 'emq', 'weights_3to1', 'grouped', 'window_ratio_min'))} | {cell(pick(rows, 'emq', 'weights_3to1', 'grouped', 'window_ratio_max'))} |", ""]
    L += W

    # --- many groups
    nj = os.environ.get("FAIR_JOBS", "50000")
    ng = os.environ.get("FAIR_GROUPS", "10000")
    G = [f"### {int(ng):,} groups with jobs\n",
         f"{int(nj):,} jobs, job i in group `g{{i mod {ng}}}` (grouped) or in no group (ungrouped), preloaded with add_bulk, then "
         "drained by one worker with a no-op handler: worker start → last completion, Redis CPU from INFO cpu before and after "
         "(main thread: the method of bench/src/main.rs's `process`; total: used_cpu_sys + used_cpu_user).\n",
         "| concurrency | side | jobs/s | Redis CPU µs/job (main thread) | Redis CPU µs/job (total) | client CPU µs/job | add_bulk jobs/s | add Redis CPU µs/job |",
         "|---|---|---:|---:|---:|---:|---:|---:|"]
    for c in (10, 100):
        for side in ("grouped", "ungrouped"):
            p = lambda k: pick(rows, "emq", f"groups_c{c}", side, k)
            G.append(f"| {c} | {side} | {cell(p('jobs_per_s'))} | {cell(p('redis_cpu_us_per_job'))} | {cell(p('redis_cpu_total_us_per_job'))} | "
                     f"{cell(p('client_cpu_us_per_job'))} | {cell(p('add_jobs_per_s'))} | {cell(p('add_redis_cpu_us_per_job'))} |")
        G.append(f"| {c} | grouped ÷ ungrouped (per repetition) | {cell(per_rep_ratio(rows, f'groups_c{c}', 'jobs_per_s'))} | "
                 f"{cell(per_rep_ratio(rows, f'groups_c{c}', 'redis_cpu_us_per_job'))} | {cell(per_rep_ratio(rows, f'groups_c{c}', 'redis_cpu_total_us_per_job'))} | "
                 f"{cell(per_rep_ratio(rows, f'groups_c{c}', 'client_cpu_us_per_job'))} | {cell(per_rep_ratio(rows, f'groups_c{c}', 'add_jobs_per_s'))} | "
                 f"{cell(per_rep_ratio(rows, f'groups_c{c}', 'add_redis_cpu_us_per_job'))} |")
    G.append("")
    # commandstats
    G.append("INFO commandstats while draining (medians over the repetitions): calls per job / µs per job. `evalsha`'s µs include "
             "the commands its scripts call, which are also listed on their own.\n")
    for c in (10, 100):
        cs = {side: [r["commandstats_per_job"] for r in rows if r["impl"] == "emq" and r["scenario"] == f"groups_c{c}"
                     and r["side"] == side and "commandstats_per_job" in r] for side in ("grouped", "ungrouped")}
        cmds = sorted({k for side in cs.values() for d in side for k in d},
                      key=lambda k: -max([d.get(k, {}).get("usec_per_job", 0) for d in cs["grouped"]] or [0]))
        G.append(f"| c{c}: command | grouped calls/job | grouped µs/job | ungrouped calls/job | ungrouped µs/job |")
        G.append("|---|---:|---:|---:|---:|")
        for k in cmds:
            vals = []
            for side in ("grouped", "ungrouped"):
                for f in ("calls_per_job", "usec_per_job"):
                    xs = [d[k][f] for d in cs[side] if k in d]
                    vals.append(fmt(statistics.median(xs)) if xs else "–")
            if all(v in ("–", "0.00") for v in vals[1::2]):
                continue
            G.append(f"| {k} | " + " | ".join(vals) + " |")
        G.append("")
    L += G

    L.append("### Errors\n")
    L.append("\n".join(f"- {e}" for e in errors) + "\n" if errors else "None.\n")
    L.append(END)
    section = "\n".join(L) + "\n"

    old = open(md_path).read() if os.path.exists(md_path) else ""
    if BEGIN in old and END in old:
        new = old[:old.index(BEGIN)] + section + old[old.index(END) + len(END) + 1:]
    else:
        if HAND_MARK not in old:
            old = old.rstrip("\n") + "\n\n" + HAND_MARK + "\n"
        new = old.rstrip("\n") + "\n\n" + section
    with open(md_path, "w") as f:
        f.write(new)
    print(f"fairness_report: {len(rows)} lines, {len(errors)} errors", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
