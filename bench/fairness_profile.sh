#!/usr/bin/env bash
# Why grouped processing costs what it costs (the analysis behind bench/RESULTS.md's "Fair groups:
# where the time goes"). Run by hand, never in CI; prints Markdown tables on stdout, raw lines go to
# bench/out/fairness_profile/ (git-ignored).
#
# 1. Group-count sweep: `emq-bench fairness` groups_c10 and groups_c100, FAIR_JOBS (50000) jobs over
#    1, 10, 100, 1,000 and 10,000 groups (grouped side) and no group (ungrouped), PROFILE_REPS (3)
#    repetitions each: Redis CPU per processed job and jobs/s.
# 2. Per script: the same runs at 10,000 groups, once each, with slowlog-log-slower-than 0, the
#    EVALSHA entries on the run's queue summed by script (bench/slowlog_scripts.py). The slowlog
#    itself costs CPU, so part 2 gives shares, part 1 the figures.
# 3. The server's hash-max-listpack-entries (Redis 7.0's default 512, against 16): the groups'
#    running counts live in the group-state hash, which stays a listpack (linear scans) up to that
#    many fields. Both sides of groups_c10 and groups_c100 at 10,000 groups, PROFILE_REPS times,
#    the two settings alternating which goes first. A server setting, not a code change.
# PROFILE_PARTS (default "1 2 3") picks the parts.
# Private redis-server on 127.0.0.1:PROFILE_PORT (6396), started here and stopped by its pid.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(dirname "$HERE")"
PORT="${PROFILE_PORT:-6396}"
PIDFILE="/tmp/bench-fair-profile-redis-$PORT.pid"
OUT="$HERE/out/fairness_profile"
REPS="${PROFILE_REPS:-3}"
PARTS="${PROFILE_PARTS:-1 2 3}"
export FAIR_JOBS="${FAIR_JOBS:-50000}"
export SCENARIO_TIMEOUT_S="${SCENARIO_TIMEOUT_S:-120}"
BIN="${EMQ_BENCH_BIN:-}"
if [ -z "$BIN" ]; then
  (cd "$ROOT" && cargo build --release -p emq-bench >&2) || { echo "cargo build failed" >&2; exit 1; }
  BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/emq-bench"
fi
if redis-cli -h 127.0.0.1 -p "$PORT" ping >/dev/null 2>&1; then
  echo "something already answers on 127.0.0.1:$PORT" >&2
  exit 1
fi
rm -rf "$OUT"
mkdir -p "$OUT"
REDIS_PID=""
stop_redis() {
  if [ -n "$REDIS_PID" ] && [ "$(cat "/proc/$REDIS_PID/comm" 2>/dev/null)" = "redis-server" ]; then
    kill "$REDIS_PID"
    for _ in $(seq 1 50); do kill -0 "$REDIS_PID" 2>/dev/null || break; sleep 0.1; done
  fi
}
trap stop_redis EXIT
trap 'exit 130' INT TERM
redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no \
  --daemonize yes --pidfile "$PIDFILE" >/dev/null || exit 1
for _ in $(seq 1 50); do
  if [ -s "$PIDFILE" ] && redis-cli -h 127.0.0.1 -p "$PORT" ping >/dev/null 2>&1; then break; fi
  sleep 0.1
done
REDIS_PID="$(cat "$PIDFILE")"
URL="redis://127.0.0.1:$PORT"
cli() { redis-cli -h 127.0.0.1 -p "$PORT" "$@" >/dev/null; }

# 1. sweep
for rep in $(seq 1 "$REPS"); do
  case " $PARTS " in *" 1 "*) ;; *) break ;; esac
  for g in 1 10 100 1000 10000; do
    FAIR_GROUPS=$g FAIR_SIDE=grouped FAIR_SCENARIOS=groups REPS=1 BENCH_COMMANDSTATS=0 \
      timeout 300 "$BIN" fairness "$URL" >>"$OUT/sweep_g$g.jsonl" 2>>"$OUT/sweep.log"
  done
  FAIR_SIDE=ungrouped FAIR_SCENARIOS=groups REPS=1 BENCH_COMMANDSTATS=0 \
    timeout 300 "$BIN" fairness "$URL" >>"$OUT/sweep_g0.jsonl" 2>>"$OUT/sweep.log"
  echo "fairness_profile: sweep rep $rep/$REPS done" >&2
done

# 2. per script
for sc in groups_c10 groups_c100; do
  case " $PARTS " in *" 2 "*) ;; *) break ;; esac
  for side in grouped ungrouped; do
    cli CONFIG SET slowlog-max-len 1000000
    cli CONFIG SET slowlog-log-slower-than 0
    cli SLOWLOG RESET
    FAIR_GROUPS=10000 FAIR_SIDE=$side FAIR_SCENARIOS=$sc REPS=1 BENCH_COMMANDSTATS=0 \
      timeout 300 "$BIN" fairness "$URL" >"$OUT/slowlog_${sc}_$side.jsonl" 2>>"$OUT/slowlog.log"
    cli CONFIG SET slowlog-log-slower-than 10000
    python3 "$HERE/slowlog_scripts.py" "$PORT" "fair-$sc" "${sc}_$side" >"$OUT/scripts_${sc}_$side.json"
    cli SLOWLOG RESET
  done
done

# 3. hash-max-listpack-entries
for rep in $(seq 1 "$REPS"); do
  case " $PARTS " in *" 3 "*) ;; *) break ;; esac
  if [ $((rep % 2)) -eq 1 ]; then order="512 16"; else order="16 512"; fi
  for e in $order; do
    cli CONFIG SET hash-max-listpack-entries "$e"
    FAIR_GROUPS=10000 FAIR_SCENARIOS=groups FAIR_REP=$((rep - 1)) REPS=1 \
      timeout 300 "$BIN" fairness "$URL" >>"$OUT/listpack_$e.jsonl" 2>>"$OUT/listpack.log"
  done
  cli CONFIG SET hash-max-listpack-entries 512
  echo "fairness_profile: listpack rep $rep/$REPS done" >&2
done

python3 - "$OUT" "$FAIR_JOBS" <<'EOF'
import glob, json, os, statistics, sys
out, n = sys.argv[1], int(sys.argv[2])
def lines(p):
    return [json.loads(l) for l in open(p) if l.strip()] if os.path.exists(p) else []
print(f"Group-count sweep ({n:,} jobs; median [min–max] of the repetitions):\n")
print("| groups | c10 jobs/s | c10 Redis µs/job | c100 jobs/s | c100 Redis µs/job |")
print("|---:|---:|---:|---:|---:|")
def c(xs):
    return f"{statistics.median(xs):,.1f} [{min(xs):,.1f}–{max(xs):,.1f}]" if xs else "–"
for g in (0, 1, 10, 100, 1000, 10000):
    rs = [r for r in lines(os.path.join(out, f"sweep_g{g}.jsonl")) if "error" not in r]
    row = []
    for sc in ("groups_c10", "groups_c100"):
        row.append(c([r["jobs_per_s"] for r in rs if r["scenario"] == sc]))
        row.append(c([r["redis_cpu_us_per_job"] for r in rs if r["scenario"] == sc]))
    print(f"| {g if g else 'none (ungrouped)'} | " + " | ".join(row) + " |")
print()
for sc in ("groups_c10", "groups_c100"):
    if not os.path.exists(os.path.join(out, f"scripts_{sc}_grouped.json")):
        break
    print(f"Per script, {sc}, 10,000 groups (SLOWLOG, µs per processed job; calls per processed job):\n")
    print("| script (numkeys; last key) | grouped µs/job | grouped calls/job | ungrouped µs/job | ungrouped calls/job |")
    print("|---|---:|---:|---:|---:|")
    g = json.load(open(os.path.join(out, f"scripts_{sc}_grouped.json")))["scripts"]
    u = json.load(open(os.path.join(out, f"scripts_{sc}_ungrouped.json")))["scripts"]
    names = {}
    for d in (g, u):
        for sha, p in d.items():
            names[sha] = f"{sha} ({p['numkeys']}; {p['keys'][-1] if p['keys'] else ''})"
    for sha in sorted(names, key=lambda s: -(g.get(s, {}).get("us", 0) + u.get(s, {}).get("us", 0))):
        f = lambda d, k: f"{d[sha][k] / n:.2f}" if sha in d else "–"
        print(f"| {names[sha]} | {f(g, 'us')} | {f(g, 'calls')} | {f(u, 'us')} | {f(u, 'calls')} |")
    print()
if os.path.exists(os.path.join(out, "listpack_16.jsonl")):
    print("hash-max-listpack-entries, 10,000 groups (median [min–max]; ratio per repetition):\n")
    print("| setting | concurrency | grouped Redis µs/job | ungrouped Redis µs/job | grouped ÷ ungrouped | grouped jobs/s ÷ ungrouped | grouped HMGET µs/job | grouped HSET µs/job |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for e in (512, 16):
        rs = [r for r in lines(os.path.join(out, f"listpack_{e}.jsonl")) if "error" not in r]
        for cc in (10, 100):
            sc = f"groups_c{cc}"
            g = {r["rep"]: r for r in rs if r["scenario"] == sc and r["side"] == "grouped"}
            u = {r["rep"]: r for r in rs if r["scenario"] == sc and r["side"] == "ungrouped"}
            cs = lambda r, k: r.get("commandstats_per_job", {}).get(k, {}).get("usec_per_job", 0.0)
            print(f"| {e} | {cc} | {c([r['redis_cpu_us_per_job'] for r in g.values()])} | {c([r['redis_cpu_us_per_job'] for r in u.values()])} | "
                  f"{c([g[k]['redis_cpu_us_per_job'] / u[k]['redis_cpu_us_per_job'] for k in g if k in u])} | "
                  f"{c([g[k]['jobs_per_s'] / u[k]['jobs_per_s'] for k in g if k in u])} | "
                  f"{c([cs(r, 'hmget') for r in g.values()])} | {c([cs(r, 'hset') for r in g.values()])} |")
    print()
EOF
