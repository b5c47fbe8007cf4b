"""A queue's events stream (:meth:`emq.Queue.events`), read on the event loop."""

from __future__ import annotations

from typing import Any, Dict, List

from ._args import Seconds

class EventStream:
    """A queue's events, in order (from :meth:`Queue.events`). Each event is a dict: ``kind``
    (added, active, completed, retrying, failed, stalled, released, removed, progress, paused,
    resumed), ``job_id`` (or None), ``stream_id`` and every raw ``fields``."""

    def __init__(self, native: Any) -> None:
        self._native = native

    async def next_batch(self, wait: Seconds = 1.0, count: int = 100) -> List[Dict[str, Any]]:
        """The next events, waiting up to ``wait`` seconds for the first; [] when none came."""
        return await self._native.next_batch(wait, count)

    def __aiter__(self) -> "EventStream":
        self._buffer: List[Dict[str, Any]] = []
        return self

    async def __anext__(self) -> Dict[str, Any]:
        while not self._buffer:
            self._buffer = await self._native.next_batch(1.0, 100)
        return self._buffer.pop(0)

