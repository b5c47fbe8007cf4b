"""`python -m emq worker` and the `emq-worker` console script (issue 15 item 7), as a user runs
them: a subprocess on a real server, a handler imported from the current directory, stderr logs,
and a graceful stop on SIGTERM that puts a running job back to waiting with its attempts intact."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import emq

TASKS = textwrap.dedent(
    """
    import asyncio, os

    async def handle(job):
        if job.name == "slow":
            with open(os.environ["MARKER"], "w") as f:
                f.write(job.id)
            await asyncio.sleep(60)
            return "slept"
        if job.name == "boom":
            raise ValueError("it went boom")
        return job.data * 2

    def handle_def(job):
        return {"def": job.data, "attempt": job.attempt}
    """
)


def _spawn(args, cwd: Path, env_extra: dict) -> subprocess.Popen:
    env = dict(os.environ, EMQ_GUARD="1", PYTHONUNBUFFERED="1", **env_extra)
    env.pop("EMQ_URL", None)
    env.update(env_extra)
    return subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


async def _wait_state(q: emq.Queue, job_id: str, states, limit: float = 20.0) -> dict:
    deadline = time.monotonic() + limit
    while True:
        job = await q.get(job_id)
        if job is not None and job["state"] in states:
            return job
        assert time.monotonic() < deadline, f"job {job_id} still {job and job['state']}"
        await asyncio.sleep(0.05)


async def _wait_exit(proc: subprocess.Popen, limit: float = 20.0) -> tuple:
    deadline = time.monotonic() + limit
    while proc.poll() is None:
        if time.monotonic() > deadline:
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"the worker did not exit: {err}")
        await asyncio.sleep(0.05)
    out, err = proc.communicate()
    return proc.returncode, out, err


def test_help_names_the_options_with_their_units():
    r = subprocess.run([sys.executable, "-m", "emq", "worker", "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    for opt in ("--queue", "--concurrency", "--url", "--lease", "--shutdown-timeout", "--stalled-interval", "--max-stalls"):
        assert opt in r.stdout, (opt, r.stdout)
    assert "seconds" in r.stdout and "EMQ_URL" in r.stdout and "127.0.0.1:6379" in r.stdout
    r = subprocess.run([sys.executable, "-m", "emq"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "worker" in r.stdout
    r = subprocess.run([sys.executable, "-m", "emq", "worker", "nocolon", "--queue", "q"], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "module:function" in r.stderr


def test_console_script_is_installed():
    script = Path(sys.executable).with_name("emq-worker")
    assert script.exists(), f"{script} missing: pyproject [project.scripts] emq-worker"
    r = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "usage: emq-worker" in r.stdout, (r.stdout, r.stderr)


async def test_worker_runs_jobs_logs_failures_and_stops_gracefully_on_sigterm(standalone, qname, tmp_path):
    (tmp_path / "tasks.py").write_text(TASKS)
    marker = tmp_path / "started"
    q = await emq.Queue.connect(standalone, qname)
    proc = _spawn(
        [sys.executable, "-m", "emq", "worker", "tasks:handle", "--queue", qname, "--concurrency", "4", "--shutdown-timeout", "0.3"],
        tmp_path,
        {"EMQ_URL": standalone, "MARKER": str(marker)},  # the URL from EMQ_URL, no --url
    )
    try:
        ids = [await q.add("double", n) for n in range(5)]
        boom = await q.add("boom", None, attempts=1)
        for n, job_id in enumerate(ids):
            job = await _wait_state(q, job_id, ("completed",))
            assert job["result"] == n * 2
        await _wait_state(q, boom, ("failed",))
        slow = await q.add("slow", None, attempts=2)
        deadline = time.monotonic() + 20
        while not marker.exists() or marker.read_text() != slow:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the slow job never started"
            await asyncio.sleep(0.05)
        assert (await q.get(slow))["state"] == "active"
        proc.send_signal(signal.SIGTERM)
        rc, out, err = await _wait_exit(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert rc == 0, err
    job = await q.get(slow)
    # Back in waiting, its attempt not counted: a shutdown is not the job's failure.
    assert job["state"] == "waiting" and job["attempts_made"] == 0 and job.get("failure") is None, job
    lines = err.splitlines()
    assert any("started" in line and qname in line for line in lines), err
    # The final figures (stats() kept them after the close): five jobs done, one failed.
    assert any("stopped: 5 completed, 1 failed, 0 retried" in line for line in lines), err
    failures = [line for line in lines if "failed" in line and boom in line]
    assert len(failures) == 1 and "it went boom" in failures[0] and "attempt 1/1" in failures[0], err
    assert out == "", out  # logs go to stderr
    # Another worker (the console script, a def handler) runs the job given back, to completion.
    proc = _spawn(
        [str(Path(sys.executable).with_name("emq-worker")), "tasks:handle_def", "-q", qname, "--url", standalone],
        tmp_path,
        {},
    )
    try:
        job = await _wait_state(q, slow, ("completed",))
        assert job["result"] == {"def": None, "attempt": 1}, job
        proc.send_signal(signal.SIGINT)
        rc, _, err = await _wait_exit(proc)
        assert rc == 0, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    await q.close()


async def test_no_server_at_the_default_url_fails_with_server_unavailable(tmp_path):
    (tmp_path / "tasks.py").write_text(TASKS)
    # Nothing listens on this port: the worker says so and exits non-zero (never an embedded server).
    proc = _spawn([sys.executable, "-m", "emq", "worker", "tasks:handle", "-q", "x", "--url", "redis://127.0.0.1:1"], tmp_path, {})
    rc, _, err = await _wait_exit(proc, 60.0)
    assert rc == 1 and "server_unavailable" in err, err
