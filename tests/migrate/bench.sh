#!/usr/bin/env bash
# Times `emq migrate` of N waiting BullMQ jobs (default 100,000) on a private redis-server and
# prints a line for bench/RESULTS.md. Needs node, BullMQ in $EMQ_BULLMQ_DIR (default
# /tmp/emq-bullmq, see cli/tests/migrate.rs) and a built emq ($EMQ_BIN, default target/release/emq).
set -euo pipefail
cd "$(dirname "$0")/../.."
N="${1:-100000}"
EMQ_BIN="${EMQ_BIN:-target/release/emq}"
PORT="${PORT:-6419}"
dir=$(mktemp -d)
redis-server --port "$PORT" --save '' --appendonly no --dir "$dir" --daemonize yes --pidfile "$dir/pid" >/dev/null
trap 'kill "$(cat "$dir/pid")"; rm -rf "$dir"' EXIT
for _ in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
url="redis://127.0.0.1:$PORT"
node tests/migrate/fixtures.js "$url" bull bench many "$N" >/dev/null
report=$("$EMQ_BIN" --url "$url" migrate --queue bench --json)
python3 - "$N" "$report" <<'PY'
import json, sys
n, r = int(sys.argv[1]), json.loads(sys.argv[2])
w = sum(s["written"] for s in r["states"])
assert w == n, f"copied {w} of {n}"
ms = r["elapsed_ms"]
print(f"emq migrate: {n:,} waiting BullMQ jobs copied in {ms/1000:.2f} s = {n/(ms/1000):,.0f} jobs/s")
PY
