"""Issue 16: the durable add (``Queue.connect(..., durable=(replicas, timeout_ms))``, the core's
``ConnectOptions::durable``) and queue names that are not valid Unicode."""

from __future__ import annotations

import time

import pytest

import emq
import emq.sync


async def test_durable_add_without_a_replica_raises_not_replicated_and_the_job_is_written(standalone, qname):
    q = await emq.Queue.connect(standalone, qname, durable=(1, 200))
    job_id = q.mint_id()
    started = time.monotonic()
    with pytest.raises(emq.NotReplicated) as e:
        await q.add("d", {"n": 1}, id=job_id)
    assert e.value.code == "not_replicated"
    assert time.monotonic() - started >= 0.19
    assert job_id in e.value.message and "0 of 1 replicas" in e.value.message
    assert (await q.get(job_id)) is not None


@pytest.mark.parametrize("durable", [(0, 100), (65, 100), (1, 0), (1, 60_001), (-1, 100), (2**70, 100)])
async def test_durable_bounds_are_the_cores(standalone, qname, durable):
    with pytest.raises(emq.InvalidOption) as e:
        await emq.Queue.connect(standalone, qname, durable=durable)
    assert "durable" in e.value.message


@pytest.mark.parametrize("name", ["q\ud800x", "\udfff", "a\udc80"])
def test_a_queue_name_with_a_lone_surrogate_is_refused(standalone, name):
    # It was a raw UnicodeEncodeError; now the core's code.
    with pytest.raises(emq.InvalidQueueName) as e:
        emq.sync.Queue.connect(standalone, name)
    assert "surrogate" in e.value.message


async def test_an_accepted_queue_name_is_the_name_used(standalone):
    name = "naïve-日本-🚀"
    q = await emq.Queue.connect(standalone, name)
    assert q.name == name
    job_id = await q.add("n", 1)
    again = await emq.Queue.connect(standalone, name)
    assert (await again.get(job_id)) is not None
