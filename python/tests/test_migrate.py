"""`Queue.migrate_from_bullmq` from Python (async and sync), on a real server: a BullMQ-shaped
source queue (written with redis-cli, the keys BullMQ writes for waiting jobs) is copied in order,
with its data exact; a dry run writes nothing; a second run copies nothing twice."""

from __future__ import annotations

import json
import subprocess

import pytest

import emq
import emq.sync


def bullmq_source(url: str, prefix: str, queue: str, n: int) -> None:
    """n waiting BullMQ jobs {"n": i}, oldest first (BullMQ LPUSHes; workers take the right end)."""
    cli = ["redis-cli", "-u", url]
    for i in range(1, n + 1):
        subprocess.run(
            cli + ["HSET", f"{prefix}:{queue}:{i}", "name", f"job-{i}", "data", json.dumps({"n": i}),
                   "opts", json.dumps({"attempts": 3}), "timestamp", "1700000000000", "atm", "0"],
            check=True, capture_output=True, timeout=10,
        )
        subprocess.run(cli + ["LPUSH", f"{prefix}:{queue}:wait", str(i)],
                       check=True, capture_output=True, timeout=10)


def written(report: dict, state: str) -> int:
    return sum(s["written"] for s in report["states"] if s["state"] == state)


async def test_a_bullmq_queue_is_copied_in_order_once(standalone, qname):
    src = qname + "-src"
    bullmq_source(standalone, "bull", src, 3)
    q = await emq.Queue.connect(standalone, qname)
    try:
        dry = await q.migrate_from_bullmq(src, dry_run=True)
        assert dry["dry_run"] is True and written(dry, "wait") == 3, dry
        assert (await q.counts())["waiting"] == 0, "the dry run wrote jobs"
        report = await q.migrate_from_bullmq(src)
        assert written(report, "wait") == 3, report
        jobs = await q.list("waiting", 0, 10)
        assert sorted((j["name"], j["data"]) for j in jobs) == [
            ("job-1", {"n": 1}), ("job-2", {"n": 2}), ("job-3", {"n": 3})]
        again = await q.migrate_from_bullmq(src, from_prefix="bull")
        assert written(again, "wait") == 0, again
        assert (await q.counts())["waiting"] == 3
        with pytest.raises(emq.InvalidOption):
            await q.migrate_from_bullmq(src, from_prefix="")
    finally:
        await q.obliterate(force=True)
        await q.close()


def test_the_sync_queue_migrates_too(standalone, qname):
    src = qname + "-src"
    bullmq_source(standalone, "emq", src, 2)
    q = emq.sync.Queue.connect(standalone, qname)
    try:
        report = q.migrate_from_bullmq(src, from_prefix="emq")
        assert written(report, "wait") == 2, report
        assert q.counts()["waiting"] == 2
    finally:
        q.obliterate(force=True)
        q.close()
