"""Direct adds: a one-job ``Queue.add`` completed on the running event loop without a thread hop.

The core decides and encodes (``Queue.direct_add``: the job checked, its id minted, the one
``add_one.lua`` call the usual path would send) and reads the reply (``direct_reply_len``,
``direct_settle``); this file only moves bytes on a non-blocking socket of the event loop, written
from its thread and read when ``loop.add_reader`` reports it readable, replies in the order the
calls were written. Adds that arrive while others are on their way are pipelined on the same
socket (up to ``EMQ_DIRECT_ADD_DEPTH`` unanswered, default 64), and the calls of one pass of the
event loop leave in one write (flushed by ``loop.call_soon``); past that depth an add goes to the
core, which sends such adds together in one call. Anything unusual goes the usual way with the
same id (an add is idempotent per id): a job the core does not take (``direct_add`` returns
None), a reply that is not "added" (a script not loaded yet, a server error, a failover), a socket
that fails or closes (every call on it is added again the usual way, and the next add opens a new
socket).

It saves about 70 µs of client CPU per awaited add on this project's VM (bench/RESULTS.md, "The
asyncio add without the hop"). ``EMQ_DIRECT_ADD=0`` turns it off; ``EMQ_DIRECT_ADD_DEPTH=1``
sends only a lone add direct.
"""

from __future__ import annotations

import asyncio
import collections
import os
import socket
from typing import Any, Deque, Optional, Tuple

from . import _emq

ENABLED = os.environ.get("EMQ_DIRECT_ADD", "1") != "0"


def _depth() -> int:
    try:
        v = int(os.environ.get("EMQ_DIRECT_ADD_DEPTH", ""))
    except ValueError:
        return 64
    return min(v, 4096) if v >= 1 else 64


# Most direct adds unanswered on one socket before the next goes the usual way (tests set it).
DEPTH = _depth()

# A reply not read within this many seconds (the core's default response timeout): the socket is
# given up and its calls go the usual way (with their ids: nothing is added twice).
REPLY_TIMEOUT = 30.0


class _Conn:
    """One socket on one event loop: calls written in order, replies settled in that order."""

    def __init__(self, loop: asyncio.AbstractEventLoop, sock: socket.socket) -> None:
        self.loop = loop
        self.sock = sock
        # (job id, its future, when its call was written), oldest first
        self.waiting: Deque[Tuple[str, "asyncio.Future[Optional[str]]", float]] = collections.deque()
        self.watch: Optional[asyncio.TimerHandle] = None
        self.inbox = bytearray()
        self.outbox = bytearray()
        # A flush is scheduled (call_soon) or the socket's writer waits for room.
        self.sending = False
        self.broken = False
        loop.add_reader(sock.fileno(), self._readable)

    def call(self, job_id: str, frame: bytes) -> "asyncio.Future[Optional[str]]":
        fut: "asyncio.Future[Optional[str]]" = self.loop.create_future()
        self.waiting.append((job_id, fut, self.loop.time()))
        if self.watch is None:
            self.watch = self.loop.call_later(1.0, self._watch)
        self.outbox += frame
        if not self.sending:
            # The calls of this pass of the loop leave together, in one send.
            self.sending = True
            self.loop.call_soon(self._send)
        return fut

    def _send(self) -> None:
        """Sends what the outbox holds; while some is left, waits for room (the socket's writer)."""
        if self.broken:
            return
        try:
            sent = self.sock.send(self.outbox)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:
            self._break()
            return
        del self.outbox[:sent]
        if self.outbox:
            self.loop.add_writer(self.sock.fileno(), self._send)
        else:
            self.loop.remove_writer(self.sock.fileno())
            self.sending = False

    def _watch(self) -> None:
        """Once a second while calls wait: gives the socket up when the oldest waited too long."""
        self.watch = None
        if self.broken or not self.waiting:
            return
        if self.loop.time() - self.waiting[0][2] > REPLY_TIMEOUT:
            self._break()
            return
        self.watch = self.loop.call_later(1.0, self._watch)

    def _readable(self) -> None:
        try:
            # (64 KiB: a larger buffer is its own mmap and munmap on every read, ~30 µs per add)
            data = self.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._break()
            return
        self.inbox += data
        while self.waiting:
            n = _emq.direct_reply_len(bytes(self.inbox))
            if n is None:
                break
            reply = bytes(self.inbox[:n])
            del self.inbox[:n]
            job_id, fut, _ = self.waiting.popleft()
            if not fut.done():
                fut.set_result(_emq.direct_settle(reply, job_id))
        if self.inbox and not self.waiting:
            # Bytes no call asked for: the stream is out of step; add the usual way from now on.
            self._break()

    def _break(self) -> None:
        """Every call on this socket goes the usual way (its result None); the socket is closed."""
        if self.broken:
            return
        self.broken = True
        while self.waiting:
            _, fut, _ = self.waiting.popleft()
            if not fut.done():
                fut.set_result(None)
        self.close()

    def close(self) -> None:
        self.broken = True
        if self.sock.fileno() < 0:
            return  # closed already
        if self.watch is not None:
            self.watch.cancel()
            self.watch = None
        if not self.loop.is_closed():
            self.loop.remove_reader(self.sock.fileno())
            self.loop.remove_writer(self.sock.fileno())
        self.sock.close()


class DirectAdds:
    """A queue handle's direct adds: one socket per event loop, opened on the first add after the
    core's first (which registers the queue), when the core names an endpoint."""

    def __init__(self, native: "_emq.Queue") -> None:
        self._native = native
        self._endpoint = native.direct_endpoint() if ENABLED else None
        self._conn: Optional[_Conn] = None

    async def add(self, name: str, data: Any, opts: Any) -> str:
        """``Queue.add``'s native call, direct when the core takes it; the id it returns."""
        if self._endpoint is None:
            return await self._native.add(name, data, opts)
        conn = self._conn
        loop = asyncio.get_running_loop()
        if conn is None or conn.broken or conn.loop is not loop:
            conn = await self._open(loop)
        # Past the depth, adds go to the core, whose line sends them together in one call (issue
        # 30 item 2's coalescing).
        if conn is None or len(conn.waiting) >= DEPTH:
            return await self._native.add(name, data, opts)
        call = self._native.direct_add(name, data, opts)
        if call is None:
            return await self._native.add(name, data, opts)
        job_id, frame = call
        settled = await conn.call(job_id, frame)
        if settled is not None:
            return settled
        # Not "added": the usual way, with the same id (nothing is added twice).
        again = dict(opts) if opts else {}
        again["id"] = job_id
        return await self._native.add(name, data, again)

    async def _open(self, loop: asyncio.AbstractEventLoop) -> Optional[_Conn]:
        if self._conn is not None and self._conn.loop is not loop:
            self._conn.close()
        self._conn = None
        assert self._endpoint is not None
        host, port = self._endpoint
        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            await asyncio.wait_for(loop.sock_connect(sock, (host.strip("[]"), port)), 5)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except (OSError, asyncio.TimeoutError):
            # The core's own connection reaches the server some other way: use it from now on.
            sock.close()
            self._endpoint = None
            return None
        if self._conn is not None:  # another add opened one meanwhile
            sock.close()
            return self._conn
        self._conn = _Conn(loop, sock)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
