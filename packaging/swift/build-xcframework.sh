#!/usr/bin/env bash
# macOS only (needs Xcode's xcodebuild; not run on this project's Linux machines): builds
# libemq_uniffi.a for macOS (arm64 + x86_64) and iOS (device + simulator) and wraps them, with the
# generated header and module map, into packaging/swift/EmqUniffiFFI.xcframework, the binary
# target Package.swift names on Apple platforms.
#   bash packaging/swift/build-xcframework.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
here=packaging/swift
targets=(aarch64-apple-darwin x86_64-apple-darwin aarch64-apple-ios aarch64-apple-ios-sim)
for t in "${targets[@]}"; do
    rustup target add "$t"
    cargo build -p emq-uniffi --release --target "$t"
done
work="$(mktemp -d)"
mkdir -p "$work/include"
cp "$here/Sources/EmqUniffiFFI/EmqUniffiFFI.h" "$here/Sources/EmqUniffiFFI/EmqCoreFFI.h" "$work/include/"
# In an xcframework the module map is found as include/module.modulemap (no link line: the
# static library is the framework's binary).
sed '/^ *link /d' "$here/Sources/EmqUniffiFFI/module.modulemap" > "$work/include/module.modulemap"
lipo -create target/aarch64-apple-darwin/release/libemq_uniffi.a \
    target/x86_64-apple-darwin/release/libemq_uniffi.a -output "$work/libemq_uniffi-macos.a"
rm -rf "$here/EmqUniffiFFI.xcframework"
xcodebuild -create-xcframework \
    -library "$work/libemq_uniffi-macos.a" -headers "$work/include" \
    -library target/aarch64-apple-ios/release/libemq_uniffi.a -headers "$work/include" \
    -library target/aarch64-apple-ios-sim/release/libemq_uniffi.a -headers "$work/include" \
    -output "$here/EmqUniffiFFI.xcframework"
echo "built $here/EmqUniffiFFI.xcframework"
