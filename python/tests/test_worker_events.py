"""Worker events in Python (issue 14 item 5): `worker.on(...)` for completed, failed, progress,
stalled and error, each seen on a real server, for the async worker and the sync one."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import time

import pytest

import emq
import emq.sync


async def _until(cond, limit: float = 20.0, what: str = "the condition") -> None:
    deadline = time.monotonic() + limit
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


async def test_completed_failed_and_progress_events(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    seen = []

    async def handle(job: emq.Job):
        if job.name == "bad":
            raise ValueError(f"bad run {job.attempt}")
        await job.progress({"pct": 50})
        return {"done": job.data}

    worker = emq.Worker(q, handle, concurrency=2)
    worker.on("completed", lambda job, result: seen.append(("completed", job.id, job.name, result)))
    worker.on("failed", lambda job, err: seen.append(("failed", job.id, job.attempt, err.failure_code, err.message, err.will_retry)))
    worker.on("progress", lambda job, value: seen.append(("progress", job.id, value)))

    async def on_completed_async(job, result):  # an async listener runs as a task
        await asyncio.sleep(0)
        seen.append(("async-completed", job.id))

    worker.on("completed", on_completed_async)
    try:
        ok = await q.add("good", 7)
        bad = await q.add("bad", None, attempts=2)
        assert await q.wait(ok, 20) == {"done": 7}
        with pytest.raises(emq.HandlerFailed):
            await q.wait(bad, 20)
        await _until(lambda: len([e for e in seen if e[0] == "failed"]) == 2 and ("async-completed", ok) in seen, what=str(seen))
    finally:
        await worker.close()
    assert ("completed", ok, "good", {"done": 7}) in seen
    assert ("progress", ok, {"pct": 50}) in seen
    assert seen.index(("progress", ok, {"pct": 50})) < seen.index(("completed", ok, "good", {"done": 7}))
    fails = [e for e in seen if e[0] == "failed"]
    assert fails == [
        ("failed", bad, 1, "handler_failed", "bad run 1", True),
        ("failed", bad, 2, "handler_failed", "bad run 2", False),
    ], fails
    assert not [e for e in seen if e[0] == "completed" and e[1] == bad]
    await q.close()


async def test_a_job_given_back_at_shutdown_is_neither_completed_nor_failed(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    seen = []
    started = asyncio.Event()

    async def handle(job: emq.Job):
        started.set()
        await asyncio.sleep(60)

    worker = emq.Worker(q, handle, shutdown_timeout=0.2)
    worker.on("completed", lambda job, r: seen.append("completed"))
    worker.on("failed", lambda job, e: seen.append("failed"))
    job_id = await q.add("long", None)
    await asyncio.wait_for(started.wait(), 20)
    await worker.close()
    job = await q.get(job_id)
    assert job["state"] == "waiting" and seen == [], (job, seen)
    await q.close()


async def test_stalled_event_when_the_sweep_recovers_a_lost_job(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    # A worker that vanishes mid-job (aborted: nothing released), with a short lease.
    hold = asyncio.Event()

    async def stuck(job: emq.Job):
        hold.set()
        await asyncio.sleep(60)

    lost = emq.Worker(q, stuck, lease=0.3)
    job_id = await q.add("lost", None)
    await asyncio.wait_for(hold.wait(), 20)
    lost.abort()
    await lost.close()
    stalled = []

    async def finish(job: emq.Job):
        return "recovered"

    sweeper = emq.Worker(q, finish, stalled_interval=0.1)
    sweeper.on("stalled", stalled.append)
    try:
        assert await q.wait(job_id, 20) == "recovered"
        await _until(lambda: stalled == [job_id], what=f"stalled event, got {stalled}")
    finally:
        await sweeper.close()
    await q.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_error_event_on_a_lost_connection_and_the_worker_keeps_going(tmp_path, qname):
    port = _free_port()
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                q = await emq.Queue.connect(url, qname)
                break
            except emq.ServerUnavailable:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.1)
        errors = []

        async def handle(job: emq.Job):
            return job.data

        worker = emq.Worker(q, handle)
        worker.on("error", errors.append)
        assert await q.wait(await q.add("a", 1), 20) == 1
        server.terminate()
        server.wait(10)
        await _until(lambda: len(errors) >= 1, what="an error event")
        assert all(isinstance(e, emq.EmqError) for e in errors)
        assert any(e.code == "server_unavailable" for e in errors), [str(e) for e in errors]
        # The server comes back on the same port: the worker, still running, takes new jobs.
        server = subprocess.Popen(
            ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no", "--dir", str(tmp_path)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                job_id = await q.add("b", 2)
                break
            except emq.EmqError:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.2)
        assert await q.wait(job_id, 30) == 2
        await worker.close()
        await q.close()
    finally:
        server.terminate()
        server.wait(10)


async def test_listener_errors_go_to_error_and_bad_names_are_refused(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)

    async def handle(job: emq.Job):
        return 1

    worker = emq.Worker(q, handle)
    with pytest.raises(emq.InvalidOption):
        worker.on("finished", print)  # type: ignore[arg-type]
    errors = []

    def boom(job, result):
        raise RuntimeError("listener broke")

    worker.on("completed", boom).on("error", errors.append)
    try:
        assert await q.wait(await q.add("x", None), 20) == 1
        await _until(lambda: errors, what="the listener's error")
    finally:
        await worker.close()
    assert "listener broke" in errors[0].message and errors[0].code == "internal"
    await q.close()


def test_sync_worker_events(standalone, qname):
    q = emq.sync.Queue.connect(standalone, qname)
    seen = []

    def handle(job: emq.Job):
        job.progress(1)
        return job.data + 1

    w = emq.sync.Worker(q, handle)
    w.on("completed", lambda job, result: seen.append(("completed", result)))
    w.on("progress", lambda job, value: seen.append(("progress", value)))
    try:
        assert q.wait(q.add("s", 1), 20) == 2
        deadline = time.monotonic() + 20
        while len(seen) < 2:
            assert time.monotonic() < deadline, seen
            time.sleep(0.02)
    finally:
        w.close()
    assert seen == [("progress", 1), ("completed", 2)], seen
    # The sync facade's queue events, through the same bridge.
    stream = q.events()
    q.add("t", None)
    ev = next(iter(stream))
    assert ev["kind"] == "added"
    q.close()


async def test_stats_count_a_job_failed_for_good_once_and_its_retries_apart(standalone, qname):
    """`stats()["failed"]` counts jobs failed for good, `retried` the runs that went back for
    another attempt: attempts=3, always failing → failed 1, retried 2 (before: failed 3)."""
    q = await emq.Queue.connect(standalone, qname)

    async def handle(job: emq.Job):
        raise ValueError("always")

    worker = emq.Worker(q, handle)
    job_id = await q.add("bad", None, attempts=3)
    with pytest.raises(emq.HandlerFailed):
        await q.wait(job_id, 20)
    await worker.close()
    job = await q.get(job_id)
    assert job["state"] == "failed" and job["attempts_made"] == 3, job
    stats = worker.stats()
    assert (stats["completed"], stats["failed"], stats["retried"]) == (0, 1, 2), stats
    await q.close()


def test_sync_worker_stats_count_jobs(standalone, qname):
    q = emq.sync.Queue.connect(standalone, qname)

    def handle(job: emq.Job):
        raise ValueError("always")

    w = emq.sync.Worker(q, handle)
    job_id = q.add("bad", None, attempts=3)
    with pytest.raises(emq.HandlerFailed):
        q.wait(job_id, 20)
    w.close()
    stats = w.stats()
    assert (stats["failed"], stats["retried"]) == (1, 2), stats
    q.close()
