'use strict';
// Worker control through the Node binding (issue 14), against a real server from emq-harness,
// every script under the core's undeclared-key guard: timeouts and cancels that stop a handler
// (job.signal), queue.cancel, queue.wait, graceful shutdown on SIGINT/SIGTERM of a worker process,
// worker events, retention options, and the worker registry.
process.env.EMQ_GUARD = '1';

const { test } = require('node:test');
const assert = require('node:assert/strict');
const path = require('path');
const { spawn } = require('child_process');
const { Queue, Worker, EmqError, JobInterrupted } = require('..');
const { useServers, waitFor, unique } = require('../testlib/harness');

const h = useServers();

const connect = (prefix) => h.connect('standalone', prefix);

const worker = (q, handler, opts) => h.track(new Worker(q, handler, { blockTimeout: 200, ...opts }));

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Resolves with the signal's reason once it aborts (or after `ms`, with null). */
function aborted(signal, ms = 10_000) {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(signal.reason);
    const t = setTimeout(() => resolve(null), ms);
    signal.addEventListener('abort', () => {
      clearTimeout(t);
      resolve(signal.reason);
    });
  });
}

test('a timeout aborts job.signal and no two runs of one job overlap (concurrency 1)', async () => {
  const q = await connect('timeout-overlap');
  const runs = [];
  worker(
    q,
    async (job) => {
      const run = { start: Date.now(), end: 0, reason: null };
      runs.push(run);
      run.reason = await aborted(job.signal);
      // Cleanup after the abort: the retry must wait for it.
      await sleep(150);
      run.end = Date.now();
      throw run.reason ?? new Error('not aborted');
    },
    { concurrency: 1 },
  );
  const id = await q.add('slow', {}, { timeout: 200, attempts: 3 });
  const err = await q.wait(id, { timeout: 15_000 }).then(() => null, (e) => e);
  assert.ok(err instanceof EmqError);
  assert.equal(err.code, 'handler_failed');
  assert.equal(err.failureCode, 'timeout');
  assert.equal(runs.length, 3);
  for (const r of runs) {
    assert.ok(r.reason instanceof JobInterrupted, 'the signal was aborted');
    assert.equal(r.reason.code, 'timeout');
    assert.ok(r.end > 0);
  }
  for (let i = 1; i < runs.length; i++) {
    assert.ok(runs[i].start >= runs[i - 1].end, `run ${i} started ${runs[i - 1].end - runs[i].start} ms before run ${i - 1} ended`);
  }
});

test('a handler listening to job.signal stops at once on its timeout', async () => {
  const q = await connect('timeout-stop');
  let seen = null;
  worker(q, async (job) => {
    const t0 = Date.now();
    const reason = await aborted(job.signal);
    seen = { after: Date.now() - t0, reason };
    throw reason;
  });
  const id = await q.add('slow', {}, { timeout: 250, attempts: 1 });
  const err = await q.wait(id, { timeout: 10_000 }).then(() => null, (e) => e);
  assert.equal(err.failureCode, 'timeout');
  assert.ok(seen.reason instanceof JobInterrupted);
  assert.equal(seen.reason.code, 'timeout');
  assert.ok(seen.after >= 200 && seen.after < 1500, `aborted after ${seen.after} ms`);
});

test('queue.cancel: a waiting and a delayed job do not run; unknown and finished ids say so', async () => {
  const q = await connect('cancel-idle');
  const waiting = await q.add('w', {});
  const delayed = await q.add('d', {}, { delay: 60_000 });
  assert.equal(await q.cancel(waiting, 'not needed'), 'cancelled');
  assert.equal(await q.cancel(delayed, 'not needed'), 'cancelled');
  for (const id of [waiting, delayed]) {
    const job = await q.get(id);
    assert.equal(job.state, 'failed');
    assert.equal(job.failure.code, 'cancelled');
    assert.match(job.failure.message, /not needed/);
  }
  assert.equal(await q.cancel(q.mintId(), 'x'), 'not_found');
  const ran = [];
  worker(q, async (job) => {
    ran.push(job.id);
    return 'ok';
  });
  const done = await q.add('ok', {});
  assert.equal(await q.wait(done, { timeout: 10_000 }), 'ok');
  assert.equal(await q.cancel(done, 'late'), 'finished');
  assert.deepEqual(ran, [done], 'the cancelled jobs never ran');
  await assert.rejects(q.cancel('not an id', 'x'), (e) => e.code === 'invalid_job_id');
});

test('queue.cancel of a running job aborts its signal; it ends failed `cancelled`, not retried', async () => {
  const q = await connect('cancel-running');
  let started;
  const startedP = new Promise((r) => (started = r));
  let reason = null;
  let runs = 0;
  worker(q, async (job) => {
    runs += 1;
    started();
    reason = await aborted(job.signal);
    throw reason;
  });
  const id = await q.add('long', {}, { attempts: 3 });
  await startedP;
  const t0 = Date.now();
  assert.equal(await q.cancel(id, 'user asked'), 'requested');
  const err = await q.wait(id, { timeout: 10_000 }).then(() => null, (e) => e);
  assert.ok(reason instanceof JobInterrupted);
  assert.equal(reason.code, 'cancelled');
  assert.match(reason.message, /user asked/);
  assert.ok(Date.now() - t0 < 3000);
  assert.equal(err.code, 'handler_failed');
  assert.equal(err.failureCode, 'cancelled');
  const job = await q.get(id);
  assert.equal(job.state, 'failed');
  assert.equal(runs, 1);
});

test('queue.wait: finished before and after the wait began, failed (code, message, stack), timed out', async () => {
  const q = await connect('wait');
  const before = await q.add('double', { n: 2 });
  const w = worker(q, async (job) => {
    if (job.name === 'boom') throw new Error('it went boom');
    return { n: job.data.n * 2 };
  });
  await waitFor('the first job to complete', async () => (await q.get(before)).state === 'completed');
  assert.deepEqual(await q.wait(before, { timeout: 5000 }), { n: 4 });
  await w.close();
  const later = await q.add('double', { n: 5 });
  const waiting = q.wait(later, { timeout: 10_000 });
  await sleep(200);
  worker(q, async (job) => {
    if (job.name === 'boom') throw new Error('it went boom');
    return { n: job.data.n * 2 };
  });
  assert.deepEqual(await waiting, { n: 10 });
  const boom = await q.add('boom', {}, { attempts: 1 });
  const err = await q.wait(boom, { timeout: 10_000 }).then(() => null, (e) => e);
  assert.ok(err instanceof EmqError);
  assert.equal(err.name, 'HandlerFailed');
  assert.equal(err.code, 'handler_failed');
  assert.equal(err.failureCode, 'handler_failed');
  assert.equal(err.message, 'it went boom');
  assert.match(err.stack, /it went boom/);
  const q2 = await connect('wait-idle');
  const idle = await q2.add('never', {});
  const t0 = Date.now();
  await assert.rejects(q2.wait(idle, { timeout: 300 }), (e) => e.code === 'timeout' && e.name === 'Timeout');
  assert.ok(Date.now() - t0 < 3000);
  await assert.rejects(q2.wait(q2.mintId(), { timeout: 300 }), (e) => e.code === 'job_not_found');
});

for (const sig of ['SIGTERM', 'SIGINT']) {
  test(`${sig} to a worker process mid-job: the job is back in waiting, attempts 0, and completes elsewhere`, async () => {
    const q = await connect(`signal-${sig}`);
    const id = await q.add('long', { n: 1 }, { attempts: 1 });
    const child = spawn(process.execPath, [path.join(__dirname, '..', 'testlib', 'signal-child.js')], {
      env: { ...process.env, EMQ_TEST_URL: h.servers.standalone, EMQ_TEST_QUEUE: q.name },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const exited = new Promise((resolve) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        resolve('did not exit within 30 s');
      }, 30_000);
      child.on('exit', (code, signal) => {
        clearTimeout(timer);
        resolve(code ?? signal);
      });
    });
    await waitFor('the child to start the job', async () => out.includes(`started ${id}`), 20_000);
    assert.equal((await q.get(id)).state, 'active');
    child.kill(sig);
    assert.equal(await exited, 0, out);
    assert.match(out, /aborted shutdown/);
    assert.match(out, /closed/);
    const job = await q.get(id);
    assert.equal(job.state, 'waiting', out);
    assert.equal(job.attemptsMade, 0);
    worker(q, async (j) => j.data.n + 1);
    assert.equal(await q.wait(id, { timeout: 10_000 }), 2);
    assert.equal((await q.get(id)).attemptsMade, 1);
  });
}

test('worker.abort stops at once: signals aborted, nothing released (the lease brings the job back)', async () => {
  const q = await connect('abort');
  let started;
  const startedP = new Promise((r) => (started = r));
  let reason = null;
  const w = worker(q, async (job) => {
    started();
    reason = await aborted(job.signal);
    throw reason;
  }, { shutdownTimeout: 10_000 });
  const id = await q.add('long', {});
  await startedP;
  const t0 = Date.now();
  await w.abort();
  assert.ok(Date.now() - t0 < 3000, `abort took ${Date.now() - t0} ms`);
  assert.equal(reason.code, 'shutdown');
  assert.equal((await q.get(id)).state, 'active', 'left to its lease, as after a crash');
});

test("worker events: 'completed' with the result, 'failed' with the error, 'error' for a listener that threw", async () => {
  const q = await connect('events');
  const w = worker(q, async (job) => {
    if (job.name === 'bad') throw new Error('bad job');
    return job.data.n + 1;
  });
  const completed = [];
  const failed = [];
  const errors = [];
  w.on('completed', (job, result) => {
    completed.push([job.id, result]);
    if (job.data.n === 9) throw new Error('listener threw');
  });
  w.on('failed', (job, e) => failed.push([job.id, e.message]));
  w.on('error', (e) => errors.push(e.message));
  const a = await q.add('inc', { n: 1 });
  const b = await q.add('bad', {}, { attempts: 1 });
  const c = await q.add('inc', { n: 9 });
  await waitFor('three outcomes', async () => completed.length + failed.length >= 3);
  assert.deepEqual(completed.sort(), [[a, 2], [c, 10]].sort());
  assert.deepEqual(failed, [[b, 'bad job']]);
  await waitFor('the error event', async () => errors.length >= 1);
  assert.deepEqual(errors, ['listener threw']);
  // The worker keeps going after a listener threw.
  const d = await q.add('inc', { n: 3 });
  assert.equal(await q.wait(d, { timeout: 10_000 }), 4);
  let closed = false;
  w.on('closed', () => (closed = true));
  await w.close();
  assert.ok(closed);
  assert.equal(w.stats().completed, 3, 'stats keep their figures after close');
});

test('a throwing listener without an error listener does not crash the worker', async () => {
  const q = await connect('events-noerr');
  const w = worker(q, async () => 'ok');
  w.on('completed', () => {
    throw new Error('ignored');
  });
  const ids = [await q.add('a', {}), await q.add('b', {})];
  for (const id of ids) assert.equal(await q.wait(id, { timeout: 10_000 }), 'ok');
});

test('retention as worker options: removeOnComplete by count, removeOnFail true; per-job retention is accepted', async () => {
  const q = await connect('retention');
  worker(q, async (job) => {
    if (job.name === 'bad') throw new Error('no');
    return 1;
  }, { removeOnComplete: 2, removeOnFail: true });
  const ids = [];
  for (let i = 0; i < 5; i++) ids.push(await q.add('ok', {}));
  const bad = await q.add('bad', {}, { attempts: 1 });
  for (const id of ids) await q.wait(id, { timeout: 10_000 }).catch(() => {});
  // Retention is applied in the background (every 5 s).
  await waitFor('completed trimmed to 2', async () => (await q.counts()).completed === 2, 15_000);
  await waitFor('failed trimmed to 0', async () => (await q.counts()).failed === 0, 15_000);
  assert.equal(await q.get(bad), null);
  const kept = await Promise.all(ids.map((id) => q.get(id)));
  assert.equal(kept.filter((j) => j !== null).length, 2);

  const q2 = await connect('retention-opts');
  for (const opt of [{ count: 100 }, { age: 60_000 }, { count: 10, age: 1000 }, 5, true, false]) {
    const w = worker(q2, async () => 1, { removeOnComplete: opt, removeOnFail: opt });
    await w.close();
  }
  assert.throws(() => worker(q2, async () => 1, { removeOnComplete: {} }), (e) => e.code === 'invalid_option');
  assert.throws(() => worker(q2, async () => 1, { removeOnComplete: -1 }), (e) => e.code === 'invalid_option');
  assert.ok(await q2.add('x', {}, { removeOnComplete: { count: 100 } }));
  await assert.rejects(q2.add('x', {}, { removeOnComplete: {} }), (e) => e.code === 'invalid_option');
  const id = await q2.add('x', {}, { removeOnComplete: true });
  assert.ok(id);
});

test("queue.workers() lists a running Node worker with language 'node'", async () => {
  const q = await connect('registry');
  const w = worker(q, async () => 1, { concurrency: 3 });
  const list = await waitFor('the worker to register', async () => {
    const l = await q.workers();
    return l.length > 0 ? l : null;
  }, 10_000);
  assert.equal(list.length, 1);
  assert.equal(list[0].language, 'node');
  assert.equal(list[0].pid, process.pid);
  assert.equal(list[0].concurrency, 3);
  assert.equal(list[0].queue, q.name);
  await w.close();
  assert.deepEqual(await q.workers(), []);
});

test("node/README.md's worker-control quick start runs, and exits on SIGTERM", async () => {
  const fs = require('fs');
  const os = require('os');
  const readme = fs.readFileSync(path.join(__dirname, '..', 'README.md'), 'utf8');
  const m = /<!-- quickstart -->\n```js\n([\s\S]*?)\n```/.exec(readme);
  assert.ok(m, 'the README has the quick start block');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'emq-quickstart-'));
  const file = path.join(dir, 'quickstart.js');
  fs.writeFileSync(file, m[1].replace("require('emq')", `require(${JSON.stringify(path.join(__dirname, '..'))})`));
  const child = spawn(process.execPath, [file], {
    env: { ...process.env, REDIS_URL: h.servers.standalone },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const exited = new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve('did not exit within 30 s');
    }, 30_000);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve(code ?? signal);
    });
  });
  try {
    await waitFor('the quick start to print its result', async () => out.includes("{ sent: 'ada@example.com' }"), 20_000);
    child.kill('SIGTERM');
    assert.equal(await exited, 0, out);
  } finally {
    child.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('stats after close count the jobs that finished during the close', async () => {
  const q = await connect('stats-close');
  let started = false;
  const w = worker(q, async () => {
    started = true;
    await sleep(300);
    return 'done';
  });
  const id = await q.add('slow', {});
  await waitFor('the job to start', async () => started);
  await w.close(); // the running job finishes within the grace period
  assert.equal((await q.get(id)).state, 'completed');
  const s = w.stats();
  assert.equal(s.completed, 1, `the job completed during the close is counted: ${JSON.stringify(s)}`);
  assert.equal(s.running, 0);
});
