#!/usr/bin/env bash
# Tracing on against off in Rust (issue 29; bench/tracing.sh is the Node side): emq-bench at
# concurrency 100 (process_c100: N_JOBS jobs, default 20,000, preloaded by add_bulk, then
# processed) and 1,000 concurrent adds (add_concurrent_1000), three sides: "traced" (built with
# `--features otel`, BENCH_TRACE=1: an OpenTelemetry SDK provider, spans batched to an exporter
# that counts them: bench/src/trace.rs), "untraced" (the same binary, no provider: the global no-op
# tracer) and "plain" (built without the feature). REPS repetitions (default 5), the sides in a
# rotating order, each side a fresh process, on one private redis-server (port 6392, started here
# and stopped by its pid). Prints the per-repetition ratios, their median and range, and the Redis
# commands per job of each side (INFO commandstats). Run by hand, never in CI; raw lines go to
# bench/out/tracing_rust/.
#   bash bench/tracing_rust.sh      # builds both binaries in release (cargo), ~5 min the first time
# Needs cargo, redis-server, python3.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(dirname "$HERE")"
PORT=6392
OUT="$HERE/out/tracing_rust"
# shellcheck source=bench/private_redis.sh
. "$HERE/private_redis.sh"
REPS="${REPS:-5}"
N_JOBS="${N_JOBS:-20000}"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
rm -rf "$OUT"; mkdir -p "$OUT"

(cd "$ROOT" && cargo build -q --release -p emq-bench) >"$OUT/build.log" 2>&1
cp "$TARGET/release/emq-bench" "$OUT/emq-bench-plain"
(cd "$ROOT" && cargo build -q --release -p emq-bench --features otel) >>"$OUT/build.log" 2>&1
cp "$TARGET/release/emq-bench" "$OUT/emq-bench-otel"

redis-cli -h 127.0.0.1 -p "$PORT" ping >/dev/null 2>&1 && { echo "something answers on $PORT; stop it first" >&2; exit 1; }
start_private_redis "$PORT" tracing-rust

side() { # side REP traced|untraced|plain
  local bin="$OUT/emq-bench-otel" trace=0
  [ "$2" = plain ] && bin="$OUT/emq-bench-plain"
  [ "$2" = traced ] && trace=1
  env REPS=1 N_JOBS="$N_JOBS" SCENARIOS=process_c100,add_concurrent_1000 BENCH_TRACE="$trace" \
    timeout 600 "$bin" "redis://127.0.0.1:$PORT" >"$OUT/$1-$2.jsonl" 2>>"$OUT/bench.log"
}
for rep in $(seq 1 "$REPS"); do
  case $((rep % 3)) in
    1) side "$rep" traced; side "$rep" untraced; side "$rep" plain ;;
    2) side "$rep" untraced; side "$rep" plain; side "$rep" traced ;;
    0) side "$rep" plain; side "$rep" traced; side "$rep" untraced ;;
  esac
  echo "tracing_rust.sh: repetition $rep/$REPS done" >&2
done

python3 - "$OUT" "$REPS" <<'PY'
import json, statistics, sys
out, reps = sys.argv[1], int(sys.argv[2])
def load(rep, side):
    return {l["scenario"]: l for l in map(json.loads, open(f"{out}/{rep}-{side}.jsonl")) if "error" not in l}
rows = {}
for rep in range(1, reps + 1):
    t, u, p = load(rep, "traced"), load(rep, "untraced"), load(rep, "plain")
    for sc in ("process_c100", "add_concurrent_1000"):
        r = rows.setdefault(sc, {"jobs": [], "cpu": [], "off": [], "cmds_t": [], "cmds_u": [], "spans": []})
        r["jobs"].append(t[sc]["jobs_per_s"] / u[sc]["jobs_per_s"])
        r["cpu"].append(t[sc]["redis_cpu_us_per_job"] / u[sc]["redis_cpu_us_per_job"])
        r["off"].append(u[sc]["jobs_per_s"] / p[sc]["jobs_per_s"])
        calls = lambda l: sum(v["calls_per_job"] for v in l.get("commandstats_per_job", {}).values())
        r["cmds_t"].append(calls(t[sc])); r["cmds_u"].append(calls(u[sc]))
        r["spans"].append(t[sc].get("spans_per_job", 0))
fmt = lambda v: f"{statistics.median(v):.3f} [{min(v):.3f}–{max(v):.3f}]"
print("| scenario | jobs/s traced / untraced | Redis CPU per job traced / untraced | jobs/s untraced / built without the feature | commands per job (traced; untraced) | spans per job |")
print("|---|---|---|---|---|---|")
for sc, r in rows.items():
    print(f"| {sc} | {fmt(r['jobs'])} | {fmt(r['cpu'])} | {fmt(r['off'])} | {statistics.median(r['cmds_t']):.4f}; {statistics.median(r['cmds_u']):.4f} | {statistics.median(r['spans']):.3f} |")
PY
