#!/usr/bin/env bash
# Generates the Kotlin and Swift sources from a built libemq_uniffi.so (from the repository root):
#   bash bindings/uniffi/generate.sh [target/debug/libemq_uniffi.so]
# then makes the generated Kotlin catch `Throwable`, not only `Exception`, where it runs a foreign
# callback. Without that, a handler that throws a `java.lang.Error` (Kotlin's `TODO()`, an
# `AssertionError`, a `StackOverflowError`) escapes the callback's coroutine, the Rust future
# waiting for it never resolves, and the job stays active (its lease renewed) until the worker
# closes. Caught, it fails the job like any other exception. Exits non-zero when the generated
# code no longer has the pattern (a uniffi upgrade changed it: check the callback code again).
#
# It also makes the callback that runs when Rust drops a foreign future (uniffi's
# `uniffiForeignFutureDroppedCallbackImpl`, which cancels the handler's coroutine) join the
# coroutine after cancelling it: the drop then returns only once the handler has stopped, which is
# how the worker knows that an interrupted run (a cancel, a timeout, the end of the shutdown grace)
# is over before it records the outcome and a retry can start. The Rust side drops unfinished calls
# on a blocking thread (src/handler.rs, `Call`), never on a runtime worker.
set -euo pipefail
cd "$(dirname "$0")/../.."
lib="${1:-target/debug/libemq_uniffi.so}"
[[ -f "$lib" ]] || { echo "generate.sh: missing $lib (cargo build -p emq-uniffi)"; exit 1; }
# The generator from the library's own build (a release library: the release generator, which
# `cargo build --release -p emq-uniffi` built beside it, so no debug build is needed).
profile=()
case "$lib" in */release/*) profile=(--release) ;; esac
for lang in kotlin swift; do
    rm -rf "bindings/uniffi/$lang/generated"
    cargo run -q "${profile[@]}" -p emq-uniffi --bin uniffi-bindgen -- generate --library "$lib" \
        --language "$lang" --out-dir "bindings/uniffi/$lang/generated" --no-format
done
kt=bindings/uniffi/kotlin/generated/dev/emq/emq_uniffi.kt
n="$(grep -c 'catch(e: kotlin.Exception)' "$kt" || true)"
[[ "$n" -ge 2 ]] || { echo "generate.sh: expected the callback catch blocks in $kt, found $n"; exit 1; }
sed -i 's/catch(e: kotlin\.Exception)/catch(e: kotlin.Throwable)/g' "$kt"
c="$(grep -c '^            job\.cancel()$' "$kt" || true)"
[[ "$c" -eq 1 ]] || { echo "generate.sh: expected one job.cancel() in the dropped-future callback of $kt, found $c"; exit 1; }
# A future dropped after its result came back (every job that ends by itself) finds its coroutine
# returning: a short spin sees it end without parking the runtime thread; a cancelled one is
# joined.
sed -i 's/^            job\.cancel()$/            job.cancel()\n            var spins = 0\n            while (!job.isCompleted \&\& spins < 2000) { Thread.onSpinWait(); spins++ }\n            if (!job.isCompleted) kotlinx.coroutines.runBlocking { job.join() }/' "$kt"
echo "generate.sh: generated kotlin and swift; $n callback catch blocks widened to Throwable; the dropped-future callback joins the cancelled coroutine"
