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
from . import Backoff, JobSpec, Url, _bulk, _options, _urls

__all__ = ["Queue"]


class Queue:
    """The blocking twin of :class:`emq.Queue` (``add``, ``add_bulk``, ``get``, ``counts``,
    ``close``)."""

    def __init__(self, native: "_emq.Queue") -> None:
        self._native = native

    @classmethod
    def connect(cls, url: Url, name: str) -> "Queue":
        """Connects (see :meth:`emq.Queue.connect`)."""
        return cls(_emq.Queue.connect_blocking(_urls(url), name))

    @property
    def name(self) -> str:
        return self._native.name

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

    def close(self) -> None:
        """Releases the queue's id-minting lease."""
        self._native.close_blocking()

    def __enter__(self) -> "Queue":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
