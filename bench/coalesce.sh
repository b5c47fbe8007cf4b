#!/usr/bin/env bash
# Coalesced adds (issue 30, item 2): Redis CPU per add at 1,000 concurrent one-job adds
# (scenario add_concurrent_1000) against the bulk add (add_bulk_1000), Rust (emq-bench) and Node
# (bench/bench_emq_node.js), for two builds side by side: BEFORE and AFTER, each a directory with
# `emq-bench-bin` (a release emq-bench) and `node/` (the built Node package). Run by hand, never in
# CI; a few minutes. Each repetition runs both builds, BEFORE first in odd repetitions and AFTER
# first in even ones, each build's Rust then Node side, with REPS=1 against one private Redis
# (port 6391, started and stopped by its pid here). Raw lines go to bench/out-coalesce/; the
# summary (median [min–max] over repetitions, and the ratio concurrent ÷ bulk of each repetition)
# is printed by bench/coalesce_report.py.
#
# Usage: BEFORE=/path AFTER=/path [REPS=5] [N_JOBS=20000] bash bench/coalesce.sh
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
: "${BEFORE:?set BEFORE}" "${AFTER:?set AFTER}"
REPEATS="${REPS:-5}"
export N_JOBS="${N_JOBS:-20000}"
PORT=6391
OUT="$HERE/out-coalesce"
rm -rf "$OUT" && mkdir -p "$OUT"
DIR="$(mktemp -d)"
redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no --daemonize yes \
  --dir "$DIR" --pidfile "$DIR/redis.pid" >/dev/null || exit 1
for _ in $(seq 1 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
PID="$(cat "$DIR/redis.pid")"
trap '[ "$(cat /proc/$PID/comm 2>/dev/null)" = redis-server ] && kill "$PID"' EXIT
export SCENARIOS=add_concurrent_1000,add_bulk_1000 REDIS_PORT=$PORT REPS=1
side() { # side NAME DIR REP
  "$2/emq-bench-bin" "redis://127.0.0.1:$PORT" >"$OUT/$1_rust_rep$3.jsonl" 2>>"$OUT/log.txt"
  EMQ_NODE_PKG="$2/node" node "$HERE/bench_emq_node.js" "$OUT/$1_node_rep$3.jsonl" 2>>"$OUT/log.txt"
}
for rep in $(seq 1 "$REPEATS"); do
  if [ $((rep % 2)) -eq 1 ]; then side before "$BEFORE" "$rep"; side after "$AFTER" "$rep"
  else side after "$AFTER" "$rep"; side before "$BEFORE" "$rep"; fi
  echo "coalesce.sh: rep $rep/$REPEATS done" >&2
done
python3 "$HERE/coalesce_report.py" "$OUT"
