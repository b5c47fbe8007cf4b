"""The Python side of bench/web.sh (issue 30 item 1): an aiohttp service, one process, whose
every request enqueues one job and answers with its id. The same code runs emq or BullMQ
(Python, bullmq 3.4.4) behind it.

Usage: python bench/web/service.py emq|bullmq|none HTTP_PORT REDIS_PORT ("none": the same handler
answering without enqueuing anything, the baseline of what the HTTP part alone costs)
Env: WEB_QUEUE (queue name; default "web"). Prints "ready <pid>" on stdout once it listens;
SIGTERM closes the queue and exits. The event loop is asyncio's default one (no uvloop), the
access log is off.

Every job is {"i": n} with remove_on_complete (BullMQ: removeOnComplete: True); no worker runs
(only the producer, the web process, is measured).
"""

import asyncio
import os
import signal
import sys

from aiohttp import web


async def open_queue(lib, redis_port, name):
    url = f"redis://127.0.0.1:{redis_port}"
    if lib == "none":

        async def nothing(data):
            return 0

        async def no_close():
            pass

        return nothing, no_close
    if lib == "emq":
        import emq

        q = await emq.Queue.connect(url, name)

        async def add(data):
            return await q.add("j", data, remove_on_complete=True)

        return add, q.close
    import bullmq

    q = bullmq.Queue(name, {"connection": url})

    async def add(data):
        job = await q.add("j", data, {"removeOnComplete": True})
        return job.id

    return add, q.close


async def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("emq", "bullmq", "none"):
        print("usage: service.py emq|bullmq|none HTTP_PORT REDIS_PORT", file=sys.stderr)
        sys.exit(2)
    lib, http_port, redis_port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    add, close = await open_queue(lib, redis_port, os.environ.get("WEB_QUEUE", "web"))
    n = 0

    async def handle(request):
        nonlocal n
        i = n
        n += 1
        try:
            job_id = await add({"i": i})
        except Exception as e:  # an error answers 500, and the generator counts it
            return web.Response(status=500, text=str(e))
        return web.Response(text=str(job_id))

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    # The generator keeps its connections open for the whole run: no keep-alive time-out to speak of.
    runner = web.AppRunner(app, access_log=None, keepalive_timeout=3600.0, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", http_port, backlog=1024)
    await site.start()
    print(f"ready {os.getpid()}", flush=True)

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    await stop.wait()
    await runner.cleanup()
    await close()


if __name__ == "__main__":
    asyncio.run(main())
