#!/usr/bin/env bash
# The dashboard's browser tests: installs Debian's Chromium (apt-get) and playwright-core (npm, into
# its own folder, $EMQ_PW_DIR, default /tmp/emq-pw) when missing, then runs the ignored cargo test
# cli/tests/ui_browser.rs, which starts the datastore, a worker, two `emq ui` servers and
# cli/ui-test/ui.test.js. Bounded: installs 10 minutes, the test 5. Screenshots: target/ui-screens/.
set -euo pipefail
cd "$(dirname "$0")/../.."

export EMQ_PW_DIR="${EMQ_PW_DIR:-/tmp/emq-pw}"
if ! command -v chromium >/dev/null; then
  echo "ui-test: installing chromium"
  export DEBIAN_FRONTEND=noninteractive
  timeout 600 apt-get update -qq
  timeout 600 apt-get install -y -qq chromium >/dev/null
fi
if [ ! -d "$EMQ_PW_DIR/node_modules/playwright-core" ]; then
  echo "ui-test: installing playwright-core into $EMQ_PW_DIR"
  mkdir -p "$EMQ_PW_DIR"
  (cd "$EMQ_PW_DIR" && { [ -f package.json ] || npm init -y >/dev/null; } \
    && timeout 600 npm install --no-audit --no-fund playwright-core@1 >/dev/null)
fi
export EMQ_GUARD=1 CHROMIUM="${CHROMIUM:-$(command -v chromium)}"
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}" CARGO_PROFILE_DEV_DEBUG="${CARGO_PROFILE_DEV_DEBUG:-line-tables-only}"
timeout 300 cargo test -p emq-cli --test ui_browser -- --ignored --nocapture
echo "ui-test: screenshots in target/ui-screens/"
