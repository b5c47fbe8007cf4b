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
python -m pip install --quiet maturin pytest pytest-asyncio opentelemetry-api opentelemetry-sdk
python -m mypy --version >/dev/null 2>&1 || python -m pip install --quiet mypy

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

echo "== mypy --strict on examples/python (typed against the installed package and its stubs)"
(cd "$ROOT" && python -m mypy --strict --cache-dir=/dev/null examples/python/*.py)
echo "== mypy --strict on the package itself (against _emq.pyi; the native calls return JSON-shaped Any)"
(cd "$ROOT/python/src" && python -m mypy --strict --cache-dir=/dev/null --disable-error-code no-any-return -p emq)

echo "== python/README.md shows examples/python as they are"
python - "$ROOT" <<'PY'
import re, sys
from pathlib import Path
root = Path(sys.argv[1])
text = (root / "python/README.md").read_text()
blocks = re.findall(r"^<!-- (examples/\S+) -->\n```[a-z]*\n(.*?)^```$", text, re.S | re.M)
shown = {rel for rel, _ in blocks}
bad = [rel for rel, body in blocks if (root / rel).read_text() != body]
bad += [f"{p.relative_to(root)} (not shown)" for p in sorted((root / "examples/python").glob("*.py")) if str(p.relative_to(root)) not in shown]
if bad:
    sys.exit("python/README.md differs from: " + ", ".join(bad))
print("python/README.md shows", ", ".join(sorted(shown)))
PY

echo "== the generated error-code lists match core/src/error.rs"
# On failure it names the stale files; regenerate them with: cargo run -q -p emq --example error_codes
cargo run -q -p emq --example error_codes -- --check

echo "== cargo build -p emq-harness"
cargo build -p emq-harness
export EMQ_HARNESS="${CARGO_TARGET_DIR:-$ROOT/target}/debug/emq-harness"
export EMQ_GUARD=1

echo "== pytest"
# Run from python/tests so the installed package (not python/src) is the one imported.
cd "$ROOT/python"
python -m pytest tests -p no:cacheprovider

echo "== sdist: build it, check it carries the Lua scripts, install it into another fresh venv"
cd "$ROOT/python"
SDIST_DIR="$(mktemp -d /tmp/emq-sdist.XXXXXX)"
python -m maturin sdist --out "$SDIST_DIR" >/dev/null
SDIST="$(ls "$SDIST_DIR"/emq-*.tar.gz)"
tar tzf "$SDIST" > "$SDIST_DIR/contents"
missing=0
for f in "$ROOT"/lua/*.lua "$ROOT"/lua/lib/*.lua; do
    rel="${f#"$ROOT"/}"
    grep -q "/core/$rel\$" "$SDIST_DIR/contents" || { echo "the sdist lacks $rel" >&2; missing=1; }
done
[ "$missing" = 0 ] || exit 1
"$PYTHON" -m venv "$SDIST_DIR/venv"
"$SDIST_DIR/venv/bin/python" -m pip install --quiet --upgrade pip
# The build from the sdist reuses the workspace's compiled dependencies (same versions, profile).
if ! CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}" \
    "$SDIST_DIR/venv/bin/python" -m pip install "$SDIST" >"$SDIST_DIR/pip.log" 2>&1; then
    tail -n 60 "$SDIST_DIR/pip.log"
    echo "installing the sdist failed" >&2
    exit 1
fi
cd "$SDIST_DIR"
"$SDIST_DIR/venv/bin/python" -c "
import emq, emq.errors
assert emq.errors.InvalidQueueName.code == 'invalid_queue_name'
print('installed from the sdist:', emq.__version__)
"
rm -rf "$SDIST_DIR"
echo "python/ci.sh: all good"
