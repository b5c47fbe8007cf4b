#!/usr/bin/env bash
# Writes the Swift package's sources from a built libemq_uniffi (from the repository root):
#   bash packaging/swift/generate.sh [--check] [target/debug/libemq_uniffi.so]
# runs the pinned uniffi-bindgen (bindings/uniffi) for Swift and lays its output out as SwiftPM
# wants it: Sources/EmqUniffi/EmqUniffi.swift and EmqCore.swift (the core's own types, from the
# core's `uniffi` feature: a second uniffi component, compiled into the same Swift module),
# Sources/EmqUniffiFFI/EmqUniffiFFI.h and EmqCoreFFI.h, and Sources/EmqUniffiFFI/module.modulemap
# (uniffi's module map plus the core's header and `link "emq_uniffi"`, so the system library
# target links the Rust library on Linux). With --check it writes nothing and
# exits non-zero when the committed sources differ from a fresh generation (run
# `bash packaging/swift/generate.sh` and commit). Generated, not compiled: no Swift toolchain here.
set -euo pipefail
cd "$(dirname "$0")/../.."
check=0
if [[ "${1:-}" == "--check" ]]; then check=1; shift; fi
lib="${1:-target/debug/libemq_uniffi.so}"
[[ -f "$lib" ]] || { echo "packaging/swift: missing $lib (cargo build -p emq-uniffi)"; exit 1; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
cargo run -q -p emq-uniffi --bin uniffi-bindgen -- generate --library "$lib" \
    --language swift --out-dir "$out/gen" --no-format
mkdir -p "$out/Sources/EmqUniffi" "$out/Sources/EmqUniffiFFI"
cp "$out/gen/EmqUniffi.swift" "$out/gen/EmqCore.swift" "$out/Sources/EmqUniffi/"
cp "$out/gen/EmqUniffiFFI.h" "$out/gen/EmqCoreFFI.h" "$out/Sources/EmqUniffiFFI/"
grep -q '^module EmqUniffiFFI' "$out/gen/EmqUniffiFFI.modulemap" \
    && grep -q '^ *header "EmqUniffiFFI.h"$' "$out/gen/EmqUniffiFFI.modulemap" \
    || { echo "packaging/swift: unexpected module map from uniffi-bindgen"; exit 1; }
# The core's header joins the binding's (core/uniffi.toml: same FFI module, no module map of its
# own; the headers share their common part through uniffi's UNIFFI_SHARED_H guard); `link` goes
# inside the module's braces, before the closing one.
awk '{ print } /^ *header "EmqUniffiFFI.h"$/ { print "    header \"EmqCoreFFI.h\"" }' \
    "$out/gen/EmqUniffiFFI.modulemap" \
    | awk '/^}/ && !done { print "    link \"emq_uniffi\""; done = 1 } { print }' \
    > "$out/Sources/EmqUniffiFFI/module.modulemap"
here=packaging/swift
# Only these are generated; other files under Sources/ are hand-written (WorkerEvents.swift, Errors.swift).
files=(EmqUniffi/EmqUniffi.swift EmqUniffi/EmqCore.swift EmqUniffiFFI/EmqUniffiFFI.h
    EmqUniffiFFI/EmqCoreFFI.h EmqUniffiFFI/module.modulemap)
if [[ $check == 1 ]]; then
    stale=0
    for f in "${files[@]}"; do
        if ! cmp -s "$out/Sources/$f" "$here/Sources/$f"; then
            echo "packaging/swift: $here/Sources/$f differs from a fresh generation"
            diff "$out/Sources/$f" "$here/Sources/$f" 2>&1 | head -20 || true
            stale=1
        fi
    done
    if [[ $stale == 1 ]]; then
        echo "packaging/swift: stale: run \`bash packaging/swift/generate.sh\` and commit"
        exit 1
    fi
    echo "packaging/swift: the Swift package's generated sources are up to date"
    exit 0
fi
for f in "${files[@]}"; do
    mkdir -p "$(dirname "$here/Sources/$f")"
    cp "$out/Sources/$f" "$here/Sources/$f"
done
echo "packaging/swift: wrote ${files[*]} under $here/Sources (generated, not compiled: no Swift toolchain here)"
