"""TLS with a private CA and mutual TLS (client certificates), on the harness's TLS servers
(`emq-harness up --tls --mtls`: ACL user emq/emq-secret, certificates from a throwaway CA)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import uuid
from pathlib import Path

import pytest

import emq
import emq.sync
from emq import errors

from conftest import _harness_path


@pytest.fixture(scope="module")
def tls_servers():
    proc = subprocess.Popen(
        [_harness_path(), "up", "--tls", "--mtls"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    line = proc.stdout.readline()
    if not line:
        proc.wait(timeout=30)
        pytest.fail(f"emq-harness exited ({proc.returncode}) without printing its servers")
    try:
        yield json.loads(line)
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _name() -> str:
    return "tls-" + uuid.uuid4().hex[:8]


async def test_a_private_ca_as_a_path_or_bytes(tls_servers):
    tls = tls_servers["tls"]
    for ca in (tls["ca"], Path(tls["ca"]), Path(tls["ca"]).read_bytes()):
        q = await emq.Queue.connect(tls["url"], _name(), ca_cert=ca)
        job_id = await q.add("t", {"secure": True})
        job = await q.get(job_id)
        assert job is not None and job["data"] == {"secure": True}
        await q.close()
    # Without the CA the server's certificate is not trusted.
    with pytest.raises(errors.ServerUnavailable) as e:
        await emq.Queue.connect(tls["url"], _name())
    assert "ca_cert" in str(e.value)
    # The sync facade takes the same options.
    sq = emq.sync.Queue.connect(tls["url"], _name(), ca_cert=tls["ca"])
    assert sq.counts()["waiting"] == 0
    sq.close()


async def test_tls_options_are_checked(tls_servers, tmp_path):
    tls = tls_servers["tls"]
    with pytest.raises(errors.InvalidOption, match="client_key"):
        await emq.Queue.connect(tls["url"], _name(), ca_cert=tls["ca"], client_cert=tls["cert"])
    with pytest.raises(errors.InvalidOption, match="ca_cert"):
        await emq.Queue.connect(tls["url"], _name(), ca_cert=str(tmp_path / "missing.pem"))
    with pytest.raises(errors.InvalidOption, match="ca_cert"):
        await emq.Queue.connect(tls["url"], _name(), ca_cert=b"not a certificate")
    with pytest.raises(errors.InvalidOption):
        await emq.Queue.connect("redis://127.0.0.1:1", _name(), ca_cert=tls["ca"])
    with pytest.raises(errors.InvalidOption):
        await emq.Queue.connect(tls["url"], _name(), ca_cert=42)  # type: ignore[arg-type]


async def test_mutual_tls_needs_the_client_certificate(tls_servers):
    m = tls_servers["mtls"]
    with pytest.raises(errors.ServerUnavailable) as e:
        await emq.Queue.connect(m["url"], _name(), ca_cert=m["ca"])
    assert "client_cert" in str(e.value)
    q = await emq.Queue.connect(
        m["url"], _name(), ca_cert=m["ca"], client_cert=m["cert"], client_key=Path(m["key"]).read_bytes()
    )
    job_id = await q.add("t", {"mutual": True})
    done = []

    async def handle(job):
        done.append(job.id)
        return {"ok": True}

    worker = emq.Worker(q, handle, concurrency=1)
    try:
        for _ in range(400):  # at most 20 s
            j = await q.get(job_id)
            if j is not None and j["state"] == "completed":
                break
            await asyncio.sleep(0.05)
    finally:
        await worker.close()
    job = await q.get(job_id)
    assert job is not None and job["state"] == "completed" and job["result"] == {"ok": True}
    assert done == [job_id]
    await q.close()
