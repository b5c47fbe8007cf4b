"""Children added by a running job (the core's `JobContext::add_child` / `Queue::add_child`), on
real servers (standalone and cluster): the job waits for them in waiting-children and runs again
with their results; a waiting parent takes one more child; a parent that is not waiting refuses
(`InvalidState`) and a dedup key is refused (`InvalidOption`); the sync API does the same."""

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
async def test_a_running_job_adds_children_and_runs_again_with_their_results(request, topology, qname):
    url = request.getfixturevalue(topology)
    q = await emq.Queue.connect(url, qname)
    kids = await emq.Queue.connect(url, qname + "-kids")
    job_id = await q.add("import", {"rows": 3})
    runs: list[int] = []

    async def parent(job: emq.Job) -> object:
        results = await job.children_results()
        runs.append(len(results))
        if not results:
            for n in range(1, job.data["rows"] + 1):
                await job.add_child(kids.name, "row", {"n": n}, attempts=2)
            return "spawned"
        return sum(v for v in results.values())

    async def child(job: emq.Job) -> int:
        return job.data["n"] * 10

    pw = emq.Worker(q, parent)
    try:
        async def waiting() -> bool:
            return (await q.get(job_id))["state"] == "waiting-children"

        await wait_until("the parent waits for its children", waiting)
        assert (await kids.counts())["waiting"] == 3
        [row] = [j for j in await kids.list("waiting") if j["data"] == {"n": 1}]
        assert row["attempts"] == 2
        cw = emq.Worker(kids, child)
        try:
            async def done() -> bool:
                return (await q.get(job_id))["state"] == "completed"

            await wait_until("the parent done", done)
        finally:
            await cw.close()
    finally:
        await pw.close()
    got = await q.get(job_id)
    assert got["result"] == 60 and runs == [0, 3], (got, runs)
    for x in (q, kids):
        await x.close()


async def test_a_waiting_parent_takes_one_more_child_and_others_refuse(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    ids = await q.add_flow({"name": "p", "children": [{"name": "c", "data": 1}]})
    extra = await q.add_child(ids["id"], qname, "c", 2)
    assert (await q.get(extra))["state"] == "waiting"
    lone = await q.add("lone", None)
    with pytest.raises(emq.InvalidState):
        await q.add_child(lone, qname, "c", 3)
    with pytest.raises(emq.InvalidOption):
        await q.add_child(ids["id"], qname, "c", 4, dedup="k")
    with pytest.raises(emq.InvalidJobId):
        await q.add_child("nope", qname, "c", 5)
    assert (await q.counts())["waiting"] == 3  # the two children and the lone job
    await q.close()


def test_the_sync_api_adds_children_from_a_plain_def_handler(standalone, qname):
    q = emq.sync.Queue.connect(standalone, qname)
    job_id = q.add("parent", None)

    def handle(job: emq.Job) -> object:
        if job.name == "child":
            return job.data * 2
        # In a plain def the calls block; what they give is in `.value`.
        results = job.children_results().value
        if not results:
            child_id = job.add_child(qname, "child", 21).value
            assert isinstance(child_id, str)
            return None
        return list(results.values())

    worker = emq.sync.Worker(q, handle)
    deadline = time.monotonic() + 20
    while q.get(job_id)["state"] != "completed":
        assert time.monotonic() < deadline, "timed out waiting for the parent"
        time.sleep(0.05)
    worker.close()
    assert q.get(job_id)["result"] == [42]
    q.close()
