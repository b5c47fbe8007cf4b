#!/usr/bin/env bash
# Builds and tests the Python package on real servers, from the repository root:
#   bash python/ci.sh
# Needs python3 (with venv and pip) and cargo. Exits non-zero on any failure.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

PYTHON="${PYTHON:-python3}"
VENV="${EMQ_PY_VENV:-$(mktemp -d /tmp/emq-py-venv.XXXXXX)}"

echo "== venv: $VENV"
"$PYTHON" -m venv "$VENV"
# shellcheck disable=SC1091
source "$VENV/bin/activate"
python -m pip install --quiet --upgrade pip
python -m pip install --quiet maturin pytest pytest-asyncio

echo "== pip install ./python (maturin builds bindings/python)"
# EMQ_PY_PROFILE=dev makes maturin build without optimisation (quicker, for CI); default release.
if [ -n "${EMQ_PY_PROFILE:-}" ]; then export MATURIN_PEP517_ARGS="--profile ${EMQ_PY_PROFILE}"; fi
if ! python -m pip install ./python >"$VENV/pip-install.log" 2>&1; then
    tail -n 80 "$VENV/pip-install.log"
    echo "pip install ./python failed (full log: $VENV/pip-install.log)" >&2
    exit 1
fi
grep -E "Successfully installed" "$VENV/pip-install.log" || true
python -c "import emq, emq.sync, emq._emq; print('emq', emq.__version__, 'native module', emq._emq.__file__)"

echo "== cargo build -p emq-harness"
cargo build -p emq-harness
export EMQ_HARNESS="${CARGO_TARGET_DIR:-$ROOT/target}/debug/emq-harness"
export EMQ_GUARD=1

echo "== pytest"
# Run from python/tests so the installed package (not python/src) is the one imported.
cd "$ROOT/python"
python -m pytest tests -p no:cacheprovider
