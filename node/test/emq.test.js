'use strict';
// emq's Node binding against real servers (standalone and a 3-master cluster from emq-harness),
// every script run under the core's undeclared-key guard.
process.env.EMQ_GUARD = '1';

const { test } = require('node:test');
const assert = require('node:assert/strict');
const path = require('path');
const { spawn } = require('child_process');
const emq = require('..');
const { Queue, Worker, EmqError, UnrecoverableError } = emq;
const { useServers, waitFor, unique } = require('../testlib/harness');

const h = useServers();

const connect = (topology, prefix) => h.connect(topology, prefix);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const FAST = { blockTimeout: 300 };

function isEmq(code, cls) {
  return (e) => {
    assert.ok(e instanceof EmqError, `expected an EmqError, got ${e && e.stack}`);
    assert.equal(e.code, code, e.message);
    if (cls) assert.ok(e instanceof cls, `expected ${cls.name}, got ${e.name}`);
    return true;
  };
}

for (const topology of ['standalone', 'cluster']) {
  test(`add, process with an async handler, read the result (${topology})`, async () => {
    const q = await connect(topology, 'basic');
    const first = await q.add('double', { n: 21 }, { attempts: 2, backoff: { type: 'fixed', delay: 10 } });
    assert.match(first, /^j[0-9a-z]{15}$/);
    const more = await q.addBulk([
      { name: 'double', data: { n: 1 } },
      { name: 'double', data: { n: 2 }, opts: { priority: 1 } },
    ]);
    assert.equal(more.length, 2);
    const c0 = await q.counts();
    assert.equal(c0.waiting + c0.prioritized, 3);
    assert.equal((await q.get(first)).state, 'waiting');

    const seen = [];
    const worker = new Worker(
      q,
      async (job) => {
        seen.push(job);
        await job.updateProgress({ pct: 50 });
        await sleep(5);
        return { doubled: job.data.n * 2 };
      },
      { concurrency: 2, ...FAST },
    );
    try {
      await waitFor('3 completions', async () => (await q.counts()).completed === 3);
    } finally {
      assert.equal(await worker.close(), 0);
    }
    const job = await q.get(first);
    assert.equal(job.id, first);
    assert.equal(job.state, 'completed');
    assert.equal(job.name, 'double');
    assert.deepEqual(job.data, { n: 21 });
    assert.deepEqual(job.result, { doubled: 42 });
    assert.deepEqual(job.progress, { pct: 50 });
    assert.equal(job.attemptsMade, 1);
    assert.equal(job.attempts, 2);
    assert.ok(job.finishedMs >= job.processedMs);
    const handed = seen.find((j) => j.id === first);
    assert.equal(handed.name, 'double');
    assert.deepEqual(handed.data, { n: 21 });
    assert.equal(handed.attemptsMade, 0);
    assert.equal(worker.stats().completed, 3, 'stats keep their figures once closed');
    assert.equal(worker.stats().running, 0);
  });
}

test('a handler that throws synchronously fails the job with its message and stack', async () => {
  const q = await connect('standalone', 'sync-throw');
  const id = await q.add('boom', {});
  const worker = new Worker(
    q,
    () => {
      throw new Error('sync boom');
    },
    FAST,
  );
  try {
    await waitFor('a failure', async () => (await q.counts()).failed === 1);
  } finally {
    await worker.close();
  }
  const job = await q.get(id);
  assert.equal(job.state, 'failed');
  assert.equal(job.attemptsMade, 1);
  assert.equal(job.failure.message, 'sync boom');
  assert.equal(job.failure.code, 'handler_failed');
  assert.match(job.failure.stack, /sync boom/);
  assert.match(job.failure.stack, /emq\.test\.js/);
});

test('rejections are retried while attempts remain, then fail; other outcomes', async () => {
  const q = await connect('cluster', 'reject');
  const flaky = await q.add('rejects', {}, { attempts: 2 });
  const plain = await q.add('rejects-with-string', {});
  const doomed = await q.add('unrecoverable', {}, { attempts: 3 });
  const bigint = await q.add('bigint-result', {});
  const nothing = await q.add('returns-undefined', {});
  let runs = 0;
  const worker = new Worker(
    q,
    async (job) => {
      switch (job.name) {
        case 'rejects':
          runs += 1;
          throw new TypeError(`always rejects (attempt ${job.attemptsMade + 1})`);
        case 'rejects-with-string':
          return Promise.reject('a plain string');
        case 'unrecoverable':
          throw new UnrecoverableError('card declined');
        case 'bigint-result':
          return { n: 1n };
        default:
          return undefined;
      }
    },
    { concurrency: 3, ...FAST },
  );
  try {
    await waitFor('outcomes', async () => {
      const c = await q.counts();
      return c.failed === 4 && c.completed === 1;
    });
  } finally {
    await worker.close();
  }
  let job = await q.get(flaky);
  assert.equal(runs, 2);
  assert.equal(job.state, 'failed');
  assert.equal(job.attemptsMade, 2);
  assert.equal(job.failure.message, 'always rejects (attempt 2)');
  assert.match(job.failure.stack, /TypeError: always rejects/);
  job = await q.get(plain);
  assert.equal(job.failure.message, 'a plain string');
  job = await q.get(doomed);
  assert.equal(job.attemptsMade, 1, 'UnrecoverableError skips the remaining attempts');
  assert.equal(job.failure.message, 'card declined');
  job = await q.get(bigint);
  assert.equal(job.state, 'failed');
  assert.match(job.failure.message, /BigInt/);
  job = await q.get(nothing);
  assert.equal(job.state, 'completed');
  assert.equal(job.result, null);
});

test('bad input gives EmqError with the right code, before anything is sent', async () => {
  const q = await connect('standalone', 'bad');
  const cyclic = {};
  cyclic.self = cyclic;
  await assert.rejects(q.add('x', { big: 1n }), isEmq('invalid_payload', emq.InvalidPayload));
  await assert.rejects(q.add('x', cyclic), isEmq('invalid_payload'));
  await assert.rejects(q.add('x', () => 1), isEmq('invalid_payload'));
  await assert.rejects(q.addBulk([{ name: 'x', data: 1n }]), isEmq('invalid_payload'));
  assert.equal(Object.values(await q.counts()).reduce((a, b) => a + b, 0), 0, 'nothing was added');

  await assert.rejects(Queue.connect(h.servers.standalone, 'a:b'), isEmq('invalid_queue_name', emq.InvalidQueueName));
  await assert.rejects(Queue.connect(h.servers.standalone, ''), isEmq('invalid_queue_name'));
  await assert.rejects(q.get('j123'), isEmq('invalid_job_id', emq.InvalidJobId));
  await assert.rejects(q.remove('j0000000000000000'), isEmq('invalid_job_id'));
  await assert.rejects(q.add('x', {}, { attempts: 0 }), isEmq('invalid_option', emq.InvalidOption));
  await assert.rejects(q.add('x', {}, { delay: -5 }), isEmq('invalid_option'));
  await assert.rejects(q.add('x', {}, { priority: 1.5 }), isEmq('invalid_option'));
  await assert.rejects(q.add('x', {}, { delai: 5 }), isEmq('invalid_option'));
  await assert.rejects(q.add('x', {}, { backoff: { type: 'linear', delay: 1 } }), isEmq('invalid_option'));
  await assert.rejects(q.add(42, {}), isEmq('invalid_option'));
  assert.throws(() => new Worker(q, async () => 1, { lease: 10 }), isEmq('invalid_option'));
  // The core's bounds (WorkerOptions::validate): none of these may turn a worker into a busy loop.
  for (const bad of [{ concurrency: 0 }, { concurrency: 1e9 }, { stalledInterval: 0 }, { blockTimeout: 0 }]) {
    assert.throws(() => new Worker(q, async () => 1, bad), isEmq('invalid_option'), JSON.stringify(bad));
  }
  assert.throws(() => new Worker(q, 'not a function'), isEmq('invalid_option'));
  await assert.rejects(Queue.connect('redis://127.0.0.1:1', 'q'), isEmq('server_unavailable', emq.ServerUnavailable));
  assert.equal(await q.get(await q.add('ok', {})).then((j) => j.state), 'waiting');
});

test('pause, resume, delay, dedup', async () => {
  const q = await connect('cluster', 'ops');
  await q.pause();
  assert.equal(await q.isPaused(), true);
  const id = await q.add('p', { a: 1 });
  assert.equal((await q.get(id)).state, 'paused');
  await q.resume();
  assert.equal(await q.isPaused(), false);
  assert.equal((await q.get(id)).state, 'waiting');
  const later = await q.add('d', {}, { delay: 60_000 });
  assert.equal((await q.get(later)).state, 'delayed');
  const a = await q.add('u', {}, { dedup: 'key-1' });
  const b = await q.add('u', {}, { dedup: 'key-1' });
  assert.equal(a, b);
  assert.equal(await q.get('j' + '0'.repeat(15)).catch((e) => e.code), 'invalid_job_id');
  assert.equal(await q.remove(later), true);
  assert.equal(await q.get(later), null);
});

test('the native worker copes alone with a dispatcher that throws, and settles batches', async () => {
  // Bypasses the JS layer (node/src): the addon hands jobs over as a JSON array per wake-up; a dispatcher that
  // throws fails the jobs of its batch it did not settle (never a crash), and `complete` / `fail`
  // settle the others.
  const native = require(path.join(__dirname, '..', 'emq.linux-x64-gnu.node'));
  const nq = await native.connect([h.servers.standalone], unique('raw'));
  // The raw add: `addStart` under a sequence number, its outcome (the id) back on the handle's line.
  const outcomes = new Map();
  nq.listenAdds((text) => {
    for (const [seq, outcome] of JSON.parse(text)) outcomes.get(seq)(outcome);
  });
  const rawAdd = (seq, name) =>
    new Promise((resolve) => {
      outcomes.set(seq, resolve);
      nq.addStart(seq, name, '{"n":1}', null);
    });
  const ids = {};
  let seq = 0;
  for (const name of ['throws', 'ok', 'fails']) ids[name] = await rawAdd(++seq, name);
  for (const id of Object.values(ids)) assert.match(id, /^j[0-9a-z]{15}$/);
  let w;
  w = nq.worker(
    (text) => {
      const jobs = JSON.parse(text);
      for (const j of jobs) {
        assert.deepEqual(j.data, { n: 1 });
        if (j.name === 'ok') w.complete([j.s], [JSON.stringify({ ok: j.id })]);
        if (j.name === 'fails') w.fail(j.s, 'raw failure', 'my_code', null, true);
      }
      if (jobs.some((j) => j.name === 'throws')) throw new Error('raw dispatcher throw');
    },
    () => {}, // the worker's events (none listened for)
    { concurrency: 3, blockTimeout: 300 },
  );
  try {
    await waitFor('three outcomes', async () => {
      const c = await nq.counts();
      return c.failed === 2 && c.completed === 1;
    });
  } finally {
    await w.close();
  }
  const thrown = JSON.parse(await nq.get(ids.throws));
  assert.equal(thrown.state, 'failed');
  assert.match(thrown.failure.message, /raw dispatcher throw/);
  const ok = JSON.parse(await nq.get(ids.ok));
  assert.deepEqual(ok.result, { ok: ids.ok });
  const failed = JSON.parse(await nq.get(ids.fails));
  assert.equal(failed.failure.message, 'raw failure');
  assert.equal(failed.failure.code, 'my_code');
  await nq.close();
});

test('the native error codes are the ones the JS layer knows', () => {
  const native = require(path.join(__dirname, '..', 'emq.linux-x64-gnu.node'));
  assert.deepEqual(native.errorCodes(), emq.errorCodes);
});

test('after close() the process exits by itself', async () => {
  const child = spawn(process.execPath, [path.join(__dirname, '..', 'testlib', 'exit-child.js')], {
    env: { ...process.env, EMQ_TEST_URL: h.servers.standalone },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const code = await new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve('did not exit within 30 s');
    }, 30_000);
    child.on('exit', (c) => {
      clearTimeout(timer);
      resolve(c);
    });
  });
  assert.equal(code, 0, out);
  assert.match(out, /result 42/);
});
