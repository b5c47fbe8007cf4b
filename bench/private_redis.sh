# Sourced by the hand-run benchmarks (batch.sh, multiqueue.sh, add_cpu.sh, tracing_rust.sh,
# partitions.sh, grow.sh): the emq-bench binary and one private redis-server on loopback, stopped
# by the pid it was started with when the sourcing script exits, or a private cluster.
# bench_bin: sets BIN to EMQ_BENCH_BIN, or builds the release binary and sets BIN to it.
# start_private_redis PORT TAG: starts redis-server (no persistence) on 127.0.0.1:PORT.
# start_private_cluster MASTERS DIR: starts a cluster of MASTERS masters with emq-harness
#   (EMQ_HARNESS, else the debug build), its state in DIR; sets `seeds` (comma-separated URLs)
#   and `ports`; the harness stops it (its stdin closed) when the sourcing script exits.
bench_bin() {
  BIN="${EMQ_BENCH_BIN:-}"
  if [ -z "$BIN" ]; then
    (cd "$ROOT" && cargo build -q --release -p emq-bench)
    BIN="$ROOT/target/release/emq-bench"
  fi
}
start_private_redis() {
  local pidfile="/tmp/bench-$2-redis-$1.pid"
  # A server a previous run stopped may still hold the port for a moment: wait for it to go.
  for _ in $(seq 50); do
    redis-cli -p "$1" ping >/dev/null 2>&1 || break
    sleep 0.1
  done
  redis-server --port "$1" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
    --pidfile "$pidfile" >/dev/null
  # Stopped by its pid, and waited for, so that the next run can bind the port.
  # shellcheck disable=SC2064 # the path is fixed now
  trap "p=\$(cat '$pidfile' 2>/dev/null); if [ -n \"\$p\" ]; then kill \"\$p\" 2>/dev/null; for _ in \$(seq 50); do kill -0 \"\$p\" 2>/dev/null || break; sleep 0.1; done; fi" EXIT
  for _ in $(seq 50); do
    redis-cli -p "$1" ping >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "private redis-server on port $1 did not answer" >&2
  return 1
}
start_private_cluster() {
  local harness="${EMQ_HARNESS:-}"
  if [ -z "$harness" ]; then
    (cd "$ROOT" && cargo build -q -p emq-harness)
    harness="$ROOT/target/debug/emq-harness"
  fi
  local fifo="$2/harness.stdin"
  rm -f "$fifo"; mkfifo "$fifo"
  "$harness" up --masters "$1" <"$fifo" >"$2/harness.json" &
  exec 3>"$fifo"
  trap 'exec 3>&-; wait' EXIT
  for _ in $(seq 1 300); do [ -s "$2/harness.json" ] && break; sleep 0.2; done
  # shellcheck disable=SC2034 # read by the sourcing script
  seeds=$(python3 -c 'import json,sys; print(",".join(json.load(open(sys.argv[1]))["cluster"]))' "$2/harness.json")
  # shellcheck disable=SC2034 # read by the sourcing script
  ports=$(python3 -c 'import json,sys; print(" ".join(u.rsplit(":",1)[1] for u in json.load(open(sys.argv[1]))["cluster"]))' "$2/harness.json")
}
