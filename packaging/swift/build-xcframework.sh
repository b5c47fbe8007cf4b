#!/usr/bin/env bash
# macOS only (needs Xcode's xcodebuild and lipo; not run on this project's Linux machines: the
# release workflow's xcframework job runs it): builds the static libemq_uniffi.a for
#   iOS device      aarch64-apple-ios
#   iOS simulator   aarch64-apple-ios-sim + x86_64-apple-ios   (one lipo'd library)
#   macOS           aarch64-apple-darwin + x86_64-apple-darwin (one lipo'd library)
# and wraps the three, with the generated headers and module map, into
# packaging/swift/EmqUniffiFFI.xcframework, the binary target Package.swift names on Apple
# platforms (local development: `releaseFFI` nil).
#   bash packaging/swift/build-xcframework.sh [--zip DIR]
# --zip DIR also writes DIR/EmqUniffiFFI.xcframework.zip (what a release publishes, and a
# release's Package.swift downloads) and DIR/EmqUniffiFFI.xcframework.zip.checksum, its
# `swift package compute-checksum`.
set -euo pipefail
cd "$(dirname "$0")/../.."
zipdir=""
if [[ "${1:-}" == "--zip" ]]; then zipdir="${2:?--zip DIR}"; fi
here=packaging/swift
targets=(aarch64-apple-ios aarch64-apple-ios-sim x86_64-apple-ios aarch64-apple-darwin x86_64-apple-darwin)
for t in "${targets[@]}"; do
    rustup target add "$t"
    cargo build -p emq-uniffi --release --target "$t"
done
lib() { echo "target/$1/release/libemq_uniffi.a"; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/include"
cp "$here/Sources/EmqUniffiFFI/EmqUniffiFFI.h" "$here/Sources/EmqUniffiFFI/EmqCoreFFI.h" "$work/include/"
# In an xcframework the module map is found as include/module.modulemap (no link line: the
# static library is the framework's binary).
sed '/^ *link /d' "$here/Sources/EmqUniffiFFI/module.modulemap" > "$work/include/module.modulemap"
mkdir -p "$work/macos" "$work/ios-sim"
lipo -create "$(lib aarch64-apple-darwin)" "$(lib x86_64-apple-darwin)" -output "$work/macos/libemq_uniffi.a"
lipo -create "$(lib aarch64-apple-ios-sim)" "$(lib x86_64-apple-ios)" -output "$work/ios-sim/libemq_uniffi.a"
for a in "$work/macos/libemq_uniffi.a" "$work/ios-sim/libemq_uniffi.a"; do lipo -info "$a"; done
rm -rf "$here/EmqUniffiFFI.xcframework"
xcodebuild -create-xcframework \
    -library "$(lib aarch64-apple-ios)" -headers "$work/include" \
    -library "$work/ios-sim/libemq_uniffi.a" -headers "$work/include" \
    -library "$work/macos/libemq_uniffi.a" -headers "$work/include" \
    -output "$here/EmqUniffiFFI.xcframework"
# Three slices: ios-arm64, ios-arm64_x86_64-simulator, macos-arm64_x86_64.
plutil -p "$here/EmqUniffiFFI.xcframework/Info.plist" | grep -E 'LibraryIdentifier' || true
echo "built $here/EmqUniffiFFI.xcframework"
if [[ -n "$zipdir" ]]; then
    mkdir -p "$zipdir"
    zip="$(cd "$zipdir" && pwd)/EmqUniffiFFI.xcframework.zip"
    rm -f "$zip"
    # The folder itself at the zip's top (SwiftPM looks for <name>.xcframework inside).
    (cd "$here" && ditto -c -k --sequesterRsrc --keepParent EmqUniffiFFI.xcframework "$zip")
    (cd "$here" && swift package compute-checksum "$zip") > "$zip.checksum"
    echo "wrote $zip (checksum $(cat "$zip.checksum"))"
fi
