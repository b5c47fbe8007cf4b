"""``python -m emq worker`` (and the console script ``emq-worker``): runs a worker from the command
line until SIGINT or SIGTERM, then closes it gracefully::

    python -m emq worker myapp.tasks:handle --queue emails --concurrency 16
    emq-worker myapp.tasks:handle --queue emails

``myapp.tasks:handle`` is imported (the current directory is on the import path, as with
``celery -A`` and ``rq worker``); it is an ``async def`` or a plain ``def`` taking an
:class:`emq.Job`. The options are :class:`emq.Worker`'s, durations in seconds. Logs go to stderr:
a line when the worker starts and stops, one per failed run (``-v``: one per completed job too),
and the worker's own errors (e.g. a lost connection; it keeps trying).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import os
import sys
from typing import Any, Callable, List, Optional, Sequence

DEFAULT_URL = "redis://127.0.0.1:6379"

log = logging.getLogger("emq.worker")


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if value < 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite number of seconds, 0 or more")
    return value


def _whole(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must not be negative")
    return value


def _parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog,
        description="Runs an emq worker: imports HANDLER and runs it on the queue's jobs until "
        "SIGINT or SIGTERM, then stops taking jobs, gives running ones --shutdown-timeout seconds "
        "and puts what is still running back to waiting (attempts not counted). A second signal "
        "stops at once. Logs go to stderr.",
    )
    p.add_argument(
        "handler",
        metavar="HANDLER",
        help="module:function, e.g. myapp.tasks:handle (an async def or a plain def taking an emq.Job)",
    )
    p.add_argument("-q", "--queue", required=True, help="the queue's name")
    p.add_argument(
        "--url",
        action="append",
        default=None,
        help=f"the datastore URL (redis:// or rediss://; repeat for cluster seeds); default: $EMQ_URL, else {DEFAULT_URL}",
    )
    p.add_argument("-c", "--concurrency", type=_whole, default=1, help="jobs run at once (default 1)")
    p.add_argument(
        "--lease", type=_seconds, default=30.0, help="seconds a job stays leased without renewal (default 30, renewed every third)"
    )
    p.add_argument(
        "--shutdown-timeout",
        type=_seconds,
        default=10.0,
        help="seconds running jobs get to finish on SIGINT/SIGTERM before they go back to waiting (default 10)",
    )
    p.add_argument(
        "--stalled-interval",
        type=_seconds,
        default=None,
        help="seconds between stalled-job sweeps (default 15, at least 0.1)",
    )
    p.add_argument("--max-stalls", type=_whole, default=None, help="stalls a job survives before it fails (default 1)")
    p.add_argument("-v", "--verbose", action="store_true", help="also log each completed job")
    return p


def load_handler(spec: str) -> Callable[..., Any]:
    """Imports ``module:attr`` (``attr`` may be dotted) and returns it; a clear error otherwise."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise SystemExit(f"emq-worker: HANDLER must be module:function, got {spec!r}")
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as e:
        raise SystemExit(f"emq-worker: cannot import {module_name!r}: {e}") from None
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise SystemExit(f"emq-worker: {module_name!r} has no {attr!r}") from None
    if not callable(obj):
        raise SystemExit(f"emq-worker: {spec} is not callable")
    return obj


async def _serve(args: argparse.Namespace, handler: Callable[..., Any]) -> None:
    import emq

    urls: List[str] = args.url or [os.environ.get("EMQ_URL") or DEFAULT_URL]
    queue = await emq.Queue.connect(urls if len(urls) > 1 else urls[0], args.queue)
    try:
        worker = emq.Worker(
            queue,
            handler,
            concurrency=args.concurrency,
            lease=args.lease,
            shutdown_timeout=args.shutdown_timeout,
            stalled_interval=args.stalled_interval,
            max_stalls=args.max_stalls,
        )

        def failed(job: emq.Job, error: emq.HandlerFailed) -> None:
            log.warning(
                "job %s (%s) attempt %d/%d failed [%s]: %s",
                job.id,
                job.name,
                job.attempt,
                job.attempts,
                error.failure_code,
                error.message,
            )

        def completed(job: emq.Job, result: Any) -> None:
            log.info("job %s (%s) completed", job.id, job.name)

        def stalled(job_id: str) -> None:
            log.warning("job %s stalled (its worker lost it)", job_id)

        def error(exc: emq.EmqError) -> None:
            log.error("worker error [%s]: %s (it keeps trying)", exc.code, exc.message)

        worker.on("failed", failed)
        worker.on("stalled", stalled)
        worker.on("error", error)
        if args.verbose:
            worker.on("completed", completed)
        log.info(
            "started: queue %r on %s, handler %s, concurrency %d (pid %d); SIGINT/SIGTERM to stop",
            args.queue,
            ", ".join(urls),
            args.handler,
            args.concurrency,
            os.getpid(),
        )
        await worker.run()
        stats = worker.stats()
        log.info(
            "stopped: %d completed, %d failed, %d retried",
            stats.get("completed", 0),
            stats.get("failed", 0),
            stats.get("retried", 0),
        )
    finally:
        await queue.close()


def worker_main(argv: Optional[Sequence[str]] = None, prog: str = "emq-worker") -> int:
    """The ``emq-worker`` console script (and ``python -m emq worker``)."""
    args = _parser(prog).parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.INFO,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    handler = load_handler(args.handler)
    import emq

    try:
        asyncio.run(_serve(args, handler))
    except emq.EmqError as e:
        log.error("%s [%s]", e.message, e.code)
        return 1
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m emq <command>``: only ``worker`` for now."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m emq worker HANDLER --queue NAME [options]\n\n"
              "commands:\n  worker   run a worker (python -m emq worker --help)")
        return 0 if argv else 2
    if argv[0] != "worker":
        print(f"python -m emq: unknown command {argv[0]!r} (try: worker)", file=sys.stderr)
        return 2
    return worker_main(argv[1:], prog="python -m emq worker")
