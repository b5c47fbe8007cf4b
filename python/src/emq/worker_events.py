"""A worker's own events (:meth:`emq.Worker.on`): the listeners, and the pump that hands them
the events the native worker reports — on the worker's event loop, or on a thread of its own for
a worker without one. Shared by :class:`emq.Worker` and :class:`emq.sync.Worker`.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from typing import Any, Awaitable, Callable, Dict, List, Literal, Optional, Tuple, TypeVar

from . import _emq
from .errors import HandlerFailed, InvalidOption, error_for_code
from .job import Job

__all__ = ["WORKER_EVENTS", "WorkerEventName"]

#: The events a worker reports (see :meth:`Worker.on`).
WORKER_EVENTS = ("completed", "failed", "progress", "stalled", "error")

WorkerEventName = Literal["completed", "failed", "progress", "stalled", "error"]


class _Listeners:
    """A worker's event listeners, and the dispatch of the events its native half reports (shared
    by :class:`Worker` and :class:`emq.sync.Worker`)."""

    def __init__(self) -> None:
        self.by_name: Dict[str, List[Callable[..., Any]]] = {name: [] for name in WORKER_EVENTS}

    def add(self, name: str, fn: Callable[..., Any]) -> None:
        if name not in self.by_name:
            raise InvalidOption(f"unknown worker event {name!r}: one of {', '.join(WORKER_EVENTS)}")
        if not callable(fn):
            raise InvalidOption("a worker event listener must be callable")
        self.by_name[name].append(fn)

    def remove(self, name: str, fn: Callable[..., Any]) -> None:
        fns = self.by_name.get(name)
        if fns and fn in fns:
            fns.remove(fn)

    @staticmethod
    def args(ev: Dict[str, Any]) -> Tuple[Any, ...]:
        kind = ev["kind"]
        if kind == "completed":
            return (Job(None, ev["job"]), ev.get("result"))
        if kind == "failed":
            return (Job(None, ev["job"]), HandlerFailed.from_failure(ev["failure"], bool(ev.get("will_retry"))))
        if kind == "progress":
            return (Job(None, ev["job"]), ev.get("value"))
        if kind == "stalled":
            return (ev["job_id"],)
        err = ev.get("error") or {}
        return (error_for_code(str(err.get("code", "internal")), str(err.get("message", ""))),)

    def dispatch(self, events: List[Dict[str, Any]], spawn: Optional[Callable[[Any], Any]]) -> None:
        """Calls the listeners of each event, in order. A listener that returns an awaitable has it
        run by ``spawn`` (a task on the loop) or, without a loop, to completion here. A listener
        that raises is reported to the ``error`` listeners; nothing reaches the worker."""
        for ev in events:
            fns = self.by_name.get(ev.get("kind", ""))
            if not fns:
                continue
            try:
                args = self.args(ev)
            except Exception as exc:  # a malformed event: never expected
                self._listener_failed(ev.get("kind", "?"), exc, spawn)
                continue
            for fn in list(fns):
                try:
                    r = fn(*args)
                    if inspect.isawaitable(r):
                        if spawn is not None:
                            spawn(self._guarded(ev["kind"], r, spawn))
                        else:
                            asyncio.run(self._guarded(ev["kind"], r, None))
                except Exception as exc:
                    self._listener_failed(ev["kind"], exc, spawn)

    async def _guarded(self, kind: str, aw: Awaitable[Any], spawn: Optional[Callable[[Any], Any]]) -> None:
        try:
            await aw
        except Exception as exc:
            self._listener_failed(kind, exc, spawn)

    def _listener_failed(self, kind: str, exc: BaseException, spawn: Optional[Callable[[Any], Any]]) -> None:
        if kind == "error":
            return  # an error listener raised: nothing more to tell
        self.dispatch(
            [{"kind": "error", "error": {"code": "internal", "message": f"a {kind!r} listener raised {exc!r}"}}],
            spawn,
        )


_W = TypeVar("_W", bound="_WorkerEvents")


class _WorkerEvents:
    """The events half of :class:`Worker` and :class:`emq.sync.Worker`."""

    _native: "_emq.Worker"
    _loop: Optional[asyncio.AbstractEventLoop]

    def _init_events(self, loop: Optional[asyncio.AbstractEventLoop]) -> None:
        self._loop = loop
        self._listeners = _Listeners()
        self._pump: "Optional[asyncio.Task[None]]" = None
        self._pump_thread: Optional[threading.Thread] = None
        self._listener_tasks: "set[asyncio.Task[None]]" = set()

    # -- events ------------------------------------------------------------------------------

    def on(self: _W, event: WorkerEventName, listener: Callable[..., Any]) -> _W:
        """Calls ``listener`` on each ``event`` of this worker; returns the worker (chainable).

        - ``"completed"``: ``listener(job, result)`` once a run's result is recorded;
        - ``"failed"``: ``listener(job, error)`` for each failed run, once recorded (a timeout and a
          cancel count; a job given back at shutdown does not): ``error`` is a
          :class:`HandlerFailed` with ``failure_code``, ``message``, ``stack`` and ``will_retry``;
        - ``"progress"``: ``listener(job, value)`` when a handler of this worker reported progress;
        - ``"stalled"``: ``listener(job_id)`` when this worker's stalled sweep found a job whose
          worker vanished (it goes back to waiting, or fails after ``max_stalls``);
        - ``"error"``: ``listener(exc)`` (an :class:`EmqError`) for the worker's own troubles — a
          lost connection, a failed lease renewal, a listener that raised: the worker keeps trying.

        ``job`` is a snapshot (:class:`Job`: ``id``, ``name``, ``data``, ``attempt``…). Listeners
        run on the worker's event loop (a plain ``def`` worker without a loop: on one thread of
        their own), in order; a listener may be ``async def`` (it then runs as a task). Register
        them right after creating the worker: events before the first registration are not
        kept. A listener that raises is reported to ``error``; nothing reaches the worker."""
        self._listeners.add(event, listener)
        self._native.listen()
        if self._pump is None and self._pump_thread is None:
            if self._loop is not None:
                self._pump = self._loop.create_task(self._pump_events())
            else:
                self._pump_thread = threading.Thread(target=self._pump_blocking, name="emq-worker-events", daemon=True)
                self._pump_thread.start()
        return self

    def off(self: _W, event: WorkerEventName, listener: Callable[..., Any]) -> _W:
        """Removes a listener added with :meth:`on`."""
        self._listeners.remove(event, listener)
        return self

    def _spawn(self, aw: Any) -> None:
        task = self._loop.create_task(aw)  # type: ignore[union-attr]
        self._listener_tasks.add(task)
        task.add_done_callback(self._listener_tasks.discard)

    async def _pump_events(self) -> None:
        while True:
            batch = await self._native.events(1.0)
            if batch is None:
                return  # closed, and every event delivered
            self._listeners.dispatch(batch, self._spawn)

    def _pump_blocking(self) -> None:
        while True:
            batch = self._native.events(1.0, blocking=True)
            if batch is None:
                return
            self._listeners.dispatch(batch, None)

    async def _end_events(self) -> None:
        """After the close: the last events reach their listeners."""
        if self._pump is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._pump), 5.0)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                self._pump.cancel()
        self._end_events_blocking()

    def _end_events_blocking(self) -> None:
        if self._pump_thread is not None and self._pump_thread is not threading.current_thread():
            self._pump_thread.join(5.0)
