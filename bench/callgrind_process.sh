#!/usr/bin/env bash
# Counts redis-server instructions per processed job (emq Rust worker, no-op handler,
# remove_on_complete), steady on a noisy machine: a private redis-server under callgrind, collecting
# only request parsing, command execution and reply writing (not serverCron), driven by the release
# emq-bench. Per scenario one run with N jobs and one with 2N; (difference - the bulk preload's
# difference) / N = instructions per processed job. Also prints each run's commandstats per job.
#
# Usage: bench/callgrind_process.sh [N] [scenarios…]   (default 5000; process_c1 process_c10 process_c100)
# Env: PORT (6421), OUT (a fresh temporary folder), BENCH (target/release/emq-bench).
# Needs valgrind, redis-server 7 and `cargo build --release -p emq-bench`. Not part of bench/run.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-5000}
shift || true
if [ $# -gt 0 ]; then SCENARIOS=("$@"); else SCENARIOS=(process_c1 process_c10 process_c100); fi
PORT=${PORT:-6421}
OUT=${OUT:-$(mktemp -d /tmp/emq-callgrind.XXXXXX)}
BENCH=${BENCH:-target/release/emq-bench}

# run TAG SCENARIO N: prints the run's instruction count
run() {
  local d="$OUT/$1"
  mkdir -p "$d"
  valgrind --tool=callgrind --callgrind-out-file="$d/cg.out" --collect-atstart=no \
    --toggle-collect=readQueryFromClient --toggle-collect=handleClientsWithPendingWritesUsingThreads \
    redis-server --port "$PORT" --save '' --appendonly no --dir "$d" --logfile "$d/redis.log" \
    >"$d/valgrind.log" 2>&1 &
  local pid=$!
  for _ in $(seq 1 100); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.2; done
  SCENARIOS=$2 N_JOBS=$3 REPS=1 SCENARIO_TIMEOUT_S=600 "$BENCH" "redis://127.0.0.1:$PORT" \
    >"$d/bench.json" 2>"$d/bench.err" || echo "emq-bench failed: see $d/bench.err" >&2
  kill -TERM "$pid"
  wait "$pid" || true
  grep -E '^(summary|totals):' "$d/cg.out" | head -1 | awk '{print $2}'
}

calls() {
  python3 - "$1" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    cs = d.get("commandstats_per_job", {})
    print("  commands per job:", " ".join(
        f"{k} {v['calls_per_job']:.3f}" for k, v in
        sorted(cs.items(), key=lambda kv: -kv[1]["calls_per_job"]) if v["calls_per_job"] >= 0.005))
EOF
}

b1=$(run bulk_1 add_bulk_1000 "$N")
b2=$(run bulk_2 add_bulk_1000 $((2 * N)))
echo "bulk add (the preload): $(((b2 - b1) / N)) instructions per job"
for s in "${SCENARIOS[@]}"; do
  p1=$(run "${s}_1" "$s" "$N")
  p2=$(run "${s}_2" "$s" $((2 * N)))
  echo "$s: $((((p2 - p1) - (b2 - b1)) / N)) instructions per processed job" \
    "(single runs: $(((p1 - b1) / N)) at N, $(((p2 - b2) / (2 * N))) at 2N)"
  calls "$OUT/${s}_2/bench.json"
done
echo "callgrind files in $OUT (callgrind_annotate --inclusive=yes FILE)"
