# The Python worker of `emq demo`, embedded in the emq binary and run as `$EMQ_PYTHON -c <this>`.
#
# Reads EMQ_DEMO_URLS (JSON list), EMQ_DEMO_QUEUES (JSON list) and EMQ_DEMO_CONCURRENCY, runs one
# emq.Worker per queue whose handler returns {"lang": "python", "id": <job id>}, and talks to the
# demo over stdout, one line at a time:
#   ready                     every worker is running
#   done <n>                  jobs completed so far (about every 250 ms, when it changed)
#   final {"lang": ..., ...}  after stdin closed and every worker closed: counters and the ids run
# It stops when stdin reaches EOF (the demo closes it, or the demo died).
import asyncio
import json
import os
import sys

import emq


async def main() -> None:
    urls = json.loads(os.environ["EMQ_DEMO_URLS"])
    names = json.loads(os.environ["EMQ_DEMO_QUEUES"])
    concurrency = int(os.environ.get("EMQ_DEMO_CONCURRENCY", "32"))
    ran = []

    async def handle(job):
        # A job object (job.id), or a dict from a package version before those.
        jid = job.id if hasattr(job, "id") else job["id"]
        ran.append(jid)
        return {"lang": "python", "id": jid}

    queues = [await emq.Queue.connect(urls, name) for name in names]
    workers = [emq.Worker(q, handle, concurrency=concurrency) for q in queues]
    print("ready", flush=True)

    loop = asyncio.get_running_loop()
    eof = loop.run_in_executor(None, sys.stdin.buffer.read)
    last = -1
    while True:
        finished, _ = await asyncio.wait({eof}, timeout=0.25)
        completed = sum(w.stats()["completed"] for w in workers)
        if completed != last:
            print(f"done {completed}", flush=True)
            last = completed
        if finished:
            break

    for w in workers:
        await w.close()
    stats = [w.stats() for w in workers]
    for q in queues:
        await q.close()
    final = {
        "lang": "python",
        "completed": sum(s["completed"] for s in stats),
        "failed": sum(s["failed"] for s in stats),
        "runs": len(ran),
        "ids": ran,
    }
    print("final " + json.dumps(final), flush=True)


asyncio.run(main())
