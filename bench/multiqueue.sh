#!/usr/bin/env bash
# Multi-queue worker benchmark (core/src/worker/pool.rs): `emq-bench multiqueue` (bench/src/multiqueue.rs)
# on one private redis-server, REPS (default 5) repetitions, the single- and multi-queue wake-up runs
# alternating first. Run by hand, never in CI. Raw lines go to bench/out/multiqueue/ (git-ignored);
# the summary (median and range) is printed for bench/RESULTS.md's hand section "Multi-queue worker".
# Knobs: REPS, MQ_JOBS (10000), MQ_WAKES (200), MQ_PORT (6396), EMQ_BENCH_BIN (skip the cargo build).
# The redis-server is stopped by the pid this script started.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(dirname "$HERE")"
PORT="${MQ_PORT:-6396}"
REPS="${REPS:-5}"
OUT="$HERE/out/multiqueue"
mkdir -p "$OUT"
# shellcheck source=bench/private_redis.sh
. "$HERE/private_redis.sh"
bench_bin
start_private_redis "$PORT" mq
: >"$OUT/lines.jsonl"
for rep in $(seq 0 $((REPS - 1))); do
  MQ_REP=$rep "$BIN" multiqueue "redis://127.0.0.1:$PORT" | tee -a "$OUT/lines.jsonl"
done
python3 - "$OUT/lines.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def show(scenario, key):
    v = [r[key] for r in rows if r["scenario"] == scenario]
    print(f"{scenario} {key}: median {statistics.median(v):.4g} [{min(v):.4g}-{max(v):.4g}] (n={len(v)})")
show("weights_5to1", "a_share"); show("weights_5to1", "window_min"); show("weights_5to1", "window_max")
show("weights_5to1", "jobs_per_s")
show("wake_single", "p50_us"); show("wake_multi", "p50_us")
show("wake_single", "p99_us"); show("wake_multi", "p99_us")
by = {}
for r in rows:
    if r["scenario"].startswith("wake"):
        by.setdefault(r["rep"], {})[r["scenario"]] = r["p50_us"]
ratios = [v["wake_multi"] / v["wake_single"] for v in by.values() if len(v) == 2]
print(f"wake p50 multi/single: median {statistics.median(ratios):.3g} [{min(ratios):.3g}-{max(ratios):.3g}]")
PY
