"""Quick start, Python worker: processes the jobs of the queue `emails` until SIGINT or SIGTERM,
then finishes the jobs it is running (up to 10 s) and exits.

The datastore is EMQ_URL, default redis://127.0.0.1:6379.
"""

import asyncio
import os

import emq

URL = os.environ.get("EMQ_URL", "redis://127.0.0.1:6379")


async def handle(job: emq.Job) -> dict[str, str]:
    # job.id, job.name, job.data (the payload), job.attempt (1 on the first run), ...
    await job.log(f"sending to {job.data['to']} (attempt {job.attempt} of {job.attempts})")
    return {"sent": job.data["to"]}  # the job's result


async def main() -> None:
    queue = await emq.Queue.connect(URL, "emails")
    worker = emq.Worker(queue, handle, concurrency=4)
    worker.on("failed", lambda job, error: print(f"job {job.id} failed: {error.message}", flush=True))
    print("worker started; Ctrl-C to stop", flush=True)
    # Runs until SIGINT or SIGTERM, then stops taking jobs, lets running ones finish (up to
    # shutdown_timeout, 10 s) and gives the rest back to waiting. A second Ctrl-C stops at once.
    await worker.run()
    print("worker stopped", flush=True)
    await queue.close()


asyncio.run(main())
