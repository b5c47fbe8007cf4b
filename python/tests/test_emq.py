"""The Python binding on real servers (standalone and a 3-master cluster), EMQ_GUARD=1."""

from __future__ import annotations

import asyncio
import os
import sys
import time

import pytest

import emq
import emq.sync
from emq import errors


async def wait_for(q: emq.Queue, job_id: str, states=("completed", "failed"), limit: float = 20.0) -> dict:
    deadline = time.monotonic() + limit
    while True:
        job = await q.get(job_id)
        if job is not None and job["state"] in states:
            return job
        assert time.monotonic() < deadline, f"job {job_id} still {job and job['state']}"
        await asyncio.sleep(0.05)


def test_error_classes_cover_every_core_code():
    codes = set(emq._emq.error_codes())
    assert codes == set(errors._BY_CODE)
    for code in codes:
        exc = errors.error_for_code(code, "m")
        assert isinstance(exc, errors.EmqError) and exc.code == code and exc.message == "m"
    assert errors.InvalidQueueName.code == "invalid_queue_name"


@pytest.mark.parametrize("topology", ["standalone", "cluster"])
async def test_async_handler_completes(request, topology, qname):
    url = request.getfixturevalue(topology)
    q = await emq.Queue.connect(url, qname)
    ids = [await q.add("double", {"n": i}) for i in range(5)]
    ids += await q.add_bulk([("double", {"n": 5}), ("double", {"n": 6}, {"priority": 1}), {"name": "double", "data": {"n": 7}}])
    assert len(set(ids)) == 8
    seen = []

    async def handle(job):
        await asyncio.sleep(0.01)
        seen.append(job.id)
        return job.data["n"] * 2

    worker = emq.Worker(q, handle, concurrency=4)
    try:
        jobs = [await wait_for(q, i) for i in ids]
    finally:
        await worker.close()
    assert sorted(seen) == sorted(ids)
    for n, job in enumerate(jobs):
        assert job["state"] == "completed", job
        assert job["result"] == n * 2
        assert job["name"] == "double" and job["id"] == ids[n]
    counts = await q.counts()
    assert counts["completed"] == 8 and counts["waiting"] == 0
    await q.close()


async def test_sync_handler_completes(standalone, qname):
    import threading

    q = await emq.Queue.connect(standalone, qname)
    job_id = await q.add("upper", {"s": "abc"})
    threads = []

    def handle(job):
        threads.append(threading.current_thread().name)
        time.sleep(0.01)  # a blocking call in a plain def is fine: it runs in a thread
        return {"s": job.data["s"].upper()}

    worker = emq.Worker(q, handle)
    try:
        job = await wait_for(q, job_id)
    finally:
        await worker.close()
    assert job["state"] == "completed"
    assert job["result"] == {"s": "ABC"}
    assert threads and threads[0] != threading.main_thread().name
    await q.close()


async def test_exception_retries_then_fails_with_traceback(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    flaky = await q.add("flaky", {}, attempts=2, backoff=("fixed", 0.05))
    doomed = await q.add("doomed", {}, attempts=2)
    runs = {}

    async def handle(job):
        runs[job.name] = runs.get(job.name, 0) + 1
        if job.name == "flaky" and runs["flaky"] == 1:
            raise ValueError("first try fails")
        if job.name == "doomed":
            raise RuntimeError(f"always fails ({runs['doomed']})")
        return "ok"

    worker = emq.Worker(q, handle)
    try:
        ok = await wait_for(q, flaky)
        bad = await wait_for(q, doomed, states=("failed",))
    finally:
        await worker.close()
    assert ok["state"] == "completed" and ok["result"] == "ok" and ok["attempts_made"] == 2
    assert runs["doomed"] == 2
    assert bad["state"] == "failed" and bad["attempts_made"] == 2
    assert bad["failure"]["message"] == "always fails (2)"
    assert "Traceback" in bad["failure"]["stack"] and "RuntimeError" in bad["failure"]["stack"]
    assert "in handle" in bad["failure"]["stack"]
    await q.close()


async def test_unrecoverable_skips_retries(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    job_id = await q.add("bad", {}, attempts=5)
    sync_id = await q.add("bad-sync", {}, attempts=5)
    runs = []

    def handle(job):
        runs.append(job.name)
        raise emq.Unrecoverable("do not retry " + job.name)

    worker = emq.Worker(q, handle, concurrency=2)
    try:
        job = await wait_for(q, job_id, states=("failed",))
        job2 = await wait_for(q, sync_id, states=("failed",))
    finally:
        await worker.close()
    assert job["attempts_made"] == 1 and job2["attempts_made"] == 1
    assert job["failure"]["message"] == "do not retry bad"
    assert "Unrecoverable" in job["failure"]["stack"]
    assert sorted(runs) == ["bad", "bad-sync"]
    await q.close()


async def test_non_json_result_fails_the_job(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    job_id = await q.add("x", {})

    async def handle(job):
        return {1, 2}  # a set is not JSON

    worker = emq.Worker(q, handle)
    try:
        job = await wait_for(q, job_id, states=("failed",))
    finally:
        await worker.close()
    assert job["failure"]["code"] == "invalid_payload"
    await q.close()


async def test_bad_input_raises_typed_errors(standalone, qname):
    with pytest.raises(emq.InvalidQueueName) as e:
        await emq.Queue.connect(standalone, "a:b")
    assert e.value.code == "invalid_queue_name" and isinstance(e.value, emq.EmqError)

    q = await emq.Queue.connect(standalone, qname)
    with pytest.raises(emq.InvalidPayload) as e:
        await q.add("x", {"when": object()})
    assert e.value.code == "invalid_payload"
    with pytest.raises(emq.InvalidPayload):
        await q.add("x", float("nan"))
    with pytest.raises(emq.InvalidPayload):
        await q.add_bulk([("ok", 1), ("bad", {1, 2})])
    assert (await q.counts())["waiting"] == 0, "nothing was sent"

    with pytest.raises(emq.InvalidJobId) as e:
        await q.get("not-an-id")
    assert e.value.code == "invalid_job_id"
    real = await q.add("x", 1)
    assert len(real) == 16 and (await q.get(real))["state"] == "waiting"
    # Forged: one body digit changed, check digits kept (1 in 1024 passes the check by chance,
    # and then simply names no job).
    refused = 0
    for c in "0123456789abcdefghjkmnpqrstvwxyz":
        if c == real[10]:
            continue
        try:
            assert await q.get(real[:10] + c + real[11:]) is None
        except emq.InvalidJobId as err:
            assert err.code == "invalid_job_id"
            refused += 1
    assert refused >= 28
    with pytest.raises(emq.InvalidJobId):
        await q.get(real + "x")
    with pytest.raises(emq.InvalidJobId):
        await q.get(123)  # type: ignore[arg-type]

    with pytest.raises(emq.InvalidOption) as e:
        await q.add("x", 1, attempts=0)
    assert e.value.code == "invalid_option"
    with pytest.raises(emq.InvalidOption):
        await q.add("x", 1, delay=-1)
    with pytest.raises(emq.InvalidOption):
        await q.add("x", 1, backoff=("sideways", 1))
    with pytest.raises(emq.InvalidOption):
        await q.add("x", 1, bogus=True)
    await q.close()


async def test_unreachable_server(qname):
    with pytest.raises(emq.ServerUnavailable) as e:
        await emq.Queue.connect("redis://127.0.0.1:1", qname)
    assert e.value.code == "server_unavailable"


async def test_worker_options_have_the_cores_bounds(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)

    async def handle(job):
        return None

    # 2**63 raised a raw OverflowError; 10**9 was accepted; stalled_interval could not be set.
    for bad in (dict(concurrency=2**63), dict(concurrency=10**9), dict(concurrency=0),
                dict(concurrency=-1), dict(concurrency=1.5), dict(concurrency=True),
                dict(stalled_interval=0), dict(max_stalls=-1), dict(max_stalls=2**40)):
        with pytest.raises(emq.InvalidOption):
            emq.Worker(q, handle, **bad)
    worker = emq.Worker(q, handle, concurrency=2, stalled_interval=0.5, max_stalls=3)
    await worker.close()
    await q.close()


async def test_workers_lists_a_live_python_worker(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    assert await q.workers() == []

    async def handle(job):
        return None

    worker = emq.Worker(q, handle, concurrency=3)
    try:
        deadline = time.monotonic() + 10
        while not await q.workers():
            assert time.monotonic() < deadline, "the worker never registered"
            await asyncio.sleep(0.05)
        [info] = await q.workers()
        assert info["language"] == "python" and info["concurrency"] == 3, info
        assert info["pid"] == os.getpid() and info["queue"] == qname.strip("{}"), info
    finally:
        await worker.close()
    assert await q.workers() == [], "a closed worker leaves the registry"
    await q.close()


async def test_options_pause_resume_dedup(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    a = await q.add("d", 1, dedup="k")
    b = await q.add("d", 2, dedup="k")
    assert a == b
    later = await q.add("later", None, delay=60)
    pri = await q.add("p", None, priority=3)
    assert (await q.get(later))["state"] == "delayed"
    assert (await q.get(pri))["state"] == "prioritized"
    await q.pause()
    await q.add("while-paused", None)
    counts = await q.counts()
    assert counts["paused"] >= 1 and counts["delayed"] == 1
    await q.resume()
    counts = await q.counts()
    assert counts["paused"] == 0 and counts["waiting"] >= 2
    await q.close()


async def test_cluster_url_list(cluster, qname):
    assert isinstance(cluster, list) and len(cluster) >= 3
    q = await emq.Queue.connect(cluster, qname)
    job_id = await q.add("c", {"k": "v"})
    job = await q.get(job_id)
    assert job["state"] == "waiting" and job["data"] == {"k": "v"}
    assert (await q.counts())["waiting"] == 1
    await q.close()


def test_sync_facade(standalone, cluster, qname):
    for url in (standalone, cluster):
        with emq.sync.Queue.connect(url, qname) as q:
            job_id = q.add("s", [1, 2, 3], priority=2)
            assert q.get(job_id)["data"] == [1, 2, 3]
            assert q.counts()["prioritized"] == 1
            assert len(q.add_bulk([("s", 1), ("s", 2)])) == 2
            with pytest.raises(emq.InvalidJobId):
                q.get("nope")
            q.pause()
            assert q.is_paused()
            plain = q.add("s", 0)
            assert q.get(plain)["state"] == "paused"
            q.resume()
            assert not q.is_paused()
            assert q.get(plain)["state"] == "waiting"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_fork_child_gets_its_own_runtime(standalone, qname):
    # The parent uses the runtime first (its threads exist), then forks.
    parent = emq.sync.Queue.connect(standalone, qname)
    parent.add("before-fork", 1)
    asyncio.run(_async_add(standalone, qname))
    pid = os.fork()
    if pid == 0:  # the child: a new Queue, sync and async, then exit 0
        code = 1
        try:
            try:
                parent.add("from-child", 0)  # the parent's handle is refused, not hung
            except emq.Closed:
                pass
            else:
                raise AssertionError("the parent's queue worked in the child")
            q = emq.sync.Queue.connect(standalone, qname)
            job_id = q.add("in-child", {"pid": os.getpid()})
            assert q.get(job_id)["data"] == {"pid": os.getpid()}
            asyncio.run(_async_add(standalone, qname))
            q.close()
            code = 0
        except BaseException as e:  # noqa: BLE001
            print(f"child failed: {e!r}", file=sys.stderr, flush=True)
        finally:
            os._exit(code)
    deadline = time.monotonic() + 30
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child did not finish within 30 s")
        time.sleep(0.05)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, f"child status {status}"
    # The parent's runtime still works after the fork.
    assert parent.add("after-fork", 2)
    assert parent.counts()["waiting"] == 5
    parent.close()


async def _async_add(url: str, name: str) -> None:
    q = await emq.Queue.connect(url, name)
    job_id = await q.add("async", {"x": 1})
    assert (await q.get(job_id))["state"] == "waiting"
    await q.close()
