"""Payloads read back exactly or refused at add (issue 16, defect 1): nesting (127 levels read
back, 128 refused), lone surrogates (refused), integers beyond 64 bits (refused: they would read
back as floats), on the core's one check, through add, add_bulk and a worker's handler."""

from __future__ import annotations

import asyncio
import time

import pytest

import emq


def nested(levels: int):
    v = 1
    for _ in range(levels):
        v = [v]
    return v


async def test_payload_depth_surrogates_and_wide_integers(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    try:
        ok = nested(127)
        job_id = await q.add("deep", ok)
        assert (await q.get(job_id))["data"] == ok
        edges = {"max": 2**64 - 1, "min": -(2**63), "s": "\U0001F600"}
        edges_id = await q.add("edges", edges)
        back = (await q.get(edges_id))["data"]
        assert back == edges and isinstance(back["max"], int) and isinstance(back["min"], int)

        for what, bad in [
            ("128 levels", nested(128)),
            ("lone surrogate", {"s": "\ud800"}),
            ("2**70", 2**70),
            ("2**64", [2**64]),
        ]:
            with pytest.raises(emq.InvalidPayload) as e:
                await q.add("bad", bad)
            assert e.value.code == "invalid_payload", what
            with pytest.raises(emq.InvalidPayload):
                await q.add_bulk([("ok", 1), ("bad", bad)])
        counts = await q.counts()
        assert sum(counts.values()) == 2, counts

        # What a handler receives is what was added, and a handler's result is held to the rule.
        seen = []

        async def handle(job):
            seen.append(job.data)
            return 2**70 if job.name == "wide-result" else job.data

        wide_id = await q.add("wide-result", 1)
        worker = emq.Worker(q, handle)
        try:
            deadline = time.monotonic() + 20
            while True:
                c = await q.counts()
                if c["completed"] + c["failed"] == 3:
                    break
                assert time.monotonic() < deadline, c
                await asyncio.sleep(0.05)
        finally:
            await worker.close()
        assert ok in seen and edges in seen
        assert (await q.get(job_id))["result"] == ok
        wide = await q.get(wide_id)
        assert wide["state"] == "failed" and wide["failure"]["code"] == "invalid_payload"
    finally:
        await q.close()


async def test_a_minted_id_added_twice_is_one_job(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    try:
        job_id = q.mint_id()
        assert await q.add("once", {"n": 1}, id=job_id) == job_id
        assert await q.add("once", {"n": 2}, id=job_id) == job_id
        assert await q.add_bulk([("once", {"n": 3}, {"id": job_id})]) == [job_id]
        assert (await q.counts())["waiting"] == 1
        assert (await q.get(job_id))["data"] == {"n": 1}
    finally:
        await q.close()
