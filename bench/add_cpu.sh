#!/usr/bin/env bash
# Client CPU per awaited one-job add (issue 30's targets-table rows "client CPU per one-at-a-time
# add ÷ BullMQ Node"), side by side on one private redis-server: BullMQ Node (the anchors' pinned
# 6.7.0, installed in BULLMQ_DIR, default /tmp/emq-bullmq), emq Python and emq Node, each side a
# fresh process of N (20000, the anchors' job count: BullMQ's JIT is still warming at 5000) timed adds after 200 untimed, REPS (5) repetitions, the sides' order
# rotating. Uses the installed Python package (EMQ_PY, default /tmp/emq-bench-venv/bin/python) and
# the built Node addon (node/). Run by hand, never in CI; prints one JSON line per run, then the
# medians and each emq side's ratio to BullMQ Node per repetition.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
PORT="${ADD_CPU_PORT:-6413}"
REPS="${REPS:-5}"
N="${N:-20000}"
PY="${EMQ_PY:-/tmp/emq-bench-venv/bin/python}"
OUT="$HERE/out/add_cpu"
mkdir -p "$OUT"
# shellcheck source=bench/private_redis.sh
. "$HERE/private_redis.sh"
start_private_redis "$PORT" add-cpu
: >"$OUT/lines.jsonl"
sides=(bullmq_node emq_python emq_node)
for rep in $(seq 0 $((REPS - 1))); do
  for k in 0 1 2; do
    side="${sides[$(((rep + k) % 3))]}"
    case "$side" in
      bullmq_node) line="$(node "$HERE/add_cpu/node_side.js" bullmq "$PORT" "$N")" ;;
      emq_python) line="$("$PY" "$HERE/add_cpu/emq_python.py" "$PORT" "$N")" ;;
      emq_node) line="$(node "$HERE/add_cpu/node_side.js" emq "$PORT" "$N")" ;;
    esac
    echo "{\"rep\": $rep, ${line:1}" | tee -a "$OUT/lines.jsonl"
  done
done
python3 - "$OUT/lines.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = lambda s: sorted((r for r in rows if r["side"] == s), key=lambda r: r["rep"])
for key in ("cpu_us_per_add", "wall_us_per_add"):
    for s in ("bullmq_node", "emq_python", "emq_node"):
        v = [r[key] for r in by(s)]
        print(f"{s} {key}: median {statistics.median(v):.1f} [{min(v):.1f}-{max(v):.1f}]")
    for s in ("emq_python", "emq_node"):
        v = [a[key] / b[key] for a, b in zip(by(s), by("bullmq_node"))]
        print(f"{s} / bullmq_node {key}: median {statistics.median(v):.3f} [{min(v):.3f}-{max(v):.3f}]")
PY
