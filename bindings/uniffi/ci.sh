#!/usr/bin/env bash
# The uniffi bindings' CI, from the repository root on a machine with cargo, java and mvn:
# builds the library, the test harness and the emq CLI (CrossLanguageTest drives target/debug/emq),
# generates Kotlin and Swift, checks the Swift output, runs the Kotlin tests against real redis
# servers, and exits non-zero on any failure.
#   bash bindings/uniffi/ci.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
root="$PWD"

echo "== build: emq-uniffi (cdylib + uniffi-bindgen), emq-harness and the emq CLI"
cargo build -p emq-uniffi -p emq-harness
cargo build -p emq-cli
[[ -x target/debug/emq ]] || { echo "missing target/debug/emq"; exit 1; }
cargo test -q -p emq-uniffi --lib

lib="target/debug/libemq_uniffi.so"
[[ -f "$lib" ]] || { echo "missing $lib"; exit 1; }

echo "== generate kotlin and swift"
bash bindings/uniffi/generate.sh "$lib"

echo "== check swift"
bash bindings/uniffi/swift/check.sh bindings/uniffi/swift/generated
# The Swift package (packaging/swift) commits its generated sources: they must match this build.
bash packaging/swift/generate.sh --check "$lib"

echo "== kotlin tests (mvn)"
cd bindings/uniffi/kotlin
rm -rf target/surefire-reports
status=0
mvn -q -B test -Demq.repo="$root" || status=$?
# -q hides Surefire's own summary: print it from its reports.
if compgen -G "target/surefire-reports/*.txt" > /dev/null; then
    grep -h "Tests run:" target/surefire-reports/*.txt
    awk '/Tests run:/ { gsub(",", ""); t += $3; f += $5; e += $7; s += $9 }
         END { printf "Tests run: %d, Failures: %d, Errors: %d, Skipped: %d\n", t, f, e, s }' \
        target/surefire-reports/*.txt
else
    echo "no Surefire reports"
    status=1
fi
if [[ $status != 0 ]]; then
    echo "uniffi ci: FAILED (mvn exit $status)"
    exit "$status"
fi
echo "uniffi ci: ok"
