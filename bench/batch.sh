#!/usr/bin/env bash
# Batch benchmark (core/src/batch/): `emq-bench batch` (bench/src/batch.rs) on one private
# redis-server, REPS (default 5) repetitions, the plain and the batched side of each pair
# alternating first. Run by hand, never in CI. Raw lines go to bench/out/batch/ (git-ignored); the
# summary (median and range, and the batched/plain ratio of each repetition) is printed for
# bench/RESULTS.md's section "Batches".
# Knobs: REPS, BATCH_JOBS (20000), BATCH_PORT (6397), BATCH_ADD_ONLY=1 (the add scenarios only),
# EMQ_BENCH_BIN (skip the cargo build).
# The redis-server is stopped by the pid this script started.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(dirname "$HERE")"
PORT="${BATCH_PORT:-6397}"
REPS="${REPS:-5}"
OUT="$HERE/out/batch"
mkdir -p "$OUT"
# shellcheck source=bench/private_redis.sh
. "$HERE/private_redis.sh"
bench_bin
start_private_redis "$PORT" batch
: >"$OUT/lines.jsonl"
for rep in $(seq 0 $((REPS - 1))); do
  BATCH_REP=$rep "$BIN" batch "redis://127.0.0.1:$PORT" | tee -a "$OUT/lines.jsonl"
done
python3 - "$OUT/lines.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def col(scenario, key):
    return [r[key] for r in sorted(rows, key=lambda r: r["rep"]) if r["scenario"] == scenario]
def show(label, v, fmt="{:.4g}"):
    print(f"{label}: median {fmt.format(statistics.median(v))} "
          f"[{fmt.format(min(v))}-{fmt.format(max(v))}] (n={len(v)})")
for step in ("add", "process"):
    if not col(f"{step}_plain", "jobs_per_s"):
        continue  # BATCH_ADD_ONLY=1
    for key in ("jobs_per_s", "redis_cpu_us_per_job"):
        for s in ("plain", "batched"):
            show(f"{step}_{s} {key}", col(f"{step}_{s}", key))
        p, b = col(f"{step}_plain", key), col(f"{step}_batched", key)
        show(f"{step} batched/plain {key}", [y / x for x, y in zip(p, b)], "{:.3f}")
PY
