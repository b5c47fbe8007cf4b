#!/usr/bin/env bash
# Growing a partitioned queue under load (core/src/queue/grow.rs): `emq-bench partitions` with
# PART_GROW_TO on a private cluster of MASTERS (default 3) masters started by emq-harness, REPS
# (default 5) repetitions of one run each: a queue of FROM (3) partitions under one producer and
# one worker at PART_CONC (100), grown to TO (6) partitions once half of PART_JOBS (40000) jobs
# are added. Reports per run and as median [range]: the growth call's time, how long after it the
# first job of a new partition completed (the worker's restart), jobs/s before and after, the
# jobs run in the new partitions, and any run twice (must be 0) or lost (distinct ids must equal
# PART_JOBS). Run by hand, never in CI; figures in bench/RESULTS.md "Growing a partitioned queue".
# Knobs: MASTERS, FROM, TO, REPS, PART_JOBS, PART_CONC, EMQ_BENCH_BIN, EMQ_HARNESS.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(dirname "$HERE")"
MASTERS="${MASTERS:-3}"
FROM="${FROM:-3}"
TO="${TO:-6}"
REPS="${REPS:-5}"
export PART_JOBS="${PART_JOBS:-40000}"
OUT="$HERE/out/grow"
mkdir -p "$OUT"
# shellcheck source=bench/private_redis.sh
. "$HERE/private_redis.sh"
bench_bin
start_private_cluster "$MASTERS" "$OUT"
: >"$OUT/lines.jsonl"
for _ in $(seq 1 "$REPS"); do
  PART_COUNT="$FROM" PART_GROW_TO="$TO" "$BIN" partitions "$seeds" | tee -a "$OUT/lines.jsonl"
done
python3 - "$OUT/lines.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
g = [r["growth"] for r in rows]
def med(v): return f"{statistics.median(v):.4g} [{min(v):.4g}-{max(v):.4g}] (n={len(v)})"
for k in ("grow_call_ms", "first_new_done_after_ms", "jobs_per_s_before", "jobs_per_s_after", "ran_in_new"):
    print(f"{k}: {med([x[k] for x in g])}")
print("jobs/s overall:", med([r["jobs_per_s"] for r in rows]))
print("ran twice (all runs):", sum(x["ran_twice"] for x in g))
print("lost (all runs):", sum(r["jobs"] - x["distinct_ids"] for r, x in zip(rows, g)))
PY
