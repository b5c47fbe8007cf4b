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

The package, one module per concern (this file only re-exports): :mod:`emq.queue` (the queue),
:mod:`emq.job` (the job a handler receives), :mod:`emq.batch` (batches), :mod:`emq.worker` (the worker) with
:mod:`emq.worker_events` (its listeners), :mod:`emq.events` (a queue's events stream),
:mod:`emq.errors` (the exceptions), :mod:`emq.sync` (the blocking API) and ``emq._args`` (the
argument shapes both APIs share).
"""

from __future__ import annotations

from . import _emq
# Not in __all__, still emq's names (the type aliases, the job's helpers, the worker's events).
from ._args import Backoff as Backoff, JobSpec as JobSpec, Pem as Pem, Retention as Retention
from ._args import Seconds as Seconds, Url as Url
from .errors import (
    AuthFailed,
    Closed,
    CrossSlot,
    Delay,
    EmqError,
    GroupFull,
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
    PermissionDenied,
    ScriptError,
    ServerUnavailable,
    Timeout,
    UndeclaredKey,
    Unrecoverable,
)
from .batch import Batch
from .events import EventStream
from .job import Handler as Handler, Job, Reported as Reported
from .queue import Queue
from .worker import Worker
from .worker_events import WORKER_EVENTS as WORKER_EVENTS, WorkerEventName as WorkerEventName

__version__: str = _emq.__version__

__all__ = [
    "Queue",
    "Worker",
    "Job",
    "Batch",
    "EventStream",
    "Unrecoverable",
    "Delay",
    "EmqError",
    "Closed",
    "CrossSlot",
    "GroupFull",
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
