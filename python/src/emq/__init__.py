"""emq — EchoMQ 2.0: a background-job queue on Redis-protocol datastores.

A thin asyncio layer over the Rust core (the native module ``emq._emq``)::

    import asyncio, emq

    async def main():
        q = await emq.Queue.connect("redis://127.0.0.1:6379", "emails")
        job_id = await q.add("send", {"to": "a@example.com"}, attempts=3, backoff=("exponential", 1.0))

        async def handle(job):          # or a plain ``def``: it then runs in a thread
            return {"sent": job["data"]["to"]}

        worker = emq.Worker(q, handle, concurrency=4)
        ...
        await worker.close()
        await q.close()

Payloads and results are anything ``json.dumps`` accepts. Job ids are strings. Errors are the
subclasses of :class:`emq.errors.EmqError`, each with a stable ``.code``. For scripts without an
event loop, see :mod:`emq.sync`.
"""

from __future__ import annotations

import asyncio
import inspect
import os
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from . import _emq
from .errors import (
    Closed,
    CrossSlot,
    EmqError,
    HandlerFailed,
    IncompatibleVersion,
    Internal,
    InvalidJobId,
    InvalidOption,
    InvalidPayload,
    InvalidQueueName,
    InvalidState,
    JobNotFound,
    LeaseLost,
    NodeLeaseLost,
    ScriptError,
    ServerUnavailable,
    Timeout,
    UndeclaredKey,
    Unrecoverable,
)

__version__: str = _emq.__version__

__all__ = [
    "Queue",
    "Worker",
    "Unrecoverable",
    "EmqError",
    "Closed",
    "CrossSlot",
    "HandlerFailed",
    "IncompatibleVersion",
    "Internal",
    "InvalidJobId",
    "InvalidOption",
    "InvalidPayload",
    "InvalidQueueName",
    "InvalidState",
    "JobNotFound",
    "LeaseLost",
    "NodeLeaseLost",
    "ScriptError",
    "ServerUnavailable",
    "Timeout",
    "UndeclaredKey",
]

Url = Union[str, Sequence[str], None]
Backoff = Optional[Tuple[Any, ...]]


def _urls(url: Url) -> List[str]:
    """One URL, or a list of cluster seed URLs; None reads ``EMQ_URL``."""
    if url is None:
        url = os.environ.get("EMQ_URL")
        if not url:
            raise InvalidOption("no URL given and EMQ_URL is not set")
    if isinstance(url, str):
        return [url]
    urls = list(url)
    if not urls or not all(isinstance(u, str) for u in urls):
        raise InvalidOption("url must be a str or a non-empty list of str")
    return urls


def _options(
    delay: float,
    priority: int,
    lifo: bool,
    attempts: int,
    backoff: Backoff,
    remove_on_complete: bool,
    dedup: Optional[str],
    extra: Dict[str, Any],
) -> Dict[str, Any]:
    opts: Dict[str, Any] = dict(
        delay=delay,
        priority=priority,
        lifo=lifo,
        attempts=attempts,
        backoff=backoff,
        remove_on_complete=remove_on_complete,
        dedup=dedup,
    )
    opts.update(extra)
    return opts


JobSpec = Union[Tuple[str, Any], Tuple[str, Any, Dict[str, Any]], Dict[str, Any]]


def _bulk(jobs: Iterable[JobSpec]) -> List[Tuple[str, Any, Optional[Dict[str, Any]]]]:
    out = []
    for job in jobs:
        if isinstance(job, dict):
            spec = dict(job)
            try:
                name = spec.pop("name")
            except KeyError:
                raise InvalidOption("a bulk job dict needs a 'name'") from None
            data = spec.pop("data", None)
            out.append((name, data, spec or None))
        elif isinstance(job, tuple) and len(job) in (2, 3):
            out.append((job[0], job[1], job[2] if len(job) == 3 else None))
        else:
            raise InvalidOption("add_bulk takes (name, data[, options]) tuples or {'name', 'data', ...} dicts")
    return out


class Queue:
    """A handle on one queue. Create it with :meth:`Queue.connect`."""

    def __init__(self, native: "_emq.Queue") -> None:
        self._native = native

    @classmethod
    async def connect(cls, url: Url, name: str) -> "Queue":
        """Connects to ``url`` (a ``redis://``/``rediss://`` URL, or a list of cluster seed URLs;
        None: ``EMQ_URL``) and opens the queue ``name``. ``EMQ_GUARD=1`` runs every script under
        the core's undeclared-key guard."""
        return cls(await _emq.Queue.connect(_urls(url), name))

    @property
    def name(self) -> str:
        """The queue's name."""
        return self._native.name

    async def add(
        self,
        name: str,
        data: Any = None,
        *,
        delay: float = 0.0,
        priority: int = 0,
        lifo: bool = False,
        attempts: int = 1,
        backoff: Backoff = None,
        remove_on_complete: bool = False,
        dedup: Optional[str] = None,
        **options: Any,
    ) -> str:
        """Adds a job and returns its id.

        ``data`` must be JSON-serialisable (else :class:`InvalidPayload`, before anything is sent).
        ``delay`` is in seconds; ``priority`` 0 is none, else 1 is the most urgent; ``backoff`` is
        None, ``("fixed", seconds)`` or ``("exponential", seconds[, max_seconds])``. With ``dedup``,
        adding while a job with the same key is waiting or active returns that job's id. Further
        options: ``jitter``, ``timeout`` (seconds), ``remove_on_fail``, ``id``.
        """
        opts = _options(delay, priority, lifo, attempts, backoff, remove_on_complete, dedup, options)
        return await self._native.add(name, data, opts)

    async def add_bulk(self, jobs: Iterable[JobSpec]) -> List[str]:
        """Adds many jobs in pipelined round trips; returns their ids in order. Each job is
        ``(name, data)``, ``(name, data, {options})`` or ``{"name": …, "data": …, **options}``."""
        return await self._native.add_bulk(_bulk(jobs))

    async def get(self, job_id: str) -> Optional[Dict[str, Any]]:
        """The job as a dict (``id``, ``name``, ``data``, ``state``, ``attempts_made``, ``result``,
        ``failure``…), or None when there is no such job. A string that emq did not mint raises
        :class:`InvalidJobId`."""
        return await self._native.get(job_id)

    async def counts(self) -> Dict[str, int]:
        """Number of jobs per state."""
        return await self._native.counts()

    async def pause(self) -> None:
        """Stops handing out jobs (adds still land)."""
        await self._native.pause()

    async def resume(self) -> None:
        """Hands out jobs again."""
        await self._native.resume()

    async def close(self) -> None:
        """Releases the queue's id-minting lease."""
        await self._native.close()

    async def __aenter__(self) -> "Queue":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<emq.Queue {self.name!r}>"


Handler = Callable[[Dict[str, Any]], Any]


class Worker:
    """Runs ``handler`` on the jobs of ``queue``, ``concurrency`` at a time, from construction
    until :meth:`close`.

    ``handler(job)`` receives the job as a dict (as :meth:`Queue.get` returns it) and returns a
    JSON-serialisable result. An ``async def`` handler runs on the event loop that was running
    when the worker was created; a plain ``def`` runs in a thread. An exception fails the run (its
    message and traceback are recorded; the job retries while attempts remain); raising
    :class:`Unrecoverable` fails the job at once. ``lease`` is in seconds.
    """

    def __init__(self, queue: Queue, handler: Handler, concurrency: int = 1, lease: float = 30.0) -> None:
        if not callable(handler):
            raise InvalidOption("the handler must be callable")
        try:
            loop: Optional[asyncio.AbstractEventLoop] = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is None and inspect.iscoroutinefunction(handler):
            raise InvalidOption("an async handler needs a running event loop: create the Worker inside it")
        self._native = _emq.Worker(queue._native, handler, loop, concurrency, lease)

    async def close(self) -> None:
        """Stops fetching, waits for running jobs (up to the shutdown deadline), then gives the
        rest back to the queue."""
        await self._native.close()

    def stats(self) -> Dict[str, int]:
        """Counters: ``completed``, ``failed``, ``lease_lost``, ``recovered``."""
        return self._native.stats()

    async def __aenter__(self) -> "Worker":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
