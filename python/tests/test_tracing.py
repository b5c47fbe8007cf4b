"""OpenTelemetry spans (emq.tracing) on real servers, read back from the SDK's in-memory exporter:
a producer span per add (one per bulk call), whose W3C context the job keeps in its own record;
a consumer span per run, linked to the producer's (or its child, under ``relation="child"``),
with the messaging attributes, the attempt, the outcome and the error; children a running job
adds carry the consumer span's context; a caller's own ``traceparent`` wins, a malformed one is
refused (``InvalidOption``) and adds nothing; and without ``opentelemetry`` installed emq makes no
span and stores no context."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from typing import Any, List

import pytest

import emq
import emq.sync
import emq.tracing
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

_EXPORTER = InMemorySpanExporter()
_provider = TracerProvider()
_provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))


class _Switch(trace.TracerProvider):
    """The process's one global provider (OpenTelemetry takes one per process): the SDK's while a
    test of this file runs, a no-op one otherwise, so the rest of the suite runs untraced."""

    active: Any = None

    def get_tracer(self, *args: Any, **kwargs: Any) -> Any:
        return (self.active or trace.NoOpTracerProvider()).get_tracer(*args, **kwargs)


_SWITCH = _Switch()
trace.set_tracer_provider(_SWITCH)


class _Tracer:
    def start_as_current_span(self, name: str) -> Any:
        return trace.get_tracer("emq-tests").start_as_current_span(name)


_tracer = _Tracer()

OWN = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@pytest.fixture(autouse=True)
def spans():
    _EXPORTER.clear()
    emq.tracing.configure(relation="link")
    _SWITCH.active = _provider
    yield _EXPORTER
    _SWITCH.active = None
    emq.tracing.configure(relation="link")


def named(name: str) -> List[Any]:
    return [s for s in _EXPORTER.get_finished_spans() if s.name == name]


async def wait_for(what: str, check, limit: float = 20.0) -> None:
    deadline = time.monotonic() + limit
    while not await check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


def traceparent_of(span: Any) -> str:
    c = span.get_span_context()
    return f"00-{c.trace_id:032x}-{c.span_id:016x}-{int(c.trace_flags):02x}"


@pytest.mark.parametrize("topology", ["standalone", "cluster"])
async def test_an_add_and_its_runs_make_linked_spans(request, topology, qname):
    url = request.getfixturevalue(topology)
    q = await emq.Queue.connect(url, qname)
    assert emq.tracing.ENABLED
    with _tracer.start_as_current_span("request") as request_span:
        job_id = await q.add("charge", {"n": 1}, attempts=2, backoff=("fixed", 0.05))
    [send] = named(f"send {qname}")
    assert send.kind == trace.SpanKind.PRODUCER
    assert send.parent.span_id == request_span.get_span_context().span_id
    assert send.attributes["messaging.system"] == "emq"
    assert send.attributes["messaging.destination.name"] == qname
    assert send.attributes["messaging.operation.type"] == "send"
    assert send.attributes["messaging.message.id"] == job_id
    stored = (await q.get(job_id))["options"]["trace"]
    assert stored == {"traceparent": traceparent_of(send)}
    assert (await q.get(job_id))["data"] == {"n": 1}, "the data is untouched"

    seen: List[Any] = []

    async def handler(job: emq.Job) -> str:
        seen.append((job.traceparent, trace.get_current_span().get_span_context()))
        if job.attempt == 1:
            raise RuntimeError("card declined")
        return "ok"

    w = emq.Worker(q, handler)
    try:
        async def done() -> bool:
            return (await q.get(job_id))["state"] == "completed"

        await wait_for("the retry completes", done)
    finally:
        await w.close()
    runs = sorted(named(f"process {qname}"), key=lambda s: s.attributes["emq.job.attempt"])
    assert [r.attributes["emq.job.attempt"] for r in runs] == [1, 2]
    assert [r.attributes["emq.job.outcome"] for r in runs] == ["failed", "completed"]
    for run, (job_traceparent, current) in zip(runs, seen):
        assert run.kind == trace.SpanKind.CONSUMER
        assert job_traceparent == traceparent_of(send)
        assert current.span_id == run.get_span_context().span_id, "the handler runs in the span"
        [link] = run.links
        assert link.context.span_id == send.get_span_context().span_id
        assert link.context.trace_id == send.get_span_context().trace_id
        assert run.get_span_context().trace_id != send.get_span_context().trace_id, "linked, not a child"
        assert run.parent is None
        assert run.attributes["messaging.message.id"] == job_id
        assert run.attributes["messaging.operation.type"] == "process"
        assert run.attributes["emq.job.name"] == "charge"
    assert runs[0].status.status_code == trace.StatusCode.ERROR
    assert "card declined" in runs[0].status.description
    assert [e.name for e in runs[0].events] == ["exception"]
    assert runs[1].status.status_code != trace.StatusCode.ERROR


async def test_relation_child_puts_the_run_in_the_producers_trace(standalone, qname):
    emq.tracing.configure(relation="child")
    q = await emq.Queue.connect(standalone, qname)
    with _tracer.start_as_current_span("request"):
        job_id = await q.add("x", 1)
    [send] = named(f"send {qname}")

    w = emq.Worker(q, lambda job: "done")
    try:
        async def done() -> bool:
            return (await q.get(job_id))["state"] == "completed"

        await wait_for("the job completes", done)
    finally:
        await w.close()
    [run] = named(f"process {qname}")
    assert run.parent.span_id == send.get_span_context().span_id
    assert run.get_span_context().trace_id == send.get_span_context().trace_id
    assert run.links == ()
    with pytest.raises(emq.InvalidOption):
        emq.tracing.configure(relation="sibling")


async def test_a_bulk_add_is_one_span_and_children_carry_the_runs_context(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    kids = await emq.Queue.connect(standalone, qname + "-kids")
    ids = await q.add_bulk([("a", 1), ("b", 2), ("c", 3, {"traceparent": OWN})])
    [send] = named(f"send {qname}")
    assert send.attributes["messaging.batch.message_count"] == 3
    got = [(await q.get(i))["options"]["trace"]["traceparent"] for i in ids]
    assert got == [traceparent_of(send)] * 2 + [OWN], "a caller's own traceparent wins"

    child_ids: List[str] = []

    async def handler(job: emq.Job) -> str:
        if job.name == "a" and not await job.children_results():
            child_ids.append(await job.add_child(kids.name, "kid", {}))
        return "ok"

    w = emq.Worker(q, handler)
    try:
        async def spawned() -> bool:
            return len(child_ids) == 1

        await wait_for("a child is added", spawned)
    finally:
        await w.close()
    [run_a] = [s for s in named(f"process {qname}") if s.attributes["emq.job.name"] == "a"]
    kid = await kids.get(child_ids[0])
    assert kid["options"]["trace"]["traceparent"] == traceparent_of(run_a)


async def test_a_malformed_traceparent_is_refused_and_adds_nothing(standalone, qname):
    q = await emq.Queue.connect(standalone, qname)
    for bad in ("00-abc", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"):
        with pytest.raises(emq.InvalidOption) as e:
            await q.add("x", 1, traceparent=bad)
        assert e.value.code == "invalid_option"
    with pytest.raises(emq.InvalidOption):
        await q.add("x", 1, tracestate="a=b")
    assert sum((await q.counts()).values()) == 0
    job_id = await q.add("x", 1, traceparent=OWN, tracestate="k=v")
    assert (await q.get(job_id))["options"]["trace"] == {"traceparent": OWN, "tracestate": "k=v"}


def test_the_sync_api_traces_too(standalone, qname):
    q = emq.sync.Queue.connect(standalone, qname)
    try:
        with _tracer.start_as_current_span("request"):
            job_id = q.add("x", 1)
        [send] = named(f"send {qname}")
        assert q.get(job_id)["options"]["trace"]["traceparent"] == traceparent_of(send)
    finally:
        q.close()


def test_without_opentelemetry_nothing_is_traced(standalone, qname):
    code = f"""
import asyncio, sys
sys.modules["opentelemetry"] = None  # as if it were not installed
import emq, emq.tracing
assert not emq.tracing.ENABLED
async def main():
    q = await emq.Queue.connect({standalone!r}, {qname!r})
    job_id = await q.add("x", 1)
    assert "trace" not in (await q.get(job_id))["options"], "no context stored"
    w = emq.Worker(q, lambda job: job.traceparent)
    for _ in range(200):
        if (await q.get(job_id))["state"] == "completed":
            break
        await asyncio.sleep(0.05)
    await w.close()
    job = await q.get(job_id)
    assert job["state"] == "completed" and job["result"] is None, job
    print("untraced ok")
asyncio.run(main())
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=dict(os.environ)
    )
    assert out.returncode == 0, out.stderr
    assert "untraced ok" in out.stdout
