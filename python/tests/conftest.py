"""Real servers for the tests: the workspace's `emq-harness up --standalone --cluster`, started
once per session and stopped by closing its stdin."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

os.environ["EMQ_GUARD"] = "1"  # every script runs under the core's undeclared-key guard


def _harness_path() -> str:
    explicit = os.environ.get("EMQ_HARNESS")
    if explicit:
        return explicit
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return str(target / "debug" / "emq-harness")


@pytest.fixture(scope="session")
def servers():
    path = _harness_path()
    if not os.path.exists(path):
        pytest.fail(f"{path} is missing: run `cargo build -p emq-harness` first")
    proc = subprocess.Popen(
        [path, "up", "--standalone", "--cluster"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline()
    if not line:
        proc.wait(timeout=30)
        pytest.fail(f"emq-harness exited ({proc.returncode}) without printing its servers")
    info = json.loads(line)
    try:
        yield info
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="session")
def standalone(servers) -> str:
    return servers["standalone"]


@pytest.fixture(scope="session")
def cluster(servers) -> list:
    return servers["cluster"]


@pytest.fixture
def qname() -> str:
    return f"py-{uuid.uuid4().hex[:12]}"
