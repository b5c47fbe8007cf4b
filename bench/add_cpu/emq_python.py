"""One side of bench/add_cpu.sh: emq Python, ``await queue.add("j", {"i": i})`` one at a time."""
import asyncio
import json
import resource
import sys
import time

import emq


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


async def main(port, n):
    q = await emq.Queue.connect(f"redis://127.0.0.1:{port}", "add-cpu-python")
    for i in range(200):
        await q.add("j", {"i": i})
    c0, t0 = cpu(), time.perf_counter()
    for i in range(n):
        await q.add("j", {"i": i})
    c, t = cpu() - c0, time.perf_counter() - t0
    print(json.dumps({"side": "emq_python", "cpu_us_per_add": c / n * 1e6, "wall_us_per_add": t / n * 1e6}))
    await q.obliterate(force=True)
    await q.close()


asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 5000))
