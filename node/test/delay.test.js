'use strict';
// A handler puts its job back to delayed (issue 14, item 6): `throw new DelayedError(ms)`.
process.env.EMQ_GUARD = '1';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const emq = require('..');
const { Queue, Worker, DelayedError } = emq;
const { startServers, waitFor, unique } = require('../testlib/harness');

let servers;

before(async () => {
  servers = await startServers();
});

after(async () => {
  if (servers) await servers.stop();
});

test('a handler delays its job on the server clock, uncounted unless asked', async () => {
  const q = await Queue.connect(servers.standalone, unique('snooze'));
  const snooze = await q.add('snooze', {});
  const counted = await q.add('counted', {});
  const bad = await q.add('bad', {}, { attempts: 1 });
  const runs = [];
  const worker = new Worker(
    q,
    async (job) => {
      runs.push({ id: job.id, atts: job.attemptsMade, at: Date.now() });
      const first = runs.filter((r) => r.id === job.id).length === 1;
      if (job.name === 'snooze' && first) throw new DelayedError(400);
      if (job.name === 'counted' && first) throw new DelayedError(100, { countAttempt: true });
      if (job.name === 'bad') throw new DelayedError(-1);
      return 'done';
    },
    { concurrency: 2, blockTimeout: 300 },
  );
  try {
    await waitFor('outcomes', async () => {
      const c = await q.counts();
      return c.completed === 2 && c.failed === 1;
    });
  } finally {
    await worker.close();
  }
  const s = runs.filter((r) => r.id === snooze);
  const c = runs.filter((r) => r.id === counted);
  assert.deepEqual(
    s.map((r) => r.atts),
    [0, 0],
    'the delay is not an attempt',
  );
  assert.ok(s[1].at - s[0].at >= 350, `ran again after ${s[1].at - s[0].at} ms`);
  assert.deepEqual(
    c.map((r) => r.atts),
    [0, 1],
    'counted when asked',
  );
  assert.equal((await q.get(snooze)).attemptsMade, 1);
  assert.equal((await q.get(counted)).attemptsMade, 2);
  assert.equal((await q.get(bad)).failure.code, 'invalid_option');
  assert.ok(new DelayedError(5) instanceof Error);
  await q.close();
});
