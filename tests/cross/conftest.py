"""Fixtures of the cross-language suite: the servers (one emq-harness for the whole session) and
the paths of the other languages' tools. Run through tests/cross/run.sh."""

import json
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))


def _tool(env, default):
    path = os.environ.get(env) or default
    if not os.access(path, os.X_OK):
        pytest.exit(f"{path} is missing: build it (tests/cross/run.sh does) or set {env}", returncode=2)
    return path


@pytest.fixture(scope="session")
def servers():
    """{"standalone": url, "cluster": [urls]} from `emq-harness up --standalone --cluster`,
    stopped (stdin closed) at the end of the session."""
    harness = _tool("EMQ_HARNESS", os.path.join(TARGET, "debug", "emq-harness"))
    proc = subprocess.Popen(
        [harness, "up", "--standalone", "--cluster"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("emq-harness printed nothing")
        yield json.loads(line)
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="session")
def emq_bin():
    return _tool("EMQ_BIN", os.path.join(TARGET, "debug", "emq"))


@pytest.fixture(scope="session")
def node_package():
    return os.environ.get("EMQ_NODE_PACKAGE") or os.path.join(ROOT, "node")


@pytest.fixture(params=["standalone", "cluster"])
def urls(request, servers):
    """The URL list of one topology (every test runs on both)."""
    u = servers[request.param]
    return [u] if isinstance(u, str) else list(u)
