"""Issue 30 item 5: client CPU of an asyncio add with and without the thread hop. Measures, in one
process, N awaited one-job adds one at a time per side, REPS repetitions, the sides' order
rotating each repetition:

- ``hop``: ``await queue.add(...)`` with direct adds off (the call crosses to the core's tokio
  runtime, which sends it and wakes the event loop with the reply): the path before the spike;
- ``direct``: ``await queue.add(...)`` as shipped (``emq._direct``: the core builds the call, the
  event loop's own socket carries it);
- ``loop_socket``: the same add_one.lua call (captured once from the binding's own call with
  MONITOR, so the same script, keys and arguments) written by the event loop's thread on a
  non-blocking socket, its reply read when ``loop.add_reader`` reports the socket readable. The
  frame is built in Python and the reply checked for ``*0`` (added) only: no error handling, no
  fallback, no core call but the id minting. That is a lower bound on what a built path would
  cost, so the saving it shows is an upper bound on what building the spike could save.

getrusage(RUSAGE_SELF) covers every thread of the process (the core's runtime threads too).
Prints one JSON line per side and repetition, then the medians. Usage:
python bench/py_async_direct.py redis://127.0.0.1:PORT"""

import asyncio
import json
import re
import resource
import socket
import statistics
import sys
import time
from urllib.parse import urlparse

import emq

URL = sys.argv[1] if len(sys.argv) > 1 else "redis://127.0.0.1:6391"
N = int(sys.argv[2]) if len(sys.argv) > 2 else 5000
REPS = 5
QUEUE = "py-async-direct"


def usage():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_nvcsw, r.ru_nivcsw, r.ru_utime + r.ru_stime, time.perf_counter()


def unquote(tok):
    # MONITOR quotes each argument; JSON's quotes come as \" (no other escapes in these args).
    return tok.replace('\\"', '"').replace("\\\\", "\\")


def resp(parts):
    out = [b"*%d\r\n" % len(parts)]
    for p in parts:
        out.append(b"$%d\r\n%s\r\n" % (len(p), p))
    return b"".join(out)


async def capture(q, host, port):
    """The binding's add_one.lua call, as MONITOR shows it."""
    r, w = await asyncio.open_connection(host, port)
    w.write(b"MONITOR\r\n")
    await w.drain()
    await r.readline()  # +OK
    await q.add("j", {"i": -1}, remove_on_complete=True)
    while True:
        line = (await r.readline()).decode()
        if '"EVALSHA"' in line or '"evalsha"' in line:
            break
    w.close()
    toks = [unquote(t) for t in re.findall(r'"((?:[^"\\]|\\.)*)"', line)]
    nkeys = int(toks[2])
    keys = toks[3 : 3 + nkeys]
    args = toks[3 + nkeys :]
    return toks[1], keys[:-1], args


class LoopSocket:
    def __init__(self, host, port, loop):
        self.sock = socket.create_connection((host, port))
        self.sock.setblocking(False)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.loop = loop
        self.waiting = []
        self.buf = b""
        loop.add_reader(self.sock.fileno(), self._readable)

    def _readable(self):
        self.buf += self.sock.recv(65536)
        while self.waiting and b"\r\n" in self.buf:
            line, _, rest = self.buf.partition(b"\r\n")
            if line != b"*0":
                raise RuntimeError(f"unexpected reply {line!r}")
            self.buf = rest
            self.waiting.pop(0).set_result(None)

    async def call(self, frame):
        fut = self.loop.create_future()
        self.waiting.append(fut)
        self.sock.send(frame)
        await fut

    def close(self):
        self.loop.remove_reader(self.sock.fileno())
        self.sock.close()


async def run(q, hop, side, direct):
    if side in ("hop", "direct"):
        h = hop if side == "hop" else q

        async def add(i):
            await h.add("j", {"i": i}, remove_on_complete=True)

    else:
        sock, sha, fixed, args, prefix = direct
        head = [b"EVALSHA", sha.encode(), str(len(fixed) + 1).encode()] + [k.encode() for k in fixed]
        tail = [a.encode() for a in args[2:]]

        async def add(i):
            jid = q.mint_id()
            data = json.dumps({"i": i}, separators=(",", ":")).encode()
            await sock.call(resp(head + [(prefix + jid).encode(), b"j", data] + tail))

    for i in range(200):
        await add(i)
    a = usage()
    for i in range(N):
        await add(i)
    b = usage()
    return {
        "side": side,
        "voluntary_per_add": (b[0] - a[0]) / N,
        "involuntary_per_add": (b[1] - a[1]) / N,
        "cpu_us_per_add": (b[2] - a[2]) / N * 1e6,
        "wall_us_per_add": (b[3] - a[3]) / N * 1e6,
    }


async def main():
    u = urlparse(URL)
    host, port = u.hostname or "127.0.0.1", u.port or 6379
    q = await emq.Queue.connect(URL, QUEUE)
    hop = await emq.Queue.connect(URL, QUEUE)
    hop._direct._endpoint = None  # direct adds off on this handle
    await hop.add("j", {"i": -2}, remove_on_complete=True)
    sha, fixed, args = await capture(hop, host, port)
    record = [k for k in fixed if k.endswith(":wait")][0]
    prefix = record[: -len("wait")]
    sock = LoopSocket(host, port, asyncio.get_running_loop())
    direct = (sock, sha, fixed, args, prefix)
    sides = ["hop", "direct", "loop_socket"]
    rows = []
    for rep in range(REPS):
        for side in sides[rep % 3 :] + sides[: rep % 3]:
            row = {"rep": rep, **await run(q, hop, side, direct)}
            rows.append(row)
            print(json.dumps(row), flush=True)
    # Both sides' jobs are real: the queue holds every one of them.
    counts = await q.counts()
    print(json.dumps({"waiting": counts["waiting"], "expected": 2 + REPS * 3 * (N + 200)}))
    for key in ("cpu_us_per_add", "wall_us_per_add", "voluntary_per_add"):
        for side in sides:
            v = [r[key] for r in rows if r["side"] == side]
            print(f"{side} {key}: median {statistics.median(v):.3g} [{min(v):.3g}-{max(v):.3g}]")
        for other in ("direct", "loop_socket"):
            saved = [
                a[key] - b[key]
                for a, b in zip(
                    [r for r in rows if r["side"] == "hop"],
                    [r for r in rows if r["side"] == other],
                )
            ]
            print(f"saved {key} (hop - {other}, per repetition): median "
                  f"{statistics.median(saved):.3g} [{min(saved):.3g}-{max(saved):.3g}]")
    sock.close()
    await q.obliterate(force=True)
    await q.close()
    await hop.close()


asyncio.run(main())
