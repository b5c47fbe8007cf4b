#!/usr/bin/env bash
# Runs the chaos suite (core/tests/chaos_*.rs) and renders its figures into RELIABILITY.md.
#   bash tests/chaos/run.sh          the long profile (by hand; a few minutes), table rewritten
#   bash tests/chaos/run.sh short    the short profile (what CI runs inside `cargo test -p emq`)
# The storm with Python and Node workers runs when EMQ_CHAOS_PYTHON names a python that can import
# emq and node/ holds the addon (bash node/build.sh); else it says so and passes without running.
# The figures land in target/chaos-report.jsonl (one JSON object per scenario).
set -euo pipefail
cd "$(dirname "$0")/../.."
profile="${1:-long}"
export EMQ_GUARD=1 EMQ_CHAOS="$profile" CARGO_INCREMENTAL=0 CARGO_PROFILE_DEV_DEBUG=line-tables-only
export EMQ_CHAOS_REPORT="$PWD/target/chaos-report.jsonl"
mkdir -p target && rm -f "$EMQ_CHAOS_REPORT"
# One scenario at a time: the recovery figures are timings.
cargo test -p emq --test chaos_faults --test chaos_failover --test chaos_batch -- --test-threads=1
python3 tests/chaos/render.py "$EMQ_CHAOS_REPORT" --summary
if [ "$profile" = long ]; then
  python3 tests/chaos/render.py "$EMQ_CHAOS_REPORT" --into RELIABILITY.md
  cp "$EMQ_CHAOS_REPORT" tests/chaos/long-report.jsonl
  echo "chaos: RELIABILITY.md table rewritten from $EMQ_CHAOS_REPORT"
fi
