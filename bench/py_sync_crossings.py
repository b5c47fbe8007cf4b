"""Context switches and CPU per blocking add in Python (issue 30 item 4): `emq.sync`'s add on the
calling thread's own connection (`add_here`, bindings/python/src/local.rs) against the shared
runtime's blocking path (`add(..., blocking=True)`: a hop to a tokio worker and back), in one
build, REPS repetitions alternating which goes first, N awaited adds one at a time each;
getrusage(RUSAGE_SELF) covers every thread of the process. Prints one JSON line per side and
repetition. Usage: python bench/py_sync_crossings.py redis://127.0.0.1:PORT"""

import json
import resource
import sys
import time

import emq.sync

URL = sys.argv[1] if len(sys.argv) > 1 else "redis://127.0.0.1:6391"
N = 5000
REPS = 5


def usage():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_nvcsw, r.ru_nivcsw, r.ru_utime + r.ru_stime, time.perf_counter()


def run(q, side):
    native = q._native
    opts = {"remove_on_complete": True}
    if side == "own_connection":
        add = lambda i: native.add_here("j", {"i": i}, opts)  # noqa: E731
    else:
        add = lambda i: native.add("j", {"i": i}, opts, blocking=True)  # noqa: E731
    for i in range(200):
        add(i)
    a = usage()
    for i in range(N):
        add(i)
    b = usage()
    return {
        "side": side,
        "voluntary_per_add": (b[0] - a[0]) / N,
        "involuntary_per_add": (b[1] - a[1]) / N,
        "cpu_us_per_add": (b[2] - a[2]) / N * 1e6,
        "wall_us_per_add": (b[3] - a[3]) / N * 1e6,
    }


def main():
    q = emq.sync.Queue.connect(URL, "py-sync-crossings")
    sides = ["shared_runtime", "own_connection"]
    for rep in range(REPS):
        for side in sides if rep % 2 == 0 else sides[::-1]:
            print(json.dumps({"rep": rep, **run(q, side)}), flush=True)
    q.obliterate(force=True)
    q.close()


main()
