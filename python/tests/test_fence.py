"""`job.fence`, the run's fencing token (the core's `JobContext::fence`), on a real server: a job
whose first run fails and second succeeds sees a positive fence on each run, the second greater
than the first."""

from __future__ import annotations

import asyncio
import time

import emq
import emq.sync


async def wait_for(q: emq.Queue, job_id: str, limit: float = 20.0) -> dict:
    deadline = time.monotonic() + limit
    while True:
        job = await q.get(job_id)
        if job is not None and job["state"] in ("completed", "failed"):
            return job
        assert time.monotonic() < deadline, f"job {job_id} still {job and job['state']}"
        await asyncio.sleep(0.05)


async def test_async_handler_fence_grows_across_runs(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    job_id = await q.add("charge", {}, attempts=2, backoff=("fixed", 0.05))
    fences = []

    async def handle(job: emq.Job) -> int:
        fences.append(job.fence)
        if job.attempt == 1:
            raise ValueError("first run fails")
        return job.fence

    worker = emq.Worker(q, handle)
    try:
        job = await wait_for(q, job_id)
    finally:
        await worker.close()
    assert job["state"] == "completed", job
    assert len(fences) == 2, fences
    assert all(isinstance(f, int) and f > 0 for f in fences), fences
    assert fences[1] > fences[0], fences
    assert job["result"] == fences[1]
    await q.close()


def test_sync_handler_fence_grows_across_runs(standalone, qname):
    q = emq.sync.Queue.connect(standalone, qname)
    job_id = q.add("charge", {}, attempts=2, backoff=("fixed", 0.05))
    fences = []

    def handle(job: emq.Job) -> str:
        fences.append(job.fence)
        if job.attempt == 1:
            raise ValueError("first run fails")
        return "ok"

    w = emq.sync.Worker(q, handle)
    try:
        result = q.wait(job_id, 20)
    finally:
        w.close()
    assert result == "ok"
    assert len(fences) == 2, fences
    assert all(isinstance(f, int) and f > 0 for f in fences), fences
    assert fences[1] > fences[0], fences
    q.close()
