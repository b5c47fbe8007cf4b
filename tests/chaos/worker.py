"""A Python worker child of the chaos storm (core/tests/chaos_faults.rs): reads
EMQ_CHAOS_CHILD=url|queue|lease_ms|sleep_ms|tag|concurrency, prints `STARTED <id> <µs>` when a
handler starts and `DONE <id> <µs>` when it returns (µs since the epoch) (the storm's ledger), results {"by": tag}. Lives at most
240 s (the test SIGKILLs it well before)."""

import asyncio
import os
import time

import emq

LIFETIME_S = 240


async def main() -> None:
    url, name, lease_ms, sleep_ms, tag, conc = os.environ["EMQ_CHAOS_CHILD"].split("|")
    urls = url.split(",")
    # A child started while the storm has the datastore down (its restart) connects once it is back.
    for tries in range(201):
        try:
            q = await emq.Queue.connect(urls if len(urls) > 1 else urls[0], name)
            break
        except emq.EmqError:
            if tries == 200:
                raise
            await asyncio.sleep(0.1)
    pause = int(sleep_ms) / 1000

    async def handle(job):
        print(f"STARTED {job.id} {time.time_ns() // 1000}", flush=True)
        await asyncio.sleep(pause)
        print(f"DONE {job.id} {time.time_ns() // 1000}", flush=True)
        return {"by": tag}

    lease = int(lease_ms) / 1000
    w = emq.Worker(q, handle, concurrency=int(conc), lease=lease, stalled_interval=lease / 2, max_stalls=1000)
    await asyncio.sleep(LIFETIME_S)
    w.abort()


asyncio.run(main())
