"""OpenTelemetry spans for emq's jobs, with the ``opentelemetry-api`` package when it is installed
(``pip install emq[otel]``); without it every function here does nothing and costs one check.

- A **producer span** per :meth:`emq.Queue.add` (``send <queue>``, kind PRODUCER) and one per
  :meth:`~emq.Queue.add_bulk` / :meth:`~emq.Queue.add_flow` call (with
  ``messaging.batch.message_count``); the job keeps that span's W3C context (``traceparent``,
  ``tracestate``) in its own record (its options, never its data). A caller's own ``traceparent``
  option wins; with no tracer provider configured, nothing is created or stored.
- A **consumer span** per run (``process <queue>``, kind CONSUMER) around the handler, in any
  language's worker: with the attempt, the outcome, and the error (recorded, status ERROR). By
  default it *links* to the producer's span (a fan-out of thousands of jobs, or a retry days later,
  does not make one giant trace); :func:`configure` with ``relation="child"`` makes the producer's
  span its parent instead.
- Children a running job adds (``job.add_child``) carry the consumer span's context.

Attributes follow OpenTelemetry's messaging conventions: ``messaging.system`` = ``"emq"``,
``messaging.destination.name`` = the queue, ``messaging.operation.name`` / ``.type`` =
``send`` / ``process``, ``messaging.message.id`` = the job id; and ``emq.job.name``,
``emq.job.attempt``, ``emq.job.outcome``.
"""

from __future__ import annotations

import contextlib
from typing import Any, Dict, Iterator, List, Optional

from .errors import InvalidOption

__all__ = ["configure", "enabled"]

try:  # pragma: no cover - which branch runs depends on the install
    from opentelemetry import trace as _otel
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    _PROPAGATOR: Optional[TraceContextTextMapPropagator] = TraceContextTextMapPropagator()
except ImportError:  # pragma: no cover
    _otel = None  # type: ignore[assignment]
    _PROPAGATOR = None

_SYSTEM = "emq"
_relation = "link"


ENABLED = _otel is not None
"""Whether ``opentelemetry-api`` is installed: the callers' one check."""


def enabled() -> bool:
    """Whether ``opentelemetry-api`` is installed (spans are then made whenever a tracer provider
    records them)."""
    return _otel is not None


def configure(*, relation: str = "link") -> None:
    """How a consumer span relates to the span that added its job: ``"link"`` (the default: a new
    trace per run, linked to the producer's span) or ``"child"`` (the run's span is a child of the
    producer's, in its trace). :class:`emq.InvalidOption` for anything else."""
    global _relation
    if relation not in ("link", "child"):
        raise InvalidOption(f'relation must be "link" or "child", got {relation!r}')
    _relation = relation


def _tracer() -> Any:
    from . import __version__

    return _otel.get_tracer("emq", __version__)


@contextlib.contextmanager
def producer(queue: str, count: Optional[int] = None, job_id: Optional[str] = None) -> Iterator[Any]:
    """A ``send <queue>`` span around an add (``count``: a bulk call's number of jobs); yields the
    span, or None without ``opentelemetry-api``."""
    if _otel is None:
        yield None
        return
    attributes: Dict[str, Any] = {
        "messaging.system": _SYSTEM,
        "messaging.destination.name": queue,
        "messaging.operation.name": "send",
        "messaging.operation.type": "send",
    }
    if count is not None:
        attributes["messaging.batch.message_count"] = count
    if job_id is not None:
        attributes["messaging.message.id"] = job_id
    with _tracer().start_as_current_span(
        f"send {queue}", kind=_otel.SpanKind.PRODUCER, attributes=attributes
    ) as span:
        yield span


def inject(options: Dict[str, Any]) -> Dict[str, Any]:
    """``options`` with the current span's ``traceparent`` / ``tracestate`` added (unless the
    caller gave a ``traceparent`` or ``tracestate``, or no span records)."""
    if _PROPAGATOR is None or "traceparent" in options or "tracestate" in options:
        return options
    carrier: Dict[str, str] = {}
    _PROPAGATOR.inject(carrier)
    if "traceparent" in carrier:
        options = dict(options)
        options["traceparent"] = carrier["traceparent"]
        if carrier.get("tracestate"):
            options["tracestate"] = carrier["tracestate"]
    return options


def inject_all(jobs: List[Any]) -> List[Any]:
    """Bulk jobs ``(name, data, options)`` with the current context added to each one's options."""
    if _PROPAGATOR is None:
        return jobs
    return [(name, data, inject(dict(opts or {}))) for name, data, opts in jobs]


def inject_flow(flow: Dict[str, Any]) -> Dict[str, Any]:
    """A flow whose root carries the current context (its children join its trace in the core)."""
    if _PROPAGATOR is None or not isinstance(flow, dict):
        return flow
    key = "opts" if "opts" in flow else "options"
    opts = inject(dict(flow.get(key) or {}))
    if "traceparent" not in opts:
        return flow
    flow = dict(flow)
    flow[key] = opts
    return flow


@contextlib.contextmanager
def consumer(queue: str, job: Any) -> Iterator[Any]:
    """A ``process <queue>`` span around one run of ``job`` (an :class:`emq.Job`), linked to (or,
    under ``relation="child"``, a child of) the span that added it. Records an exception the
    handler raises, and re-raises it."""
    if _otel is None:
        yield None
        return
    parent = None
    links = []
    trace = job.traceparent
    if trace is not None and _PROPAGATOR is not None:
        carrier = {"traceparent": trace}
        if job.tracestate:
            carrier["tracestate"] = job.tracestate
        extracted = _PROPAGATOR.extract(carrier)
        span_context = _otel.get_current_span(extracted).get_span_context()
        if span_context.is_valid:
            if _relation == "child":
                parent = extracted
            else:
                links.append(_otel.Link(span_context))
    attributes = {
        "messaging.system": _SYSTEM,
        "messaging.destination.name": queue,
        "messaging.operation.name": "process",
        "messaging.operation.type": "process",
        "messaging.message.id": job.id,
        "emq.job.name": job.name,
        "emq.job.attempt": job.attempt,
    }
    with _tracer().start_as_current_span(
        f"process {queue}",
        context=parent,
        kind=_otel.SpanKind.CONSUMER,
        links=links,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield span
        except BaseException as exc:
            span.set_attribute("emq.job.outcome", "failed")
            span.record_exception(exc)
            span.set_status(_otel.Status(_otel.StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
            raise
        span.set_attribute("emq.job.outcome", "completed")
