"""emq — EchoMQ 2.0: a background-job queue on Redis-protocol datastores.

A thin asyncio layer over the Rust core (the native module ``emq._emq``)::

    import asyncio, emq

    async def main():
        q = await emq.Queue.connect("redis://127.0.0.1:6379", "emails")
        job_id = await q.add("send", {"to": "a@example.com"}, attempts=3, backoff=("exponential", 1.0))

        async def handle(job: emq.Job):  # or a plain ``def``: it then runs in a thread
            return {"sent": job.data["to"], "attempt": job.attempt}

        worker = emq.Worker(q, handle, concurrency=4)
        worker.on("failed", lambda job, error: print(job.id, error.message))
        await worker.run()              # until SIGINT/SIGTERM, then a graceful close
        await q.close()

Payloads and results are anything ``json.dumps`` accepts. Job ids are strings. Errors are the
subclasses of :class:`emq.errors.EmqError`, each with a stable ``.code``. For scripts without an
event loop, see :mod:`emq.sync`; to run a worker from the command line, ``python -m emq worker
module:handler --queue NAME`` (:mod:`emq.cli`).
"""

from __future__ import annotations

import asyncio
import inspect
import os
import signal
import threading
from datetime import timedelta
from typing import (
    Any,
    Awaitable,
    Callable,
    Dict,
    Generator,
    Generic,
    Iterable,
    Iterator,
    List,
    Literal,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
    Union,
)

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
    NotReplicated,
    ScriptError,
    ServerUnavailable,
    AuthFailed,
    PermissionDenied,
    Timeout,
    UndeclaredKey,
    Unrecoverable,
    Delay,
)

__version__: str = _emq.__version__

__all__ = [
    "Queue",
    "Worker",
    "Job",
    "EventStream",
    "Unrecoverable",
    "Delay",
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
    "NotReplicated",
    "ScriptError",
    "ServerUnavailable",
    "AuthFailed",
    "PermissionDenied",
    "Timeout",
    "UndeclaredKey",
]

Url = Union[str, Sequence[str], None]
Backoff = Optional[Tuple[Any, ...]]
Seconds = Union[float, int, timedelta]
# remove_on_complete / remove_on_fail: True (delete at once), False, a count, {"count", "age"}.
Retention = Union[bool, int, Dict[str, Any]]


Pem = Union[str, "os.PathLike[str]", bytes]
"""A PEM input: a path, or the PEM text as bytes."""


def _tls(*values: Optional[Pem]) -> List[Union[str, bytes, None]]:
    """``ca_cert``, ``client_cert``, ``client_key``: paths made ``str`` (the core reads them)."""
    out: List[Union[str, bytes, None]] = []
    for v in values:
        if v is None or isinstance(v, (str, bytes)):
            out.append(v)
        elif isinstance(v, (bytearray, memoryview)):
            out.append(bytes(v))
        elif isinstance(v, os.PathLike):
            out.append(os.fspath(v))
        else:
            raise InvalidOption(f"a TLS file must be a path or PEM bytes, not {type(v).__name__}")
    return out


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
    remove_on_complete: Retention,
    dedup: Optional[str],
    extra: Dict[str, Any],
) -> Dict[str, Any]:
    # Only what differs from the core's defaults goes to the core (each option converted costs a
    # one-job add about 1.5k instructions); a default is recognised by its exact type too, so
    # that `delay=False` or `attempts=True` still reach the core's check and are refused.
    opts: Dict[str, Any] = {}
    if not (type(delay) in (float, int) and delay == 0):
        opts["delay"] = delay
    if not (type(priority) is int and priority == 0):
        opts["priority"] = priority
    if lifo is not False:
        opts["lifo"] = lifo
    if not (type(attempts) is int and attempts == 1):
        opts["attempts"] = attempts
    if backoff is not None:
        opts["backoff"] = backoff
    if remove_on_complete is not False:
        opts["remove_on_complete"] = remove_on_complete
    if dedup is not None:
        opts["dedup"] = dedup
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
    async def connect(
        cls,
        url: Url,
        name: str,
        *,
        durable: "tuple[int, int] | None" = None,
        ca_cert: Optional[Pem] = None,
        client_cert: Optional[Pem] = None,
        client_key: Optional[Pem] = None,
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
        refused client one :class:`ServerUnavailable`."""
        tls = _tls(ca_cert, client_cert, client_key)
        ca, cert, key = tls
        return cls(
            await _emq.Queue.connect(
                _urls(url), name, durable, ca_cert=ca, client_cert=cert, client_key=key
            )
        )

    @property
    def name(self) -> str:
        """The queue's name."""
        return self._native.name

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
        ``group`` (for :meth:`set_group_rate_limit`), ``parent_policy`` (flows).
        Every duration is seconds (a number or a ``timedelta``).
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
        return await self._native.add_flow(flow)

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


Handler = Callable[["Job"], Any]


def _outcome(out: Dict[str, Any]) -> Any:
    """A job's result, or its failure raised as :class:`HandlerFailed`."""
    if out["ok"]:
        return out["result"]
    raise HandlerFailed.from_failure(out["failure"])


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


class Job(Mapping[str, Any]):
    """The job a handler receives: one run of one job.

    Typed attributes: ``id``, ``name``, ``data`` (the payload), ``attempt`` (the number of this
    run, starting at 1: ``attempts_made + 1``), ``attempts_made`` (runs before this one that
    failed), ``attempts`` (the most runs allowed), ``options`` (the job options it was added
    with that differ from the defaults), ``parent`` (in a flow: ``"<queue>:<id>"``, else None),
    ``priority``, ``stalls``, ``dedup``, ``created_ms`` / ``processed_ms`` (server ms).

    Methods on the running job: :meth:`progress`, :meth:`log`, :meth:`children_results` — awaited
    in an ``async def`` handler; in a plain ``def`` handler (it runs in a thread) the same calls
    block until done, with no ``await``. ``lease_lost``, ``cancelled``, ``interrupt`` and
    ``cancel_reason`` say whether the worker wants the run to stop.

    Compatible with the earlier dict form: ``job["data"]``, ``job.get("parent")``, ``dict(job)``
    read the job's fields as :meth:`Queue.get` returns them (a read-only mapping).
    """

    __slots__ = (
        "_call",
        "_fields",
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

    def __init__(self, call: "Optional[_emq.Call]", fields: Optional[Dict[str, Any]] = None) -> None:
        f: Dict[str, Any] = call.job() if call is not None else dict(fields or {})
        self._call = call
        self._fields = f
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

    # -- the mapping of the job's fields (the earlier dict form) -----------------------------

    def __getitem__(self, key: str) -> Any:
        return self._fields[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)

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

    def children_results(self) -> Awaitable[Dict[str, Any]]:
        """In a flow's parent: each child's result by ``"<queue>:<id>"`` (a failed child under
        ``parent_policy="ignore"`` appears as ``{"failed": …}``). Awaited in an ``async def``
        handler; blocking in a plain ``def``."""
        call = self._run()
        if _on_loop():
            return call.children_results()
        return Reported(call.children_results(blocking=True))

    # The earlier blocking twins (``job.progress(…)`` blocks by itself in a ``def`` handler).

    def progress_blocking(self, value: Any) -> None:
        """As :meth:`progress`, blocking whatever the thread (kept for compatibility)."""
        self._run().progress(value, blocking=True)

    def log_blocking(self, line: str) -> int:
        """As :meth:`log`, blocking whatever the thread (kept for compatibility)."""
        return self._run().log(line, blocking=True)

    def children_results_blocking(self) -> Dict[str, Any]:
        """As :meth:`children_results`, blocking whatever the thread (kept for compatibility)."""
        return self._run().children_results(blocking=True)


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


async def _run_async(
    handler: Handler, job: Job, call: "_emq.Call", job_id: str, tasks: Dict[str, "asyncio.Task[None]"]
) -> None:
    """Runs one job of an async handler (a task on the worker's loop) and reports its outcome."""
    try:
        result = await handler(job)
    except asyncio.CancelledError as exc:
        task = asyncio.current_task()
        cancelling = getattr(task, "cancelling", None)
        if cancelling is not None and cancelling() == 0:
            # Raised by the handler's own code, not a cancel of its task: an ordinary failure.
            call.fail(RuntimeError(f"the handler raised CancelledError: {exc}"))
            return
        call.fail(exc)  # the worker (cancel, timeout, shutdown) or asyncio.run cancelled it
        raise
    except BaseException as exc:
        call.fail(exc)
        if not isinstance(exc, Exception):
            raise  # KeyboardInterrupt, SystemExit
        return
    finally:
        if tasks.get(job_id) is asyncio.current_task():
            del tasks[job_id]
    call.finish(result)


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
        from .errors import error_for_code

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



class Worker(_WorkerEvents):
    """Runs ``handler`` on the jobs of ``queue``, ``concurrency`` at a time, from construction
    until :meth:`close`.

    ``handler(job)`` receives an :class:`emq.Job` (``job.id``, ``job.data``, ``job.attempt``…,
    with ``progress``/``log``/``children_results``) and returns a JSON-serialisable result. An
    ``async def`` handler runs on the event loop that was running when the worker was created
    (one task per job; the loop is woken once per batch of jobs, not per job); a plain ``def``
    runs in a thread. An exception fails the run (its message and traceback are recorded; the
    job retries while attempts remain); raising :class:`Unrecoverable` fails the job at once. A
    run longer than the job's ``timeout`` is stopped (its task cancelled; a ``def`` handler sees
    ``job.cancelled``) and, once it has stopped, fails with the code ``timeout``. ``lease`` is in
    seconds (default 30, renewed every third of it); ``stalled_interval`` (seconds, default 15,
    at least 0.1) is how often the stalled sweep runs, so a crashed worker's jobs return within
    about lease + stalled_interval; ``max_stalls`` (default 1) is how many stalls a job survives.
    ``remove_on_complete`` / ``remove_on_fail``: the queue-wide retention of finished jobs (True:
    keep none; False: keep all; a count; ``{"count": n, "age": seconds}``; default: the newest
    1,000 completed for a day, 10,000 failed for 7 days).
    Every bound is the core's, refused with :class:`InvalidOption` naming it.

    Shutdown: :meth:`close` (or :meth:`run`, which closes on SIGINT/SIGTERM) takes no new jobs
    and gives running handlers ``shutdown_timeout`` seconds (default 10) to finish; a handler
    still running then is cancelled (``job.cancelled`` for a ``def``) and its job goes back to
    waiting, its attempt not counted — a shutdown is never the job's failure. A task cancelled
    by asyncio itself (``asyncio.run`` ending on Ctrl-C) also gives its job back, and the worker
    then takes no new jobs.
    """

    def __init__(
        self,
        queue: Queue,
        handler: Handler,
        concurrency: int = 1,
        lease: Seconds = 30.0,
        *,
        shutdown_timeout: Seconds = 10.0,
        stalled_interval: Optional[Seconds] = None,
        max_stalls: Optional[int] = None,
        remove_on_complete: Optional[Retention] = None,
        remove_on_fail: Optional[Retention] = None,
    ) -> None:
        if not callable(handler):
            raise InvalidOption("the handler must be callable")
        opts: Dict[str, Any] = dict(
            shutdown_timeout=shutdown_timeout,
            stalled_interval=stalled_interval,
            max_stalls=max_stalls,
            remove_on_complete=remove_on_complete,
            remove_on_fail=remove_on_fail,
        )
        try:
            loop: Optional[asyncio.AbstractEventLoop] = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        is_async = inspect.iscoroutinefunction(handler)
        if loop is None and is_async:
            raise InvalidOption("an async handler needs a running event loop: create the Worker inside it")
        self._loop = loop
        self._fd: Optional[int] = None
        self._tasks: Dict[str, "asyncio.Task[None]"] = {}  # running jobs (batched), by id
        if is_async:
            self._handler = handler
            self._native = _emq.Worker(
                queue._native, handler, loop, concurrency, lease, batched=True, **opts
            )
            fd = self._native.wake_fd
            assert loop is not None and fd is not None
            self._fd = fd
            loop.add_reader(fd, self._drain)
        else:

            def entry(call: "_emq.Call") -> Any:
                return handler(Job(call))

            self._native = _emq.Worker(queue._native, entry, loop, concurrency, lease, **opts)
        self._init_events(loop)

    def _drain(self) -> None:
        """On the loop, when jobs are queued: cancel the tasks of jobs the core gave up on
        (timeouts), then start a task for each new job."""
        calls, abandoned = self._native.take()
        tasks = self._tasks
        handler = self._handler
        create_task = self._loop.create_task  # type: ignore[union-attr]
        for call in calls:
            job = Job(call)
            job_id = job.id
            tasks[job_id] = create_task(_run_async(handler, job, call, job_id, tasks))
        # After the starts: a job cancelled before its task ran never runs.
        for job_id in abandoned:
            task = tasks.pop(job_id, None)
            if task is not None:
                task.cancel()

    async def run(self) -> None:
        """Runs until SIGINT or SIGTERM, then closes gracefully (see :meth:`close`); a second
        signal during the close stops at once (nothing more is waited for: the jobs still held
        come back when their leases expire, as after a crash). Call it from the main thread's
        event loop (elsewhere the signals cannot be caught: it then runs until cancelled). If
        :meth:`run` is cancelled, it closes gracefully too before re-raising."""
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        seen = 0

        def on_signal() -> None:
            nonlocal seen
            seen += 1
            if seen == 1:
                stop.set()
            else:
                self._native.abort()

        installed = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, on_signal)
                installed.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):
                pass
        try:
            try:
                await stop.wait()
            except asyncio.CancelledError:
                await self.close()
                raise
            await self.close()
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)

    def abort(self) -> None:
        """Stops at once: a :meth:`close` in progress stops waiting and releases nothing (the jobs
        come back when their leases expire)."""
        self._native.abort()

    async def close(self) -> None:
        """Stops fetching, gives running jobs ``shutdown_timeout`` seconds to finish, then
        cancels those still running and gives their jobs (and any leased ahead) back to waiting,
        attempts not counted."""
        try:
            await self._native.close()
        finally:
            if self._fd is not None and self._loop is not None and not self._loop.is_closed():
                self._loop.remove_reader(self._fd)
            self._fd = None
        await self._end_events()

    def stats(self) -> Dict[str, int]:
        """Counters (after :meth:`close`: the final figures): ``completed`` (jobs completed),
        ``failed`` (jobs failed for good: their last attempt failed, or an unrecoverable error, a
        cancel or a timeout ended them), ``retried`` (runs that failed and went back for another
        attempt: a job with ``attempts=3`` that always fails counts ``failed`` 1 and ``retried``
        2), ``lease_lost`` (outcomes refused because the lease was lost), ``recovered`` (stalled
        jobs this worker's sweep recovered)."""
        return self._native.stats()

    async def __aenter__(self) -> "Worker":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
