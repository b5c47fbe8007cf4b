# Sourced by the hand-run benchmarks (batch.sh, multiqueue.sh): the emq-bench binary and one private
# redis-server on loopback, stopped by the pid it was started with when the sourcing script exits.
# bench_bin: sets BIN to EMQ_BENCH_BIN, or builds the release binary and sets BIN to it.
# start_private_redis PORT TAG: starts redis-server (no persistence) on 127.0.0.1:PORT.
bench_bin() {
  BIN="${EMQ_BENCH_BIN:-}"
  if [ -z "$BIN" ]; then
    (cd "$ROOT" && cargo build -q --release -p emq-bench)
    BIN="$ROOT/target/release/emq-bench"
  fi
}
start_private_redis() {
  local pidfile="/tmp/bench-$2-redis-$1.pid"
  redis-server --port "$1" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
    --pidfile "$pidfile" >/dev/null
  # shellcheck disable=SC2064 # the path is fixed now
  trap "kill \"\$(cat '$pidfile')\" 2>/dev/null || true" EXIT
  sleep 0.3
}
