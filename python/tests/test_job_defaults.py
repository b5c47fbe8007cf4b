"""A queue's job defaults from Python (the core's `core/src/job_defaults.rs`), on a real server:
a job added with no options runs with the queue's attempts and backoff and is removed on
completion as the defaults say, while its record stores no options; the defaults read back as
they were given (seconds, Python's backoff tuple); a bad or foreign option is refused with its
code and changes nothing; the sync API reads and writes the same."""

from __future__ import annotations

import asyncio
import time

import pytest

import emq
import emq.sync


async def test_a_job_without_options_runs_with_the_queue_defaults(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    await q.set_job_defaults(attempts=3, backoff=("fixed", 0.02), remove_on_complete=True)
    assert await q.job_defaults() == {"attempts": 3, "backoff": ("fixed", 0.02), "remove_on_complete": True}
    job_id = await q.add("charge", {"n": 1})
    stored = await q.get(job_id)
    assert stored["options"] == {}, stored
    seen = []

    async def handle(job: emq.Job) -> str:
        seen.append(job.attempts)
        if len(seen) < 3:
            raise ValueError("not yet")
        return "ok"

    worker = emq.Worker(q, handle)
    try:
        deadline = time.monotonic() + 20
        while await q.get(job_id) is not None:
            assert time.monotonic() < deadline, f"still there after {seen}"
            await asyncio.sleep(0.05)
    finally:
        await worker.close()
    assert seen == [3, 3, 3], "three runs, each seeing the queue's attempts"
    counts = await q.counts()
    assert (counts["completed"], counts["failed"]) == (0, 0), counts


async def test_defaults_read_back_and_bad_ones_change_nothing(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    given = {
        "attempts": 5,
        "backoff": ("exponential", 0.5, 30.0),
        "jitter": 0.25,
        "remove_on_complete": {"count": 100, "age": 3600.0},
        "remove_on_fail": 10,
    }
    await q.set_job_defaults(**given)
    back = await q.job_defaults()
    assert back["attempts"] == 5 and back["backoff"] == ("exponential", 0.5, 30.0)
    assert back["jitter"] == 0.25
    assert back["remove_on_complete"] == {"count": 100, "age": 3600.0}
    assert back["remove_on_fail"] == 10
    with pytest.raises(emq.InvalidOption):
        await q.set_job_defaults(attempts=0)
    with pytest.raises(emq.InvalidOption):
        await q.set_job_defaults(priority=3)
    with pytest.raises(emq.InvalidOption):
        await q.set_job_defaults(jitter=1.5)
    assert (await q.job_defaults())["attempts"] == 5, "unchanged by the refusals"
    await q.set_job_defaults()
    assert await q.job_defaults() == {}


def test_sync_sets_and_reads_the_defaults(standalone, qname):
    q = emq.sync.Queue.connect(standalone, qname)
    assert q.job_defaults() == {}
    q.set_job_defaults(attempts=2, backoff=None)
    assert q.job_defaults() == {"attempts": 2, "backoff": None}
    with pytest.raises(emq.InvalidOption):
        q.set_job_defaults(group="g")
    q.set_job_defaults()
    assert q.job_defaults() == {}
