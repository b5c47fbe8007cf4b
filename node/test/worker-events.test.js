'use strict';
// A worker's events in Node come from the core's worker-event hook (issue 14 item 5): 'completed'
// and 'failed' once recorded (with willRetry), 'progress' from job.updateProgress, 'stalled' from
// this worker's sweep, 'error' for the worker's own troubles (a lost connection: it keeps trying);
// and stats() count jobs (failed for good) apart from retried runs. Real servers from emq-harness
// (and one plain redis-server that is stopped and started again), every script under the guard.
process.env.EMQ_GUARD = '1';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const net = require('net');
const os = require('os');
const path = require('path');
const { spawn } = require('child_process');
const { Queue, Worker, EmqError, HandlerFailed } = require('..');
const { startServers, waitFor, unique } = require('../testlib/harness');

let servers;
const open = [];

before(async () => {
  servers = await startServers({ flags: ['--standalone'] });
});

after(async () => {
  for (const c of open.reverse()) await c.close().catch(() => {});
  if (servers) await servers.stop();
});

async function connect(prefix, url = servers.standalone) {
  const q = await Queue.connect(url, unique(prefix));
  open.push(q);
  return q;
}

function worker(q, handler, opts) {
  const w = new Worker(q, handler, { blockTimeout: 200, ...opts });
  open.push(w);
  return w;
}

test('stats count jobs: attempts 3, always failing → failed 1, retried 2', async () => {
  const q = await connect('stats-retried');
  const w = worker(q, async () => {
    throw new Error('always');
  });
  const id = await q.add('bad', {}, { attempts: 3 });
  await waitFor('the job to fail for good', async () => (await q.get(id)).state === 'failed');
  await w.close();
  assert.equal((await q.get(id)).attemptsMade, 3);
  const s = w.stats();
  assert.deepEqual([s.completed, s.failed, s.retried], [0, 1, 2], JSON.stringify(s));
});

test("'completed', 'failed' (willRetry) and 'progress' come from the core once recorded", async () => {
  const q = await connect('wev');
  const seen = [];
  const w = worker(q, async (job) => {
    if (job.name === 'bad') throw new Error(`bad run ${job.attemptsMade + 1}`);
    await job.updateProgress({ pct: 50 });
    return { done: job.data.n };
  });
  w.on('completed', (job, result) => seen.push(['completed', job.id, job.name, job.data, result]));
  w.on('failed', (job, e) => {
    assert.ok(e instanceof HandlerFailed && e instanceof EmqError, String(e));
    seen.push(['failed', job.id, job.attemptsMade, e.failureCode, e.message, e.willRetry]);
  });
  w.on('progress', (job, value) => seen.push(['progress', job.id, value]));
  const ok = await q.add('good', { n: 7 });
  const bad = await q.add('bad', {}, { attempts: 2 });
  assert.deepEqual(await q.wait(ok, { timeout: 10_000 }), { done: 7 });
  await assert.rejects(q.wait(bad, { timeout: 10_000 }), HandlerFailed);
  await waitFor('two failed events', async () => seen.filter((e) => e[0] === 'failed').length === 2);
  // The completion is recorded before the event: the job is completed when it is emitted.
  await waitFor('the completed event', async () => seen.some((e) => e[0] === 'completed'));
  assert.equal((await q.get(ok)).state, 'completed');
  await w.close();
  assert.deepEqual(seen.filter((e) => e[0] === 'completed'), [['completed', ok, 'good', { n: 7 }, { done: 7 }]]);
  assert.deepEqual(seen.filter((e) => e[0] === 'progress'), [['progress', ok, { pct: 50 }]]);
  const p = seen.findIndex((e) => e[0] === 'progress');
  const c = seen.findIndex((e) => e[0] === 'completed');
  assert.ok(p < c, JSON.stringify(seen));
  assert.deepEqual(seen.filter((e) => e[0] === 'failed'), [
    ['failed', bad, 0, 'handler_failed', 'bad run 1', true],
    ['failed', bad, 1, 'handler_failed', 'bad run 2', false],
  ]);
  // The progress was recorded on the job too.
  assert.deepEqual((await q.get(ok)).progress, { pct: 50 });
});

test("'stalled' when this worker's sweep recovers a job whose worker vanished", async () => {
  const q = await connect('wev-stall');
  let started;
  const startedP = new Promise((r) => (started = r));
  // A worker that vanishes mid-job (aborted: nothing released), with a short lease.
  const lost = worker(q, async (job) => {
    started();
    await new Promise((resolve) => job.signal.addEventListener('abort', resolve));
    throw job.signal.reason;
  }, { lease: 300 });
  const id = await q.add('lost', {});
  await startedP;
  await lost.abort();
  assert.equal((await q.get(id)).state, 'active', 'left to its lease');
  const stalled = [];
  const sweeper = worker(q, async () => 'recovered', { stalledInterval: 100 });
  sweeper.on('stalled', (jobId, to) => stalled.push([jobId, to]));
  assert.equal(await q.wait(id, { timeout: 20_000 }), 'recovered');
  await waitFor('the stalled event', async () => stalled.length === 1);
  assert.deepEqual(stalled, [[id, 'wait']]);
  await sweeper.close();
  assert.equal(sweeper.stats().recovered, 1);
});

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function redisServer(port, dir) {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], {
    stdio: 'ignore',
  });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  return {
    child,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

test("'error' on a lost connection, and the worker keeps going once the server is back", async () => {
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'emq-wev-'));
  const url = `redis://127.0.0.1:${port}`;
  let server = redisServer(port, dir);
  try {
    const q = await waitFor('the server to answer', async () => {
      try {
        return await Queue.connect(url, unique('wev-error'));
      } catch (e) {
        if (e instanceof EmqError && e.code === 'server_unavailable') return null;
        throw e;
      }
    });
    const errors = [];
    const w = new Worker(q, async (job) => job.data.n, { blockTimeout: 200 });
    open.push(w);
    w.on('error', (e) => errors.push(e));
    assert.equal(await q.wait(await q.add('a', { n: 1 }), { timeout: 10_000 }), 1);
    await server.stop();
    await waitFor('an error event', async () => errors.length >= 1, 20_000);
    assert.ok(errors.every((e) => e instanceof EmqError), errors.map(String).join('; '));
    assert.ok(errors.some((e) => e.code === 'server_unavailable'), errors.map((e) => `${e.code}: ${e.message}`).join('; '));
    // The server comes back on the same port: the worker, still running, takes new jobs.
    server = redisServer(port, dir);
    const id = await waitFor('an add to succeed', async () => {
      try {
        return await q.add('b', { n: 2 });
      } catch (e) {
        if (e instanceof EmqError) return null;
        throw e;
      }
    }, 30_000);
    assert.equal(await q.wait(id, { timeout: 30_000 }), 2);
    await w.close();
    await q.close();
  } finally {
    await server.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('events of a kind with no listener are not kept; a listener added later sees the next ones', async () => {
  const q = await connect('wev-late');
  const w = worker(q, async (job) => job.data.n);
  assert.equal(await q.wait(await q.add('a', { n: 1 }), { timeout: 10_000 }), 1);
  // A waiter can see the completion before the worker has its own reply: let the worker's
  // 'completed' (counted just before it is reported) pass first.
  await waitFor('the worker to count the first job', async () => w.stats().completed === 1);
  await new Promise((r) => setTimeout(r, 200));
  const seen = [];
  const onCompleted = (job, result) => seen.push(result);
  w.on('completed', onCompleted);
  assert.equal(await q.wait(await q.add('b', { n: 2 }), { timeout: 10_000 }), 2);
  await waitFor('the completed event', async () => seen.length === 1);
  w.off('completed', onCompleted);
  assert.equal(await q.wait(await q.add('c', { n: 3 }), { timeout: 10_000 }), 3);
  let closed = false;
  w.on('closed', () => (closed = true));
  await w.close();
  assert.ok(closed);
  assert.deepEqual(seen, [2]);
  assert.equal(w.stats().completed, 3);
});
