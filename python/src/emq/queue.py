"""The queue (:class:`Queue`): adds, reads, flows, job schedulers, limits, events and
maintenance, each an awaitable native call (:mod:`emq._emq`) on the running event loop.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional

from . import _direct, _emq
from . import tracing as _tracing
from ._args import Backoff, JobSpec, Pem, Retention, Seconds, Url, _bulk, _job_defaults, _options, _outcome, _tls, _urls
from .batch import Batch, _callback
from .events import EventStream

__all__ = ["Queue"]


class Queue:
    """A handle on one queue. Create it with :meth:`Queue.connect`."""

    def __init__(self, native: "_emq.Queue") -> None:
        self._native = native
        # One-job adds completed on the event loop's own socket when the core takes them.
        self._direct = _direct.DirectAdds(native)

    @classmethod
    async def connect(
        cls,
        url: Url,
        name: str,
        *,
        durable: "tuple[int, int] | None" = None,
        ca_cert: Optional[Pem] = None,
        client_cert: Optional[Pem] = None,
        client_key: Optional[Pem] = None,
        partitions: Optional[int] = None,
    ) -> "Queue":
        """Connects to ``url`` (a ``redis://``/``rediss://`` URL, or a list of cluster seed URLs;
        None: ``EMQ_URL``) and opens the queue ``name``. ``EMQ_GUARD=1`` runs every script under
        the core's undeclared-key guard. ``durable=(replicas, timeout_ms)``: every add waits for
        that many replicas (``WAIT``) and raises ``NotReplicated`` when they did not acknowledge in
        time (the job is written on the master; add again with the same ``id``).

        For ``rediss://``: ``ca_cert`` is a private CA to trust (else the system's roots);
        ``client_cert`` and ``client_key`` (both or neither) a client certificate for mutual TLS.
        Each is a path (``str`` or ``os.PathLike``) or the PEM itself as ``bytes``. A missing
        file, text that is not PEM, a certificate without its key or TLS material with a
        ``redis://`` URL raise :class:`InvalidOption`; an untrusted server certificate or a
        refused client one :class:`ServerUnavailable`.

        ``partitions=N`` (1 to 256) spreads the queue over N slots (a cluster's masters): the
        count is the queue's, stored the first time, so a handle opened without ``partitions``
        finds it and one opened with another count raises :class:`InvalidOption`. A job with a
        ``group`` or ``dedup`` key goes to that key's partition, any other by its id; workers serve
        every partition with equal shares. See the documentation's "Partitioned queues" page for
        what is not spread yet."""
        tls = _tls(ca_cert, client_cert, client_key)
        ca, cert, key = tls
        return cls(
            await _emq.Queue.connect(
                _urls(url), name, durable, ca_cert=ca, client_cert=cert, client_key=key,
                partitions=partitions,
            )
        )

    @property
    def name(self) -> str:
        """The queue's name."""
        return self._native.name

    @property
    def partitions(self) -> int:
        """How many partitions the queue has (1: a plain queue)."""
        return self._native.partitions

    def mint_id(self) -> str:
        """Mints a job id now, to pass later as ``add(..., id=...)``: adding the same id again (a
        retry after ``ServerUnavailable``, or after a restart of this process) adds nothing."""
        return self._native.mint_id()

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
        remove_on_complete: Retention = False,
        dedup: Optional[str] = None,
        **options: Any,
    ) -> str:
        """Adds a job and returns its id.

        ``data`` must be JSON-serialisable (else :class:`InvalidPayload`, before anything is sent).
        ``delay`` is in seconds; ``priority`` 0 is none, else 1 is the most urgent; ``backoff`` is
        None, ``("fixed", seconds)`` or ``("exponential", seconds[, max_seconds])``. With ``dedup``,
        adding while a job with the same key is waiting or active returns that job's id. Further
        options: ``jitter``, ``timeout`` and ``lease`` (seconds), ``remove_on_fail``, ``id``,
        ``remove_on_complete`` / ``remove_on_fail`` (True: delete at once; a count or
        ``{"count": n, "age": seconds}``: keep it, and the queue's finished jobs within that),
        ``debounce`` (with ``dedup`` and ``delay``: a later add while the first is still delayed
        replaces its data and pushes its start to ``delay`` from now), ``dedup_ttl`` (with
        ``dedup``: hold the key this many seconds after the add, whatever becomes of the job),
        ``group`` (fair groups: :meth:`set_group_weight` and the other group settings, and
        :meth:`set_group_rate_limit`), ``parent_policy`` (flows), ``description``
        (words for people, at most 1,024 bytes, shown by ``emq job`` and ``emq ui``),
        ``dead_letter`` (a queue name: once the job fails for good it moves there as a new job;
        without it, the queue's own, :meth:`set_dead_letter`).
        Every duration is seconds (a number or a ``timedelta``).
        """
        opts = _options(delay, priority, lifo, attempts, backoff, remove_on_complete, dedup, options)
        if not _tracing.ENABLED:
            return await self._direct.add(name, data, opts)
        with _tracing.producer(self.name) as span:
            job_id: str = await self._direct.add(name, data, _tracing.inject(opts))
            if span is not None:
                span.set_attribute("messaging.message.id", job_id)
            return job_id

    async def add_bulk(self, jobs: Iterable[JobSpec]) -> List[str]:
        """Adds many jobs in pipelined round trips; returns their ids in order. Each job is
        ``(name, data)``, ``(name, data, {options})`` or ``{"name": …, "data": …, **options}``."""
        bulk = _bulk(jobs)
        if not _tracing.ENABLED:
            return await self._native.add_bulk(bulk)
        with _tracing.producer(self.name, count=len(bulk)):
            return await self._native.add_bulk(_tracing.inject_all(bulk))

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

    async def grow_partitions(self, count: int) -> int:
        """Grows this partitioned queue to ``count`` partitions while producers and workers run;
        returns the count now. The new partitions get the queue's settings; jobs with a ``group``,
        a ``dedup`` key or an ``id`` of their own keep going to the partition they always did (per-key
        order holds), the others spread over all. Each worker restarts itself over the grown queue
        within about a second (as ``close()`` and a new start would: running jobs get the
        worker's ``shutdown_deadline``). Only growing: ``InvalidOption`` for a plain queue, a count
        not above the present one or above 256."""
        return int(await self._native.grow_partitions(count))

    async def close(self) -> None:
        """Releases the queue's id-minting lease (and closes the socket of its direct adds)."""
        self._direct.close()
        await self._native.close()

    # -- flows -----------------------------------------------------------------------------

    async def add_flow(self, flow: Dict[str, Any]) -> Dict[str, Any]:
        """Adds a flow: a parent job that runs once its children are done, and returns the ids
        in the flow's shape (``{"queue", "id", "children": [...]}``).

        ``flow`` is ``{"name": …, "data": …, "queue": …, "children": [flow, …], **job options}``;
        ``queue`` defaults to this queue for the root and to the parent's queue for a child (any
        queue on the same server). A child's ``parent_policy`` says what its final failure does
        to the parent: ``"fail"`` (default: the parent fails), ``"ignore"`` (the parent runs and
        sees ``{"failed": …}`` for it) or ``"remove"`` (the dependency is dropped). In the
        parent's handler, ``await job.children_results()`` maps ``"<queue>:<id>"`` to each
        child's result."""
        if not _tracing.ENABLED:
            return await self._native.add_flow(flow)
        with _tracing.producer(self.name):
            return await self._native.add_flow(_tracing.inject_flow(flow))

    # -- job schedulers ----------------------------------------------------------------------

    async def upsert_scheduler(
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
        """Creates or replaces the scheduler ``scheduler_id``: it enqueues a job ``name`` with
        ``data`` every ``every`` seconds, or at each occurrence of the cron expression ``cron``
        (5 fields, or 6 with seconds first) in the IANA time zone ``tz`` — on the server's clock,
        once per due time whatever the number of workers. It starts ``first_after`` seconds from
        now, stops after ``limit`` runs or ``end_after`` seconds (None: never). ``options`` are
        job options (``attempts``, ``backoff``, ``remove_on_complete``, …). Running workers of
        the queue fire due schedulers. Returns True when the scheduler was created (a replaced
        one keeps its count)."""
        return await self._native.upsert_scheduler(
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
        )

    async def remove_scheduler(self, scheduler_id: str) -> bool:
        """Deletes a scheduler; True when it existed."""
        return await self._native.remove_scheduler(scheduler_id)

    async def schedulers(self) -> List[Dict[str, Any]]:
        """Every scheduler: ``id``, ``name``, ``every`` (s), ``count`` (runs so far), ``limit``
        (None: none), ``next_in`` (s until the next run, or None)."""
        return await self._native.schedulers()

    # -- limits ------------------------------------------------------------------------------

    async def set_rate_limit(self, max: Optional[int], window: Seconds = 1.0) -> None:
        """At most ``max`` jobs of this queue start per ``window`` seconds across all workers
        (on the server's clock); ``None`` lifts the limit."""
        await self._native.set_rate_limit(max, window)

    async def set_group_rate_limit(self, max: Optional[int], window: Seconds = 1.0) -> None:
        """Each job group (the ``group`` job option) starts at most ``max`` jobs per ``window``
        seconds, every group on its own (on the server's clock); ``None`` lifts the limit."""
        await self._native.set_group_rate_limit(max, window)

    async def set_global_concurrency(self, max: Optional[int]) -> None:
        """At most ``max`` jobs of this queue active at once across all workers; ``None`` lifts
        it."""
        await self._native.set_global_concurrency(max)

    # -- fair groups -------------------------------------------------------------------------

    async def set_group_weight(self, group: str, weight: int) -> None:
        """Sets a group's weight (1 to 1000, every group's is 1 unless set): while groups have
        work, one of weight 3 runs three jobs for each job of a group of weight 1."""
        await self._native.set_group_weight(group, weight)

    async def set_group_concurrency(self, limit: Optional[int], group: Optional[str] = None) -> None:
        """At most ``limit`` jobs of ``group`` (``None``: by default, of every group) running at
        once across all workers; a group's own cap wins over the default. ``limit=None`` lifts
        it."""
        await self._native.set_group_concurrency(limit, group)

    async def set_group_max_waiting(self, limit: Optional[int], group: Optional[str] = None) -> None:
        """At most ``limit`` jobs of ``group`` (``None``: by default, of every group) waiting to
        run; an add past it raises :class:`emq.GroupFull` and writes nothing. ``limit=None`` lifts
        it."""
        await self._native.set_group_max_waiting(limit, group)

    async def pause_group(self, group: str) -> None:
        """Stops handing out jobs of ``group``; its jobs keep waiting (and adds still land) while
        the rest of the queue runs."""
        await self._native.pause_group(group)

    async def resume_group(self, group: str) -> None:
        """Hands out jobs of a paused group again."""
        await self._native.resume_group(group)

    async def groups(self, offset: int = 0, limit: int = 100) -> List[Dict[str, Any]]:
        """One page of the queue's groups, ordered by name, as dicts: ``name``, ``waiting``,
        ``running``, ``weight``, ``concurrency`` and ``max_waiting`` (the group's own cap, else
        the default, else None) and ``paused``. A group is listed while it has jobs waiting or
        running or a setting of its own."""
        return await self._native.groups(offset, limit)

    # -- events ------------------------------------------------------------------------------

    async def events(self, after: Optional[str] = None) -> "EventStream":
        """Follows the queue's events from now on (or after the stream id ``after``)::

            stream = await q.events()
            async for event in stream:      # {"kind": "completed", "job_id": …, "fields": {…}}
                ...
        """
        return EventStream(await self._native.events(after))

    async def recent_events(self, limit: int = 100) -> List[Dict[str, Any]]:
        """The newest ``limit`` events, oldest first."""
        return await self._native.recent_events(limit)

    # -- maintenance -------------------------------------------------------------------------

    async def drain(self, delayed: bool = False) -> int:
        """Removes every waiting, paused and prioritized job (and delayed ones with ``delayed``);
        returns how many."""
        return await self._native.drain(delayed)

    async def clean(self, state: str, grace: Seconds = 0.0, limit: int = 1000) -> int:
        """Removes up to ``limit`` ``"completed"`` or ``"failed"`` jobs that finished more than
        ``grace`` seconds ago; returns how many."""
        return await self._native.clean(state, grace, limit)

    async def obliterate(self, force: bool = False) -> int:
        """Deletes the whole queue (every job and key); refuses (:class:`InvalidState`) while jobs
        are active unless ``force``. Returns the number of jobs removed."""
        return await self._native.obliterate(force)

    async def remove(self, job_id: str) -> bool:
        """Removes a job that is not active; True when it existed."""
        return await self._native.job_op("remove", job_id)

    async def retry(self, job_id: str) -> bool:
        """Sends a failed job back to wait with its attempts reset; False when it is not failed."""
        return await self._native.job_op("retry", job_id)

    # -- dead-letter queues --------------------------------------------------------------------

    async def set_dead_letter(self, queue: Optional[str]) -> None:
        """Sets this queue's default dead-letter queue (``None`` clears it): its jobs without a
        ``dead_letter`` option of their own move there, as new waiting jobs, once they fail for
        good. Stored with the queue (every producer and worker shares it)."""
        await self._native.set_dead_letter(queue)

    async def dead_letter(self) -> Optional[str]:
        """This queue's default dead-letter queue, or ``None``."""
        return await self._native.dead_letter()

    async def set_job_defaults(self, **defaults: Any) -> None:
        """Sets the queue's job defaults, replacing the ones before (none: removes them):
        ``attempts``, ``backoff``, ``jitter``, ``remove_on_complete``, ``remove_on_fail``, in
        :meth:`add`'s forms (seconds). Stored once with the queue, not in every job: a job that
        leaves one of them at its built-in default (attempts 1, no backoff, no jitter, kept) runs
        with the queue's. Workers read them before their first job and every 2 s, so a change
        applies to jobs already waiting. Another option is ``InvalidOption``."""
        await self._native.set_job_defaults(defaults)

    async def job_defaults(self) -> Dict[str, Any]:
        """The queue's job defaults, as :meth:`set_job_defaults` took them (``{}``: none)."""
        return _job_defaults(await self._native.job_defaults())

    async def dead_letters(self, limit: int = 100) -> List[Dict[str, Any]]:
        """The dead-lettered jobs this queue holds (as a dead-letter queue): ``id``, ``name``,
        ``state`` and ``origin`` (``queue``, ``id``, ``attempts_made``, ``stalls``, ``failure``,
        ``failed_ms``, ``options``)."""
        return await self._native.dead_letters(limit)

    async def replay_dead_letters(self, ids: Optional[List[str]] = None) -> List[Dict[str, Any]]:
        """Sends dead-lettered jobs (``ids``, or all) back to their queues with their attempts
        reset and removes them here; returns ``[{id, queue, origin_id}]``."""
        return await self._native.replay_dead_letters(ids)

    async def add_child(self, parent: str, queue: str, name: str, data: Any = None, **options: Any) -> str:
        """Adds a child job to ``queue`` for ``parent``, a job of this queue waiting for its
        children (a flow's parent, or a job whose run added children): it waits for this one too.
        A running job adds its own with :meth:`emq.Job.add_child`. Takes :meth:`add`'s keyword
        options (no ``dedup``); returns the child's id. Raises :class:`InvalidState` when the
        parent is not waiting for children (the child is not added), :class:`JobNotFound` when
        there is no such job."""
        from .batch import _job_options

        return await self._native.add_child(
            parent, queue, name, data, _tracing.inject(_job_options(options))
        )

    async def batch(
        self,
        *,
        on_complete: Optional[Dict[str, Any]] = None,
        on_success: Optional[Dict[str, Any]] = None,
        description: Optional[str] = None,
    ) -> Batch:
        """Creates a batch (:class:`emq.Batch`) held by this queue. Each callback is a job spec
        ``{"queue", "name", "data", "options"}`` (options: a dict of :meth:`add`'s keyword
        options): ``on_complete`` is added once, when every job of the sealed batch has its
        outcome; ``on_success`` once, when every job has completed (then, or later when its
        failed jobs are retried to success). A callback job finds the batch and its counts in
        ``job.options["batch_done"]`` (``queue``, ``id``, ``kind``, ``total``, ``completed``,
        ``failed``); the failed ids are paged with ``open_batch(id).status()``."""
        return Batch(
            await self._native.batch(_callback(on_complete), _callback(on_success), description)
        )

    def open_batch(self, batch_id: str) -> Batch:
        """A handle on batch ``batch_id`` of this queue (:class:`InvalidJobId` for a malformed id)."""
        return Batch(self._native.open_batch(batch_id))

    async def retry_failed(self) -> int:
        """Retries every failed job; returns how many."""
        return await self._native.retry_failed()

    async def promote(self, job_id: str) -> bool:
        """Runs a delayed job now; False when it is not delayed."""
        return await self._native.job_op("promote", job_id)

    async def change_priority(self, job_id: str, priority: int) -> bool:
        """Gives a job that has not finished a new priority (0: none, lower runs first); False
        when there is no such job or it has finished. A waiting job moves at once; a delayed one
        when it is due."""
        return await self._native.change_priority(job_id, priority)

    async def cancel(self, job_id: str, reason: str = "") -> str:
        """Cancels a job. One that has not run yet (waiting, delayed, …) never runs: it ends
        failed with the failure code ``"cancelled"`` and ``reason`` in its message (``job["cancelled"]``
        holds the reason), not retried; returns ``"cancelled"``. For a running job the worker
        holding it is told at once — an ``async def`` handler's task is cancelled
        (``asyncio.CancelledError``), a ``def`` handler sees ``job.cancelled`` — and the job ends
        the same way; returns ``"requested"``. ``"finished"``: it had finished, nothing done;
        ``"not_found"``: no such job."""
        return await self._native.cancel(job_id, reason)

    async def wait(self, job_id: str, timeout: Seconds = 30.0) -> Any:
        """Waits up to ``timeout`` seconds for the job to finish and returns its result; works for
        a job that finished before the call. A job that failed for good raises
        :class:`HandlerFailed` (``exc.failure_code``: ``"handler_failed"``, ``"timeout"``,
        ``"cancelled"``, ``"stalled"``…, ``exc.message``, ``exc.stack``: the traceback when
        recorded, ``exc.failure``: the whole failure dict). Not finished in time:
        :class:`Timeout`; no such job (or removed): :class:`JobNotFound`."""
        return _outcome(await self._native.wait(job_id, timeout))

    async def logs(self, job_id: str) -> List[str]:
        """A job's log lines (``job.log`` in a handler), oldest first."""
        return await self._native.job_op("logs", job_id)

    async def list(self, state: str, offset: int = 0, limit: int = 100) -> List[Dict[str, Any]]:
        """Jobs in ``state`` (``"waiting"``, ``"active"``, ``"completed"``, …) as dicts."""
        return await self._native.list(state, offset, limit)

    async def is_paused(self) -> bool:
        """True while the queue is paused."""
        return await self._native.is_paused()

    async def metrics(self) -> Dict[str, Any]:
        """Counts per state, completed/failed per minute, and lifetime counters."""
        return await self._native.metrics()

    async def migrate_from_bullmq(
        self,
        source_queue: str,
        *,
        from_prefix: str = "bull",
        dry_run: bool = False,
        completed: bool = False,
        delete_source: bool = False,
        batch: int = 500,
    ) -> Dict[str, Any]:
        """Copies the BullMQ queue ``<from_prefix>:<source_queue>`` (``bull`` is BullMQ's default
        prefix, ``emq`` EchoMQ 1.x's) into this queue, crash-safe and idempotent, as ``emq
        migrate`` does (see MIGRATING.md): waiting, prioritized, delayed, waiting-children with
        their flows, failed, completed with ``completed=True``, schedulers, logs. ``dry_run``
        writes nothing; the source is written only with ``delete_source``. Returns the report:
        ``states`` (read / written / already / skipped per state), ``reasons``, ``not_mapped``,
        ``log_lines``, ``elapsed_ms``…"""
        return await self._native.migrate_from_bullmq(
            source_queue, from_prefix, dry_run, completed, delete_source, batch
        )

    async def workers(self) -> List[Dict[str, Any]]:
        """The queue's live workers: id, host, pid, language, concurrency, running, started_ms,
        beat_ms (server ms). A worker leaves when it closes or its heartbeat lapses (15 s)."""
        return await self._native.workers()

    async def __aenter__(self) -> "Queue":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<emq.Queue {self.name!r}>"

