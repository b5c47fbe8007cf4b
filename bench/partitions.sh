#!/usr/bin/env bash
# Partitioned-queue spread benchmark (core/src/partitions.rs): `emq-bench partitions`
# (bench/src/partitions.rs) on a private cluster of MASTERS (default 3) masters started by
# emq-harness, REPS (default 5) repetitions, each running the plain queue and the PARTS-partition
# queue (default 6), alternating which goes first. Around each run it reads every master's
# used_cpu_user + used_cpu_sys (INFO cpu) and reports each master's share of the run's total
# Redis CPU and the CPU per job. Run by hand, never in CI; the summary (median and range) is for
# bench/RESULTS.md's section "Partitioned queue". For a larger machine: MASTERS=8 PARTS=16
# PART_CONC=400 bash bench/partitions.sh (the goal there: jobs/s >= 0.8x linear in masters).
# Knobs: MASTERS, PARTS, REPS, PART_JOBS (20000), PART_CONC (100), EMQ_BENCH_BIN, EMQ_HARNESS.
# The cluster is stopped by the harness (its stdin closed) when this script exits.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(dirname "$HERE")"
MASTERS="${MASTERS:-3}"
PARTS="${PARTS:-6}"
REPS="${REPS:-5}"
OUT="$HERE/out/partitions"
mkdir -p "$OUT"
# shellcheck source=bench/private_redis.sh
. "$HERE/private_redis.sh"
bench_bin
start_private_cluster "$MASTERS" "$OUT"
cpu() { for p in $ports; do redis-cli -p "$p" INFO cpu | tr -d '\r' | awk -F: '/^used_cpu_(user|sys):/ {s += $2} END {printf "%s ", s}'; done; }
: >"$OUT/lines.jsonl"
for rep in $(seq 0 $((REPS - 1))); do
  if [ $((rep % 2)) -eq 0 ]; then order="1 $PARTS"; else order="$PARTS 1"; fi
  for n in $order; do
    before=$(cpu)
    line=$(PART_COUNT=$n "$BIN" partitions "$seeds")
    after=$(cpu)
    python3 - "$line" "$before" "$after" "$rep" <<'PY' | tee -a "$OUT/lines.jsonl"
import json, sys
row = json.loads(sys.argv[1])
b = [float(x) for x in sys.argv[2].split()]
a = [float(x) for x in sys.argv[3].split()]
used = [y - x for x, y in zip(b, a)]
total = sum(used)
row.update(rep=int(sys.argv[4]), cpu_s=used, cpu_total_s=total,
           max_master_share=max(used) / total if total else None,
           cpu_us_per_job=total * 1e6 / row["jobs"])
print(json.dumps(row))
PY
  done
done
python3 - "$OUT/lines.jsonl" "$PARTS" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
parts = int(sys.argv[2])
def med(v): return f"median {statistics.median(v):.4g} [{min(v):.4g}-{max(v):.4g}] (n={len(v)})"
for n in (1, parts):
    rs = [r for r in rows if r["partitions"] == n]
    print(f"partitions={n}: jobs/s {med([r['jobs_per_s'] for r in rs])}")
    print(f"partitions={n}: max master share of Redis CPU {med([r['max_master_share'] for r in rs])}")
    print(f"partitions={n}: Redis CPU us/job {med([r['cpu_us_per_job'] for r in rs])}")
by = {}
for r in rows:
    by.setdefault(r["rep"], {})[r["partitions"]] = r
tp = [v[parts]["jobs_per_s"] / v[1]["jobs_per_s"] for v in by.values() if len(v) == 2]
cp = [v[parts]["cpu_us_per_job"] / v[1]["cpu_us_per_job"] for v in by.values() if len(v) == 2]
print(f"jobs/s partitioned/plain: {med(tp)}")
print(f"Redis CPU per job partitioned/plain: {med(cp)}")
PY
