#!/usr/bin/env bash
# Builds the native addon (release; EMQ_NODE_PROFILE=debug for a quicker build in CI) and copies
# it into node/ as emq.<platform>.node, where index.js looks for it. Run from anywhere; needs cargo.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$root"
profile="${EMQ_NODE_PROFILE:-release}"
if [ "$profile" = release ]; then cargo build --release -p emq-node; else cargo build -p emq-node; fi
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) triple=linux-x64-gnu; lib=libemq_node.so ;;
  Linux-aarch64) triple=linux-arm64-gnu; lib=libemq_node.so ;;
  Darwin-x86_64) triple=darwin-x64; lib=libemq_node.dylib ;;
  Darwin-arm64) triple=darwin-arm64; lib=libemq_node.dylib ;;
  *) echo "build.sh: unsupported platform $(uname -s)-$(uname -m)" >&2; exit 1 ;;
esac
if [ "$triple" = linux-x64-gnu ] && ldd --version 2>&1 | grep -qi musl; then triple=linux-x64-musl; fi
target_dir="$(cargo metadata --format-version 1 --no-deps | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).target_directory))')"
cp "$target_dir/$profile/$lib" "$here/emq.$triple.node"
# The workspace's release profile keeps line tables (debug = 1); the packaged addon does not need them.
if command -v strip >/dev/null 2>&1; then strip --strip-debug "$here/emq.$triple.node"; fi
echo "built $here/emq.$triple.node"
