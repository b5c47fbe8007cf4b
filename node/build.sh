#!/usr/bin/env bash
# Builds the package: the native addon (release; EMQ_NODE_PROFILE=debug for a quicker build in CI),
# copied into node/ as emq.<platform>.node, where dist/loader.js looks for it, and the JavaScript:
# tsc compiles node/src/*.ts into node/dist/ (CommonJS, the ES module entry, the declarations).
# `build.sh --js` builds the JavaScript alone (npm pack runs it: the `prepack` script). Run from
# anywhere; needs cargo (not for --js), node and npm (TypeScript, pinned in package.json's
# devDependencies, is installed into EMQ_TSC_DIR, default /tmp/emq-tsc, when it is not there).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"

build_js() {
  local tsc_dir="${EMQ_TSC_DIR:-/tmp/emq-tsc}" ts types
  ts="$(node -p 'require(process.argv[1]).devDependencies.typescript' "$here/package.json")"
  types="$(node -p 'require(process.argv[1]).devDependencies["@types/node"]' "$here/package.json")"
  if [ "$(node -p 'try { require(process.argv[1]).version } catch (_) { "" }' "$tsc_dir/node_modules/typescript/package.json")" != "$ts" ] \
    || [ "$(node -p 'try { require(process.argv[1]).version } catch (_) { "" }' "$tsc_dir/node_modules/@types/node/package.json")" != "$types" ]; then
    mkdir -p "$tsc_dir"
    timeout 300 npm install --silent --no-audit --no-fund --prefix "$tsc_dir" "typescript@$ts" "@types/node@$types"
  fi
  rm -rf "$here/dist"
  "$tsc_dir/node_modules/.bin/tsc" -p "$here/tsconfig.json" --typeRoots "$tsc_dir/node_modules/@types"
  echo "built $here/dist (tsc $ts)"
}

if [ "${1:-}" = --js ]; then
  build_js
  exit 0
fi
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
build_js
