"""A handler puts its job back to delayed (issue 14, item 6): ``raise emq.Delay(seconds)``."""

import asyncio
import time
from datetime import timedelta


import emq



async def wait_for(q, job_id, states=("completed", "failed"), limit=20.0):
    deadline = time.monotonic() + limit
    while True:
        job = await q.get(job_id)
        if job is not None and job["state"] in states:
            return job
        assert time.monotonic() < deadline, f"job {job_id} still {job and job['state']}"
        await asyncio.sleep(0.05)


async def test_a_handler_delays_its_job(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    snooze = await q.add("snooze", {})
    counted = await q.add("counted", {})
    bad = await q.add("bad", {}, attempts=1)
    runs = []

    async def handle(job):
        runs.append((job.id, job.attempts_made, time.monotonic()))
        first = sum(1 for r in runs if r[0] == job.id) == 1
        if job.name == "snooze" and first:
            raise emq.Delay(0.4)
        if job.name == "counted" and first:
            raise emq.Delay(timedelta(milliseconds=100), count_attempt=True)
        if job.name == "bad":
            raise emq.Delay(-1)
        return "done"

    worker = emq.Worker(q, handle, concurrency=2)
    try:
        s = await wait_for(q, snooze, states=("completed",))
        c = await wait_for(q, counted, states=("completed",))
        b = await wait_for(q, bad, states=("failed",))
    finally:
        await worker.close()
    s_runs = [r for r in runs if r[0] == snooze]
    c_runs = [r for r in runs if r[0] == counted]
    assert [r[1] for r in s_runs] == [0, 0], "the delay is not an attempt"
    assert s_runs[1][2] - s_runs[0][2] >= 0.35
    assert [r[1] for r in c_runs] == [0, 1], "counted when asked"
    assert s["attempts_made"] == 1 and c["attempts_made"] == 2
    assert b["failure"]["code"] == "invalid_option"
    await q.close()
