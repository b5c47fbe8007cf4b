"""The job a handler receives (:class:`Job`): the job's fields as typed attributes and the calls
on its running run (progress, log, children's results), awaited in an ``async def`` handler and
blocking in a plain ``def``.
"""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable, Dict, Generator, Generic, Optional, TypeVar

from . import _emq
from .errors import InvalidState

__all__ = ["Job", "Reported", "Handler"]

#: A job handler: ``async def`` or plain ``def``, given the :class:`Job`, returning its result.
Handler = Callable[["Job"], Any]


def _on_loop() -> bool:
    """True when the calling thread runs an asyncio event loop (an ``async def`` handler's),
    False in a plain ``def`` handler's thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


_T = TypeVar("_T")


class Reported(Generic[_T]):
    """What :meth:`Job.progress` and :meth:`Job.log` return in a plain ``def`` handler: the call
    has already been made (blocking), so there is nothing to wait for; awaiting it anyway gives
    its value, and not awaiting it is fine (no "never awaited" warning)."""

    __slots__ = ("value",)

    def __init__(self, value: _T) -> None:
        self.value = value

    def __await__(self) -> Generator[Any, None, _T]:
        return self.value
        yield  # pragma: no cover  (makes this a generator)


class Job:
    """The job a handler receives: one run of one job.

    Typed attributes: ``id``, ``name``, ``data`` (the payload), ``attempt`` (the number of this
    run, starting at 1: ``attempts_made + 1``), ``attempts_made`` (runs before this one that
    failed), ``attempts`` (the most runs allowed), ``options`` (the job options it was added
    with that differ from the defaults), ``parent`` (in a flow: ``"<queue>:<id>"``, else None),
    ``priority``, ``stalls``, ``dedup``, ``created_ms`` / ``processed_ms`` (server ms), ``fence``
    (this run's fencing token: it only grows across the job's runs; send it with each write to a
    downstream store, which refuses a write whose fence is below the highest it accepted, so a
    zombie run's late write is refused there; 0 on a worker event's snapshot), ``queue`` (the
    queue the job is in; None on a snapshot), ``traceparent`` / ``tracestate`` (the W3C trace
    context it was added in, or None: see :mod:`emq.tracing`).

    Methods on the running job: :meth:`progress`, :meth:`log`, :meth:`children_results` — awaited
    in an ``async def`` handler; in a plain ``def`` handler (it runs in a thread) the same calls
    block until done, with no ``await``. ``lease_lost``, ``cancelled``, ``interrupt`` and
    ``cancel_reason`` say whether the worker wants the run to stop.
    """

    __slots__ = (
        "_call",
        "id",
        "name",
        "data",
        "attempt",
        "attempts_made",
        "attempts",
        "options",
        "parent",
        "priority",
        "stalls",
        "dedup",
        "created_ms",
        "processed_ms",
        "fence",
        "queue",
        "traceparent",
        "tracestate",
    )

    id: str
    name: str
    data: Any
    attempt: int
    attempts_made: int
    attempts: int
    options: Dict[str, Any]
    parent: Optional[str]
    priority: int
    stalls: int
    dedup: Optional[str]
    created_ms: int
    processed_ms: Optional[int]
    fence: int
    queue: Optional[str]
    traceparent: Optional[str]
    tracestate: Optional[str]

    def __init__(self, call: "Optional[_emq.Call]", fields: Optional[Dict[str, Any]] = None) -> None:
        f: Dict[str, Any] = call.job() if call is not None else dict(fields or {})
        self._call = call
        self.id = f["id"]
        self.name = f["name"]
        self.data = f.get("data")
        self.attempts_made = f.get("attempts_made", 0)
        self.attempt = self.attempts_made + 1
        self.attempts = f.get("attempts", 1)
        self.options = f.get("options") or {}
        self.parent = f.get("parent")
        self.priority = f.get("priority", 0)
        self.stalls = f.get("stalls", 0)
        self.dedup = f.get("dedup")
        self.created_ms = f.get("created_ms", 0)
        self.processed_ms = f.get("processed_ms")
        self.fence = call.fence if call is not None else f.get("fence", 0)
        self.queue = call.queue if call is not None else f.get("queue")
        trace = self.options.get("trace") or {}
        self.traceparent = trace.get("traceparent")
        self.tracestate = trace.get("tracestate")

    def __repr__(self) -> str:
        return f"<emq.Job {self.name!r} id={self.id} attempt={self.attempt}/{self.attempts}>"

    # -- the run -----------------------------------------------------------------------------

    def _run(self) -> "_emq.Call":
        if self._call is None:
            raise InvalidState("this job is a snapshot from a worker event: its run is over")
        return self._call

    @property
    def lease_lost(self) -> bool:
        """True once the worker learned that its lease on this job is gone (another worker may
        run it): a long handler should stop early."""
        return self._call.lease_lost if self._call is not None else False

    @property
    def cancelled(self) -> bool:
        """True once the worker asked this run to stop: the job was cancelled
        (:meth:`Queue.cancel`), ran past its ``timeout``, or the worker's shutdown grace period
        ended. An ``async def`` handler is cancelled (``asyncio.CancelledError``) at that moment;
        a plain ``def`` handler should poll this and return (or raise) soon. Until it does, its
        job stays leased to it (so a retry never overlaps it)."""
        return self._call.cancelled if self._call is not None else False

    @property
    def interrupt(self) -> Optional[str]:
        """Why the worker asked this run to stop: None, ``"cancelled"``, ``"timeout"`` or
        ``"shutdown"``."""
        return self._call.interrupt if self._call is not None else None

    @property
    def cancel_reason(self) -> Optional[str]:
        """The reason given to :meth:`Queue.cancel`, once the job was cancelled."""
        return self._call.cancel_reason if self._call is not None else None

    def progress(self, value: Any) -> Awaitable[None]:
        """Records progress (any JSON value) and announces it (the queue's events stream, the
        worker's ``progress`` event). ``await job.progress(50)`` in an ``async def`` handler;
        ``job.progress(50)`` in a plain ``def`` (it blocks until recorded)."""
        call = self._run()
        if _on_loop():
            return call.progress(value)
        call.progress(value, blocking=True)
        return Reported(None)

    def log(self, line: str) -> Awaitable[int]:
        """Appends a line to the job's log (see :meth:`Queue.logs`); gives the number of lines
        kept. Awaited in an ``async def`` handler; blocking in a plain ``def``."""
        call = self._run()
        if _on_loop():
            return call.log(line)
        return Reported(call.log(line, blocking=True))

    @property
    def batch(self) -> "Any":
        """The batch this job belongs to (None when it was not added through one): an
        :class:`emq.Batch` in an ``async def`` handler, an :class:`emq.sync.Batch` in a plain
        ``def`` one. Jobs it adds count in before they are added, so the batch is not done until
        they are."""
        native = self._run().batch()
        if native is None:
            return None
        if _on_loop():
            from .batch import Batch

            return Batch(native)
        from .sync import Batch as SyncBatch

        return SyncBatch(native)

    def add_child(self, queue: str, name: str, data: Any = None, **options: Any) -> Awaitable[str]:
        """Adds a child job to ``queue`` (any queue) that this job waits for, as a flow's parent
        waits for its children: when this run returns, the job waits in ``waiting-children``
        instead of completing, and once its last child is done it runs again, their results in
        :meth:`children_results` (check them, so the second run ends the job). A child that fails
        for good fails this job under its ``parent_policy="fail"`` (the default), counts as done
        under ``"ignore"``. Takes the keyword options of :meth:`emq.Queue.add` (no ``dedup``);
        returns the child's id. Awaited in an ``async def`` handler; blocking in a plain ``def``."""
        from .batch import _job_options

        from . import tracing

        call = self._run()
        opts = tracing.inject(_job_options(options))
        if _on_loop():
            return call.add_child(queue, name, data, opts)
        return Reported(call.add_child(queue, name, data, opts, blocking=True))

    def children_results(self) -> Awaitable[Dict[str, Any]]:
        """In a flow's parent: each child's result by ``"<queue>:<id>"`` (a failed child under
        ``parent_policy="ignore"`` appears as ``{"failed": …}``). Awaited in an ``async def``
        handler; blocking in a plain ``def``."""
        call = self._run()
        if _on_loop():
            return call.children_results()
        return Reported(call.children_results(blocking=True))
