#!/usr/bin/env bash
# CI for the Node binding. Run from the repository root on a machine with cargo, node and npm:
#   bash node/ci.sh
# Builds the addon (release) and the test harness, runs the tests against real servers, then
# packs the npm package, installs the tarball into a fresh folder and requires it.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

echo "== node $(node --version), npm $(npm --version), $(cargo --version)"

echo "== building the addon (release)"
bash node/build.sh

echo "== the generated error-code lists match core/src/error.rs"
# On failure it names the stale files; regenerate them with: cargo run -q -p emq --example error_codes
cargo run -q -p emq --example error_codes -- --check

echo "== the addon's own unit tests (cargo test -p emq-node: how a batch's spec error is classified, ...)"
cargo test -q -p emq-node

echo "== building the harness"
cargo build -p emq-harness

echo "== node --test node/test/"
# Bounded: every wait in the tests is bounded, and the whole run is too.
timeout 900 node --test --test-timeout=180000 node/test/

echo "== tsc --strict: the generated node/dist/index.d.ts against node/test/types/usage.ts (no @types/node)"
# build.sh installed the pinned TypeScript (package.json's devDependencies) into EMQ_TSC_DIR.
tsc_dir="${EMQ_TSC_DIR:-/tmp/emq-tsc}"
"$tsc_dir/node_modules/.bin/tsc" --noEmit --strict --target es2020 --lib es2020 --module commonjs \
  node/test/types/usage.ts
echo "tsc: dist/index.d.ts type-checks (strict), every @ts-expect-error holds"

echo "== the declarations are generated: no .d.ts in node/ outside dist/ but codes.d.ts (core's generator)"
stray="$(cd node && find . -name '*.d.ts' -o -name '*.d.mts' | grep -v -e '^./dist/' -e '^./node_modules/' -e '^./codes.d.ts$' || true)"
[ -z "$stray" ] || { echo "hand-written declarations in node/: $stray" >&2; exit 1; }

echo "== npm pack (emq and its platform package @emq/linux-x64-gnu) + install into a fresh folder"
# The addon travels in the platform package, as npm users get it (scripts/test-packages does the
# same with no Rust on PATH, and runs examples/node).
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cp node/emq.linux-x64-gnu.node node/npm/linux-x64-gnu/
(cd node && npm pack --silent --pack-destination "$tmp" >/dev/null)
(cd node/npm/linux-x64-gnu && npm pack --silent --pack-destination "$tmp" >/dev/null)
tarball="$(ls "$tmp"/emq-[0-9]*.tgz)"
platform_tarball="$(ls "$tmp"/emq-linux-x64-gnu-*.tgz)"
tar tzf "$platform_tarball" > "$tmp/contents"
grep -qx 'package/emq.linux-x64-gnu.node' "$tmp/contents" \
  || { echo "the platform tarball lacks emq.linux-x64-gnu.node" >&2; exit 1; }
mkdir "$tmp/app"
cd "$tmp/app"
echo '{"name":"emq-install-check","version":"1.0.0","private":true}' > package.json
npm install --silent --no-audit --no-fund --offline "$tarball" "$platform_tarball"
node -e "
const emq = require('emq');
for (const k of ['Queue', 'Worker', 'EmqError', 'InvalidJobId']) {
  if (typeof emq[k] !== 'function') { console.error('emq.' + k + ' is missing'); process.exit(1); }
}
console.log('require(\"emq\") from the installed tarball: ok');
"
node --input-type=module -e "
import emq, { Queue, InvalidJobId } from 'emq';
if (Queue !== emq.Queue || new InvalidJobId('x').code !== 'invalid_job_id') { console.error('import from emq differs from require'); process.exit(1); }
console.log('import from \"emq\" (the installed tarball): ok');
"
echo "node/ci.sh: all good"
