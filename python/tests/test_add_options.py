"""The add wrapper sends the core only the options that differ from its defaults (a one-job add
converts fewer values): explicit defaults must read back exactly like no options, and a value of
the wrong type that equals a default (`delay=False`, `attempts=True`) must still be refused."""

from __future__ import annotations

import datetime
import math

import pytest

import emq
import emq.sync

FIELDS = ("attempts", "priority", "options", "state")


async def test_explicit_defaults_read_back_like_no_options(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    plain = await q.get(await q.add("a", {"n": 1}))
    explicit = await q.get(
        await q.add(
            "a", {"n": 1}, delay=0, priority=0, lifo=False, attempts=1, backoff=None,
            remove_on_complete=False, dedup=None,
        )
    )
    floats = await q.get(await q.add("a", {"n": 1}, delay=0.0))
    for f in FIELDS:
        assert plain[f] == explicit[f] == floats[f], f


@pytest.mark.parametrize(
    "opts",
    [{"delay": False}, {"delay": True}, {"priority": False}, {"attempts": True}, {"lifo": 0},
     {"remove_on_complete": 0.0}, {"delay": float("nan")}, {"priority": 0.5}],
)
async def test_a_wrong_type_equal_to_a_default_is_still_refused(standalone, qname, opts):
    q = await emq.Queue.connect(standalone, qname)
    with pytest.raises(emq.InvalidOption):
        await q.add("a", {"n": 1}, **opts)
    assert (await q.counts())["waiting"] == 0


async def test_non_default_values_still_reach_the_core(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    j = await q.get(await q.add("a", 1, delay=datetime.timedelta(seconds=60), priority=3, attempts=2))
    assert j["state"] == "delayed" and j["attempts"] == 2 and j["priority"] == 3


def test_sync_facade_sends_the_same(standalone, qname):
    q = emq.sync.Queue.connect(standalone, qname)
    assert q.get(q.add("a", 1, attempts=1, priority=0))["options"] == q.get(q.add("a", 1))["options"]
    with pytest.raises(emq.InvalidOption):
        q.add("a", 1, attempts=True)


async def test_the_payload_encoder_still_refuses_nan(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    for bad in ({"x": math.nan}, {"x": math.inf}, {1, 2}):
        with pytest.raises(emq.InvalidPayload):
            await q.add("a", bad)
    assert (await q.counts())["waiting"] == 0


async def test_a_description_reads_back_exactly_and_is_bounded(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    text = "nightly import of account 7 — ünïcode, \"quotes\" and\nnewlines"
    j = await q.get(await q.add("import", 1, description=text))
    assert j["options"]["description"] == text
    seen = []

    async def handle(job):
        seen.append(job.options.get("description"))
        return None

    w = emq.Worker(q, handle)
    await q.wait(j["id"], timeout=10)
    await w.close()
    assert seen == [text]
    for bad in ("x" * 1025, 5):
        with pytest.raises(emq.InvalidOption):
            await q.add("import", 1, description=bad)
    assert (await q.counts())["waiting"] == 0
    assert (await q.get(await q.add("plain", 1)))["options"].get("description") is None


async def test_keyword_options_reach_the_core_as_one_spec(standalone, qname):
    """The keywords cross as one JSON object read by the core's JobSpec: a refusal names the
    option, a job id of the wrong type is InvalidJobId, names are snake_case, every duration is
    seconds (numbers or timedeltas, nested ones too)."""
    q = await emq.Queue.connect(standalone, qname)
    with pytest.raises(emq.InvalidOption, match=r"delay: invalid type: string \"soon\""):
        await q.add("a", 1, delay="soon")
    with pytest.raises(emq.InvalidOption, match=r"lifo: invalid type"):
        await q.add("a", 1, lifo="yes")
    with pytest.raises(emq.InvalidOption, match="bogus"):
        await q.add("a", 1, bogus=1)
    with pytest.raises(emq.InvalidOption, match="dedupTtl"):
        await q.add("a", 1, dedup="k", dedupTtl=5)
    with pytest.raises(emq.InvalidOption, match="finite"):
        await q.add("a", 1, lease=float("inf"))
    with pytest.raises(emq.InvalidJobId):
        await q.add("a", 1, id=5)
    assert (await q.counts())["waiting"] == 0
    # None is "not given", for every option.
    plain = await q.get(await q.add("a", 1, delay=None, group=None, timeout=None))
    assert plain["state"] == "waiting"
    j = await q.get(await q.add(
        "a", 1, delay=datetime.timedelta(seconds=30), backoff=("exponential", datetime.timedelta(milliseconds=250), 2),
        remove_on_fail={"count": 5, "age": datetime.timedelta(hours=1)}, timeout=1.5, dedup="k", dedup_ttl=9,
    ))
    o = j["options"]
    assert j["state"] == "delayed"
    assert o["backoff"] == {"type": "exponential", "delay_ms": 250, "max_ms": 2000}, o
    assert o["timeout_ms"] == 1500 and o["dedup_ttl_ms"] == 9000, o
    await q.close()
