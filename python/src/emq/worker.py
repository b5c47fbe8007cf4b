"""The worker (:class:`Worker`): runs a handler on a queue's jobs, ``async def`` handlers as
tasks on the event loop (woken once per batch of jobs), plain ``def`` ones in threads; closes
gracefully on :meth:`Worker.close` or a signal (:meth:`Worker.run`).
"""

from __future__ import annotations

import asyncio
import inspect
import signal
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from . import _emq
from . import tracing as _tracing
from ._args import Retention, Seconds
from .errors import InvalidOption
from .job import Handler, Job
from .queue import Queue
from .worker_events import _WorkerEvents

__all__ = ["Worker"]


def _natives(queue: Any) -> Any:
    """A queue, or a list or tuple of queues, as the native worker takes them (anything else
    goes through as is, for the core's ``InvalidOption``)."""
    if isinstance(queue, (list, tuple)):
        return [getattr(q, "_native", q) for q in queue]
    return getattr(queue, "_native", queue)


async def _run_async(
    handler: Handler, job: Job, call: "_emq.Call", job_id: str, tasks: Dict[str, "asyncio.Task[None]"]
) -> None:
    """Runs one job of an async handler (a task on the worker's loop) and reports its outcome."""
    try:
        if _tracing.ENABLED:
            with _tracing.consumer(call.queue, job):
                result = await handler(job)
        else:
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

    Several queues: ``Worker([q_a, q_b], handler, ...)`` runs one worker on all of them, sharing
    ``concurrency``; ``strict=True`` starts no job of a later queue while an earlier one has a
    ready job; ``weights={"a": 5, "b": 1}`` (queue names, 1 to 1000; a queue not named has 1)
    shares starts by weight while the queues have work (the default: equal weights).
    :attr:`queues` names them; :meth:`stats_by_queue` counts per queue.

    Shutdown: :meth:`close` (or :meth:`run`, which closes on SIGINT/SIGTERM) takes no new jobs
    and gives running handlers ``shutdown_timeout`` seconds (default 10) to finish; a handler
    still running then is cancelled (``job.cancelled`` for a ``def``) and its job goes back to
    waiting, its attempt not counted — a shutdown is never the job's failure. A task cancelled
    by asyncio itself (``asyncio.run`` ending on Ctrl-C) also gives its job back, and the worker
    then takes no new jobs.
    """

    def __init__(
        self,
        queue: Union[Queue, Sequence[Queue]],
        handler: Handler,
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
        opts: Dict[str, Any] = dict(
            shutdown_timeout=shutdown_timeout,
            stalled_interval=stalled_interval,
            max_stalls=max_stalls,
            remove_on_complete=remove_on_complete,
            remove_on_fail=remove_on_fail,
            strict=strict,
            weights=dict(weights) if isinstance(weights, Mapping) else weights,
        )
        native = _natives(queue)
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
                native, handler, loop, concurrency, lease, batched=True, **opts
            )
            fd = self._native.wake_fd
            assert loop is not None and fd is not None
            self._fd = fd
            loop.add_reader(fd, self._drain)
        else:

            def entry(call: "_emq.Call") -> Any:
                job = Job(call)
                if _tracing.ENABLED:
                    with _tracing.consumer(call.queue, job):
                        return handler(job)
                return handler(job)

            self._native = _emq.Worker(native, entry, loop, concurrency, lease, **opts)
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

    @property
    def queues(self) -> List[str]:
        """The names of its queues, in the order it was given them."""
        return list(self._native.queues)

    def stats_by_queue(self) -> Dict[str, Dict[str, int]]:
        """:meth:`stats` per queue, keyed by queue name in the worker's order (after
        :meth:`close`: the figures as the close began; :meth:`stats` has the final sums)."""
        return dict(self._native.stats_by_queue())

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
