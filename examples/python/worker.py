"""Quick start, Python worker: processes the jobs of the queue `emails` until SIGINT or SIGTERM,
then finishes the jobs it is running and exits.

The datastore is EMQ_URL, default redis://127.0.0.1:6379.
"""

import asyncio
import os
import signal

import emq

URL = os.environ.get("EMQ_URL", "redis://127.0.0.1:6379")


async def handle(job: emq.Job) -> dict:
    # job is a dict: id, name, data, attempts_made, ...; the return value is the job's result.
    await job.log(f"sending to {job['data']['to']}")
    return {"sent": job["data"]["to"]}


async def main() -> None:
    queue = await emq.Queue.connect(URL, "emails")
    worker = emq.Worker(queue, handle, concurrency=4)
    print("worker started; Ctrl-C to stop", flush=True)

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()

    await worker.close()  # stops fetching, waits for running jobs, gives the rest back
    print("worker stopped", flush=True)
    await queue.close()


asyncio.run(main())
