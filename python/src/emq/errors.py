"""emq's exceptions: one base class, :class:`EmqError`, and one subclass per stable error code of
the core (``ErrorCode::ALL`` in ``core/src/error.rs``, listed in the generated ``_codes.py``).

Every exception carries ``.code`` (the snake_case code, e.g. ``"invalid_queue_name"``) and
``.message`` (the human message without the code). :class:`Unrecoverable` is different: a job
handler raises it to fail the job without using its remaining attempts.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Dict, Optional, Type

from ._codes import CODES

__all__ = [
    "EmqError",
    "InvalidQueueName",
    "InvalidJobId",
    "InvalidOption",
    "InvalidPayload",
    "ServerUnavailable",
    "AuthFailed",
    "PermissionDenied",
    "IncompatibleVersion",
    "CrossSlot",
    "UndeclaredKey",
    "ScriptError",
    "LeaseLost",
    "NodeLeaseLost",
    "JobNotFound",
    "InvalidState",
    "Timeout",
    "NotReplicated",
    "Closed",
    "HandlerFailed",
    "Internal",
    "GroupFull",
    "Unrecoverable",
    "Delay",
    "error_for_code",
]


class EmqError(Exception):
    """Base class of every error emq raises. ``code`` is the core's stable error code."""

    code: str = "internal"

    def __init__(self, message: str = "", code: "str | None" = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return f"{self.code}: {self.message}" if self.message else self.code


class InvalidQueueName(EmqError):
    """A queue name broke a keyspace rule (empty, ``:`` ``{`` ``}``, reserved ``emq``, length…)."""

    code = "invalid_queue_name"


class InvalidJobId(EmqError):
    """A string that emq did not mint was offered as a job id."""

    code = "invalid_job_id"


class InvalidOption(EmqError):
    """A job or worker option is out of range (negative delay, zero attempts…)."""

    code = "invalid_option"


class InvalidPayload(EmqError):
    """A payload or result is not JSON-serialisable."""

    code = "invalid_payload"


class ServerUnavailable(EmqError):
    """The datastore cannot be reached, the connection dropped, or the server is not ready yet
    (``LOADING`` after a restart, cluster down): retry later."""

    code = "server_unavailable"


class AuthFailed(EmqError):
    """The datastore refused the credentials (wrong user or password, or none given: ``NOAUTH``)."""

    code = "auth_failed"


class PermissionDenied(EmqError):
    """The datastore's ACL refuses this user the command or key (``NOPERM``)."""

    code = "permission_denied"


class IncompatibleVersion(EmqError):
    """The keyspace was written by an incompatible emq wire version."""

    code = "incompatible_version"


class CrossSlot(EmqError):
    """A script call would span more than one cluster slot."""

    code = "cross_slot"


class UndeclaredKey(EmqError):
    """A guarded script touched a key that is not in its ``KEYS``."""

    code = "undeclared_key"


class ScriptError(EmqError):
    """A script failed for another reason (a bug, or the datastore refused it)."""

    code = "script_error"


class LeaseLost(EmqError):
    """A job's lease token no longer matches: another worker owns the job."""

    code = "lease_lost"


class NodeLeaseLost(EmqError):
    """This process lost its node-id lease and cannot mint job ids until it gets a new one."""

    code = "node_lease_lost"


class JobNotFound(EmqError):
    """No job with that id exists in the queue."""

    code = "job_not_found"


class InvalidState(EmqError):
    """The job is not in a state that allows the operation."""

    code = "invalid_state"


class Timeout(EmqError):
    """A call did not finish within its deadline."""

    code = "timeout"


class NotReplicated(EmqError):
    """A durable add (``durable=(replicas, timeout_ms)``) was written on the master, but fewer
    replicas than asked acknowledged it in time: it can be lost in a failover. Adding again with
    the same ``id`` is idempotent (and waits again)."""

    code = "not_replicated"


class Closed(EmqError):
    """The queue or worker was closed (or belongs to another process, before ``os.fork()``)."""

    code = "closed"


class HandlerFailed(EmqError):
    """A job failed for good: raised by ``Queue.wait`` with ``failure_code`` (``handler_failed``,
    ``timeout``, ``cancelled``, ``stalled``…), ``stack`` (the traceback, when recorded) and
    ``failure`` (the whole failure dict); also the code of failure records. A worker's
    ``failed`` event passes one for each failed run, with ``will_retry`` (True when the job goes
    back for another attempt)."""

    code = "handler_failed"
    #: The failure's own code: ``handler_failed``, ``timeout``, ``cancelled``, ``stalled``,
    #: ``invalid_payload`` or the handler's.
    failure_code: str = "handler_failed"
    #: The traceback, when one was recorded.
    stack: Optional[str] = None
    #: The whole failure record (``code``, ``message``, ``stack``).
    failure: Optional[Dict[str, Any]] = None
    #: In a worker's ``failed`` event: True when the job will run again (attempts remain).
    will_retry: bool = False

    @classmethod
    def from_failure(cls, failure: Dict[str, Any], will_retry: bool = False) -> "HandlerFailed":
        """The exception for a failure record."""
        exc = cls(str(failure.get("message", "")))
        exc.failure = failure
        exc.failure_code = str(failure.get("code", "handler_failed"))
        exc.stack = failure.get("stack")
        exc.will_retry = will_retry
        return exc


class Internal(EmqError):
    """Something emq did not expect; a bug report is welcome."""

    code = "internal"


class GroupFull(EmqError):
    """An add would put more jobs in a group's backlog than its cap allows
    (:meth:`emq.Queue.set_group_max_waiting`): nothing was written; add again once the group has
    drained."""

    code = "group_full"


class Unrecoverable(Exception):
    """Raise from a job handler to fail the job at once, skipping its remaining attempts."""


class Delay(Exception):
    """Raise from a job handler to put the job back to delayed for ``delay`` (seconds, or a
    ``timedelta``) instead of failing it: it runs again once that much time has passed on the
    server's clock. The run does not count as an attempt unless ``count_attempt=True``. A worker
    whose lease on the job was lost cannot delay it. A negative, non-finite or longer delay than
    365 days fails the job with ``invalid_option``."""

    def __init__(self, delay: "float | timedelta", count_attempt: bool = False) -> None:
        seconds = delay.total_seconds() if isinstance(delay, timedelta) else delay
        super().__init__(f"delayed for {seconds} s")
        self.seconds = seconds
        self.count_attempt = bool(count_attempt)


def _classes_by_code() -> Dict[str, Type[EmqError]]:
    """Each code of the core's table (``_codes.CODES``, generated from ``core/src/error.rs``) with
    its class above; a code without one is a missing class, not a silent fallback."""
    table: Dict[str, Type[EmqError]] = {}
    for code, name in CODES:
        cls = globals().get(name)
        if not (isinstance(cls, type) and issubclass(cls, EmqError) and cls.code == code):
            raise ImportError(
                f"emq.errors has no class {name} with code {code!r}, a code of the core "
                "(python/src/emq/_codes.py, generated from core/src/error.rs): write it"
            )
        table[code] = cls
    return table


_BY_CODE: Dict[str, Type[EmqError]] = _classes_by_code()


def error_for_code(code: str, message: str) -> EmqError:
    """The exception for a core error code (used by the native module). An unknown code gives a
    plain :class:`EmqError` that still carries it."""
    cls = _BY_CODE.get(code)
    if cls is None:
        return EmqError(message, code=code)
    return cls(message)
