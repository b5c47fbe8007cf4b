"""Batches from Python (the core's `core/src/batch/`), on real servers (standalone and cluster):
jobs on another queue, a running job adding to its batch, the callbacks added once after the last
outcome with the batch's counts, the failed jobs paged by `status`, `cancel`, bad input refused
with its code; the sync API does the same."""

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


@pytest.mark.parametrize("topology", ["standalone", "cluster"])
async def test_callbacks_run_once_after_jobs_and_their_children(request, topology, qname):
    url = request.getfixturevalue(topology)
    q = await emq.Queue.connect(url, qname)
    jobs = await emq.Queue.connect(url, qname + "-jobs")
    cb = await emq.Queue.connect(url, qname + "-cb")
    batch = await q.batch(
        on_complete={"queue": cb.name, "name": "complete", "data": {"k": 1}, "options": {"attempts": 2}},
        on_success={"queue": cb.name, "name": "success", "data": None},
        description="import",
    )
    assert batch.queue == qname
    await batch.add(jobs.name, "spawn", {"children": 2})
    ids = await batch.add_bulk(jobs.name, [("work", {"fail": True}), ("work", {"fail": False})])
    await batch.seal()

    async def handle(job: emq.Job) -> str:
        if job.name == "spawn":
            assert job.batch is not None and job.batch.id == batch.id
            for i in range(job.data["children"]):
                await job.batch.add(jobs.name, "child", {"i": i})
        if job.data.get("fail"):
            raise ValueError("broke")
        return "ok"

    worker = emq.Worker(jobs, handle, concurrency=4)
    try:
        async def done() -> bool:
            return (await batch.status())["done"]

        await wait_until("the batch done", done)
    finally:
        await worker.close()
    st = await batch.status()
    assert (st["total"], st["completed"], st["failed"], st["pending"]) == (5, 4, 1, 0), st
    assert st["description"] == "import" and st["sealed"] and not st["cancelled"]
    assert st["failed_jobs"] == [{"queue": jobs.name, "id": ids[0]}]
    waiting = await cb.list("waiting")
    assert [j["name"] for j in waiting] == ["complete"], waiting
    [callback] = waiting
    assert callback["data"] == {"k": 1} and callback["attempts"] == 2
    done_info = callback["options"]["batch_done"]
    assert (done_info["kind"], done_info["id"], done_info["total"], done_info["failed"]) == (
        "complete", batch.id, 5, 1)
    with pytest.raises(emq.InvalidState):
        await batch.add(jobs.name, "late", 1)
    for x in (q, jobs, cb):
        await x.close()


async def test_status_pages_and_cancel_and_bad_input(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    batch = await q.batch()
    await batch.add_bulk(qname + "-j", [("a", i) for i in range(3)])
    await batch.seal()
    assert await batch.cancel() == 3
    assert await batch.cancel() == 0
    st = await batch.status(0, 2)
    assert st["cancelled"] and (st["pending"], st["failed"]) == (0, 3) and not st["done"], st
    with pytest.raises(emq.InvalidState):
        await batch.add(qname + "-j", "more", 1)
    with pytest.raises(emq.InvalidQueueName):
        await q.batch(on_complete={"queue": "a b", "name": "x"})
    with pytest.raises(emq.InvalidOption):
        await q.batch(on_complete={"name": "x"})
    with pytest.raises(emq.InvalidOption):
        await q.batch(description="x" * 1025)
    with pytest.raises(emq.InvalidOption):
        await batch.add(qname, "d", 1, dedup="k")
    with pytest.raises(emq.InvalidJobId):
        q.open_batch("nope")
    with pytest.raises(emq.JobNotFound):
        await q.open_batch(q.mint_id()).status()
    await q.close()


def test_the_sync_api_runs_a_batch(standalone, qname):
    q = emq.sync.Queue.connect(standalone, qname)
    cb = emq.sync.Queue.connect(standalone, qname + "-cb")
    batch = q.batch(on_success={"queue": cb.name, "name": "all-good", "data": [1]})
    batch.add(qname, "one", 1, attempts=1)
    batch.seal()

    def handle(job: emq.Job) -> int:
        if job.name == "one":
            job.batch.add(qname, "two", 2)
        return 0

    worker = emq.sync.Worker(q, handle)
    deadline = time.monotonic() + 20
    while not batch.status()["done"]:
        assert time.monotonic() < deadline, "timed out waiting for the batch"
        time.sleep(0.05)
    worker.close()
    st = batch.status()
    assert (st["total"], st["completed"]) == (2, 2), st
    [success] = cb.list("waiting")
    assert success["name"] == "all-good" and success["options"]["batch_done"]["kind"] == "success"
    q.close()
    cb.close()


@pytest.mark.parametrize("topology", ["standalone", "cluster"])
async def test_a_batch_inside_a_batch_counts_as_one_job_of_its_parent(request, topology, qname):
    url = request.getfixturevalue(topology)
    q = await emq.Queue.connect(url, qname)
    jobs = await emq.Queue.connect(url, qname + "-jobs")
    cb = await emq.Queue.connect(url, qname + "-cb")
    parent = await q.batch(on_complete={"queue": cb.name, "name": "parent-done", "data": None})
    await parent.add(jobs.name, "direct", 1)
    child = await parent.batch(
        on_success={"queue": cb.name, "name": "child-ok", "data": None}, description="pages"
    )
    await child.add_bulk(jobs.name, [("page", i) for i in range(3)])
    await child.seal()
    await parent.seal()
    assert (await parent.status())["total"] == 2
    cst = await child.status()
    assert cst["parent"] == {"queue": qname, "id": parent.id}, cst
    assert cst["description"] == "pages"
    assert (await parent.status())["parent"] is None

    worker = emq.Worker(jobs, lambda job: asyncio.sleep(0, "ok"), concurrency=2)
    try:
        async def done() -> bool:
            return (await parent.status())["done"]

        await wait_until("the parent batch done", done)
    finally:
        await worker.close()
    st = await parent.status()
    assert (st["total"], st["completed"], st["failed"], st["pending"]) == (2, 2, 0, 0), st
    assert (await child.status())["done"]
    names = sorted(j["name"] for j in await cb.list("waiting"))
    assert names == ["child-ok", "parent-done"], names
    for x in (q, jobs, cb):
        await x.close()


def test_the_sync_api_nests_a_batch(standalone, qname):
    q = emq.sync.Queue.connect(standalone, qname)
    parent = q.batch()
    child = parent.batch(description="inner")
    child.add(qname, "one", 1)
    child.seal()
    parent.seal()
    assert child.status()["parent"] == {"queue": qname, "id": parent.id}
    assert child.cancel() == 1
    st = parent.status()
    assert (st["total"], st["failed"], st["done"]) == (1, 1, True), st
    q.close()


@pytest.mark.parametrize("topology", ["standalone", "cluster"])
async def test_an_outside_id_is_counted_out_and_a_removed_job_counts_failed(request, topology, qname):
    url = request.getfixturevalue(topology)
    q = await emq.Queue.connect(url, qname)
    jobs = await emq.Queue.connect(url, qname + "-jobs")
    loose = await jobs.add("work", {"i": "loose"})
    batch = await q.batch()
    # An id of a job that is no batch's: returned, the job left as it was, and not counted in.
    assert await batch.add(jobs.name, "work", {"i": "again"}, id=loose) == loose
    assert (await jobs.get(loose))["data"] == {"i": "loose"}
    kept, gone = await batch.add_bulk(jobs.name, [("work", {"i": 1}), ("work", {"i": 2})])
    st = await batch.status()
    assert (st["total"], st["pending"]) == (2, 2), st
    # A job of the batch removed before its outcome counts as failed at once.
    assert await jobs.remove(gone)
    st = await batch.status()
    assert (st["pending"], st["failed"]) == (1, 1), st
    assert st["failed_jobs"] == [{"queue": jobs.name, "id": gone}]
    await batch.seal()
    worker = emq.Worker(jobs, lambda job: "ok", concurrency=2)
    try:
        async def done() -> bool:
            return (await batch.status())["done"]

        await wait_until("the batch done", done)
    finally:
        await worker.close()
    st = await batch.status()
    assert (st["total"], st["completed"], st["failed"]) == (2, 1, 1), st
    assert (await jobs.get(kept))["state"] == "completed"
