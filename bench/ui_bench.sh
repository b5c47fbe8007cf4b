#!/usr/bin/env bash
# Server time of `emq ui`'s pages on big queues (issue 17, item 5): one queue of 1,000,000 waiting
# jobs and 100 queues of 10,000 jobs, on a private redis-server the test harness starts on
# 127.0.0.1; the data is built with add_bulk (chunks of 10,000). Runs the ignored test
# cli/tests/ui_bench.rs and prints a Markdown table (median [min–max] over UI_BENCH_RUNS requests
# per page, default 7). Bounded: the build 30 minutes, the run 15.
#   bash bench/ui_bench.sh            # release build (what an installed `emq` is)
#   PROFILE=dev bash bench/ui_bench.sh
#   UI_BENCH_BASELINE=/tmp/emq-before bash bench/ui_bench.sh   # and that binary's `emq ui` beside,
#                                     # on the same data, requests turn about (before/after)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}" CARGO_PROFILE_DEV_DEBUG="${CARGO_PROFILE_DEV_DEBUG:-line-tables-only}"
profile=(--release)
[ "${PROFILE:-release}" = dev ] && profile=()
timeout 1800 cargo test -p emq-cli "${profile[@]}" --test ui_bench --no-run
echo "ui_bench: $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg); $(redis-server --version | cut -d' ' -f1-3)"
timeout 900 cargo test -p emq-cli "${profile[@]}" --test ui_bench -- --ignored --nocapture
