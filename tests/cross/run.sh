#!/usr/bin/env bash
# The cross-language suite (tests/cross/test_cross.py) on a standalone server and on a cluster,
# from anywhere:
#   bash tests/cross/run.sh [pytest args…]
# Uses the Python venv at $EMQ_PY_VENV when it imports emq and pytest; else creates one the way
# python/ci.sh does (pip install ./python). Needs the Node addon (bash node/build.sh) and cargo.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3}"

echo "== cargo build -p emq-cli -p emq-harness"
cargo build -q -p emq-cli -p emq-harness
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
export EMQ_BIN="$TARGET/debug/emq" EMQ_HARNESS="$TARGET/debug/emq-harness"

VENV="${EMQ_PY_VENV:-}"
if [ -z "$VENV" ] || ! "$VENV/bin/python" -c "import emq, pytest" 2>/dev/null; then
    VENV="${VENV:-$(mktemp -d /tmp/emq-cross-venv.XXXXXX)}"
    echo "== creating the venv $VENV (pip install ./python)"
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    "$VENV/bin/python" -m pip install --quiet maturin pytest
    if ! "$VENV/bin/python" -m pip install ./python >"$VENV/pip-install.log" 2>&1; then
        tail -n 40 "$VENV/pip-install.log"
        echo "pip install ./python failed (full log: $VENV/pip-install.log)" >&2
        exit 1
    fi
fi
echo "== venv: $VENV"

export EMQ_NODE_PACKAGE="${EMQ_NODE_PACKAGE:-$ROOT/node}"
if ! node -e 'require(process.env.EMQ_NODE_PACKAGE)' 2>/dev/null; then
    echo "the Node package at $EMQ_NODE_PACKAGE does not load: run bash node/build.sh first" >&2
    exit 1
fi

echo "== pytest tests/cross"
# From tests/cross, so the installed emq (not python/src) is the one imported.
cd "$ROOT/tests/cross"
exec "$VENV/bin/python" -m pytest -p no:cacheprovider -q "$@" .
