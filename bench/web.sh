#!/usr/bin/env bash
# Open-loop web benchmark (issue 30 item 1): a small HTTP service per language whose request
# handler enqueues one job and answers (bench/web/service.js: `node:http`; bench/web/service.py:
# aiohttp, one process), with emq or BullMQ behind the same service code, driven by a fixed-rate
# load generator that corrects for coordinated omission (bench/web/loadgen: latency from each
# request's scheduled send time; keep-alive connections opened up front, one request in flight per
# connection). Run by hand, never in CI (bench/run.sh runs it after its own work with WEB=1). Raw
# lines go to bench/out-web/ (git-ignored); bench/web/report.py writes the summary, the section
# "Web service, open loop" of bench/RESULTS.md (between its web: begin/end markers; WEB_WRITE_RESULTS=0
# leaves RESULTS.md alone), to bench/out-web/report.md, and prints it.
#
# Phases, all against one private redis-server (127.0.0.1:$WEB_REDIS_PORT, started and stopped by
# its pid here; FLUSHALL before every service start):
#  1. Saturation, per pinning mode, language and library, WEB_SAT_REPS times (the libraries
#     alternating which goes first): the service's closed-loop maximum C (WEB_SAT_CONNS
#     connections, each sending its next request as soon as its answer arrives; WEB_SAT_DURATION s
#     measured after 1 s), then open-loop probes at 100 %, 90 %, 80 %, ... of C (WEB_SAT_PROBE s
#     measured after 1 s); the first whose p99 is under WEB_SAT_P99_MS with no error is the side's
#     saturation rate: the highest rate it sustains, to 10 % of C. The BullMQ side's median over
#     the repetitions is the rate the loads are percentages of (per language and mode).
#  2. WEB_REPS repetitions; each runs, per pinning mode and language, both libraries (BullMQ first
#     in odd repetitions, emq first in even ones): FLUSHALL, start the service, warm it (closed
#     loop, 8 connections, WEB_WARMUP s), then one open-loop run per load in WEB_LOADS (percent of
#     that language's and mode's BullMQ saturation rate): WEB_WARMUP s not measured, then
#     WEB_DURATION s measured. Per run: service and redis-server CPU per request (the sum of
#     /proc/PID/task/*/schedstat run times, all threads, from the window's first scheduled send to
#     its last answer; /proc/PID/stat utime+stime is recorded beside), p50 / p99 / p99.9 latency,
#     the generator's own CPU and lateness.
# No worker runs: only the producer side (the web process and Redis) is measured. Jobs are
# {"i": n} with removeOnComplete: true / remove_on_complete=True.
#
# Pinning (WEB_PIN, a list of modes; default "1 0", both): 1 = redis-server (all its threads) and
# the service on core 0 (`taskset`), the generator on core 1; 0 = no pinning at all. The generator
# runs SCHED_FIFO (`chrt -f 10`; WEB_GEN_RT=0 turns it off) so that other processes on the shared
# machine delay its sends less; it sleeps in epoll between sends, so it takes no more CPU for it.
#
# Knobs: WEB_REPS (5), WEB_DURATION (10), WEB_WARMUP (2), WEB_LOADS ("30 60 90"), WEB_PIN ("1 0"),
# WEB_LANGS ("node python"), WEB_CONNS (128, open loop), WEB_SAT_CONNS (32), WEB_SAT_DURATION (3),
# WEB_SAT_PROBE (4), WEB_SAT_P99_MS (50), WEB_SAT_REPS (2), WEB_GEN_RT (1), WEB_REDIS_PORT (6401),
# WEB_HTTP_PORT (18431), WEB_PY (a python with aiohttp, emq and bullmq 3.4.4; default
# /tmp/web-venv/bin/python), EMQ_NODE_PKG (emq's built Node package; default ./node), ANCHORS_DIR
# (bullmq 6.7.0 + ioredis in node_modules; default /tmp/anchors), WEB_LOADGEN (a built
# emq-webload; default: build bench/web/loadgen with cargo into WEB_LOADGEN_TARGET, default
# /tmp/web-loadgen-target; it depends on libc only), WEB_OUT (bench/out-web), WEB_WRITE_RESULTS (1),
# WEB_LIBS (the libraries of phase 2, "bullmq emq"; "none" is the services' handler answering without
# enqueuing, the HTTP part's own cost), WEB_SAT_FROM (a directory with an earlier run's
# sat_LANG_PIN.txt: phase 1 is skipped and its rates are used).
# Smoke (~4 min): WEB_WRITE_RESULTS=0 WEB_REPS=1 WEB_DURATION=3 WEB_WARMUP=1 WEB_SAT_REPS=1 WEB_SAT_DURATION=2 WEB_SAT_PROBE=2 bash bench/web.sh
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(dirname "$HERE")"
WEB="$HERE/web"
OUT="${WEB_OUT:-$HERE/out-web}"
REPS="${WEB_REPS:-5}"
DURATION="${WEB_DURATION:-10}"
WARMUP="${WEB_WARMUP:-2}"
LOADS="${WEB_LOADS:-30 60 90}"
PINS="${WEB_PIN:-1 0}"
LANGS="${WEB_LANGS:-node python}"
CONNS="${WEB_CONNS:-128}"
SAT_CONNS="${WEB_SAT_CONNS:-32}"
SAT_DURATION="${WEB_SAT_DURATION:-3}"
SAT_PROBE="${WEB_SAT_PROBE:-4}"
SAT_P99_MS="${WEB_SAT_P99_MS:-50}"
GEN_RT="${WEB_GEN_RT:-1}"
LIBS="${WEB_LIBS:-bullmq emq}"
SAT_FROM="${WEB_SAT_FROM:-}"
SAT_REPS="${WEB_SAT_REPS:-2}"
RPORT="${WEB_REDIS_PORT:-6401}"
HPORT="${WEB_HTTP_PORT:-18431}"
WEB_PY="${WEB_PY:-/tmp/web-venv/bin/python}"
export EMQ_NODE_PKG="${EMQ_NODE_PKG:-$ROOT/node}"
export ANCHORS_DIR="${ANCHORS_DIR:-/tmp/anchors}"
NCPU="$(nproc)"
T0="$(date +%s)"

die() { echo "bench/web.sh: $*" >&2; exit 1; }
log() { echo "bench/web.sh [$(( $(date +%s) - T0 ))s]: $*" >&2; }
[ "$RPORT" = 6379 ] && die "not on port 6379"
for tool in redis-server redis-cli node taskset chrt timeout python3; do
  command -v "$tool" >/dev/null 2>&1 || die "missing '$tool'"
done
case " $PINS " in *" 1 "*) [ "$NCPU" -ge 2 ] || die "WEB_PIN=1 needs at least 2 cores" ;; esac
[ -f "$ANCHORS_DIR/node_modules/bullmq/package.json" ] || die "no bullmq in $ANCHORS_DIR/node_modules"
node -e "require(process.env.EMQ_NODE_PKG)" || die "emq's Node package does not load from $EMQ_NODE_PKG"
case " $LANGS " in *" python "*)
  "$WEB_PY" -c 'import aiohttp, emq, bullmq' || die "$WEB_PY lacks aiohttp, emq or bullmq" ;;
esac

if [ -n "${WEB_LOADGEN:-}" ]; then
  LOADGEN="$WEB_LOADGEN"
else
  LG_TARGET="${WEB_LOADGEN_TARGET:-/tmp/web-loadgen-target}"
  (cd "$WEB/loadgen" && CARGO_TARGET_DIR="$LG_TARGET" cargo build -q --release --offline 2>/dev/null \
    || CARGO_TARGET_DIR="$LG_TARGET" cargo build -q --release) >&2 || die "cannot build bench/web/loadgen"
  LOADGEN="$LG_TARGET/release/emq-webload"
fi
[ -x "$LOADGEN" ] || die "no load generator at $LOADGEN"

redis-cli -h 127.0.0.1 -p "$RPORT" ping >/dev/null 2>&1 && die "something already answers on 127.0.0.1:$RPORT"
[ -n "$SAT_FROM" ] && [ "$SAT_FROM" -ef "$OUT" ] && die "WEB_SAT_FROM must not be WEB_OUT (it is emptied first)"
rm -rf "$OUT" && mkdir -p "$OUT"
RDIR="$(mktemp -d)"
REDIS_PID=""
SVC_PID=""
stop_service() {
  if [ -n "$SVC_PID" ] && kill -0 "$SVC_PID" 2>/dev/null; then
    kill -TERM "$SVC_PID"
    for _ in $(seq 1 50); do kill -0 "$SVC_PID" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$SVC_PID" 2>/dev/null && kill -KILL "$SVC_PID"
    wait "$SVC_PID" 2>/dev/null
  fi
  SVC_PID=""
}
cleanup() {
  stop_service
  if [ -n "$REDIS_PID" ] && [ "$(cat "/proc/$REDIS_PID/comm" 2>/dev/null)" = redis-server ]; then
    kill "$REDIS_PID"
    log "stopped redis-server (pid $REDIS_PID)"
  fi
  rm -rf "$RDIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

redis-server --port "$RPORT" --bind 127.0.0.1 --save "" --appendonly no --daemonize yes \
  --dir "$RDIR" --pidfile "$RDIR/redis.pid" >/dev/null || die "redis-server did not start"
for _ in $(seq 1 50); do
  [ -s "$RDIR/redis.pid" ] && redis-cli -p "$RPORT" ping >/dev/null 2>&1 && break
  sleep 0.1
done
REDIS_PID="$(cat "$RDIR/redis.pid")"
[ -n "$REDIS_PID" ] || die "no redis pid"

{
  echo "command=${SAT_FROM:+WEB_SAT_FROM=$SAT_FROM }WEB_LIBS=\"$LIBS\" WEB_REPS=$REPS WEB_DURATION=$DURATION WEB_WARMUP=$WARMUP WEB_LOADS=\"$LOADS\" WEB_PIN=\"$PINS\" WEB_LANGS=\"$LANGS\" WEB_CONNS=$CONNS WEB_SAT_CONNS=$SAT_CONNS WEB_SAT_DURATION=$SAT_DURATION WEB_SAT_PROBE=$SAT_PROBE WEB_SAT_P99_MS=$SAT_P99_MS WEB_SAT_REPS=$SAT_REPS WEB_GEN_RT=$GEN_RT bash bench/web.sh"
  echo "date_start=$(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "uptime_start=$(uptime)"
  echo "nproc=$NCPU"
  echo "redis=$(redis-server --version)"
  echo "node=$(node --version)"
  echo "bullmq_node=$(node -p "require('$ANCHORS_DIR/node_modules/bullmq/package.json').version")"
  echo "ioredis=$(node -p "require('$ANCHORS_DIR/node_modules/ioredis/package.json').version")"
  echo "emq_node=$(node -p "require(require('path').join(process.env.EMQ_NODE_PKG, 'package.json')).version") ($EMQ_NODE_PKG)"
  if case " $LANGS " in *" python "*) true ;; *) false ;; esac; then
    echo "python=$("$WEB_PY" -c 'import sys; print(sys.version.split()[0])')"
    echo "python_pkgs=$("$WEB_PY" -c 'import importlib.metadata as m; print(", ".join(f"{p} {m.version(p)}" for p in ("aiohttp", "bullmq", "redis", "emq")))')"
  fi
  echo "git=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo ' (dirty)')"
} >"$OUT/meta.txt"
log "redis-server pid $REDIS_PID on 127.0.0.1:$RPORT; $(uptime)"

GEN_PRIO=()
[ "$GEN_RT" = 1 ] && GEN_PRIO=(chrt -f 10)

# Pinning: redis-server's threads, the service's and the generator's CPU sets for mode $1.
pin_mode() {
  if [ "$1" = 1 ]; then
    taskset -apc 0 "$REDIS_PID" >/dev/null
    PIN_SVC=(taskset -c 0)
    PIN_GEN=(taskset -c 1)
  else
    taskset -apc "0-$((NCPU - 1))" "$REDIS_PID" >/dev/null
    PIN_SVC=()
    PIN_GEN=()
  fi
}

# start_service LANG LIB: FLUSHALL, start it (pinned as the mode says), wait for "ready".
start_service() {
  redis-cli -p "$RPORT" flushall >/dev/null || die "FLUSHALL failed"
  local log="$OUT/service_$1_$2.log"
  if [ "$1" = node ]; then
    "${PIN_SVC[@]}" node "$WEB/service.js" "$2" "$HPORT" "$RPORT" >>"$log" 2>&1 &
  else
    "${PIN_SVC[@]}" "$WEB_PY" "$WEB/service.py" "$2" "$HPORT" "$RPORT" >>"$log" 2>&1 &
  fi
  SVC_PID=$!
  for _ in $(seq 1 200); do
    kill -0 "$SVC_PID" 2>/dev/null || die "the $1 $2 service exited; see $log"
    # curl-free readiness: the service prints "ready <pid>" once it listens.
    [ "$(grep -c "^ready $SVC_PID\$" "$log")" -ge 1 ] && break
    sleep 0.1
  done
  [ "$(grep -c "^ready $SVC_PID\$" "$log")" -ge 1 ] || die "the $1 $2 service did not get ready; see $log"
}

# gen ARGS...: one generator run with the service's and Redis's pids; prints its JSON line.
gen() {
  timeout $((WARMUP + DURATION + SAT_DURATION + 60)) "${PIN_GEN[@]}" "${GEN_PRIO[@]}" "$LOADGEN" --port "$HPORT" \
    --pid "service=$SVC_PID" --pid "redis=$REDIS_PID" "$@"
}

warm() { gen --mode closed --conns 8 --duration "$WARMUP" --warmup 0.5 >>"$OUT/warm.jsonl" || die "warm-up failed"; }

other() { if [ "$1" = bullmq ]; then echo emq; else echo bullmq; fi; }

# Phase 1: saturation. Per side: its closed-loop maximum C, then open-loop probes at 100 %, 90 %,
# 80 %, ... of C (WEB_SAT_PROBE s measured after 1 s); the first with p99 under WEB_SAT_P99_MS and
# no error is the side's saturation rate (the highest rate it sustains, to 10 % of C).
[ -n "$SAT_FROM" ] && SAT_PINS="" || SAT_PINS="$PINS"
if [ -n "$SAT_FROM" ]; then
  for pin in $PINS; do for lang in $LANGS; do
    cp "$SAT_FROM/sat_${lang}_${pin}.txt" "$OUT/" || die "no sat_${lang}_${pin}.txt in $SAT_FROM"
    log "saturation pin=$pin $lang: $(cat "$OUT/sat_${lang}_${pin}.txt") req/s, from $SAT_FROM"
  done; done
fi
for pin in $SAT_PINS; do
  pin_mode "$pin"
  for lang in $LANGS; do
    for r in $(seq 1 "$SAT_REPS"); do
      first=bullmq
      [ $((r % 2)) -eq 0 ] && first=emq
      for lib in "$first" "$(other "$first")"; do
        start_service "$lang" "$lib"
        warm
        line="$(gen --mode closed --conns "$SAT_CONNS" --duration "$SAT_DURATION" --warmup 1)" || die "saturation run failed"
        echo "{\"phase\":\"sat_closed\",\"rep\":$r,\"pin\":$pin,\"lang\":\"$lang\",\"lib\":\"$lib\",\"gen\":$line}" >>"$OUT/runs.jsonl"
        closed="$(echo "$line" | python3 -c 'import json, sys; print(round(json.load(sys.stdin)["throughput"]))')"
        log "saturation pin=$pin $lang $lib rep $r: $(echo "$line" | python3 "$WEB/oneline.py" sat)"
        open=0
        for f in 100 90 80 70 60 50 40 30 20 10; do
          rate=$((closed * f / 100))
          [ "$rate" -ge 1 ] || break
          line="$(gen --mode open --rate "$rate" --conns "$CONNS" --duration "$SAT_PROBE" --warmup 1)" || die "probe failed"
          echo "{\"phase\":\"sat_probe\",\"rep\":$r,\"pin\":$pin,\"lang\":\"$lang\",\"lib\":\"$lib\",\"frac\":$f,\"gen\":$line}" >>"$OUT/runs.jsonl"
          ok="$(echo "$line" | python3 -c 'import json, sys; d = json.load(sys.stdin); print(int(d["errors"] == 0 and d["lat_us"]["p99"] < float(sys.argv[1]) * 1000))' "$SAT_P99_MS")"
          log "  probe $f % of closed ($rate/s): $(echo "$line" | python3 "$WEB/oneline.py" load)"
          if [ "$ok" = 1 ]; then open=$rate; break; fi
        done
        stop_service
        echo "{\"phase\":\"sat\",\"rep\":$r,\"pin\":$pin,\"lang\":\"$lang\",\"lib\":\"$lib\",\"closed\":$closed,\"open\":$open}" >>"$OUT/runs.jsonl"
        log "saturation pin=$pin $lang $lib rep $r: closed loop $closed/s, open loop with p99 < $SAT_P99_MS ms: $open/s"
      done
    done
    sat="$(python3 - "$OUT/runs.jsonl" "$pin" "$lang" <<'EOF2'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
v = [r["open"] for r in rows if r["phase"] == "sat" and r["pin"] == int(sys.argv[2]) and r["lang"] == sys.argv[3] and r["lib"] == "bullmq"]
print(round(statistics.median(v)))
EOF2
)"
    [ "$sat" -ge 1 ] || die "BullMQ's $lang service sustained no probe rate (pin=$pin)"
    echo "$sat" >"$OUT/sat_${lang}_${pin}.txt"
    log "saturation pin=$pin $lang: BullMQ $sat req/s (median open-loop); loads: $(for l in $LOADS; do printf '%s%%=%s/s ' "$l" $((sat * l / 100)); done)"
  done
done

# Phase 2: the open-loop runs.
for rep in $(seq 1 "$REPS"); do
  # The libraries in WEB_LIBS' order in odd repetitions, reversed in even ones.
  order="$LIBS"
  [ $((rep % 2)) -eq 0 ] && order="$(echo "$LIBS" | tr ' ' '\n' | tac | tr '\n' ' ')"
  for pin in $PINS; do
    pin_mode "$pin"
    for lang in $LANGS; do
      sat="$(cat "$OUT/sat_${lang}_${pin}.txt")"
      for lib in $order; do
        start_service "$lang" "$lib"
        warm
        for load in $LOADS; do
          rate=$((sat * load / 100))
          line="$(gen --mode open --rate "$rate" --conns "$CONNS" --duration "$DURATION" --warmup "$WARMUP")" \
            || { echo "rep $rep pin $pin $lang $lib $load%: generator failed" >>"$OUT/errors.txt"; continue; }
          echo "{\"phase\":\"load\",\"rep\":$rep,\"pin\":$pin,\"lang\":\"$lang\",\"lib\":\"$lib\",\"load\":$load,\"sat\":$sat,\"gen\":$line}" >>"$OUT/runs.jsonl"
          log "rep $rep/$REPS pin=$pin $lang $lib $load% ($rate/s): $(echo "$line" | python3 "$WEB/oneline.py" load)"
        done
        stop_service
      done
    done
  done
done

echo "uptime_end=$(uptime)" >>"$OUT/meta.txt"
echo "date_end=$(date -u '+%Y-%m-%d %H:%M UTC')" >>"$OUT/meta.txt"
echo "elapsed_s=$(( $(date +%s) - T0 ))" >>"$OUT/meta.txt"
log "done; $(uptime)"
if [ "${WEB_WRITE_RESULTS:-1}" = 1 ]; then
  python3 "$WEB/report.py" "$OUT" "$HERE/RESULTS.md" >"$OUT/report.md" || die "report failed"
else
  python3 "$WEB/report.py" "$OUT" >"$OUT/report.md" || die "report failed"
fi
cat "$OUT/report.md"
