"""Worker control on real servers: signals stop a worker process gracefully (the job goes back to
waiting, its attempt not counted), timeouts stop the handler, cancel, wait for a result."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

import pytest

import emq
import emq.sync

WORKER_SCRIPT = textwrap.dedent(
    """
    import asyncio, os, sys, time
    import emq, emq.sync

    url, queue, mode, marker = sys.argv[1:5]
    grace = float(os.environ.get("GRACE", "0.3"))

    def started(job):
        with open(marker, "w") as f:
            f.write(job.id)

    if mode == "async":
        async def main():
            q = await emq.Queue.connect(url, queue)
            async def handle(job):
                started(job)
                await asyncio.sleep(60)
                return "slept"
            worker = emq.Worker(q, handle, shutdown_timeout=grace)
            await worker.run()
            await q.close()
        asyncio.run(main())
    elif mode == "def":
        q = emq.sync.Queue.connect(url, queue)
        def handle(job):
            started(job)
            deadline = time.monotonic() + 60
            while not job.cancelled and time.monotonic() < deadline:
                time.sleep(0.02)
            return "stopped early"
        emq.sync.Worker(q, handle, shutdown_timeout=grace).run()
        q.close()
    elif mode == "asyncio-run":
        # No worker.run(): Ctrl-C ends asyncio.run, which cancels every task (the handler's too).
        async def main():
            q = await emq.Queue.connect(url, queue)
            async def handle(job):
                started(job)
                await asyncio.sleep(60)
            worker = emq.Worker(q, handle)
            await asyncio.sleep(3600)
        try:
            asyncio.run(main())
        except KeyboardInterrupt:
            pass
        time.sleep(1.0)  # the released job's script call is on its way
    print("worker exited", flush=True)
    """
)


async def _state(q: emq.Queue, job_id: str) -> dict:
    job = await q.get(job_id)
    assert job is not None
    return job


def _start_worker(url: str, qname: str, mode: str, marker: str, grace: float = 0.3) -> subprocess.Popen:
    script = os.path.join(os.path.dirname(marker), "worker.py")
    with open(script, "w") as f:
        f.write(WORKER_SCRIPT)
    env = dict(os.environ, EMQ_GUARD="1", PYTHONUNBUFFERED="1", GRACE=str(grace))
    return subprocess.Popen(
        [sys.executable, script, url, qname, mode, marker],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


async def _wait_started(proc: subprocess.Popen, marker: str, limit: float = 20.0) -> None:
    deadline = time.monotonic() + limit
    while not os.path.exists(marker) or os.path.getsize(marker) == 0:
        if proc.poll() is not None:
            pytest.fail(f"the worker exited early: {proc.stdout.read()}")
        assert time.monotonic() < deadline, "the worker never started the job"
        await asyncio.sleep(0.05)


async def _wait_exit(proc: subprocess.Popen, limit: float = 15.0) -> str:
    deadline = time.monotonic() + limit
    while proc.poll() is None:
        if time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            pytest.fail("the worker did not exit after the signal")
        await asyncio.sleep(0.05)
    return proc.stdout.read()


async def _run_to_completion(q: emq.Queue, job_id: str) -> dict:
    async def handle(job):
        return "finished elsewhere"

    worker = emq.Worker(q, handle)
    try:
        deadline = time.monotonic() + 20
        while (job := await _state(q, job_id))["state"] != "completed":
            assert time.monotonic() < deadline, job
            await asyncio.sleep(0.05)
    finally:
        await worker.close()
    return job


@pytest.mark.parametrize("mode", ["async", "def"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
async def test_signal_mid_job_releases_it_uncounted(standalone, qname, mode, sig):
    q = await emq.Queue.connect(standalone, qname)
    job_id = await q.add("long", {"n": 1}, attempts=1)
    with tempfile.TemporaryDirectory() as tmp:
        marker = os.path.join(tmp, "started")
        proc = _start_worker(standalone, qname, mode, marker)
        await _wait_started(proc, marker)
        assert (await _state(q, job_id))["state"] == "active"
        began = time.monotonic()
        proc.send_signal(sig)
        out = await _wait_exit(proc)
        took = time.monotonic() - began
    assert proc.returncode == 0, out
    assert "worker exited" in out, out
    assert took < 8.0, took
    job = await _state(q, job_id)
    assert job["state"] == "waiting", job
    assert job["attempts_made"] == 0, job
    assert job["stalls"] == 0, job
    assert job.get("failure") is None, job
    counts = await q.counts()
    assert counts["failed"] == 0 and counts["stalled"] == 0, counts
    done = await _run_to_completion(q, job_id)
    assert done["result"] == "finished elsewhere" and done["attempts_made"] == 1
    await q.close()


async def test_ctrl_c_on_asyncio_run_never_fails_the_job(standalone, qname):
    # Without worker.run(), asyncio.run cancels the handler's task on Ctrl-C; that used to be
    # recorded as the job's failure ("the handler's coroutine was cancelled").
    q = await emq.Queue.connect(standalone, qname)
    job_id = await q.add("long", {"n": 1}, attempts=1)
    with tempfile.TemporaryDirectory() as tmp:
        marker = os.path.join(tmp, "started")
        proc = _start_worker(standalone, qname, "asyncio-run", marker)
        await _wait_started(proc, marker)
        proc.send_signal(signal.SIGINT)
        out = await _wait_exit(proc)
    job = await _state(q, job_id)
    assert job["state"] == "waiting", (job, out)
    assert job["attempts_made"] == 0 and job.get("failure") is None, job
    await _run_to_completion(q, job_id)
    await q.close()


async def test_second_signal_stops_at_once(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    job_id = await q.add("long", {"n": 1})
    with tempfile.TemporaryDirectory() as tmp:
        marker = os.path.join(tmp, "started")
        # A long grace: only the second signal can end the process soon.
        proc = _start_worker(standalone, qname, "async", marker, grace=30.0)
        await _wait_started(proc, marker)
        proc.send_signal(signal.SIGINT)
        await asyncio.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        out = await _wait_exit(proc, limit=5.0)
    assert proc.returncode == 0, out
    job = await _state(q, job_id)
    # Nothing was released: the job comes back through its lease, as after a crash.
    assert job["state"] == "active", job
    assert job["attempts_made"] == 0 and job.get("failure") is None, job
    await q.close()


@pytest.mark.parametrize("kind", ["async", "def"])
async def test_timeout_stops_the_handler_before_the_retry(standalone, qname, kind):
    q = await emq.Queue.connect(standalone, qname)
    job_id = await q.add("slow", {}, attempts=3, timeout=0.2)
    runs = []  # [start, end] per run

    async def handle_async(job):
        run = [time.monotonic(), None]
        runs.append(run)
        try:
            await asyncio.sleep(5)
        finally:
            await asyncio.sleep(0.15)  # winding down after the cancel takes a while
            run[1] = time.monotonic()

    def handle_def(job):
        run = [time.monotonic(), None]
        runs.append(run)
        deadline = time.monotonic() + 5
        while not getattr(job, "cancelled", False) and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.15)
        run[1] = time.monotonic()
        return "late"

    worker = emq.Worker(q, handle_async if kind == "async" else handle_def, concurrency=1)
    try:
        deadline = time.monotonic() + 20
        while (job := await _state(q, job_id))["state"] != "failed":
            assert time.monotonic() < deadline, (job, runs)
            await asyncio.sleep(0.05)
    finally:
        await worker.close()
    assert len(runs) == 3, runs
    for before, after in zip(runs, runs[1:]):
        assert before[1] is not None and after[0] >= before[1], f"runs overlap: {runs}"
    assert job["attempts_made"] == 3 and job["failure"]["code"] == "timeout", job
    await q.close()


async def test_cancel_waiting_and_delayed_jobs(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    waiting = await q.add("w", 1)
    delayed = await q.add("d", 2, delay=0.3)
    assert await q.cancel(waiting, "not needed") == "cancelled"
    assert await q.cancel(delayed) == "cancelled"
    ran = []

    async def handle(job):
        ran.append(job.id)

    worker = emq.Worker(q, handle)
    await asyncio.sleep(0.8)  # past the delay: neither runs
    await worker.close()
    assert ran == []
    for job_id, message in ((waiting, "the job was cancelled: not needed"), (delayed, "the job was cancelled")):
        job = await _state(q, job_id)
        assert job["state"] == "failed" and job["attempts_made"] == 0, job
        assert job["failure"]["code"] == "cancelled" and job["failure"]["message"] == message, job
        assert job["cancelled"] is not None
    assert await q.cancel(waiting) == "finished"
    with pytest.raises(emq.InvalidJobId):
        await q.cancel("nope")
    sq = emq.sync.Queue.connect(standalone, qname)
    another = sq.add("x", 3)
    assert sq.cancel(another, "sync") == "cancelled"
    sq.close()
    await q.close()


@pytest.mark.parametrize("kind", ["async", "def"])
async def test_cancel_a_running_job(standalone, qname, kind):
    q = await emq.Queue.connect(standalone, qname)
    job_id = await q.add("r", 1, attempts=3)
    seen = {}
    started = asyncio.Event()
    loop = asyncio.get_running_loop()

    async def handle_async(job):
        seen["runs"] = seen.get("runs", 0) + 1
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            seen["told"] = time.monotonic()
            seen["reason"] = job.cancel_reason
            raise

    def handle_def(job):
        seen["runs"] = seen.get("runs", 0) + 1
        loop.call_soon_threadsafe(started.set)
        deadline = time.monotonic() + 30
        while not job.cancelled and time.monotonic() < deadline:
            time.sleep(0.005)
        seen["told"] = time.monotonic()
        seen["reason"] = job.cancel_reason
        return "stopped"

    worker = emq.Worker(q, handle_async if kind == "async" else handle_def)
    try:
        await asyncio.wait_for(started.wait(), 10)
        await asyncio.sleep(0.2)
        asked = time.monotonic()
        assert await q.cancel(job_id, "user asked") == "requested"
        deadline = time.monotonic() + 10
        while (job := await _state(q, job_id))["state"] != "failed":
            assert time.monotonic() < deadline, job
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.3)
    finally:
        await worker.close()
    latency = seen["told"] - asked
    print(f"cancel -> {kind} handler told: {latency * 1000:.1f} ms")
    assert latency < 0.5, latency
    assert seen["reason"] == "user asked" and seen["runs"] == 1
    assert job["failure"]["code"] == "cancelled", job
    assert job["failure"]["message"] == "the job was cancelled: user asked"
    assert job["attempts_made"] == 1 and job.get("result") is None, job
    await q.close()


async def test_wait_for_results(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    before = await q.add("quick", {"n": 2})
    later = await q.add("later", {"n": 3})
    doomed = await q.add("doomed", {}, attempts=1)
    never = await q.add("never", {}, delay=60)
    gate = asyncio.Event()

    async def handle(job):
        if job.name == "quick":
            return {"double": job.data["n"] * 2}
        if job.name == "later":
            await gate.wait()
            return "finally"
        raise ValueError("it broke")

    worker = emq.Worker(q, handle, concurrency=4)
    try:
        deadline = time.monotonic() + 10
        while (await _state(q, before))["state"] != "completed":
            assert time.monotonic() < deadline
            await asyncio.sleep(0.02)
        # Finished before the wait began.
        assert await q.wait(before, 1.0) == {"double": 4}
        # Finishes after the wait began.
        waiting = asyncio.ensure_future(q.wait(later, 10.0))
        await asyncio.sleep(0.2)
        assert not waiting.done()
        gate.set()
        assert await waiting == "finally"
        # Failed: the failure, with its traceback.
        with pytest.raises(emq.HandlerFailed) as info:
            await q.wait(doomed, 10.0)
        assert info.value.code == "handler_failed" and info.value.failure_code == "handler_failed"
        assert info.value.message == "it broke"
        assert "Traceback" in info.value.stack and "ValueError" in info.value.stack
        # Timed out.
        began = time.monotonic()
        with pytest.raises(emq.Timeout):
            await q.wait(never, 0.3)
        assert 0.3 <= time.monotonic() - began < 2.0
        # Cancelled: the wait says so.
        assert await q.cancel(never, "stop") == "cancelled"
        with pytest.raises(emq.HandlerFailed) as info:
            await q.wait(never, 1.0)
        assert info.value.failure_code == "cancelled"
        with pytest.raises(emq.InvalidJobId):
            await q.wait("nope", 1.0)
    finally:
        await worker.close()
    sq = emq.sync.Queue.connect(standalone, qname)
    assert sq.wait(before, 1.0) == {"double": 4}
    with pytest.raises(emq.Timeout):
        sq.wait(await q.add("x", delay=60), 0.1)
    sq.close()
    await q.close()


async def test_a_handler_raising_cancelled_error_itself_fails_its_job(standalone, qname):
    # Only a cancel of the handler's task gives the job back; a CancelledError the handler's own
    # code raises is an ordinary failure, and the worker goes on.
    q = await emq.Queue.connect(standalone, qname)
    odd = await q.add("odd", {}, attempts=1)
    fine = await q.add("fine", {})

    async def handle(job):
        if job.name == "odd":
            raise asyncio.CancelledError("mine")
        return "ok"

    worker = emq.Worker(q, handle)
    try:
        with pytest.raises(emq.HandlerFailed) as info:
            await q.wait(odd, 10.0)
        assert "CancelledError" in info.value.message
        assert await q.wait(fine, 10.0) == "ok"
    finally:
        await worker.close()
    await q.close()
