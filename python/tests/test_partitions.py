"""Partitioned queues (`partitions=`), on real servers (standalone and the 3-master cluster): the
count reads back and is the queue's (found without it, another one refused with
`InvalidOption`), bad counts refused, adds spread and read back through the one handle, a
worker (async and sync) runs every job of every partition; the events of every partition read as
one stream, each stream id a cursor over them all; a flow spans partitioned queues; a batch
created on one lives in one partition; a queue grows while its worker runs (`grow_partitions`,
async and sync)."""

from __future__ import annotations

import asyncio
import time

import pytest

import emq
import emq.sync
from emq.errors import InvalidOption


async def test_the_count_reads_back_and_is_the_queues(standalone, qname):
    q = await emq.Queue.connect(standalone, qname, partitions=6)
    assert q.partitions == 6
    again = await emq.Queue.connect(standalone, qname)
    assert again.partitions == 6
    with pytest.raises(InvalidOption, match="has 6 partitions"):
        await emq.Queue.connect(standalone, qname, partitions=4)
    plain = await emq.Queue.connect(standalone, qname + "-plain")
    assert plain.partitions == 1
    for bad in [0, -1, 257, 2**70]:
        with pytest.raises(InvalidOption, match=f"got {bad}"):
            await emq.Queue.connect(standalone, qname + "-bad", partitions=bad)


@pytest.mark.parametrize("topology", ["standalone", "cluster"])
async def test_jobs_spread_and_one_worker_runs_them_all(request, topology, qname):
    url = request.getfixturevalue(topology)
    q = await emq.Queue.connect(url, qname, partitions=4)
    ids = await q.add_bulk([("x", {"i": i}) for i in range(200)])
    ids.append(await q.add("x", {"i": 200}))
    assert (await q.counts())["waiting"] == 201
    job = await q.get(ids[57])
    assert job is not None and job["data"] == {"i": 57}
    done = []

    async def handle(job: emq.Job) -> None:
        done.append(job.data["i"])

    w = emq.Worker(q, handle, concurrency=4)
    deadline = time.monotonic() + 60
    while len(done) < 201:
        assert time.monotonic() < deadline, f"{len(done)} of 201 done"
        await asyncio.sleep(0.05)
    await w.close()
    assert sorted(done) == list(range(201))
    assert (await q.counts())["completed"] == 201
    assert len(w.queues) == 4


@pytest.mark.parametrize("topology", ["standalone", "cluster"])
async def test_a_partitioned_queue_grows_while_a_worker_runs(request, topology, qname):
    url = request.getfixturevalue(topology)
    q = await emq.Queue.connect(url, qname, partitions=2)
    done = []

    async def handle(job: emq.Job) -> None:
        done.append(job.data["i"])

    w = emq.Worker(q, handle, concurrency=4)
    await q.add_bulk([("x", {"i": i}) for i in range(50)])
    assert await q.grow_partitions(3) == 3
    assert q.partitions == 3
    await q.add_bulk([("x", {"i": i}) for i in range(50, 200)])
    # The worker restarts itself over all three partitions and runs every job once.
    deadline = time.monotonic() + 60
    while len(w.queues) < 3 or (await q.counts())["completed"] < 200:
        assert time.monotonic() < deadline, (w.queues, len(done))
        await asyncio.sleep(0.05)
    await w.close()
    assert sorted(done) == list(range(200))
    for bad in [3, 1, 257, 2**70, -1, 2.5, True, "4"]:
        with pytest.raises(InvalidOption):
            await q.grow_partitions(bad)  # type: ignore[arg-type]
    plain = await emq.Queue.connect(url, qname + "-plain")
    with pytest.raises(InvalidOption, match="not partitioned"):
        await plain.grow_partitions(2)


def test_the_sync_api_grows_partitions(standalone, qname):
    q = emq.sync.Queue.connect(standalone, qname, partitions=2)
    assert q.grow_partitions(4) == 4
    assert q.partitions == 4
    q.add("x", {"n": 1})
    assert q.counts()["waiting"] == 1


def test_the_sync_api_takes_partitions(standalone, qname):
    q = emq.sync.Queue.connect(standalone, qname, partitions=3)
    assert q.partitions == 3
    q.add("x", {"n": 1})
    assert q.counts()["waiting"] == 1


async def test_a_partitioned_queues_events_read_as_one_stream(cluster, qname):
    q = await emq.Queue.connect(cluster, qname, partitions=3)
    stream = await q.events()
    ids = [await q.add("e", {"i": i}) for i in range(12)]
    added = {}
    deadline = time.monotonic() + 20
    while len(added) < 12:
        assert time.monotonic() < deadline, added
        for e in await stream.next_batch(0.2, 50):
            if e["kind"] == "added":
                added[e["job_id"]] = e["stream_id"]
    assert set(added) == set(ids)
    # each stream id is a cursor over the 3 partitions, which `after` takes back
    last = added[ids[-1]]
    assert last.count(",") == 2, last
    recent = await q.recent_events(100)
    assert {e["job_id"] for e in recent if e["kind"] == "added"} == set(ids)
    with pytest.raises(InvalidOption):
        await q.events(after="1-0")
    del stream


@pytest.mark.parametrize("topology", ["standalone", "cluster"])
async def test_groups_and_schedulers_span_the_partitions(request, topology, qname):
    url = request.getfixturevalue(topology)
    q = await emq.Queue.connect(url, qname, partitions=3)
    names = [f"t{i:02}" for i in range(12)]
    for g in names:
        await q.add("g", g, group=g)
    assert [g["name"] for g in await q.groups(0, 100)] == names  # every group once, by name
    assert [g["name"] for g in await q.groups(4, 3)] == names[4:7]
    await q.drain()
    assert await q.upsert_scheduler("tick", "tick", every=0.04, limit=3, group="t01") is True
    assert await q.upsert_scheduler("later", "later", every=60, first_after=60) is True
    assert [s["id"] for s in await q.schedulers()] == ["later", "tick"]
    ran = []

    async def handle(job: emq.Job) -> None:
        ran.append(job.id)

    w = emq.Worker(q, handle, concurrency=2)
    deadline = time.monotonic() + 60
    while (await q.counts())["completed"] < 3:
        assert time.monotonic() < deadline, f"{len(ran)} of 3 runs"
        await asyncio.sleep(0.05)
    await w.close()
    for job_id in ran:
        job = await q.get(job_id)
        assert job is not None and job["options"]["group"] == "t01"
    assert [s["id"] for s in await q.schedulers()] == ["later"]  # removed at its limit
    assert await q.remove_scheduler("later") is True
    assert await q.remove_scheduler("later") is False


@pytest.mark.parametrize("topology", ["standalone", "cluster"])
async def test_a_flow_spans_partitioned_queues(request, topology, qname):
    url = request.getfixturevalue(topology)
    parents = await emq.Queue.connect(url, qname, partitions=3)
    kids = await emq.Queue.connect(url, qname + "-kids", partitions=3)
    ids = await parents.add_flow(
        {
            "name": "p",
            "children": [{"queue": kids.name, "name": "c", "data": n} for n in range(1, 5)],
        }
    )
    assert ids["queue"] == parents.name and ids["children"][0]["queue"] == kids.name
    assert (await parents.get(ids["id"]))["state"] == "waiting-children"
    extra = await parents.add_child(ids["id"], kids.name, "c", 5)

    seen: dict = {}

    async def parent(job: emq.Job) -> object:
        seen.update(await job.children_results())
        return sum(seen.values())

    async def child(job: emq.Job) -> int:
        return job.data * 10

    pw, cw = emq.Worker(parents, parent), emq.Worker(kids, child)
    deadline = time.monotonic() + 30
    while (await parents.get(ids["id"]))["state"] != "completed":
        assert time.monotonic() < deadline, await parents.get(ids["id"])
        await asyncio.sleep(0.05)
    await pw.close()
    await cw.close()
    assert (await parents.get(ids["id"]))["result"] == 150
    # the children's results are named by the logical queue
    assert set(seen) == {f"{kids.name}:{c['id']}" for c in ids["children"]} | {f"{kids.name}:{extra}"}


async def test_a_batch_created_on_a_partitioned_queue_lives_in_one_partition(cluster, qname):
    q = await emq.Queue.connect(cluster, qname, partitions=3)
    cb = await emq.Queue.connect(cluster, qname + "-cb")
    batch = await q.batch(on_complete={"queue": cb.name, "name": "done", "data": None})
    assert batch.queue.startswith(qname + ":p")  # the partition it lives in
    await batch.add_bulk(q.name, [("x", i) for i in range(10)])
    await batch.seal()

    async def handle(job: emq.Job) -> None:
        return None

    w = emq.Worker(q, handle)
    deadline = time.monotonic() + 30
    while (await cb.counts())["waiting"] < 1:
        assert time.monotonic() < deadline, await q.counts()
        await asyncio.sleep(0.05)
    await w.close()
    assert (await q.counts())["completed"] == 10


async def test_the_queue_wide_limits_hold_over_the_partitions(standalone, qname):
    q = await emq.Queue.connect(standalone, qname, partitions=3)
    with pytest.raises(InvalidOption):
        await q.set_global_concurrency(0)
    # The global concurrency holds over all partitions, below their count too (it moves to where
    # the jobs are); so does the rate limit.
    await q.set_rate_limit(2, 0.5)
    await q.set_rate_limit(None)
    await q.set_global_concurrency(2)
    await q.add_bulk([("c", i) for i in range(24)])
    running, most = 0, 0

    async def handle(job: emq.Job) -> None:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.03)
        running -= 1

    w = emq.Worker(q, handle, concurrency=10)
    deadline = time.monotonic() + 30
    while (await q.counts())["completed"] < 24:
        assert time.monotonic() < deadline, await q.counts()
        await asyncio.sleep(0.05)
    await w.close()
    assert most == 2, most
    await q.set_global_concurrency(None)
