"""Batches (:class:`Batch`): jobs on any queues, grown while they run, with an ``on_complete``
callback once every job has its outcome and an ``on_success`` one once every job has completed
(the core's ``core/src/batch/``; see docs/site/concepts/batches.md). Create one with
:meth:`emq.Queue.batch`; a running job of a batch gets it as :attr:`emq.Job.batch`.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional

from . import _emq
from ._args import Backoff, JobSpec, Retention, _bulk, _options

__all__ = ["Batch"]


def _job_options(options: Dict[str, Any]) -> Dict[str, Any]:
    """A dict of :meth:`emq.Queue.add`'s keyword options, as the core takes them."""
    o = dict(options)
    return _options(
        o.pop("delay", 0.0),
        o.pop("priority", 0),
        o.pop("lifo", False),
        o.pop("attempts", 1),
        o.pop("backoff", None),
        o.pop("remove_on_complete", False),
        o.pop("dedup", None),
        o,
    )


def _callback(spec: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """A callback ``{"queue", "name", "data", "options"}`` (options: a dict of ``add``'s keyword
    options), its options converted; the core checks the rest."""
    if spec is None:
        return None
    out = dict(spec)
    out["options"] = _job_options(out.get("options") or {})
    return out


class Batch:
    """A handle on one batch: :meth:`add` / :meth:`add_bulk` jobs on any queue, :meth:`seal` once
    its creator has added them, :meth:`status`, :meth:`cancel`."""

    def __init__(self, native: "_emq.Batch") -> None:
        self._native = native

    def __repr__(self) -> str:
        return f"<emq.Batch {self.id} of {self.queue!r}>"

    @property
    def id(self) -> str:
        """The batch's id."""
        return self._native.id

    @property
    def queue(self) -> str:
        """The queue that created it."""
        return self._native.queue

    async def add(
        self,
        queue: str,
        name: str,
        data: Any = None,
        *,
        delay: float = 0.0,
        priority: int = 0,
        lifo: bool = False,
        attempts: int = 1,
        backoff: Backoff = None,
        remove_on_complete: Retention = False,
        **options: Any,
    ) -> str:
        """Adds a job to ``queue`` (any queue) as part of this batch, with the options of
        :meth:`emq.Queue.add` (no ``dedup``); returns its id. It is counted in first, then
        added, so an add with the same ``id=`` after an error adds it once. Raises
        :class:`JobNotFound` for no such batch, :class:`InvalidState` for a cancelled or done one."""
        opts = _options(delay, priority, lifo, attempts, backoff, remove_on_complete, None, options)
        return await self._native.add(queue, name, data, opts)

    async def add_bulk(self, queue: str, jobs: Iterable[JobSpec]) -> List[str]:
        """Adds many jobs to ``queue`` as part of this batch (the shapes of
        :meth:`emq.Queue.add_bulk`); returns their ids in order."""
        return await self._native.add_bulk(queue, _bulk(jobs))

    async def seal(self) -> None:
        """Its creator has added its jobs: from now on the batch is done once every job counted
        in has its outcome, and its callbacks are added then (at once, if they all have one).
        Jobs its running jobs add still count (they are added before those finish)."""
        await self._native.seal()

    async def status(self, offset: int = 0, limit: int = 100) -> Dict[str, Any]:
        """``id``, ``description``, ``total``, ``pending``, ``completed``, ``failed``, ``sealed``,
        ``cancelled``, ``done``, ``parent`` (``{queue, id}`` of the batch it sits inside, or
        ``None``) and one page of ``failed_jobs`` (``[{queue, id}]``, oldest
        failure first, from ``offset``, at most ``limit``)."""
        return await self._native.status(offset, limit)

    async def batch(
        self,
        *,
        on_complete: Optional[Dict[str, Any]] = None,
        on_success: Optional[Dict[str, Any]] = None,
        description: Optional[str] = None,
    ) -> "Batch":
        """Creates a batch inside this one (the arguments of :meth:`emq.Queue.batch`), held by
        the same queue. It counts here as one job: pending until it is done, then completed when
        every job of it completed and failed otherwise (completed later, if its failed jobs are
        retried to success). Seal it as any batch. Cancelling this batch cancels it; cancelling it
        alone counts it failed here. Its ``status()`` names this batch as ``parent``."""
        return Batch(
            await self._native.batch(_callback(on_complete), _callback(on_success), description)
        )

    async def cancel(self) -> int:
        """Cancels the batch (no more jobs, no callback) and its jobs that have no outcome yet;
        returns how many were cancelled or told to stop."""
        return await self._native.cancel()
