#!/usr/bin/env bash
# Runs every fuzz target of emq for SECONDS each (default 10) or, with RUNS=<n>, n executions each
# (with MAX_TIME=<s> too: n executions or s seconds, whichever comes first), one target at a time
# in one process (one core), and prints libFuzzer's figures per target: executions, time, coverage,
# corpus size. An input that runs longer than FUZZ_TIMEOUT seconds (default 25) is a finding (a hang). Uses `cargo fuzz` when installed (nightly); otherwise
# builds the same libfuzzer-sys targets with the installed toolchain's coverage instrumentation
# (`-Cpasses=sancov-module`, no sanitizer: emq's parsers are safe Rust, a panic is the finding).
# FUZZ_SKIP="a b" skips targets. Corpora live in fuzz/corpus/<target> (seeded from fuzz/seeds/<target>), crashes in fuzz/artifacts.
set -euo pipefail
cd "$(dirname "$0")"
secs="${1:-10}"
targets=(queue_name job_id handoff_entry job_options_json cron_spec payload_text)
export CARGO_INCREMENTAL=0
export RUSTFLAGS="${RUSTFLAGS:-} -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
 -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
 -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks"
# An explicit --target keeps the flags off build scripts and proc macros (as cargo fuzz does).
triple=$(rustc -vV | sed -n 's/^host: //p')
cargo build --release --quiet --bins --target "$triple"
for t in "${targets[@]}"; do
  if [[ " ${FUZZ_SKIP:-} " == *" $t "* ]]; then echo "fuzz: $t skipped (FUZZ_SKIP)"; continue; fi
  mkdir -p "corpus/$t" "artifacts/$t"
  [ -d "seeds/$t" ] && cp -n seeds/"$t"/* "corpus/$t/" 2>/dev/null || true
  if [ -n "${RUNS:-}" ]; then limit=(-runs="$RUNS"); else limit=(-max_total_time="$secs"); fi
  if [ -n "${RUNS:-}" ] && [ -n "${MAX_TIME:-}" ]; then limit+=(-max_total_time="$MAX_TIME"); fi
  start=$(date +%s)
  out=$("target/$triple/release/$t" "corpus/$t" -artifact_prefix="artifacts/$t/" -max_len=4096 \
        -timeout="${FUZZ_TIMEOUT:-25}" -print_final_stats=1 "${limit[@]}" 2>&1) || { echo "$out" | tail -40; echo "fuzz: $t FAILED"; exit 1; }
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' <<<"$out" | grep -o '[0-9]*$' || echo '?')
  cov=$(grep -o 'cov: [0-9]*' <<<"$out" | tail -1 | grep -o '[0-9]*' || echo '?')
  corpus=$(find "corpus/$t" -type f | wc -l)
  echo "fuzz: $t: $runs executions in $(( $(date +%s) - start )) s, coverage $cov edges, corpus $corpus inputs, no crash"
done
