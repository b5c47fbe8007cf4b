"""The queue's extras from Python on real servers (standalone and a 3-master cluster), EMQ_GUARD=1:
flows, job schedulers (every-N and cron), rate limits (per queue and per group), dedup with a TTL,
global concurrency, events, maintenance, the job's
progress/logs, timeouts, and the sync facade's twins."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import pytest

import emq
import emq.sync

TOPOLOGIES = ["standalone", "cluster"]


async def wait_for(q: emq.Queue, job_id: str, states=("completed", "failed"), limit: float = 20.0) -> dict:
    deadline = time.monotonic() + limit
    while True:
        job = await q.get(job_id)
        if job is not None and job["state"] in states:
            return job
        assert time.monotonic() < deadline, f"job {job_id} still {job and job['state']}"
        await asyncio.sleep(0.05)


async def eventually(check, limit: float = 20.0, what: str = "condition"):
    deadline = time.monotonic() + limit
    while True:
        value = await check()
        if value:
            return value
        assert time.monotonic() < deadline, f"{what} not reached within {limit} s"
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("topology", TOPOLOGIES)
async def test_flow_parent_reads_children_results(request, topology, qname):
    url = request.getfixturevalue(topology)
    q = await emq.Queue.connect(url, qname)
    other = await emq.Queue.connect(url, qname + "-kids")
    ids = await q.add_flow(
        {
            "name": "sum",
            "data": {"what": "parent"},
            "children": [
                {"name": "part", "data": {"n": 2}},
                {"name": "part", "data": {"n": 3}, "queue": other.name},
                {"name": "bad", "data": {}, "queue": other.name, "parent_policy": "ignore"},
            ],
        }
    )
    assert ids["queue"] == qname and len(ids["children"]) == 3
    assert [c["queue"] for c in ids["children"]] == [qname, other.name, other.name]
    assert (await q.get(ids["id"]))["state"] == "waiting-children"

    async def handle(job):
        if job.name == "part":
            return job.data["n"] * 10
        if job.name == "bad":
            raise emq.Unrecoverable("child breaks")
        kids = await job.children_results()
        return {"kids": kids, "parent": job.data["what"]}

    w1 = emq.Worker(q, handle, concurrency=2)
    w2 = emq.Worker(other, handle, concurrency=2)
    try:
        parent = await wait_for(q, ids["id"])
    finally:
        await w1.close()
        await w2.close()
    assert parent["state"] == "completed", parent
    kids = parent["result"]["kids"]
    c0, c1, c2 = ids["children"]
    assert kids[f"{qname}:{c0['id']}"] == 20
    assert kids[f"{other.name}:{c1['id']}"] == 30
    assert kids[f"{other.name}:{c2['id']}"]["failed"]["message"] == "child breaks"
    assert parent["result"]["parent"] == "parent"
    await other.close()
    await q.close()


async def test_flow_child_failure_fails_parent(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    ids = await q.add_flow({"name": "p", "children": [{"name": "boom"}]})

    async def handle(job):
        if job.name == "boom":
            raise emq.Unrecoverable("no")
        return "parent ran"

    w = emq.Worker(q, handle)
    try:
        parent = await wait_for(q, ids["id"], states=("failed",))
    finally:
        await w.close()
    assert parent["state"] == "failed" and parent["result"] is None
    with pytest.raises(emq.InvalidOption):
        await q.add_flow({"data": 1})
    with pytest.raises(emq.InvalidOption):
        await q.add_flow({"name": "x", "children": [{"name": "y", "parent_policy": "sometimes"}]})
    await q.close()


@pytest.mark.parametrize("topology", TOPOLOGIES)
async def test_scheduler_enqueues_runs_a_worker_processes(request, topology, qname):
    url = request.getfixturevalue(topology)
    q = await emq.Queue.connect(url, qname)
    marker = await q.add("marker", None)  # its created_ms: the server's clock before the upsert
    t0 = (await q.get(marker))["created_ms"]
    created = await q.upsert_scheduler("tick", "tick", {"k": 1}, every=0.2, limit=3, remove_on_complete=False)
    assert created is True
    assert await q.upsert_scheduler("tick", "tick", {"k": 1}, every=timedelta(milliseconds=200), limit=3) is False
    (info,) = await q.schedulers()
    assert info["id"] == "tick" and info["name"] == "tick" and info["every"] == pytest.approx(0.2)
    assert info["limit"] == 3 and info["next_in"] is not None and info["next_in"] <= 0.2
    # The core's SchedulerView, in seconds, with Python's (snake_case) names.
    assert set(info) == {"id", "name", "every", "cron", "tz", "ends_in", "count", "limit", "next_in"}
    assert info["cron"] is None and info["tz"] is None and info["ends_in"] is None
    runs = []

    async def handle(job):
        if job.name == "tick":
            runs.append((job.data, job.created_ms))
        return len(runs)

    w = emq.Worker(q, handle)
    try:
        await eventually(lambda: _counted(q, "completed", 4), what="3 scheduled runs")
        await asyncio.sleep(0.5)  # the limit holds: no fourth run
    finally:
        await w.close()
    assert len(runs) == 3 and all(d == {"k": 1} for d, _ in runs)
    created_ms = sorted(c for _, c in runs)
    # Due at upsert + 0, 200, 400 ms on the server's clock: a run never comes before its time.
    assert created_ms[1] >= t0 + 200 and created_ms[2] >= t0 + 400, (t0, created_ms)
    assert await q.schedulers() == []  # a scheduler that reached its limit is gone
    assert await q.remove_scheduler("tick") is False
    assert await q.upsert_scheduler("later", "tick", every=60, first_after=timedelta(minutes=1)) is True
    (info,) = await q.schedulers()
    assert info["count"] == 0 and info["limit"] is None and 55 <= info["next_in"] <= 60
    assert await q.remove_scheduler("later") is True
    assert await q.schedulers() == []
    with pytest.raises(emq.InvalidOption):
        await q.upsert_scheduler("bad", "x", every=0)
    await q.close()


async def _counted(q: emq.Queue, state: str, n: int) -> bool:
    return (await q.counts())[state] >= n


@pytest.mark.parametrize("topology", TOPOLOGIES)
async def test_rate_limit_spaces_starts(request, topology, qname):
    url = request.getfixturevalue(topology)
    q = await emq.Queue.connect(url, qname)
    await q.set_rate_limit(2, 0.5)
    ids = await q.add_bulk([("r", i) for i in range(6)])

    async def handle(job):
        return job.data

    w = emq.Worker(q, handle, concurrency=6)
    try:
        jobs = [await wait_for(q, i) for i in ids]
    finally:
        await w.close()
    starts = sorted(j["processed_ms"] for j in jobs)
    # At most 2 starts per 0.5 s window (server clock): the 1st and the 5th are 2 windows apart.
    assert starts[4] - starts[0] >= 500, starts
    await q.set_rate_limit(None)
    with pytest.raises(emq.InvalidOption):
        await q.set_rate_limit(0, 1.0)
    await q.close()


async def test_global_concurrency_caps_active_jobs(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    await q.set_global_concurrency(1)
    ids = await q.add_bulk([("g", i) for i in range(6)])
    running = 0
    peak = 0

    async def handle(job):
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.05)
        running -= 1

    w1 = emq.Worker(q, handle, concurrency=3)
    w2 = emq.Worker(q, handle, concurrency=3)
    try:
        for i in ids:
            await wait_for(q, i)
    finally:
        await w1.close()
        await w2.close()
    assert peak == 1
    await q.set_global_concurrency(None)
    with pytest.raises(emq.InvalidOption):
        await q.set_global_concurrency(0)
    await q.close()


@pytest.mark.parametrize("topology", TOPOLOGIES)
async def test_events_arrive_for_add_and_complete(request, topology, qname):
    url = request.getfixturevalue(topology)
    q = await emq.Queue.connect(url, qname)
    stream = await q.events()
    job_id = await q.add("e", {"x": 1})

    async def handle(job):
        await job.progress({"pct": 50})
        return "done"

    w = emq.Worker(q, handle)
    seen = []
    try:
        deadline = time.monotonic() + 20
        while not any(e["kind"] == "completed" and e["job_id"] == job_id for e in seen):
            assert time.monotonic() < deadline, seen
            seen += await stream.next_batch(wait=0.5)
    finally:
        await w.close()
    kinds = [e["kind"] for e in seen if e["job_id"] == job_id]
    assert kinds[0] == "added" and "active" in kinds and "progress" in kinds and kinds[-1] == "completed", kinds
    assert all(e["stream_id"] for e in seen)
    recent = await q.recent_events(100)
    assert [e["kind"] for e in recent if e["job_id"] == job_id] == kinds
    # async iteration yields the same stream
    another = await q.add("e2", None)
    async for event in stream:
        if event["job_id"] == another:
            assert event["kind"] == "added"
            break
    await q.close()


async def test_job_progress_logs_and_maintenance(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    ok = await q.add("ok", 1)
    bad = await q.add("bad", 2)

    async def handle(job):
        assert job.lease_lost is False
        await job.progress(42)
        assert await job.log("line one") == 1
        assert await job.log("line two") == 2
        if job.name == "bad":
            raise ValueError("bad job")
        return "fine"

    w = emq.Worker(q, handle)
    try:
        job = await wait_for(q, ok)
        failed = await wait_for(q, bad)
    finally:
        await w.close()
    assert job["progress"] == 42 and job["result"] == "fine"
    assert await q.logs(ok) == ["line one", "line two"]
    assert failed["state"] == "failed"
    assert [j["id"] for j in await q.list("failed")] == [bad]
    assert await q.retry(bad) is True
    assert (await q.get(bad))["state"] == "waiting"
    assert await q.remove(bad) is True and await q.get(bad) is None

    later = await q.add("later", None, delay=60)
    assert await q.promote(later) is True
    assert (await q.get(later))["state"] == "waiting"
    await q.add("delayed", None, delay=60)
    assert await q.drain() == 1  # the waiting one; delayed stays
    assert (await q.counts())["delayed"] == 1
    assert await q.drain(delayed=True) == 1
    urgent = await q.add("urgent", None, delay=60)
    assert await q.change_priority(urgent, 2) is True
    assert await q.promote(urgent) is True
    assert (await q.get(urgent))["state"] == "prioritized"
    with pytest.raises(emq.InvalidOption):
        await q.change_priority(urgent, -1)
    assert await q.remove(urgent) is True
    assert await q.clean("completed", grace=0, limit=10) == 1
    assert await q.get(ok) is None
    assert await q.is_paused() is False
    m = await q.metrics()
    assert m["queue"] == qname and m["added"] == 5
    await q.add("x", None)
    assert await q.obliterate() == 1
    assert (await q.counts())["waiting"] == 0
    await q.close()


async def test_dedup_debounce_replaces_delayed_data(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    a = await q.add("d", {"v": 1}, dedup="k", delay=30, debounce=True)
    b = await q.add("d", {"v": 2}, dedup="k", delay=30, debounce=True)
    assert a == b
    job = await q.get(a)
    assert job["state"] == "delayed" and job["data"] == {"v": 2}
    with pytest.raises(emq.InvalidOption):
        await q.add("d", 1, debounce=True)  # needs dedup and delay
    await q.close()


async def test_timeout_fails_run_and_cancels_the_task(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    job_id = await q.add("slow", None, timeout=0.2)
    cancelled = asyncio.Event()

    async def handle(job):
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    w = emq.Worker(q, handle)
    try:
        job = await wait_for(q, job_id, states=("failed",))
        await asyncio.wait_for(cancelled.wait(), 5)
    finally:
        await w.close()
    assert job["failure"]["code"] == "timeout"
    await q.close()


def test_sync_handler_job_methods_and_sync_facade(standalone, cluster, qname):
    for url in (standalone, cluster):
        with emq.sync.Queue.connect(url, qname) as q:
            ids = q.add_flow({"name": "p", "children": [{"name": "c", "data": 5}]})
            assert q.get(ids["id"])["state"] == "waiting-children"
            assert q.change_priority(ids["id"], 3) is True  # counts once its child is done
            assert q.upsert_scheduler("s", "tick", every=60, first_after=60) is True
            assert [s["id"] for s in q.schedulers()] == ["s"]
            assert q.remove_scheduler("s") is True
            q.set_rate_limit(10, timedelta(seconds=1))
            q.set_rate_limit(None)
            q.set_global_concurrency(3)
            q.set_global_concurrency(None)
            kinds = [e["kind"] for e in q.recent_events(10)]
            assert kinds[-1] == "priority" and "added" in kinds
            assert q.obliterate() == 2

    async def run():
        q = await emq.Queue.connect(standalone, qname + "-t")
        job_id = await q.add("t", 7)

        def handle(job):  # a plain def: runs in a thread, where progress and log block by themselves
            job.progress("half")
            job.log("from a thread")
            return job.data + 1

        w = emq.Worker(q, handle)
        try:
            job = await wait_for(q, job_id)
        finally:
            await w.close()
        assert job["result"] == 8 and job["progress"] == "half"
        assert await q.logs(job_id) == ["from a thread"]
        await q.close()

    asyncio.run(run())


def test_process_exits_cleanly_after_async_use(standalone, qname):
    # Outcomes reach the loop through its bridge, never through a tokio thread calling into
    # Python, so interpreter shutdown cannot meet a thread taking the GIL back (that aborted the
    # process now and then, exit status 134).
    import subprocess
    import sys

    script = f"""
import asyncio, emq
async def main():
    q = await emq.Queue.connect({standalone!r}, {qname!r})
    await q.add_bulk([("j", i) for i in range(300)])
    async def handle(job):
        return job.data
    w = emq.Worker(q, handle, concurrency=10)
    while w.stats()["completed"] < 300:
        await q.counts()
        await asyncio.sleep(0.005)
    await w.close()
    await q.obliterate()
    await q.close()
asyncio.run(main())
"""
    for _ in range(4):
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, (done.returncode, done.stderr[-2000:])


@pytest.mark.parametrize("topology", TOPOLOGIES)
async def test_group_rate_limit_holds_one_group_while_others_flow(request, topology, qname):
    url = request.getfixturevalue(topology)
    q = await emq.Queue.connect(url, qname)
    await q.set_group_rate_limit(1, 0.4)
    busy = await q.add_bulk([("b", i, {"group": "busy"}) for i in range(4)])
    others = await q.add_bulk([("o", i, {"group": f"g{i}"}) for i in range(4)])

    async def handle(job):
        return None

    w = emq.Worker(q, handle, concurrency=4)
    try:
        busy_jobs = [await wait_for(q, i) for i in busy]
        other_jobs = [await wait_for(q, i) for i in others]
    finally:
        await w.close()
    starts = sorted(j["processed_ms"] for j in busy_jobs)
    # One start of the busy group per 0.4 s window (server clock).
    assert all(b - a >= 400 for a, b in zip(starts, starts[1:])), starts
    # The other groups did not wait behind it.
    assert max(j["processed_ms"] for j in other_jobs) < starts[-1], (other_jobs, starts)
    await q.set_group_rate_limit(None)
    with pytest.raises(emq.InvalidOption):
        await q.set_group_rate_limit(0, 1.0)
    with pytest.raises(emq.InvalidOption):
        await q.add("x", 1, group="")
    await q.close()


async def test_cron_scheduler_and_dedup_ttl(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    assert await q.upsert_scheduler("nightly", "report", {"k": 1}, cron="0 3 * * *", tz="Europe/Berlin")
    (listed,) = [s for s in await q.schedulers() if s["id"] == "nightly"]
    assert listed["cron"] == "0 3 * * *" and listed["tz"] == "Europe/Berlin" and listed["every"] is None
    assert 0 < listed["next_in"] <= 25 * 3600
    with pytest.raises(emq.InvalidOption):
        await q.upsert_scheduler("bad", "n", cron="* * * * *", tz="Mars/Base")
    with pytest.raises(emq.InvalidOption):
        await q.upsert_scheduler("bad", "n")  # neither every nor cron
    with pytest.raises(emq.InvalidOption):
        await q.upsert_scheduler("bad", "n", every=1.0, cron="* * * * *")
    assert await q.remove_scheduler("nightly")

    # A TTL hold outlives its job: after completion the key still returns the first job.
    first = await q.add("mail", 1, dedup="welcome-7", dedup_ttl=60, remove_on_complete=True)

    async def handle(job):
        return None

    w = emq.Worker(q, handle)
    try:
        await eventually(lambda: _gone(q, first), what="the job to complete and be removed")
    finally:
        await w.close()
    assert await q.add("mail", 2, dedup="welcome-7", dedup_ttl=60) == first
    with pytest.raises(emq.InvalidOption):
        await q.add("x", 1, dedup_ttl=5)  # needs a dedup key
    await q.close()


async def _gone(q: emq.Queue, job_id: str) -> bool:
    return await q.get(job_id) is None
