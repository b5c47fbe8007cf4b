#!/usr/bin/env bash
# Counts instructions per one-at-a-time add (`emq-bench add_sequential`: `queue.add` awaited one at
# a time, `remove_on_complete`), steady on a noisy machine. Per mode one run with N adds and one with
# 2N; (difference) / N = instructions per add (no preload to subtract).
#
#   server (default): a private redis-server under callgrind, collecting only request parsing,
#     command execution and reply writing (not serverCron), driven by the release emq-bench, and
#     only from the scenario's FLUSHALL on (not emq-bench's warm-ups, see scenario_total).
#     Also prints the run's commandstats per add.
#   client: the whole emq-bench process under callgrind (all threads, user-space instructions,
#     --trace-children=no) against a plain redis-server.
#
# Usage: bench/callgrind_add.sh [N] [server|client|both]   (default 2000 server)
# Env: PORT (6422), OUT (a fresh temporary folder), BENCH (target/release/emq-bench).
# Needs valgrind, redis-server 7 and `cargo build --release -p emq-bench`. Not part of bench/run.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-2000}
MODE=${2:-server}
PORT=${PORT:-6422}
OUT=${OUT:-$(mktemp -d /tmp/emq-callgrind-add.XXXXXX)}
BENCH=${BENCH:-target/release/emq-bench}

wait_up() {
  for _ in $(seq 1 100); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && return 0; sleep 0.2; done
  echo "redis-server on $PORT did not start" >&2
  return 1
}

total() { grep -E '^(summary|totals):' "$1" | head -1 | awk '{print $2}'; }

# The server's count for the scenario alone: callgrind dumps a part before every FLUSHALL, and
# emq-bench sends one before its add warm-up, one before its processing warm-up and one before the
# scenario, so parts 1-3 are connection set-up and the two warm-ups (whose worker timing varies
# from run to run by ~±5,000 instructions per add at N = 2000) and the rest is the scenario.
scenario_total() {
  local d=$1 sum=0 f n
  for f in "$d"/cg.out "$d"/cg.out.*; do
    n=${f##*cg.out}
    n=${n#.}
    if [ -z "$n" ] || [ "$n" -gt 3 ]; then sum=$((sum + $(total "$f"))); fi
  done
  echo "$sum"
}

# server TAG N: prints the server's instruction count for a run of N adds
server() {
  local d="$OUT/server_$1"
  mkdir -p "$d"
  valgrind --tool=callgrind --callgrind-out-file="$d/cg.out" --collect-atstart=no \
    --toggle-collect=readQueryFromClient --toggle-collect=handleClientsWithPendingWritesUsingThreads \
    --dump-before=flushallCommand \
    redis-server --port "$PORT" --save '' --appendonly no --dir "$d" --logfile "$d/redis.log" \
    >"$d/valgrind.log" 2>&1 &
  local pid=$!
  wait_up
  SCENARIOS=add_sequential N_JOBS=$2 REPS=1 SCENARIO_TIMEOUT_S=600 "$BENCH" "redis://127.0.0.1:$PORT" \
    >"$d/bench.json" 2>"$d/bench.err" || echo "emq-bench failed: see $d/bench.err" >&2
  kill -TERM "$pid"
  wait "$pid" || true
  scenario_total "$d"
}

# client TAG N: prints emq-bench's instruction count for a run of N adds
client() {
  local d="$OUT/client_$1"
  mkdir -p "$d"
  redis-server --port "$PORT" --save '' --appendonly no --dir "$d" --logfile "$d/redis.log" &
  local pid=$!
  wait_up
  SCENARIOS=add_sequential N_JOBS=$2 REPS=1 SCENARIO_TIMEOUT_S=600 \
    valgrind --tool=callgrind --trace-children=no --callgrind-out-file="$d/cg.out" \
    --dump-before=getrusage "$BENCH" "redis://127.0.0.1:$PORT" >"$d/bench.json" 2>"$d/bench.err" ||
    echo "emq-bench failed: see $d/bench.err" >&2
  kill -TERM "$pid"
  wait "$pid" || true
  # All threads together (no --separate-threads). emq-bench reads its CPU time (getrusage) before
  # and after each timed loop: the add warm-up's (1, 2), the processing warm-up's (3, 4), the
  # scenario's (5, 6); callgrind dumps a part before each, so part 6 is the scenario's loop alone.
  total "$d/cg.out.6"
}

calls() {
  python3 - "$1" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    cs = d.get("commandstats_per_job", {})
    print("  commands per add:", " ".join(
        f"{k} {v['calls_per_job']:.3f}" for k, v in
        sorted(cs.items(), key=lambda kv: -kv[1]["calls_per_job"]) if v["calls_per_job"] >= 0.005))
EOF
}

if [ "$MODE" = server ] || [ "$MODE" = both ]; then
  s1=$(server 1 "$N")
  s2=$(server 2 $((2 * N)))
  echo "server: $(((s2 - s1) / N)) instructions per add (single runs: $((s1 / N)) at N, $((s2 / (2 * N))) at 2N)"
  calls "$OUT/server_2/bench.json" || true
fi
if [ "$MODE" = client ] || [ "$MODE" = both ]; then
  c1=$(client 1 "$N")
  c2=$(client 2 $((2 * N)))
  echo "client: $(((c2 - c1) / N)) instructions per add (single runs: $((c1 / N)) at N, $((c2 / (2 * N))) at 2N)"
fi
echo "callgrind files in $OUT (callgrind_annotate --inclusive=yes FILE)"
