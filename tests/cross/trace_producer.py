"""The Python side of the cross-language trace (bindings/uniffi/kotlin's TraceAcrossLanguagesTest
runs it): inside a "checkout" span, adds one job to the queue; prints one JSON line with the trace
id, the span ids of "checkout" and of emq's send span, and the job id, read from the SDK's
in-memory exporter.

    python trace_producer.py <redis url> <queue>
"""

import asyncio
import json
import sys

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import emq


async def main(url: str, queue: str) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    q = await emq.Queue.connect(url, queue)
    with trace.get_tracer("checkout-service").start_as_current_span("checkout"):
        job_id = await q.add("order", {"order": 42})
    await q.close()
    spans = {s.name: s for s in exporter.get_finished_spans()}
    send = spans[f"send {queue}"]
    print(json.dumps({
        "trace_id": f"{send.context.trace_id:032x}",
        "checkout_span_id": f"{spans['checkout'].context.span_id:016x}",
        "send_span_id": f"{send.context.span_id:016x}",
        "send_parent_id": f"{send.parent.span_id:016x}",
        "job_id": job_id,
    }))


asyncio.run(main(sys.argv[1], sys.argv[2]))
