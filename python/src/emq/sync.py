"""A blocking facade for scripts without an event loop::

    from emq.sync import Queue
    q = Queue.connect("redis://127.0.0.1:6379", "emails")
    job_id = q.add("send", {"to": "a@example.com"})
    print(q.get(job_id)["state"], q.counts())

Each call blocks the calling thread (with the GIL released) until the core answers.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional

from . import _emq
from . import Backoff, JobSpec, Seconds, Url, _bulk, _options, _urls

__all__ = ["Queue"]


class Queue:
    """The blocking twin of :class:`emq.Queue` (``add``, ``add_bulk``, ``get``, ``counts``,
    flows, schedulers, limits, recent events, maintenance, ``close``); see there for each method.
    There is no worker here: workers need an event loop (or run plain ``def`` handlers from
    :class:`emq.Worker` created outside one)."""

    def __init__(self, native: "_emq.Queue") -> None:
        self._native = native

    @classmethod
    def connect(cls, url: Url, name: str) -> "Queue":
        """Connects (see :meth:`emq.Queue.connect`)."""
        return cls(_emq.Queue.connect_blocking(_urls(url), name))

    @property
    def name(self) -> str:
        return self._native.name

    def mint_id(self) -> str:
        """As :meth:`emq.Queue.mint_id`."""
        return self._native.mint_id()

    def add(
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
        """Adds a job; returns its id (see :meth:`emq.Queue.add`)."""
        opts = _options(delay, priority, lifo, attempts, backoff, remove_on_complete, dedup, options)
        return self._native.add_blocking(name, data, opts)

    def add_bulk(self, jobs: Iterable[JobSpec]) -> List[str]:
        """Adds many jobs; returns their ids in order."""
        return self._native.add_bulk_blocking(_bulk(jobs))

    def get(self, job_id: str) -> Optional[Dict[str, Any]]:
        """The job as a dict, or None."""
        return self._native.get_blocking(job_id)

    def counts(self) -> Dict[str, int]:
        """Number of jobs per state."""
        return self._native.counts_blocking()

    def add_flow(self, flow: Dict[str, Any]) -> Dict[str, Any]:
        """Adds a flow; the ids in its shape (see :meth:`emq.Queue.add_flow`)."""
        return self._native.add_flow(flow, blocking=True)

    def upsert_scheduler(
        self,
        scheduler_id: str,
        name: str,
        data: Any = None,
        *,
        every: Optional[Seconds] = None,
        cron: Optional[str] = None,
        tz: str = "UTC",
        first_after: Seconds = 0.0,
        limit: Optional[int] = None,
        end_after: Optional[Seconds] = None,
        **options: Any,
    ) -> bool:
        """Creates or replaces a scheduler (see :meth:`emq.Queue.upsert_scheduler`)."""
        return self._native.upsert_scheduler(
            scheduler_id,
            every,
            name,
            data,
            first_after,
            limit,
            options or None,
            cron=cron,
            tz=tz,
            end_after=end_after,
            blocking=True,
        )

    def remove_scheduler(self, scheduler_id: str) -> bool:
        return self._native.remove_scheduler(scheduler_id, blocking=True)

    def schedulers(self) -> List[Dict[str, Any]]:
        return self._native.schedulers(blocking=True)

    def set_rate_limit(self, max: Optional[int], window: Seconds = 1.0) -> None:
        self._native.set_rate_limit(max, window, blocking=True)

    def set_group_rate_limit(self, max: Optional[int], window: Seconds = 1.0) -> None:
        self._native.set_group_rate_limit(max, window, blocking=True)

    def set_global_concurrency(self, max: Optional[int]) -> None:
        self._native.set_global_concurrency(max, blocking=True)

    def recent_events(self, limit: int = 100) -> List[Dict[str, Any]]:
        return self._native.recent_events(limit, blocking=True)

    def drain(self, delayed: bool = False) -> int:
        return self._native.drain(delayed, blocking=True)

    def clean(self, state: str, grace: Seconds = 0.0, limit: int = 1000) -> int:
        return self._native.clean(state, grace, limit, blocking=True)

    def obliterate(self, force: bool = False) -> int:
        return self._native.obliterate(force, blocking=True)

    def remove(self, job_id: str) -> bool:
        return self._native.job_op("remove", job_id, blocking=True)

    def retry(self, job_id: str) -> bool:
        return self._native.job_op("retry", job_id, blocking=True)

    def retry_failed(self) -> int:
        return self._native.retry_failed(blocking=True)

    def promote(self, job_id: str) -> bool:
        return self._native.job_op("promote", job_id, blocking=True)

    def change_priority(self, job_id: str, priority: int) -> bool:
        return self._native.change_priority(job_id, priority, blocking=True)

    def logs(self, job_id: str) -> List[str]:
        return self._native.job_op("logs", job_id, blocking=True)

    def list(self, state: str, offset: int = 0, limit: int = 100) -> List[Dict[str, Any]]:
        return self._native.list(state, offset, limit, blocking=True)

    def is_paused(self) -> bool:
        return self._native.is_paused(blocking=True)

    def metrics(self) -> Dict[str, Any]:
        return self._native.metrics(blocking=True)

    def close(self) -> None:
        """Releases the queue's id-minting lease."""
        self._native.close_blocking()

    def __enter__(self) -> "Queue":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
