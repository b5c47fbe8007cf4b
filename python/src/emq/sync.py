"""A blocking facade for scripts without an event loop::

    from emq.sync import Queue
    q = Queue.connect("redis://127.0.0.1:6379", "emails")
    job_id = q.add("send", {"to": "a@example.com"})
    print(q.get(job_id)["state"], q.counts())

Each call blocks the calling thread (with the GIL released) until the core answers.

One bridge: every method is the async API's (:class:`emq.Queue`, same names, arguments and
results) made blocking in one way, :func:`_blocking`: the native call with ``blocking=True``, which
runs the core's future to completion instead of handing it to an event loop.
"""

from __future__ import annotations

import inspect
import signal
import threading
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from . import _emq
from . import tracing as _tracing
from ._args import Backoff, JobSpec, Pem, Retention, Seconds, Url, _bulk, _job_defaults, _options, _outcome, _tls, _urls
from .batch import _callback, _job_options
from .job import Job
from .worker import _natives
from .worker_events import _WorkerEvents
from .errors import InvalidOption

__all__ = ["Queue", "Worker", "EventStream", "Batch"]


def _blocking(method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """The bridge: a native call made blocking (the GIL released while the core works)."""
    return method(*args, blocking=True, **kwargs)


class Queue:
    """The blocking twin of :class:`emq.Queue` (``add``, ``add_bulk``, ``get``, ``counts``,
    flows, schedulers, limits, recent events, maintenance, ``close``); see there for each method.
    Its worker is :class:`Worker` (plain ``def`` handlers)."""

    def __init__(self, native: "_emq.Queue") -> None:
        self._native = native

    @classmethod
    def connect(
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
        """Connects (see :meth:`emq.Queue.connect`, also for the TLS files and ``partitions``)."""
        tls = _tls(ca_cert, client_cert, client_key)
        ca, cert, key = tls
        return cls(
            _blocking(
                _emq.Queue.connect, _urls(url), name, durable,
                ca_cert=ca, client_cert=cert, client_key=key, partitions=partitions,
            )
        )

    @property
    def name(self) -> str:
        return self._native.name

    @property
    def partitions(self) -> int:
        """How many partitions the queue has (1: a plain queue)."""
        return self._native.partitions

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
        remove_on_complete: Retention = False,
        dedup: Optional[str] = None,
        **options: Any,
    ) -> str:
        """Adds a job; returns its id (see :meth:`emq.Queue.add`)."""
        opts = _options(delay, priority, lifo, attempts, backoff, remove_on_complete, dedup, options)
        # On this thread's own connection (bindings/python/src/local.rs): no hop to another thread.
        if not _tracing.ENABLED:
            return self._native.add_here(name, data, opts)
        with _tracing.producer(self.name) as span:
            job_id: str = self._native.add_here(name, data, _tracing.inject(opts))
            if span is not None:
                span.set_attribute("messaging.message.id", job_id)
            return job_id

    def add_bulk(self, jobs: Iterable[JobSpec]) -> List[str]:
        """Adds many jobs; returns their ids in order."""
        bulk = _bulk(jobs)
        if not _tracing.ENABLED:
            return _blocking(self._native.add_bulk, bulk)
        with _tracing.producer(self.name, count=len(bulk)):
            return _blocking(self._native.add_bulk, _tracing.inject_all(bulk))

    def get(self, job_id: str) -> Optional[Dict[str, Any]]:
        """The job as a dict, or None."""
        return _blocking(self._native.get, job_id)

    def counts(self) -> Dict[str, int]:
        """Number of jobs per state."""
        return _blocking(self._native.counts)

    def add_flow(self, flow: Dict[str, Any]) -> Dict[str, Any]:
        """Adds a flow; the ids in its shape (see :meth:`emq.Queue.add_flow`)."""
        if not _tracing.ENABLED:
            return _blocking(self._native.add_flow, flow)
        with _tracing.producer(self.name):
            return _blocking(self._native.add_flow, _tracing.inject_flow(flow))

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
        return _blocking(
            self._native.upsert_scheduler,
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

    def remove_scheduler(self, scheduler_id: str) -> bool:
        return _blocking(self._native.remove_scheduler, scheduler_id)

    def schedulers(self) -> List[Dict[str, Any]]:
        return _blocking(self._native.schedulers)

    def set_rate_limit(self, max: Optional[int], window: Seconds = 1.0) -> None:
        _blocking(self._native.set_rate_limit, max, window)

    def set_group_rate_limit(self, max: Optional[int], window: Seconds = 1.0) -> None:
        _blocking(self._native.set_group_rate_limit, max, window)

    def set_global_concurrency(self, max: Optional[int]) -> None:
        _blocking(self._native.set_global_concurrency, max)

    def set_group_weight(self, group: str, weight: int) -> None:
        """Sets a group's weight (see :meth:`emq.Queue.set_group_weight`)."""
        _blocking(self._native.set_group_weight, group, weight)

    def set_group_concurrency(self, limit: Optional[int], group: Optional[str] = None) -> None:
        """Caps one group's (or every group's) running jobs (see
        :meth:`emq.Queue.set_group_concurrency`)."""
        _blocking(self._native.set_group_concurrency, limit, group)

    def set_group_max_waiting(self, limit: Optional[int], group: Optional[str] = None) -> None:
        """Caps one group's (or every group's) waiting jobs; an add past it raises
        :class:`emq.GroupFull` (see :meth:`emq.Queue.set_group_max_waiting`)."""
        _blocking(self._native.set_group_max_waiting, limit, group)

    def pause_group(self, group: str) -> None:
        """Stops handing out jobs of one group."""
        _blocking(self._native.pause_group, group)

    def resume_group(self, group: str) -> None:
        """Hands out jobs of a paused group again."""
        _blocking(self._native.resume_group, group)

    def groups(self, offset: int = 0, limit: int = 100) -> List[Dict[str, Any]]:
        """One page of the queue's groups (see :meth:`emq.Queue.groups`)."""
        return _blocking(self._native.groups, offset, limit)

    def events(self, after: Optional[str] = None) -> "EventStream":
        """Follows the queue's events from now on (or after the stream id ``after``), blocking::

            for event in q.events():        # {"kind": "completed", "job_id": …, "fields": {…}}
                ...
        """
        return EventStream(_blocking(self._native.events, after))

    def recent_events(self, limit: int = 100) -> List[Dict[str, Any]]:
        return _blocking(self._native.recent_events, limit)

    def drain(self, delayed: bool = False) -> int:
        return _blocking(self._native.drain, delayed)

    def clean(self, state: str, grace: Seconds = 0.0, limit: int = 1000) -> int:
        return _blocking(self._native.clean, state, grace, limit)

    def obliterate(self, force: bool = False) -> int:
        return _blocking(self._native.obliterate, force)

    def remove(self, job_id: str) -> bool:
        return _blocking(self._native.job_op, "remove", job_id)

    def retry(self, job_id: str) -> bool:
        return _blocking(self._native.job_op, "retry", job_id)

    def set_dead_letter(self, queue: Optional[str]) -> None:
        _blocking(self._native.set_dead_letter, queue)

    def dead_letter(self) -> Optional[str]:
        return _blocking(self._native.dead_letter)

    def set_job_defaults(self, **defaults: Any) -> None:
        _blocking(self._native.set_job_defaults, defaults)

    def job_defaults(self) -> Dict[str, Any]:
        return _job_defaults(_blocking(self._native.job_defaults))

    def dead_letters(self, limit: int = 100) -> List[Dict[str, Any]]:
        return _blocking(self._native.dead_letters, limit)

    def replay_dead_letters(self, ids: Optional[List[str]] = None) -> List[Dict[str, Any]]:
        return _blocking(self._native.replay_dead_letters, ids)

    def add_child(self, parent: str, queue: str, name: str, data: Any = None, **options: Any) -> str:
        """Adds a child job for a waiting parent (see :meth:`emq.Queue.add_child`)."""
        return _blocking(
            self._native.add_child, parent, queue, name, data, _tracing.inject(_job_options(options))
        )

    def batch(
        self,
        *,
        on_complete: Optional[Dict[str, Any]] = None,
        on_success: Optional[Dict[str, Any]] = None,
        description: Optional[str] = None,
    ) -> "Batch":
        return Batch(
            _blocking(self._native.batch, _callback(on_complete), _callback(on_success), description)
        )

    def open_batch(self, batch_id: str) -> "Batch":
        return Batch(self._native.open_batch(batch_id))

    def retry_failed(self) -> int:
        return _blocking(self._native.retry_failed)

    def promote(self, job_id: str) -> bool:
        return _blocking(self._native.job_op, "promote", job_id)

    def change_priority(self, job_id: str, priority: int) -> bool:
        return _blocking(self._native.change_priority, job_id, priority)

    def cancel(self, job_id: str, reason: str = "") -> str:
        """Cancels a job (see :meth:`emq.Queue.cancel`)."""
        return _blocking(self._native.cancel, job_id, reason)

    def wait(self, job_id: str, timeout: Seconds = 30.0) -> Any:
        """Waits for the job's result (see :meth:`emq.Queue.wait`)."""
        return _outcome(_blocking(self._native.wait, job_id, timeout))

    def logs(self, job_id: str) -> List[str]:
        return _blocking(self._native.job_op, "logs", job_id)

    def list(self, state: str, offset: int = 0, limit: int = 100) -> List[Dict[str, Any]]:
        return _blocking(self._native.list, state, offset, limit)

    def is_paused(self) -> bool:
        return _blocking(self._native.is_paused)

    def pause(self) -> None:
        """Stops handing out jobs (adds still land)."""
        _blocking(self._native.pause)

    def resume(self) -> None:
        """Hands out jobs again."""
        _blocking(self._native.resume)

    def grow_partitions(self, count: int) -> int:
        """Grows this partitioned queue to ``count`` partitions, online (see
        :meth:`emq.Queue.grow_partitions`); returns the count now."""
        return int(_blocking(self._native.grow_partitions, count))

    def metrics(self) -> Dict[str, Any]:
        return _blocking(self._native.metrics)

    def migrate_from_bullmq(
        self,
        source_queue: str,
        *,
        from_prefix: str = "bull",
        dry_run: bool = False,
        completed: bool = False,
        delete_source: bool = False,
        batch: int = 500,
    ) -> Dict[str, Any]:
        """Copies a BullMQ queue into this one (see :meth:`emq.Queue.migrate_from_bullmq`)."""
        return _blocking(
            self._native.migrate_from_bullmq,
            source_queue, from_prefix, dry_run, completed, delete_source, batch,
        )

    def workers(self) -> List[Dict[str, Any]]:
        """The queue's live workers (see :meth:`emq.Queue.workers`)."""
        return _blocking(self._native.workers)

    def close(self) -> None:
        """Releases the queue's id-minting lease."""
        _blocking(self._native.close)

    def __enter__(self) -> "Queue":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class EventStream:
    """A queue's events, in order (from :meth:`Queue.events`), read by blocking calls; see
    :class:`emq.EventStream` for the events."""

    def __init__(self, native: Any) -> None:
        self._native = native
        self._buffer: List[Dict[str, Any]] = []

    def next_batch(self, wait: Seconds = 1.0, count: int = 100) -> List[Dict[str, Any]]:
        """The next events, waiting up to ``wait`` seconds for the first; [] when none came."""
        out: List[Dict[str, Any]] = _blocking(self._native.next_batch, wait, count)
        return out

    def __iter__(self) -> "EventStream":
        return self

    def __next__(self) -> Dict[str, Any]:
        while not self._buffer:
            self._buffer = self.next_batch(1.0, 100)
        return self._buffer.pop(0)


class Worker(_WorkerEvents):
    """A worker for plain ``def`` handlers without an event loop: each job runs in a thread.
    Same handler contract and options as :class:`emq.Worker`::

        def handle(job):
            while not job.cancelled:      # long work polls it, to stop on cancel/timeout/shutdown
                ...
            return {"done": True}

        Worker(Queue.connect(url, "emails"), handle, concurrency=4).run()   # until SIGINT/SIGTERM
    """

    def __init__(
        self,
        queue: Union[Queue, Sequence[Queue]],
        handler: Callable[[Job], Any],
        concurrency: int = 1,
        lease: Seconds = 30.0,
        *,
        shutdown_timeout: Seconds = 10.0,
        stalled_interval: Optional[Seconds] = None,
        max_stalls: Optional[int] = None,
        remove_on_complete: Optional[Retention] = None,
        remove_on_fail: Optional[Retention] = None,
        strict: Optional[bool] = None,
        weights: Optional[Mapping[str, int]] = None,
    ) -> None:
        if not callable(handler):
            raise InvalidOption("the handler must be callable")
        if inspect.iscoroutinefunction(handler):
            raise InvalidOption("emq.sync.Worker runs plain def handlers; use emq.Worker for async ones")

        def entry(call: "_emq.Call") -> Any:
            job = Job(call)
            if _tracing.ENABLED:
                with _tracing.consumer(call.queue, job):
                    return handler(job)
            return handler(job)

        self._native = _emq.Worker(
            _natives(queue),
            entry,
            None,
            concurrency,
            lease,
            shutdown_timeout=shutdown_timeout,
            stalled_interval=stalled_interval,
            max_stalls=max_stalls,
            remove_on_complete=remove_on_complete,
            remove_on_fail=remove_on_fail,
            strict=strict,
            weights=dict(weights) if isinstance(weights, Mapping) else weights,
        )
        self._init_events(None)

    def run(self) -> None:
        """Blocks until SIGINT or SIGTERM, then closes gracefully (see :meth:`close`); a second
        signal during the close stops at once (the jobs still held come back when their leases
        expire). From the main thread only (signals are delivered there)."""
        if threading.current_thread() is not threading.main_thread():
            raise InvalidOption("Worker.run() catches signals, so it must be called from the main thread")
        stop = threading.Event()
        seen = [0]

        def on_signal(signum: int, frame: Any) -> None:
            seen[0] += 1
            if seen[0] == 1:
                stop.set()
            else:
                self._native.abort()

        previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            while not stop.wait(0.2):
                pass
            # The close blocks in native code; run it on a thread so this (main) thread stays
            # free to handle a second signal.
            closer = threading.Thread(target=self.close, name="emq-worker-close", daemon=True)
            closer.start()
            while closer.is_alive():
                closer.join(0.1)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def abort(self) -> None:
        """Stops at once (see :meth:`emq.Worker.abort`)."""
        self._native.abort()

    def close(self) -> None:
        """Graceful close (see :meth:`emq.Worker.close`)."""
        _blocking(self._native.close)
        self._end_events_blocking()

    @property
    def queues(self) -> List[str]:
        """The names of its queues, in order (see :attr:`emq.Worker.queues`)."""
        return list(self._native.queues)

    def stats_by_queue(self) -> Dict[str, Dict[str, int]]:
        """Counters per queue, as :meth:`emq.Worker.stats_by_queue`."""
        return dict(self._native.stats_by_queue())

    def stats(self) -> Dict[str, int]:
        """Counters, as :meth:`emq.Worker.stats`: ``completed``, ``failed`` (jobs failed for good),
        ``retried`` (runs that went back for another attempt), ``lease_lost``, ``recovered``."""
        return self._native.stats()

    def __enter__(self) -> "Worker":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Batch:
    """The blocking twin of :class:`emq.Batch`; see there for each method."""

    def __init__(self, native: "_emq.Batch") -> None:
        self._native = native

    @property
    def id(self) -> str:
        return self._native.id

    @property
    def queue(self) -> str:
        return self._native.queue

    def add(self, queue: str, name: str, data: Any = None, **options: Any) -> str:
        return _blocking(self._native.add, queue, name, data, _job_options(options))

    def add_bulk(self, queue: str, jobs: Iterable[JobSpec]) -> List[str]:
        return _blocking(self._native.add_bulk, queue, _bulk(jobs))

    def seal(self) -> None:
        _blocking(self._native.seal)

    def status(self, offset: int = 0, limit: int = 100) -> Dict[str, Any]:
        return _blocking(self._native.status, offset, limit)

    def batch(
        self,
        *,
        on_complete: Optional[Dict[str, Any]] = None,
        on_success: Optional[Dict[str, Any]] = None,
        description: Optional[str] = None,
    ) -> "Batch":
        return Batch(
            _blocking(self._native.batch, _callback(on_complete), _callback(on_success), description)
        )

    def cancel(self) -> int:
        return _blocking(self._native.cancel)
