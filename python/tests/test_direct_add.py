"""Issue 30 item 5: a one-job ``Queue.add`` completed on the event loop's own socket (``emq._direct``,
the core's ``queue/direct.rs``), adds that arrive while others are unanswered pipelined on it up to
its depth, and every way it falls back to the usual path with the same id: the script not loaded,
the socket closed under it, a job the core does not take, a cluster."""

from __future__ import annotations

import asyncio
import socket
from urllib.parse import urlparse

import emq


def raw(url: str, *args: str) -> bytes:
    """One command on a plain socket (no client library in the tests); its raw reply."""
    u = urlparse(url)
    with socket.create_connection((u.hostname, u.port)) as s:
        s.sendall(b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a.encode()) for a in args))
        return s.recv(65536)


async def test_adds_after_the_first_go_direct_and_read_back_exactly(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    first = await q.add("first", {"n": 0})
    pinned = q.mint_id()
    ids = [
        await q.add("plain", {"n": 1, "s": "é\u2028"}),
        await q.add("opts", [1, 2.5, None], attempts=3, backoff=("fixed", 2), remove_on_complete=True),
        await q.add("pinned", "text", id=pinned),
    ]
    conn = q._direct._conn
    assert conn is not None and not conn.broken and not conn.waiting
    assert ids[2] == pinned
    # The same id again: no new job, the id back (the direct reply "that id exists").
    assert await q.add("pinned", "other", id=pinned) == pinned
    assert q._direct._conn is conn and not conn.broken
    jobs = [await q.get(i) for i in [first, *ids]]
    assert [j["name"] for j in jobs] == ["first", "plain", "opts", "pinned"]
    assert [j["data"] for j in jobs] == [{"n": 0}, {"n": 1, "s": "é\u2028"}, [1, 2.5, None], "text"]
    assert jobs[2]["attempts"] == 3
    assert (await q.counts())["waiting"] == 4
    # Many at once: up to the depth go direct (pipelined), the rest to the core's line
    # (coalesced); each caller gets its own id.
    many = await asyncio.gather(*(q.add("many", {"i": i}) for i in range(300)))
    assert len(set(many)) == 300
    for i in (0, 150, 299):
        assert (await q.get(many[i]))["data"] == {"i": i}
    assert (await q.counts())["waiting"] == 304
    await q.obliterate(force=True)
    await q.close()


async def test_adds_while_others_are_unanswered_are_pipelined_up_to_the_depth(standalone, qname, monkeypatch):
    import emq._direct

    q = await emq.Queue.connect(standalone, qname)
    await q.add("first", 0)
    await q.add("direct", 1)
    conn = q._direct._conn
    assert conn is not None
    seen = {"direct": 0, "usual": 0, "deepest": 0}
    native = q._direct._native

    class Counting:
        """The native handle, counting the direct and the usual adds."""

        def __getattr__(self, name):
            return getattr(native, name)

        def direct_add(self, *a):
            call = native.direct_add(*a)
            if call is not None:
                seen["direct"] += 1
                seen["deepest"] = max(seen["deepest"], len(conn.waiting) + 1)
            return call

        def add(self, *a):
            seen["usual"] += 1
            return native.add(*a)

    q._direct._native = Counting()
    # The server holds its replies back (a write pause of 300 ms): every add below is unanswered
    # while the next arrives.
    assert raw(standalone, "CLIENT", "PAUSE", "300", "WRITE").startswith(b"+OK")
    ids = await asyncio.gather(*(q.add("pipe", {"i": i}) for i in range(40)))
    assert (seen["direct"], seen["usual"], seen["deepest"]) == (40, 0, 40)
    assert len(set(ids)) == 40
    assert (await q.get(ids[39]))["data"] == {"i": 39}
    # Past the depth, an add goes the usual way; each job is added once either way.
    monkeypatch.setattr(emq._direct, "DEPTH", 2)
    seen.update(direct=0, usual=0, deepest=0)
    assert raw(standalone, "CLIENT", "PAUSE", "300", "WRITE").startswith(b"+OK")
    more = await asyncio.gather(*(q.add("deep", {"i": i}) for i in range(40)))
    assert (seen["direct"], seen["usual"], seen["deepest"]) == (2, 38, 2)
    assert len(set(more)) == 40
    assert q._direct._conn is conn and not conn.broken
    assert (await q.counts())["waiting"] == 82
    await q.obliterate(force=True)
    await q.close()


async def test_a_script_not_loaded_and_a_closed_socket_fall_back_once_with_the_same_id(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    await q.add("first", 0)
    await q.add("direct", 1)
    conn = q._direct._conn
    assert conn is not None
    # NOSCRIPT: the reply is not "added"; the usual path loads the script and adds the job once.
    assert raw(standalone, "SCRIPT", "FLUSH").startswith(b"+OK")
    a = await q.add("after flush", 2)
    assert (await q.get(a))["data"] == 2
    assert q._direct._conn is conn and not conn.broken, "a refused call keeps the socket"
    # The server closes the socket: the calls on it go the usual way, a new socket opens next.
    port = conn.sock.getsockname()[1]
    assert raw(standalone, "CLIENT", "KILL", "ADDR", f"127.0.0.1:{port}") == b":1\r\n"
    b = await q.add("after kill", 3)
    c = await q.add("next", 4)
    assert (await q.get(b))["data"] == 3 and (await q.get(c))["data"] == 4
    assert conn.broken and q._direct._conn is not None and q._direct._conn is not conn
    assert (await q.counts())["waiting"] == 5
    await q.obliterate(force=True)
    await q.close()


async def test_jobs_the_core_does_not_take_and_a_cluster_go_the_usual_way(standalone, cluster, qname):
    q = await emq.Queue.connect(standalone, qname)
    await q.add("first", 0)
    d = await q.add("delayed", 1, delay=30)
    p = await q.add("prio", 2, priority=1)
    k1 = await q.add("dedup", 3, dedup="k")
    k2 = await q.add("dedup", 4, dedup="k")
    assert k1 == k2
    counts = await q.counts()
    assert (counts["delayed"], counts["prioritized"], counts["waiting"]) == (1, 1, 2)
    assert (await q.get(d))["data"] == 1 and (await q.get(p))["data"] == 2
    # Bad input is the same typed error as on the usual path, and nothing is sent.
    for bad in ({"attempts": 0}, {"id": "not-an-id"}):
        try:
            await q.add("bad", 1, **bad)
        except emq.EmqError as e:
            assert e.code in ("invalid_option", "invalid_job_id")
        else:
            raise AssertionError(f"{bad} was accepted")
    assert (await q.counts())["waiting"] == 2
    await q.obliterate(force=True)
    await q.close()
    cq = await emq.Queue.connect(cluster, qname)
    assert cq._native.direct_endpoint() is None
    ids = [await cq.add("c", i) for i in range(3)]
    assert [(await cq.get(i))["data"] for i in ids] == [0, 1, 2]
    assert cq._direct._conn is None
    await cq.obliterate(force=True)
    await cq.close()


async def test_a_reply_that_does_not_come_gives_the_socket_up_and_adds_once(standalone, qname, monkeypatch):
    import emq._direct

    monkeypatch.setattr(emq._direct, "REPLY_TIMEOUT", 0.5)
    q = await emq.Queue.connect(standalone, qname)
    await q.add("first", 0)
    await q.add("direct", 1)
    conn = q._direct._conn
    assert conn is not None
    # The server holds every client's commands for 2.5 s: the direct call waits past the timeout,
    # the socket is given up and the job goes the usual way with its id. Once the pause ends both
    # calls run; the second finds the id and adds nothing.
    assert raw(standalone, "CLIENT", "PAUSE", "2500", "ALL").startswith(b"+OK")
    job = await q.add("paused", 2)
    assert conn.broken
    assert (await q.get(job))["data"] == 2
    assert (await q.counts())["waiting"] == 3
    await q.obliterate(force=True)
    await q.close()
