"""Dead-letter queues from Python (the core's `core/src/dead_letter.rs`), on a real server: a job
that fails for good moves to its `dead_letter` queue with its data and origin, the queue default
applies to jobs without the option, replay sends it back with its attempts reset, and a bad name
is refused with its code; the sync API reads the same."""

from __future__ import annotations

import asyncio
import time

import pytest

import emq
import emq.sync


async def wait_until(what: str, check, limit: float = 20.0) -> None:
    deadline = time.monotonic() + limit
    while not await check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


async def test_a_job_failed_for_good_moves_to_its_dead_letter_queue_and_replays(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    dlq = await emq.Queue.connect(standalone, qname + "-dlq")
    other = await emq.Queue.connect(standalone, qname + "-other")
    await q.set_dead_letter(qname + "-other")
    assert await q.dead_letter() == qname + "-other"
    data = {"to": "ada@example.com", "n": 1.5, "s": "é\u2028"}
    own = await q.add("charge", data, attempts=2, backoff=("fixed", 0.01), dead_letter=qname + "-dlq")
    by_default = await q.add("charge", {"n": 2}, attempts=1)
    fail = True

    async def handle(job: emq.Job) -> str:
        if fail:
            raise ValueError(f"card declined {job.data}")
        return "ok"

    worker = emq.Worker(q, handle)
    try:
        async def moved() -> bool:
            return len(await dlq.dead_letters()) == 1 and len(await other.dead_letters()) == 1

        await wait_until("both jobs dead-lettered", moved)
    finally:
        await worker.close()
    [entry] = await dlq.dead_letters()
    origin = entry["origin"]
    assert (origin["queue"], origin["id"], origin["attempts_made"]) == (qname, own, 2), origin
    assert "card declined" in origin["failure"]["message"], origin
    moved_job = await dlq.get(entry["id"])
    assert moved_job is not None and moved_job["data"] == data, moved_job
    assert (await other.dead_letters())[0]["origin"]["id"] == by_default
    assert await q.get(own) is None, "the original left its queue"

    fail = False
    replayed = await dlq.replay_dead_letters()
    assert [(r["queue"], r["origin_id"]) for r in replayed] == [(qname, own)], replayed
    assert await dlq.dead_letters() == []
    worker = emq.Worker(q, handle)
    try:
        async def done() -> bool:
            job = await q.get(own)
            return job is not None and job["state"] == "completed"

        await wait_until("the replayed job completes", done)
    finally:
        await worker.close()
    job = await q.get(own)
    assert job is not None and job["attempts_made"] == 1 and job["data"] == data, job


async def test_bad_dead_letter_names_are_refused(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    with pytest.raises(emq.InvalidQueueName):
        await q.add("x", {}, dead_letter="bad{name}")
    with pytest.raises(emq.InvalidOption):
        await q.add("x", {}, dead_letter=qname)
    with pytest.raises(emq.InvalidQueueName):
        await q.set_dead_letter("")
    assert (await q.counts())["waiting"] == 0, "a refused add writes nothing"


def test_sync_reads_the_queue_default(standalone, qname):
    q = emq.sync.Queue.connect(standalone, qname)
    assert q.dead_letter() is None
    q.set_dead_letter(qname + "-dlq")
    assert q.dead_letter() == qname + "-dlq"
    q.set_dead_letter(None)
    assert q.dead_letter() is None
    assert q.dead_letters() == []
