"""Fair groups from Python on real servers (standalone and a 3-master cluster), EMQ_GUARD=1: every
setting read back through ``groups()``, ``group_full`` (typed, nothing written) past a group's cap
on waiting jobs, a paused group's jobs waiting while another group's run, bad settings refused as
``invalid_option``, and the sync facade's twins."""

from __future__ import annotations

import asyncio
import time

import pytest

import emq
import emq.sync

TOPOLOGIES = ["standalone", "cluster"]


async def eventually(check, limit: float = 20.0, what: str = "condition"):
    deadline = time.monotonic() + limit
    while True:
        value = await check()
        if value:
            return value
        assert time.monotonic() < deadline, f"{what} not reached within {limit} s"
        await asyncio.sleep(0.05)


def info(name, waiting=0, running=0, weight=1, concurrency=None, max_waiting=None, paused=False):
    return {
        "name": name,
        "waiting": waiting,
        "running": running,
        "weight": weight,
        "concurrency": concurrency,
        "max_waiting": max_waiting,
        "paused": paused,
    }


@pytest.mark.parametrize("topology", TOPOLOGIES)
async def test_groups_read_back_every_setting(request, topology, qname):
    q = await emq.Queue.connect(request.getfixturevalue(topology), qname)
    assert await q.groups() == []
    await q.add_bulk([("b", i, {"group": "b"}) for i in range(2)])
    await q.add("a", 0, group="a")
    await q.set_group_weight("a", 7)
    await q.set_group_concurrency(4, "a")
    await q.set_group_max_waiting(9, group="a")
    await q.set_group_concurrency(2)  # the default of every group
    await q.pause_group("b")
    groups = await q.groups()
    assert groups == [
        info("a", waiting=1, weight=7, concurrency=4, max_waiting=9),
        info("b", waiting=2, concurrency=2, paused=True),
    ]
    assert await q.groups(offset=1) == groups[1:]
    assert await q.groups(0, 1) == groups[:1]
    # Each setting lifted or undone reads back so.
    await q.resume_group("b")
    await q.set_group_concurrency(None)
    await q.set_group_concurrency(None, group="a")
    await q.set_group_max_waiting(None, "a")
    await q.set_group_weight("a", 1)
    assert await q.groups(0, 100) == [info("a", waiting=1), info("b", waiting=2)]
    # The default cap on waiting jobs shows on every group without its own.
    await q.set_group_max_waiting(50)
    await q.set_group_max_waiting(5, "b")
    assert [g["max_waiting"] for g in await q.groups()] == [50, 5]
    await q.close()


@pytest.mark.parametrize("topology", TOPOLOGIES)
async def test_an_add_past_a_groups_cap_raises_group_full_and_writes_nothing(request, topology, qname):
    q = await emq.Queue.connect(request.getfixturevalue(topology), qname)
    await q.set_group_max_waiting(2, "g")
    await q.add_bulk([("g", i, {"group": "g"}) for i in range(2)])
    with pytest.raises(emq.GroupFull) as caught:
        await q.add("g", 2, group="g")
    assert caught.value.code == "group_full"
    assert isinstance(caught.value, emq.EmqError)
    assert emq.errors.GroupFull is emq.GroupFull
    # A batch that would pass the cap is refused whole, its other group's jobs too.
    with pytest.raises(emq.GroupFull):
        await q.add_bulk([("o", 0, {"group": "other"}), ("g", 3, {"group": "g"})])
    assert (await q.counts())["waiting"] == 2
    assert [(g["name"], g["waiting"]) for g in await q.groups()] == [("g", 2)]
    # Another group and ungrouped jobs are not held by g's cap; lifted, g takes adds again.
    await q.add("o", 1, group="other")
    await q.add("u", 1)
    await q.set_group_max_waiting(None, "g")
    await q.add("g", 4, group="g")
    assert (await q.counts())["waiting"] == 5
    await q.close()


@pytest.mark.parametrize("topology", TOPOLOGIES)
async def test_a_paused_group_waits_while_another_group_runs(request, topology, qname):
    q = await emq.Queue.connect(request.getfixturevalue(topology), qname)
    await q.pause_group("held")
    await q.add_bulk([("held", i, {"group": "held"}) for i in range(3)])
    await q.add_bulk([("free", i, {"group": "free"}) for i in range(3)])
    ran = []

    async def handle(job):
        ran.append(job.name)
        return None

    w = emq.Worker(q, handle, concurrency=1)
    try:
        await eventually(lambda: _completed(q, 3), what="the free group's jobs to complete")
        await asyncio.sleep(0.3)
        assert ran == ["free"] * 3
        (held,) = [g for g in await q.groups() if g["name"] == "held"]
        assert held == info("held", waiting=3, paused=True)
        assert (await q.counts())["waiting"] == 3
        await q.resume_group("held")
        await eventually(lambda: _completed(q, 6), what="the held group's jobs to complete once resumed")
    finally:
        await w.close()
    assert sorted(ran) == ["free"] * 3 + ["held"] * 3
    await q.close()


async def _completed(q: emq.Queue, n: int) -> bool:
    return (await q.counts())["completed"] == n


async def test_bad_group_settings_raise_invalid_option(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    await q.add("a", 0, group="a")
    await q.set_group_weight("a", 3)
    before = await q.groups()
    calls = [
        q.set_group_weight("a", 0),
        q.set_group_weight("a", 1001),
        q.set_group_weight("a", -1),
        q.set_group_weight("a", 1.5),
        q.set_group_weight("a", "2"),  # type: ignore[arg-type]
        q.set_group_concurrency(0),
        q.set_group_concurrency(0, "a"),
        q.set_group_max_waiting(0, "a"),
        q.set_group_max_waiting(-3),
        q.pause_group(""),
        q.pause_group("a\0b"),
        q.resume_group(""),
        q.set_group_weight(7, 2),  # type: ignore[arg-type]
    ]
    for call in calls:
        with pytest.raises(emq.InvalidOption) as caught:
            await call
        assert caught.value.code == "invalid_option"
    assert await q.groups() == before
    await q.close()


def test_the_sync_facade_sets_and_reads_groups(standalone, qname):
    q = emq.sync.Queue.connect(standalone, qname)
    q.add("a", 0, group="a")
    q.set_group_weight("a", 5)
    q.set_group_concurrency(3, "a")
    q.set_group_max_waiting(1, group="a")
    q.pause_group("a")
    assert q.groups() == [info("a", waiting=1, weight=5, concurrency=3, max_waiting=1, paused=True)]
    with pytest.raises(emq.GroupFull) as caught:
        q.add("a", 1, group="a")
    assert caught.value.code == "group_full"
    with pytest.raises(emq.InvalidOption):
        q.set_group_weight("a", 0)
    q.resume_group("a")
    q.set_group_concurrency(None, "a")
    q.set_group_max_waiting(None, "a")
    assert q.groups(0, 10) == [info("a", waiting=1, weight=5)]
    assert q.groups(offset=1) == []
    q.close()
