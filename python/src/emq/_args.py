"""The arguments the async API (:mod:`emq.queue`) and the sync one (:mod:`emq.sync`) share: the
public type aliases (``Url``, ``Seconds``, ``Backoff``, ``Retention``, ``Pem``, ``JobSpec``) and
the few Python-side shapings before a native call (URLs, TLS paths, the add options, bulk jobs,
a waited job's outcome). Every check of a value is the core's; these only shape.
"""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from .errors import HandlerFailed, InvalidOption

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


def _outcome(out: Dict[str, Any]) -> Any:
    """A job's result, or its failure raised as :class:`HandlerFailed`."""
    if out["ok"]:
        return out["result"]
    raise HandlerFailed.from_failure(out["failure"])


def _job_defaults(d: Dict[str, Any]) -> Dict[str, Any]:
    """A queue's job defaults as the core returns them, with ``backoff`` in Python's shape (a
    tuple ``(kind, seconds)`` or ``(kind, seconds, max_seconds)``; ``None``: no backoff), so
    that they read back as :meth:`emq.Queue.set_job_defaults` took them."""
    b = d.get("backoff")
    if isinstance(b, dict):
        if b.get("type") == "none":
            d["backoff"] = None
        elif "max" in b:
            d["backoff"] = (b["type"], b["delay"], b["max"])
        else:
            d["backoff"] = (b["type"], b["delay"])
    return d
