"""Summary of bench/coalesce.sh's raw lines: Redis CPU µs per add, concurrent and bulk, and the
ratio concurrent ÷ bulk of each repetition, as median [min–max], per build and binding."""
import json, pathlib, re, statistics, sys

out = pathlib.Path(sys.argv[1])
rows = {}
for f in sorted(out.glob("*_rep*.jsonl")):
    build, binding, rep = re.match(r"(\w+?)_(rust|node)_rep(\d+)", f.stem).groups()
    got = {}
    for line in f.read_text().splitlines():
        r = json.loads(line)
        if "error" in r:
            sys.exit(f"{f}: {r['error']}")
        got[r["scenario"]] = r
    c, b = got["add_concurrent_1000"], got["add_bulk_1000"]
    calls = c.get("commandstats_per_job", {}).get("evalsha", {}).get("calls_per_job")
    rows.setdefault((binding, build), []).append(
        (c["redis_cpu_us_per_job"], b["redis_cpu_us_per_job"],
         c["redis_cpu_us_per_job"] / b["redis_cpu_us_per_job"], c["jobs_per_s"], calls))

def cell(xs, fmt):
    return f"**{fmt(statistics.median(xs))}** [{fmt(min(xs))}–{fmt(max(xs))}]"

print("| binding | build | reps | concurrent: Redis CPU µs/add | bulk: Redis CPU µs/add | concurrent ÷ bulk | concurrent adds/s | EVALSHA calls per concurrent add |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for binding in ("rust", "node"):
    for build in ("before", "after"):
        r = rows.get((binding, build))
        if not r:
            continue
        f2 = lambda x: f"{x:.2f}"
        calls = [x[4] for x in r if x[4] is not None]
        print(f"| {binding} | {build} | {len(r)} | {cell([x[0] for x in r], f2)} | {cell([x[1] for x in r], f2)} "
              f"| {cell([x[2] for x in r], f2)} | {cell([x[3] for x in r], lambda x: f'{x:,.0f}')} "
              f"| {cell(calls, lambda x: f'{x:.3f}') if calls else '–'} |")
