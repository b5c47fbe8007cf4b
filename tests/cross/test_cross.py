"""Cross-language round trips: jobs added from one language, processed by a worker of another
(Python in-process, Node through node_helper.js, Rust through `emq work --echo`), then read back
by Python, Node and Rust (`emq job --json`), on a standalone server and on a cluster.

Every worker runs the same echo handler: the result is {"lang", "id", "name", "data"}, and a job
named "boom" fails with the message in its payload. The test checks that ids, payloads, results and
failures come back identically in every language."""

import asyncio
import json
import os
import re
import subprocess

import pytest

import emq

HERE = os.path.dirname(os.path.abspath(__file__))
NODE_HELPER = os.path.join(HERE, "node_helper.js")
TIMEOUT = 90  # seconds, for any one child process
FAIL_NAME = "boom"
FAIL_MESSAGE = "kaputt — ✗ 失敗 \"quoted\"\nsecond line"

# (name, data): unicode, nested objects, large ints within 2**53, floats, null.
JOBS = [
    (
        "mixed",
        {
            "text": "héllo wörld ✓ 日本語 🎉 \u2028 tab\there",
            "nested": {"a": [1, 2, {"b": None, "c": [[], {}]}], "empty": {}},
            "big": 2**53 - 1,
            "neg_big": -(2**53 - 1),
            "pi": 3.141592653589793,
            "tiny": 1e-7,
            "half": -2.5,
            "null": None,
            "yes": True,
            "no": False,
        },
    ),
    ("null-payload", None),
    ("string", "just a string ∑ with \\ backslash"),
    ("number", 9007199254740991),
    ("list", [1.5, "x", None, {"k": "v"}]),
    (FAIL_NAME, {"message": FAIL_MESSAGE, "extra": [1, 2]}),
]

ID = re.compile(r"^j[0-9abcdefghjkmnpqrstvwxyz]{15}$")  # `j` + 15 Crockford base32 characters

# Node's camelCase keys → the snake_case of the core's JSON (Python, Rust).
NODE_KEYS = {
    "attemptsMade": "attempts_made",
    "createdMs": "created_ms",
    "processedMs": "processed_ms",
    "finishedMs": "finished_ms",
}


def run(args, env=None):
    out = subprocess.run(
        args,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env={**os.environ, **(env or {})},
    )
    assert out.returncode == 0, f"{args[:3]} exited {out.returncode}\nstdout:\n{out.stdout}\nstderr:\n{out.stderr}"
    return out.stdout


# ---- Python


def py_add(urls, queue, jobs):
    async def go():
        q = await emq.Queue.connect(urls, queue)
        try:
            return [await q.add(name, data) for name, data in jobs]
        finally:
            await q.close()

    return asyncio.run(go())


def py_get(urls, queue, ids):
    async def go():
        q = await emq.Queue.connect(urls, queue)
        try:
            return [await q.get(i) for i in ids]
        finally:
            await q.close()

    return asyncio.run(go())


def py_work(urls, queue, n):
    async def handle(job):
        if job.name == FAIL_NAME:
            data = job.data
            raise RuntimeError(data["message"] if isinstance(data, dict) and isinstance(data.get("message"), str) else f"job {job.id} failed on request")
        return {"lang": "python", "id": job.id, "name": job.name, "data": job.data}

    async def go():
        q = await emq.Queue.connect(urls, queue)
        w = emq.Worker(q, handle)
        try:
            for _ in range(TIMEOUT * 50):
                s = w.stats()
                if s["completed"] + s["failed"] >= n:
                    break
                await asyncio.sleep(0.02)
            else:
                raise AssertionError(f"the python worker handled {w.stats()} of {n} jobs")
        finally:
            # Read before close: a closed worker's stats() reads all zeros.
            s = w.stats()
            await w.close()
            await q.close()
        return s

    return asyncio.run(go())


# ---- Node


def node(node_package, *args):
    return json.loads(run(["node", NODE_HELPER, *args], env={"EMQ_NODE_PACKAGE": node_package}))


def node_add(node_package, urls, queue, jobs):
    return node(node_package, "add", json.dumps(urls), queue, json.dumps([{"name": n, "data": d} for n, d in jobs]))


def node_get(node_package, urls, queue, ids):
    jobs = node(node_package, "get", json.dumps(urls), queue, json.dumps(ids))
    return [None if j is None else {NODE_KEYS.get(k, k): v for k, v in j.items()} for j in jobs]


def node_work(node_package, urls, queue, n):
    return node(node_package, "work", json.dumps(urls), queue, FAIL_NAME, str(n))


# ---- Rust (the emq CLI)


def url_args(urls):
    return [a for u in urls for a in ("--url", u)]


def rust_get(emq_bin, urls, queue, ids):
    return [json.loads(run([emq_bin, "job", queue, i, "--json", *url_args(urls)])) for i in ids]


def rust_work(emq_bin, urls, queue, n):
    out = run([emq_bin, "work", queue, "--echo", "--fail-name", FAIL_NAME, "--max-jobs", str(n), *url_args(urls)])
    return json.loads(out)


# ---- The tests


def canonical(v):
    return json.dumps(v, sort_keys=True, ensure_ascii=False)


# Every producer with every worker of another language (same-language pairs are each binding's
# own suite). Rust adds no jobs here: the CLI has no `add`.
PAIRS = [(p, w) for p in ("python", "node") for w in ("python", "node", "rust") if p != w]


@pytest.mark.parametrize("producer,worker", PAIRS, ids=[f"{p}-to-{w}" for p, w in PAIRS])
def test_jobs_round_trip_across_languages(producer, worker, urls, request, emq_bin, node_package):
    topology = request.node.callspec.params["urls"]
    queue = f"cross-{producer}-{worker}-{topology}"

    # Added in one language …
    if producer == "python":
        ids = py_add(urls, queue, JOBS)
    else:
        ids = node_add(node_package, urls, queue, JOBS)
    assert len(ids) == len(JOBS) and len(set(ids)) == len(JOBS)
    for i in ids:
        assert ID.match(i), i

    # … processed in another …
    n = len(JOBS)
    if worker == "python":
        stats = py_work(urls, queue, n)
    elif worker == "node":
        stats = node_work(node_package, urls, queue, n)
    else:
        stats = rust_work(emq_bin, urls, queue, n)
    assert (stats["completed"], stats["failed"]) == (n - 1, 1), stats

    # … and read back in all three.
    from_py = py_get(urls, queue, ids)
    from_node = node_get(node_package, urls, queue, ids)
    from_rust = rust_get(emq_bin, urls, queue, ids)
    for (name, data), job_id, p, nd, r in zip(JOBS, ids, from_py, from_node, from_rust):
        assert p is not None and nd is not None and r is not None, job_id
        # `emq job --json` adds the job's log lines to the core's JSON (Python reads them with
        # `queue.logs`); these jobs log nothing.
        r = dict(r)
        assert r.pop("logs", None) == [], f"{job_id}: emq job --json logs"
        # Python and Rust read the core's JSON: identical, key for key.
        assert canonical(p) == canonical(r), f"{job_id}: python and rust read different jobs"
        # Node has the same fields in camelCase; the few it does not expose (`dedup`, …) are unset.
        assert canonical(nd) == canonical({k: p.get(k, "<missing>") for k in nd}), f"{job_id}: node and python read different jobs"
        assert all(p[k] is None for k in set(p) - set(nd)), {k: p[k] for k in set(p) - set(nd)}
        assert p["id"] == job_id and p["name"] == name
        assert canonical(p["data"]) == canonical(data), f"{job_id}: payload changed"
        if name == FAIL_NAME:
            assert p["state"] == "failed"
            assert p["result"] is None
            assert p["failure"]["message"] == FAIL_MESSAGE
            assert p["failure"]["code"] == "handler_failed", p["failure"]
        else:
            assert p["state"] == "completed"
            assert p["failure"] is None
            want = {"lang": worker, "id": job_id, "name": name, "data": data}
            assert canonical(p["result"]) == canonical(want), f"{job_id}: result {p['result']!r}"
