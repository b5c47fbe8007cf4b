"""Quick start, Python producer: adds one job to the queue `emails` and waits for its result.

    pip install emq
    python worker.py      # in one terminal (see worker.py)
    python producer.py    # in another

The datastore is EMQ_URL, default redis://127.0.0.1:6379.
"""

import asyncio
import os

import emq

URL = os.environ.get("EMQ_URL", "redis://127.0.0.1:6379")


async def main() -> None:
    queue = await emq.Queue.connect(URL, "emails")
    job_id = await queue.add("send", {"to": "ada@example.com"}, attempts=3, backoff=("exponential", 1.0))
    print("added", job_id)
    try:
        # The job's result once a worker has finished it (a job that failed for good raises
        # emq.HandlerFailed; not finished within 30 s raises emq.Timeout).
        result = await queue.wait(job_id, timeout=30)
    except emq.Timeout:
        raise SystemExit(f"job {job_id} did not finish within 30 s: is worker.py running?")
    print("completed", result)
    await queue.close()


asyncio.run(main())
