"""Retention as options, from Python on a real server (EMQ_GUARD=1): a job's own
``remove_on_complete`` / ``remove_on_fail`` by count and by age (seconds or a timedelta), the
queue-wide default as a ``Worker`` option, and bad shapes refused with ``InvalidOption``."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import pytest

import emq


async def eventually(check, limit: float = 15.0, what: str = "condition"):
    deadline = time.monotonic() + limit
    while True:
        value = await check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


async def test_a_jobs_count_keeps_the_newest_completed_and_failed(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)

    async def handle(job):
        if job.name == "bad":
            raise RuntimeError("no")
        return 1

    ids = [await q.add("ok", i, remove_on_complete=2) for i in range(5)]
    bad = [await q.add("bad", i, remove_on_fail={"count": 1}) for i in range(3)]
    # Queue-wide: keep everything, so what goes is the jobs' own retention.
    w = emq.Worker(q, handle, remove_on_complete=False, remove_on_fail=False)
    try:

        async def trimmed():
            c = await q.counts()
            return c["completed"] == 2 and c["failed"] == 1 and c["waiting"] == 0 and c["active"] == 0

        await eventually(trimmed, what="the jobs' own retention")
        assert [await q.get(i) is not None for i in ids] == [False, False, False, True, True]
        assert await q.get(bad[2]) is not None
    finally:
        await w.close()
        await q.close()


@pytest.mark.parametrize("age", [0.8, timedelta(milliseconds=800)])
async def test_a_jobs_age_removes_it_once_it_is_that_old(standalone, qname, age):
    q = await emq.Queue.connect(standalone, qname)

    async def handle(job):
        return 1

    w = emq.Worker(q, handle, remove_on_complete=False)
    try:
        job_id = await q.add("a", 1, remove_on_complete={"age": age})
        assert await q.wait(job_id, 10) == 1
        await asyncio.sleep(0.3)
        assert await q.get(job_id) is not None, "kept while younger than its age"

        async def gone():
            return await q.get(job_id) is None

        # The worker's periodic trim (every 5 s) applies the job's age once it has passed.
        await eventually(gone, limit=15.0, what="the job to age out")
    finally:
        await w.close()
        await q.close()


async def test_queue_wide_retention_and_bad_shapes(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)

    async def handle(job):
        return 1

    for opt in [True, False, 5, {"count": 10}, {"age": 60}, {"count": 10, "age": timedelta(hours=1)}]:
        w = emq.Worker(q, handle, remove_on_complete=opt, remove_on_fail=opt)
        await w.close()
    for bad in [{}, -1, {"count": -1}, {"age": -1}, {"cuont": 3}, "all", 1.5]:
        with pytest.raises(emq.InvalidOption):
            emq.Worker(q, handle, remove_on_complete=bad)
        with pytest.raises(emq.InvalidOption):
            await q.add("x", 1, remove_on_complete=bad)
    # The option reads back as stored: a count becomes {"count": n}.
    job_id = await q.add("x", 1, remove_on_complete=3, remove_on_fail=True)
    job = await q.get(job_id)
    assert job["options"]["remove_on_complete"] == {"count": 3}
    assert job["options"]["remove_on_fail"] is True
    await q.close()
