"""The handler's job is an object (issue 15 item 8): typed attributes, `attempt` counted from 1,
progress and log from a plain `def` handler without `await`; the attributes are its one form (the
earlier dict form is gone: the package was never released with it)."""

from __future__ import annotations

import asyncio
import time
import warnings

import emq
import emq.sync


async def wait_for(q: emq.Queue, job_id: str, states=("completed", "failed"), limit: float = 20.0) -> dict:
    deadline = time.monotonic() + limit
    while True:
        job = await q.get(job_id)
        if job is not None and job["state"] in states:
            return job
        assert time.monotonic() < deadline, f"job {job_id} still {job and job['state']}"
        await asyncio.sleep(0.05)


async def test_async_handler_reads_attributes_and_attempt_counts_from_one(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    job_id = await q.add("send", {"to": "ada"}, attempts=3, backoff=("fixed", 0.05), priority=2)
    seen = []

    async def handle(job: emq.Job) -> dict:
        seen.append((job.id, job.name, job.data, job.attempt, job.attempts_made, job.attempts, job.parent))
        assert isinstance(job, emq.Job)
        assert job.options.get("attempts") == 3 and job.priority == 2
        # One form: attributes (no mapping of the fields beside them).
        assert not hasattr(job, "__getitem__") and not hasattr(job, "keys")
        if job.attempt < 2:
            raise ValueError("first run fails")
        await job.progress(75)
        assert await job.log("sent") == 1
        return {"sent": job.data["to"], "attempt": job.attempt}

    worker = emq.Worker(q, handle)
    try:
        job = await wait_for(q, job_id)
    finally:
        await worker.close()
    assert job["state"] == "completed", job
    assert job["result"] == {"sent": "ada", "attempt": 2}
    assert seen == [
        (job_id, "send", {"to": "ada"}, 1, 0, 3, None),
        (job_id, "send", {"to": "ada"}, 2, 1, 3, None),
    ]
    assert job["progress"] == 75 and await q.logs(job_id) == ["sent"]
    await q.close()


async def test_def_handler_reports_progress_and_logs_without_await(standalone, qname):
    # Before: Job.progress was `async def`, so a plain def handler calling job.progress(...) got a
    # coroutine that never ran ("coroutine ... was never awaited") and nothing was recorded.
    q = await emq.Queue.connect(standalone, qname)
    job_id = await q.add("t", 7)
    kept = []

    def handle(job: emq.Job) -> int:
        job.progress({"pct": 50})
        kept.append(job.log("halfway"))
        kept.append(job.log("done"))
        return job.data + job.attempt

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        worker = emq.Worker(q, handle)
        try:
            job = await wait_for(q, job_id)
        finally:
            await worker.close()
    assert job["state"] == "completed" and job["result"] == 8, job
    assert job["progress"] == {"pct": 50}
    assert await q.logs(job_id) == ["halfway", "done"]
    assert [int(k.value) for k in kept] == [1, 2]
    assert not [w for w in caught if "never awaited" in str(w.message)], [str(w.message) for w in caught]
    await q.close()


def test_sync_worker_job_is_an_object_too(standalone, qname):
    q = emq.sync.Queue.connect(standalone, qname)
    job_id = q.add("t", {"n": 2})
    got = []

    def handle(job: emq.Job) -> int:
        got.append((job.name, job.attempt))
        job.progress("half")
        return int(job.data["n"]) * 3

    w = emq.sync.Worker(q, handle)
    try:
        result = q.wait(job_id, 20)
    finally:
        w.close()
    assert result == 6 and got == [("t", 1)]
    assert q.get(job_id)["progress"] == "half"
    q.close()
