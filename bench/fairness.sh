#!/usr/bin/env bash
# Fair-groups benchmark (core/src/groups.rs): `emq-bench fairness` (bench/src/fairness.rs) and, for
# the starvation case, BullMQ OSS FIFO (bench/bullmq_fairness.js, the anchors' BullMQ install), on
# one private redis-server, in one run. Run by hand, never in CI. Raw lines go to bench/out/fairness/
# (git-ignored); bench/fairness_report.py writes the section "Fair groups" of bench/RESULTS.md
# (between its markers, below the hand-measured line that bench/report.py keeps).
#
# Knobs: REPS (default 5), FAIR_STARVE_JOBS (100000), FAIR_LIVE_AFTER (1000), FAIR_WEIGHT_JOBS
# (10000), FAIR_JOBS (50000), FAIR_GROUPS (10000), SCENARIO_TIMEOUT_S (120), FAIR_PORT (6395; not
# bench/run.sh's 6390, so both can run on one machine), ANCHORS_SRC / ANCHORS (the anchors and the
# copy with node_modules; default /tmp/anchors, as bench/run.sh), EMQ_BENCH_BIN (skip the cargo
# build), FAIR_NO_BULLMQ=1 (emq only), FAIR_NO_REPORT=1 (leave RESULTS.md alone).
#
# Each repetition runs both implementations, BullMQ first in odd repetitions and emq first in even
# ones; inside emq's run the grouped and ungrouped sides of each pair alternate too (FAIR_REP).
# The Redis is started like the anchors' run.sh starts it and stopped by the pid this script
# started, never by name.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(dirname "$HERE")"
ANCHORS_SRC="${ANCHORS_SRC:-$ROOT/../shared/bench/anchors}"
ANCHORS_SET="${ANCHORS:-}"
ANCHORS="${ANCHORS:-/tmp/anchors}"
PORT="${FAIR_PORT:-6395}"
PIDFILE="/tmp/bench-fair-redis-$PORT.pid"
OUT="$HERE/out/fairness"
RESULTS="$HERE/RESULTS.md"
export REDIS_PORT=$PORT
REPS="${REPS:-5}"
export FAIR_STARVE_JOBS="${FAIR_STARVE_JOBS:-100000}"
export FAIR_LIVE_AFTER="${FAIR_LIVE_AFTER:-1000}"
export FAIR_WEIGHT_JOBS="${FAIR_WEIGHT_JOBS:-10000}"
export FAIR_JOBS="${FAIR_JOBS:-50000}"
export FAIR_GROUPS="${FAIR_GROUPS:-10000}"
export SCENARIO_TIMEOUT_S="${SCENARIO_TIMEOUT_S:-120}"
FAIR_NO_BULLMQ="${FAIR_NO_BULLMQ:-0}"
COMMAND="REPS=$REPS FAIR_STARVE_JOBS=$FAIR_STARVE_JOBS FAIR_WEIGHT_JOBS=$FAIR_WEIGHT_JOBS FAIR_JOBS=$FAIR_JOBS FAIR_GROUPS=$FAIR_GROUPS${ANCHORS_SET:+ ANCHORS=$ANCHORS}${EMQ_BENCH_BIN:+ EMQ_BENCH_BIN=$EMQ_BENCH_BIN}"
[ "$FAIR_NO_BULLMQ" = 1 ] && COMMAND="FAIR_NO_BULLMQ=1 $COMMAND"
COMMAND="$COMMAND bash bench/fairness.sh"
T0="$(date +%s)"

die() { echo "bench/fairness.sh: $*" >&2; exit 1; }
for tool in redis-server redis-cli timeout python3; do
  command -v "$tool" >/dev/null 2>&1 || die "missing '$tool'"
done

if [ "$FAIR_NO_BULLMQ" != 1 ]; then
  command -v node >/dev/null 2>&1 || die "missing 'node' (or set FAIR_NO_BULLMQ=1)"
  # The anchors are read-only where they live, and write beside themselves: run a copy.
  if [ ! -f "$ANCHORS/bench_node.js" ]; then
    [ -f "$ANCHORS_SRC/bench_node.js" ] || die "no anchors at $ANCHORS_SRC (set ANCHORS_SRC)"
    cp -r "$ANCHORS_SRC" "$ANCHORS" || die "cannot copy the anchors to $ANCHORS"
    chmod -R u+w "$ANCHORS"
  fi
  if [ ! -f "$ANCHORS/node_modules/bullmq/package.json" ]; then
    echo "bench/fairness.sh: installing the anchors' Node dependencies (npm ci)" >&2
    (cd "$ANCHORS" && timeout 300 npm ci --no-audit --no-fund >&2) \
      || die "npm ci failed in $ANCHORS (BullMQ needs the npm registry or a warm npm cache once; FAIR_NO_BULLMQ=1 runs emq only)"
  fi
fi

if [ -n "${EMQ_BENCH_BIN:-}" ]; then
  BIN="$EMQ_BENCH_BIN"
else
  echo "bench/fairness.sh: cargo build --release -p emq-bench" >&2
  (cd "$ROOT" && cargo build --release -p emq-bench >&2) || die "cargo build failed"
  BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/emq-bench"
fi
[ -x "$BIN" ] || die "no emq-bench binary at $BIN"

if redis-cli -h 127.0.0.1 -p "$PORT" ping >/dev/null 2>&1; then
  die "something already answers on 127.0.0.1:$PORT; stop it first (or set FAIR_PORT)"
fi
rm -rf "$OUT"
mkdir -p "$OUT"

REDIS_PID=""
stop_redis() {
  if [ -n "$REDIS_PID" ] && [ "$(cat "/proc/$REDIS_PID/comm" 2>/dev/null)" = "redis-server" ]; then
    kill "$REDIS_PID"
    for _ in $(seq 1 50); do
      kill -0 "$REDIS_PID" 2>/dev/null || break
      sleep 0.1
    done
    echo "bench/fairness.sh: stopped redis-server (pid $REDIS_PID)" >&2
  fi
}
trap stop_redis EXIT
trap 'exit 130' INT TERM

redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no \
  --daemonize yes --pidfile "$PIDFILE" >/dev/null || die "redis-server did not start"
for _ in $(seq 1 50); do
  if [ -s "$PIDFILE" ] && redis-cli -h 127.0.0.1 -p "$PORT" ping >/dev/null 2>&1; then break; fi
  sleep 0.1
done
REDIS_PID="$(cat "$PIDFILE" 2>/dev/null || true)"
[ -n "$REDIS_PID" ] || die "no pid in $PIDFILE"
redis-cli -h 127.0.0.1 -p "$PORT" ping >/dev/null 2>&1 || die "redis-server is not answering on 127.0.0.1:$PORT"
redis-cli -h 127.0.0.1 -p "$PORT" info server | grep -E '^redis_version' | tr -d '\r' >"$OUT/redis_version.txt"
echo "bench/fairness.sh: redis-server pid $REDIS_PID on 127.0.0.1:$PORT, REPS=$REPS" >&2

step() {
  local name=$1 limit=$2
  shift 2
  echo "bench/fairness.sh: step '$name' (limit ${limit}s)" >&2
  timeout "$limit" "$@" 2>"$OUT/$name.log"
  local rc=$?
  tail -n 2 "$OUT/$name.log" >&2
  if [ "$rc" -ne 0 ]; then
    echo "step '$name' exited with status $rc (124 = hit its ${limit}s limit); see out/fairness/$name.log" >>"$OUT/step_errors.txt"
  fi
}
run_emq() {
  step "emq_rep$rep" 900 sh -c 'REPS=1 FAIR_REP="$3" "$0" fairness "$1" > "$2"' \
    "$BIN" "redis://127.0.0.1:$PORT" "$OUT/emq_rep$rep.jsonl" "$((rep - 1))"
}
run_bullmq() {
  [ "$FAIR_NO_BULLMQ" = 1 ] && return 0
  step "bullmq_rep$rep" 600 env REPS=1 FAIR_REP="$((rep - 1))" ANCHORS_DIR="$ANCHORS" \
    node "$HERE/bullmq_fairness.js" "$OUT/bullmq_rep$rep.jsonl"
}

cat /proc/loadavg >"$OUT/loadavg_start.txt" 2>/dev/null || true
for rep in $(seq 1 "$REPS"); do
  if [ $((rep % 2)) -eq 1 ]; then
    run_bullmq
    run_emq
  else
    run_emq
    run_bullmq
  fi
  echo "bench/fairness.sh: rep $rep/$REPS done ($(( $(date +%s) - T0 ))s)" >&2
done
cat /proc/loadavg >"$OUT/loadavg_end.txt" 2>/dev/null || true
if [ "$FAIR_NO_BULLMQ" != 1 ]; then
  node -e "console.log('node ' + process.version + ', bullmq ' + require(require.resolve('bullmq/package.json', {paths: [process.argv[1]]})).version)" "$ANCHORS" >"$OUT/versions.txt" 2>/dev/null || true
fi

COMMAND="$COMMAND" T0="$T0" python3 -c 'import json, os, time; json.dump({"command": os.environ["COMMAND"], "t0": int(os.environ["T0"]), "t1": int(time.time())}, open(os.path.join("'"$OUT"'", "run_info.json"), "w"))'
[ "${FAIR_NO_REPORT:-0}" = 1 ] && exit 0
python3 "$HERE/fairness_report.py" "$OUT" "$RESULTS"
rc=$?
[ -s "$OUT/step_errors.txt" ] && rc=1
echo "bench/fairness.sh: wrote ${RESULTS#"$ROOT"/} ($(( $(date +%s) - T0 ))s)" >&2
exit $rc
