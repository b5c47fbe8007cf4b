"""One worker on several queues (the core's `Worker::builder_many`), on a real server: strict
order, weights 5:1, bad orders refused with `InvalidOption`, `queues` and per-queue stats read
back; the async `emq.Worker` and `emq.sync.Worker`."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

import emq
import emq.sync
from emq.errors import InvalidOption


async def wait_done(worker, n: int, limit: float = 60.0) -> None:
    """By the worker's counters: the queues' ``completed`` counts stop at the default retention
    (the newest 1,000)."""
    deadline = time.monotonic() + limit
    while True:
        done = worker.stats()["completed"]
        if done == n:
            return
        assert time.monotonic() < deadline, f"{done} of {n} done"
        await asyncio.sleep(0.05)


async def test_strict_starts_every_job_of_the_first_queue_before_the_second(standalone, qname):
    a = await emq.Queue.connect(standalone, qname + "-a")
    b = await emq.Queue.connect(standalone, qname + "-b")
    # b's jobs first: the worker's order decides, not the order of adds.
    await b.add_bulk([("b", {})] * 30)
    await a.add_bulk([("a", {})] * 30)
    starts = []

    async def handle(job: emq.Job) -> None:
        starts.append(job.name)
        await asyncio.sleep(0.002)

    worker = emq.Worker([a, b], handle, concurrency=2, strict=True)
    try:
        assert worker.queues == [a.name, b.name]
        await wait_done(worker, 60)
        per = worker.stats_by_queue()
    finally:
        await worker.close()
    assert starts.index("b") == 30 and set(starts[:30]) == {"a"}, starts
    assert list(per) == [a.name, b.name]
    assert (per[a.name]["completed"], per[b.name]["completed"]) == (30, 30)
    assert worker.stats()["completed"] == 60


async def test_weights_share_starts_five_to_one(standalone, qname):
    a = await emq.Queue.connect(standalone, qname + "-a")
    b = await emq.Queue.connect(standalone, qname + "-b")
    await a.add_bulk([("a", {})] * 1_200)
    await b.add_bulk([("b", {})] * 1_200)
    starts = []

    async def handle(job: emq.Job) -> None:
        starts.append(job.name)

    worker = emq.Worker([a, b], handle, concurrency=4, weights={a.name: 5, b.name: 1})
    try:
        await wait_done(worker, 2_400, limit=120)
    finally:
        await worker.close()
    a_starts = starts[:1_200].count("a")
    # The weights reach the core: 5:1 is 1,000 of 1,200; equal weights would be 600. The core's
    # exact share is measured in bench/RESULTS.md ("Multi-queue worker"), not asserted here.
    assert 900 <= a_starts <= 1_140, f"5:1 means about 1,000 of the first 1,200 starts, saw {a_starts}"


@pytest.mark.parametrize(
    "kwargs, says",
    [
        (dict(strict=True, weights={"x": 1}), "exclude each other"),
        (dict(weights={"nope": 2}), "not one of the worker's queues"),
        (dict(weights={"A": 0}), "between 1 and 1000"),
        (dict(weights={"A": 1_001}), "and 1000, got 1001"),
        (dict(weights={"A": 2.5}), "whole number"),
        (dict(weights={"A": True}), "whole number"),
        (dict(weights=[("A", 2)]), "weights must be"),
        (dict(strict="yes"), "strict must be a bool"),
    ],
)
async def test_bad_orders_are_refused_with_invalid_option(standalone, qname, kwargs, says):
    a = await emq.Queue.connect(standalone, qname + "-a")
    b = await emq.Queue.connect(standalone, qname + "-b")
    kwargs = {k: ({a.name if n == "A" else n: w for n, w in v.items()} if isinstance(v, dict) else v) for k, v in kwargs.items()}

    async def handle(job: emq.Job) -> None:
        return None

    with pytest.raises(InvalidOption) as e:
        emq.Worker([a, b], handle, **kwargs)
    assert e.value.code == "invalid_option"
    assert says in str(e.value), str(e.value)


async def test_bad_queue_lists_are_refused_with_invalid_option(standalone, qname):
    a = await emq.Queue.connect(standalone, qname + "-a")

    async def handle(job: emq.Job) -> None:
        return None

    for queues, says in [([], "at least one queue"), ([a, a], "named twice"), ([a, "b"], "list of Queues")]:
        with pytest.raises(InvalidOption) as e:
            emq.Worker(queues, handle)
        assert says in str(e.value), str(e.value)
    assert (await a.counts())["active"] == 0


async def test_one_queue_still_works_and_names_itself(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    await q.add("one", {})

    async def handle(job: emq.Job) -> str:
        return "ok"

    worker = emq.Worker(q, handle)
    try:
        await wait_done(worker, 1)
        assert worker.queues == [q.name]
        assert worker.stats_by_queue() == {q.name: worker.stats()}
    finally:
        await worker.close()


def test_sync_worker_on_several_queues_strict(standalone, qname):
    a = emq.sync.Queue.connect(standalone, qname + "-a")
    b = emq.sync.Queue.connect(standalone, qname + "-b")
    b.add_bulk([("b", {})] * 20)
    a.add_bulk([("a", {})] * 20)
    starts = []
    lock = threading.Lock()

    def handle(job: emq.Job) -> None:
        with lock:
            starts.append(job.name)

    w = emq.sync.Worker([a, b], handle, concurrency=1, strict=True)
    try:
        assert w.queues == [a.name, b.name]
        deadline = time.monotonic() + 30
        while w.stats()["completed"] < 40:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert [s["completed"] for s in w.stats_by_queue().values()] == [20, 20]
    finally:
        w.close()
    assert starts == ["a"] * 20 + ["b"] * 20, starts
    with pytest.raises(InvalidOption):
        emq.sync.Worker([a, b], handle, weights={"nope": 1})
