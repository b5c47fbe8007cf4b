#!/usr/bin/env bash
# Generates the Kotlin and Swift sources from a built libemq_uniffi.so (from the repository root):
#   bash bindings/uniffi/generate.sh [target/debug/libemq_uniffi.so]
# then makes the generated Kotlin catch `Throwable`, not only `Exception`, where it runs a foreign
# callback. Without that, a handler that throws a `java.lang.Error` (Kotlin's `TODO()`, an
# `AssertionError`, a `StackOverflowError`) escapes the callback's coroutine, the Rust future
# waiting for it never resolves, and the job stays active (its lease renewed) until the worker
# closes. Caught, it fails the job like any other exception. Exits non-zero when the generated
# code no longer has the pattern (a uniffi upgrade changed it: check the callback code again).
set -euo pipefail
cd "$(dirname "$0")/../.."
lib="${1:-target/debug/libemq_uniffi.so}"
[[ -f "$lib" ]] || { echo "generate.sh: missing $lib (cargo build -p emq-uniffi)"; exit 1; }
for lang in kotlin swift; do
    rm -rf "bindings/uniffi/$lang/generated"
    cargo run -q -p emq-uniffi --bin uniffi-bindgen -- generate --library "$lib" \
        --language "$lang" --out-dir "bindings/uniffi/$lang/generated" --no-format
done
kt=bindings/uniffi/kotlin/generated/dev/emq/emq_uniffi.kt
n="$(grep -c 'catch(e: kotlin.Exception)' "$kt" || true)"
[[ "$n" -ge 2 ]] || { echo "generate.sh: expected the callback catch blocks in $kt, found $n"; exit 1; }
sed -i 's/catch(e: kotlin\.Exception)/catch(e: kotlin.Throwable)/g' "$kt"
echo "generate.sh: generated kotlin and swift; $n callback catch blocks widened to Throwable"
