"""The sync API's add under threads (bindings/python/src/local.rs): each thread adds on a
connection of its own, driven by its own runtime (no hop to a tokio thread), on standalone and
cluster; every add gets its own id and reads back; bad input is refused with its code in the
thread that made it; a closed queue's add is refused; the async API alongside is unaffected."""

from __future__ import annotations

import asyncio
import re
import threading

import pytest

import emq
import emq.sync


def _clients(url: str) -> int:
    """How many client connections the standalone server has (CLIENT LIST over a plain socket)."""
    import socket

    host, port = re.match(r"redis://([^:/]+):(\d+)", url).groups()
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(b"CLIENT LIST\r\n")
        data = b""
        while b"\r\n" not in data:
            data += s.recv(65536)
        head = data.index(b"\r\n")
        size = int(data[1:head])
        while len(data) < head + 2 + size + 2:
            data += s.recv(65536)
    return data.count(b"id=")


@pytest.mark.parametrize("topology", ["standalone", "cluster"])
def test_threads_add_on_their_own_connections(standalone, cluster, qname, topology):
    url = standalone if topology == "standalone" else cluster
    q = emq.sync.Queue.connect(url, qname)
    threads, per = 6, 100
    ids: list = [[] for _ in range(threads)]
    errors: list = []

    def produce(t: int) -> None:
        try:
            for i in range(per):
                ids[t].append(q.add("j", {"t": t, "i": i}, priority=1 + i % 3))
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    workers = [threading.Thread(target=produce, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors, errors
    flat = [i for t in ids for i in t]
    assert len(set(flat)) == threads * per
    for t in range(threads):
        for i, job_id in enumerate(ids[t][:10]):
            job = q.get(job_id)
            assert job["data"] == {"t": t, "i": i} and job["priority"] == 1 + i % 3, job
    assert q.counts()["prioritized"] == threads * per
    q.close()


def test_a_thread_keeps_its_own_connection_and_errors_are_typed(standalone, qname):
    q = emq.sync.Queue.connect(standalone, qname)
    q.add("main", 0)  # the main thread's own connection
    base = _clients(standalone)
    ready, done = threading.Event(), threading.Event()
    seen: dict = {}

    def produce() -> None:
        try:
            seen["id"] = q.add("t", 1)
            with pytest.raises(emq.InvalidOption):
                q.add("t", 1, priority=-1)
            with pytest.raises(emq.InvalidPayload):
                q.add("t", float("nan"))
            seen["ok"] = True
        except BaseException as e:  # noqa: BLE001
            seen["error"] = e
        ready.set()
        done.wait(10)

    t = threading.Thread(target=produce)
    t.start()
    assert ready.wait(10)
    try:
        assert seen.get("ok"), seen
        # the thread's add opened one connection of its own and holds it while the thread lives
        assert _clients(standalone) == base + 1
    finally:
        done.set()
        t.join()
    assert q.get(seen["id"])["name"] == "t"
    assert q.counts()["waiting"] == 2, "the refused adds wrote nothing"

    async def alongside() -> str:
        aq = await emq.Queue.connect(standalone, qname)
        try:
            return await aq.add("async", 2)
        finally:
            await aq.close()

    assert q.get(asyncio.run(alongside()))["name"] == "async"
    q.close()
    # A closed queue mints no id: the same refusal as the shared runtime's add.
    with pytest.raises(emq.NodeLeaseLost):
        q._native.add("after-close", 3, None, blocking=True)
    with pytest.raises(emq.NodeLeaseLost):
        q.add("after-close", 3)
