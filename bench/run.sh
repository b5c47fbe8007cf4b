#!/usr/bin/env bash
# Side-by-side benchmark: emq (bench/, binary emq-bench) against the BullMQ anchors
# (shared/bench/anchors: BullMQ Node and BullMQ Python) on one private Redis, in one run.
# Run by hand, never in CI. Writes bench/RESULTS.md; raw samples go to bench/out/ (git-ignored).
#
# Knobs (like the anchors'): REPS (default 5; the targets want at least 5), N_JOBS (20000), N_LATENCY (1000),
# SCENARIO_TIMEOUT_S (120). Also: ANCHORS_SRC (where the read-only anchors live),
# EMQ_BENCH_BIN (use this emq-bench binary instead of building one with cargo),
# EMQ_PY_VENV (venv for emq's Python package; default /tmp/emq-bench-venv),
# BENCH_KOTLIN=1 (also run bindings/uniffi's Kotlin BenchTest each repetition; off by default),
# WEB=1 (after everything else, the open-loop web benchmark bench/web.sh; off by default),
# BENCH_PIN=1 (redis-server on core 0 and every benchmark client on the other cores, `taskset`;
# default 0: unpinned, as the anchors' run.sh runs them). On this kind of virtual machine a request
# and its reply between processes on two cores cost each side ~25-30 us more CPU than on one core
# (redis-benchmark PING one at a time: RTT 12.5 us on one core, 80-128 us across cores), and
# unpinned, the scheduler puts Redis and a client on one core in some runs and on two in others, so
# figures jump between two modes. Pinned, every request crosses cores, but on 2 cores all clients
# then share one core, which costs emq's two-thread bindings (language thread + tokio) more than
# BullMQ's one thread; bench/RESULTS.md's hand-written section compares the modes.
#
# Builds: emq-bench (cargo, release), emq's Python package (`pip install ./python`, maturin's
# default release profile) into EMQ_PY_VENV, and the Node addon (`bash node/build.sh`, release).
#
# Each repetition runs both sides, BullMQ first in odd repetitions and emq first in even ones:
# the anchors' bench_node.js, the anchors' bench_python.py, bench/bullmq_mem.js (BullMQ memory per
# waiting job); emq-bench (Rust), bench/bench_emq_python.py, bench/bench_emq_node.js
# and, with BENCH_KOTLIN=1, the Kotlin BenchTest (which runs on
# its own emq-harness Redis, not this one), each with REPS=1, all against 127.0.0.1:6390. The Redis is started like the anchors' run.sh starts it and stopped by
# the pid this script started, never by name.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(dirname "$HERE")"
ANCHORS_SRC="${ANCHORS_SRC:-$ROOT/../shared/bench/anchors}"
ANCHORS=/tmp/anchors
PORT=6390
PIDFILE=/tmp/bench-redis.pid
OUT="$HERE/out"
RESULTS="$HERE/RESULTS.md"
NCPU="$(nproc)"
BENCH_PIN="${BENCH_PIN:-0}"
PIN_REDIS=()
PIN_CLIENT=()
if [ "$BENCH_PIN" = 1 ]; then
  PIN_REDIS=(taskset -c 0)
  PIN_CLIENT=(taskset -c "1-$((NCPU - 1))")
fi
export REDIS_PORT=$PORT
REPS="${REPS:-5}"
export N_JOBS="${N_JOBS:-20000}"
export N_LATENCY="${N_LATENCY:-1000}"
export SCENARIO_TIMEOUT_S="${SCENARIO_TIMEOUT_S:-120}"
EMQ_PY_VENV_SET="${EMQ_PY_VENV:-}"
EMQ_PY_VENV="${EMQ_PY_VENV:-/tmp/emq-bench-venv}"
BENCH_KOTLIN="${BENCH_KOTLIN:-0}"
COMMAND="REPS=$REPS N_JOBS=$N_JOBS N_LATENCY=$N_LATENCY${EMQ_BENCH_BIN:+ EMQ_BENCH_BIN=$EMQ_BENCH_BIN}${EMQ_PY_VENV_SET:+ EMQ_PY_VENV=$EMQ_PY_VENV} bash bench/run.sh"
[ "$BENCH_KOTLIN" = 1 ] && COMMAND="BENCH_KOTLIN=1 $COMMAND"
[ "$BENCH_PIN" = 1 ] && COMMAND="BENCH_PIN=1 $COMMAND"
T0="$(date +%s)"

die() { echo "bench/run.sh: $*" >&2; exit 1; }
[ "$BENCH_PIN" = 1 ] && [ "$NCPU" -lt 2 ] && die "BENCH_PIN=1 needs at least 2 cores"

tools="redis-server redis-cli node npm python3 timeout"
[ "$BENCH_PIN" = 1 ] && tools="$tools taskset"
for tool in $tools; do
  command -v "$tool" >/dev/null 2>&1 || die "missing '$tool' (see shared/bench/anchors/README.md, Setup)"
done

# The anchors are read-only where they live, and write beside themselves: run a copy.
if [ ! -f "$ANCHORS/bench_node.js" ]; then
  [ -f "$ANCHORS_SRC/bench_node.js" ] || die "no anchors at $ANCHORS_SRC (set ANCHORS_SRC)"
  cp -r "$ANCHORS_SRC" "$ANCHORS" || die "cannot copy the anchors to $ANCHORS"
  chmod -R u+w "$ANCHORS"
fi
# Their pinned dependencies, installed the way their run.sh does.
if [ ! -f "$ANCHORS/node_modules/bullmq/package.json" ] || [ ! -f "$ANCHORS/node_modules/ioredis/package.json" ]; then
  echo "bench/run.sh: installing the anchors' Node dependencies" >&2
  (cd "$ANCHORS" && timeout 300 npm ci --no-audit --no-fund >&2) || die "npm ci failed"
fi
if ! "$ANCHORS/.venv/bin/python" -c 'import bullmq' >/dev/null 2>&1; then
  echo "bench/run.sh: creating $ANCHORS/.venv" >&2
  python3 -m venv "$ANCHORS/.venv" || die "python3 -m venv failed"
  timeout 300 "$ANCHORS/.venv/bin/pip" install -q -r "$ANCHORS/requirements.txt" >&2 || die "pip install failed"
fi

# emq-bench, release build.
if [ -n "${EMQ_BENCH_BIN:-}" ]; then
  BIN="$EMQ_BENCH_BIN"
else
  echo "bench/run.sh: cargo build --release -p emq-bench" >&2
  (cd "$ROOT" && cargo build --release -p emq-bench >&2) || die "cargo build failed"
  BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/emq-bench"
fi
[ -x "$BIN" ] || die "no emq-bench binary at $BIN"

# emq's Python package, release (maturin's default profile), into its own venv.
if [ ! -x "$EMQ_PY_VENV/bin/python" ]; then
  python3 -m venv "$EMQ_PY_VENV" || die "python3 -m venv $EMQ_PY_VENV failed"
fi
echo "bench/run.sh: pip install ./python into $EMQ_PY_VENV (release)" >&2
(cd "$ROOT" && unset MATURIN_PEP517_ARGS && timeout 1200 "$EMQ_PY_VENV/bin/pip" install -q ./python >&2) \
  || die "pip install ./python failed"
"$EMQ_PY_VENV/bin/python" -c 'import emq' || die "emq does not import in $EMQ_PY_VENV"

# emq's Node addon, release.
echo "bench/run.sh: bash node/build.sh (release)" >&2
(cd "$ROOT" && EMQ_NODE_PROFILE=release timeout 1200 bash node/build.sh >&2) || die "node/build.sh failed"

# Kotlin (BENCH_KOTLIN=1): the release library, harness and CLI, and Kotlin sources generated from
# that very library (sources generated from another build fail to compile or to load).
if [ "$BENCH_KOTLIN" = 1 ]; then
  echo "bench/run.sh: cargo build --release -p emq-uniffi -p emq-harness -p emq-cli (Kotlin)" >&2
  (cd "$ROOT" && cargo build --release -p emq-uniffi -p emq-harness -p emq-cli >&2) || die "cargo build (Kotlin) failed"
  (cd "$ROOT" && bash bindings/uniffi/generate.sh "${CARGO_TARGET_DIR:-$ROOT/target}/release/libemq_uniffi.so" >&2) \
    || die "bindings/uniffi/generate.sh failed"
  # Classes compiled from sources that are gone (a type that moved to dev.emq.core) would stay on
  # the test class path and break the compile: start from no compiled classes.
  rm -rf "$ROOT/bindings/uniffi/kotlin/target/classes" "$ROOT/bindings/uniffi/kotlin/target/test-classes"
fi

if redis-cli -h 127.0.0.1 -p "$PORT" ping >/dev/null 2>&1; then
  die "something already answers on 127.0.0.1:$PORT; stop it first"
fi

rm -rf "$OUT"
mkdir -p "$OUT"

REDIS_PID=""
stop_redis() {
  # Only the instance this script started, by its pid, and only if it still is redis-server.
  if [ -n "$REDIS_PID" ] && [ "$(cat "/proc/$REDIS_PID/comm" 2>/dev/null)" = "redis-server" ]; then
    kill "$REDIS_PID"
    for _ in $(seq 1 50); do
      kill -0 "$REDIS_PID" 2>/dev/null || break
      sleep 0.1
    done
    echo "bench/run.sh: stopped redis-server (pid $REDIS_PID)" >&2
  fi
}
trap stop_redis EXIT
trap 'exit 130' INT TERM

# Exactly as shared/bench/anchors/run.sh starts it.
"${PIN_REDIS[@]}" redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no \
  --daemonize yes --pidfile "$PIDFILE" >/dev/null || die "redis-server did not start"
for _ in $(seq 1 50); do
  if [ -s "$PIDFILE" ] && redis-cli -h 127.0.0.1 -p "$PORT" ping >/dev/null 2>&1; then break; fi
  sleep 0.1
done
REDIS_PID="$(cat "$PIDFILE" 2>/dev/null || true)"
[ -n "$REDIS_PID" ] || die "no pid in $PIDFILE"
redis-cli -h 127.0.0.1 -p "$PORT" ping >/dev/null 2>&1 || die "redis-server is not answering on 127.0.0.1:$PORT"
echo "bench/run.sh: redis-server pid $REDIS_PID on 127.0.0.1:$PORT, REPS=$REPS N_JOBS=$N_JOBS N_LATENCY=$N_LATENCY, BENCH_PIN=$BENCH_PIN${PIN_REDIS[*]:+ (redis: ${PIN_REDIS[*]}; clients: ${PIN_CLIENT[*]})}" >&2

# step NAME TIME_LIMIT_S COMMAND...: log to out/NAME.log, note a failure and go on.
step() {
  local name=$1 limit=$2
  shift 2
  echo "bench/run.sh: step '$name' (limit ${limit}s)" >&2
  "${PIN_CLIENT[@]}" timeout "$limit" "$@" 2>"$OUT/$name.log"
  local rc=$?
  tail -n 3 "$OUT/$name.log" >&2
  if [ "$rc" -ne 0 ]; then
    echo "step '$name' exited with status $rc (124 = hit its ${limit}s limit); see out/$name.log" >>"$OUT/step_errors.txt"
  fi
}

cat /proc/loadavg >"$OUT/loadavg_start.txt" 2>/dev/null || true
uptime >"$OUT/uptime_start.txt" 2>/dev/null || true
run_bullmq() {
  step "node_rep$rep" 300 env REPS=1 node "$ANCHORS/bench_node.js" "$OUT/node_rep$rep.json"
  step "python_rep$rep" 400 env REPS=1 "$ANCHORS/.venv/bin/python" "$ANCHORS/bench_python.py" "$OUT/python_rep$rep.json"
  step "bullmq_mem_rep$rep" 120 env REPS=1 ANCHORS_DIR="$ANCHORS" node "$HERE/bullmq_mem.js" "$OUT/bullmq_mem_rep$rep.json"
}
run_emq() {
  step "emq_rep$rep" 400 sh -c 'REPS=1 "$0" "$1" > "$2"' "$BIN" "redis://127.0.0.1:$PORT" "$OUT/emq_rep$rep.jsonl"
  step "emqpy_rep$rep" 400 env REPS=1 "$EMQ_PY_VENV/bin/python" "$HERE/bench_emq_python.py" "$OUT/emqpy_rep$rep.jsonl"
  step "emqnode_rep$rep" 400 env REPS=1 node "$HERE/bench_emq_node.js" "$OUT/emqnode_rep$rep.jsonl"
  if [ "$BENCH_KOTLIN" = 1 ]; then
    # Its own harness Redis and the debug library (target/debug), as bindings/uniffi/ci.sh builds it.
    step "kotlin_rep$rep" 300 sh -c 'cd "$0/bindings/uniffi/kotlin" && mvn -q -B test -Dtest=BenchTest -Demq.repo="$0" -Demq.profile=release > "$1" 2>&1; rc=$?; grep "emq-uniffi bench:" "$1" >&2; exit $rc' "$ROOT" "$OUT/kotlin_rep$rep.txt"
  fi
}
for rep in $(seq 1 "$REPS"); do
  # The sides alternate which goes first (odd repetitions BullMQ, even ones emq), so a slow or
  # fast phase of the shared machine does not always fall on the same side.
  if [ $((rep % 2)) -eq 1 ]; then
    run_bullmq
    run_emq
  else
    run_emq
    run_bullmq
  fi
  echo "bench/run.sh: rep $rep/$REPS done ($(( $(date +%s) - T0 ))s)" >&2
done

cat /proc/loadavg >"$OUT/loadavg_end.txt" 2>/dev/null || true
uptime >"$OUT/uptime_end.txt" 2>/dev/null || true
BENCH_COMMAND="$COMMAND" BENCH_T0="$T0" BENCH_REPS="$REPS" BENCH_KOTLIN="$BENCH_KOTLIN" \
  BENCH_PIN="$BENCH_PIN" python3 "$HERE/report.py" "$OUT" "$RESULTS"
rc=$?
echo "bench/run.sh: wrote ${RESULTS#"$ROOT"/} ($(( $(date +%s) - T0 ))s)" >&2

# WEB=1 (opt-in; off by default): then the open-loop web benchmark, bench/web.sh, on its own Redis
# (this one stopped first), with the Node addon and the Python package built above; it needs
# aiohttp and the anchors' bullmq in EMQ_PY_VENV (installed here if missing) and writes its own
# section of RESULTS.md. Its WEB_* knobs pass through.
if [ "${WEB:-0}" = 1 ]; then
  stop_redis
  REDIS_PID=""
  if ! "$EMQ_PY_VENV/bin/python" -c 'import aiohttp, bullmq' >/dev/null 2>&1; then
    echo "bench/run.sh: pip install aiohttp and the anchors' requirements into $EMQ_PY_VENV (WEB=1)" >&2
    timeout 300 "$EMQ_PY_VENV/bin/pip" install -q aiohttp -r "$ANCHORS/requirements.txt" >&2 || die "pip install for WEB=1 failed"
  fi
  echo "bench/run.sh: WEB=1: bash bench/web.sh" >&2
  WEB_PY="${WEB_PY:-$EMQ_PY_VENV/bin/python}" EMQ_NODE_PKG="${EMQ_NODE_PKG:-$ROOT/node}" ANCHORS_DIR="$ANCHORS" \
    bash "$HERE/web.sh" >&2 || { echo "bench/run.sh: bench/web.sh failed" >&2; rc=1; }
fi
exit $rc
