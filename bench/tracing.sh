#!/usr/bin/env bash
# Tracing on against off (issue 29): emq's Node package at concurrency 100 (process_c100: 20,000
# jobs preloaded by addBulk, then processed) and 1,000 concurrent adds (add_concurrent_1000), with
# and without an OpenTelemetry SDK registered (spans batched to an exporter that counts them:
# bench/bench_emq_node.js's BENCH_TRACE=1). REPS repetitions (default 5), the traced side first in
# odd repetitions and the untraced first in even ones, on one private redis-server (port 6391,
# started here and stopped by its pid). Prints the per-repetition ratios (traced / untraced) of
# jobs/s and of Redis CPU per job, their median and range, and the Redis commands per job of each
# side (INFO commandstats); a third side, "context", registers only the AsyncLocalStorage context
# manager a traced service runs (no provider), to split the cost between it and the spans. Run by hand, never in CI; raw lines go to bench/out/tracing/.
#   bash bench/tracing.sh            # builds the addon in release (node/build.sh) unless EMQ_NODE_PROFILE=debug
# Needs node, npm (node/testlib/otel.js installs the OpenTelemetry packages outside the package),
# redis-server.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(dirname "$HERE")"
PORT=6391
PIDFILE=/tmp/bench-tracing-redis.pid
OUT="$HERE/out/tracing"
REPS="${REPS:-5}"
N_JOBS="${N_JOBS:-20000}"
rm -rf "$OUT"; mkdir -p "$OUT"

if [ "${SKIP_BUILD:-0}" != 1 ]; then bash "$ROOT/node/build.sh" >"$OUT/build.log" 2>&1; fi
OTEL="$(node -e "console.log(require('$ROOT/node/testlib/otel.js').otelNodePath())" | tail -1)"

redis-cli -h 127.0.0.1 -p "$PORT" ping >/dev/null 2>&1 && { echo "something answers on $PORT; stop it first" >&2; exit 1; }
redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no --daemonize yes --pidfile "$PIDFILE" >/dev/null
for _ in $(seq 1 50); do [ -s "$PIDFILE" ] && redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
REDIS_PID="$(cat "$PIDFILE")"
stop() { if [ "$(cat "/proc/$REDIS_PID/comm" 2>/dev/null)" = redis-server ]; then kill "$REDIS_PID"; fi; }
trap stop EXIT

side() { # side REP traced|plain
  local env=(REDIS_PORT="$PORT" REPS=1 N_JOBS="$N_JOBS" SCENARIOS=process_c100,add_concurrent_1000)
  if [ "$2" = traced ]; then env+=(BENCH_TRACE=1 NODE_PATH="$OTEL"); fi
  if [ "$2" = context ]; then env+=(BENCH_TRACE=context NODE_PATH="$OTEL"); fi
  env "${env[@]}" timeout 600 node "$HERE/bench_emq_node.js" "$OUT/$1-$2.jsonl" 2>>"$OUT/bench.log"
}
for rep in $(seq 1 "$REPS"); do
  # The three sides in a rotating order.
  case $((rep % 3)) in
    1) side "$rep" traced; side "$rep" plain; side "$rep" context ;;
    2) side "$rep" plain; side "$rep" context; side "$rep" traced ;;
    0) side "$rep" context; side "$rep" traced; side "$rep" plain ;;
  esac
  echo "tracing.sh: repetition $rep/$REPS done" >&2
done

python3 - "$OUT" "$REPS" <<'PY'
import json, statistics, sys
out, reps = sys.argv[1], int(sys.argv[2])
def load(rep, side):
    return {l["scenario"]: l for l in map(json.loads, open(f"{out}/{rep}-{side}.jsonl")) if "error" not in l}
rows = {}
for rep in range(1, reps + 1):
    t, p, c = load(rep, "traced"), load(rep, "plain"), load(rep, "context")
    for sc in ("process_c100", "add_concurrent_1000"):
        r = rows.setdefault(sc, {"jobs": [], "ctx": [], "spans_only": [], "cpu": [], "cmds_t": [], "cmds_p": [], "spans": []})
        r["jobs"].append(t[sc]["jobs_per_s"] / p[sc]["jobs_per_s"])
        r["ctx"].append(c[sc]["jobs_per_s"] / p[sc]["jobs_per_s"])
        r["spans_only"].append(t[sc]["jobs_per_s"] / c[sc]["jobs_per_s"])
        r["cpu"].append(t[sc]["redis_cpu_us_per_job"] / p[sc]["redis_cpu_us_per_job"])
        calls = lambda l: sum(v["calls_per_job"] for v in l.get("commandstats_per_job", {}).values())
        r["cmds_t"].append(calls(t[sc])); r["cmds_p"].append(calls(p[sc]))
        r["spans"].append(t[sc].get("spans_per_job", 0))
fmt = lambda v: f"{statistics.median(v):.3f} [{min(v):.3f}–{max(v):.3f}]"
print(f"| scenario | jobs/s traced/untraced | of which: context manager alone / untraced | traced / context manager alone | Redis CPU per job traced/untraced | commands per job (traced; untraced) | spans per job |")
print("|---|---|---|---|---|---|---|")
for sc, r in rows.items():
    print(f"| {sc} | {fmt(r['jobs'])} | {fmt(r['ctx'])} | {fmt(r['spans_only'])} | {fmt(r['cpu'])} | {statistics.median(r['cmds_t']):.4f}; {statistics.median(r['cmds_p']):.4f} | {statistics.median(r['spans']):.3f} |")
PY
