'use strict';
// Retention as options through the Node binding (issue 14 item 7), on a real server, every script
// under the undeclared-key guard: a job's own removeOnComplete / removeOnFail by count and by age
// (ms), BullMQ's `true | number | { count, age }`, and bad shapes refused with invalid_option.
process.env.EMQ_GUARD = '1';

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { Queue, Worker } = require('..');
const { useServers, waitFor, unique } = require('../testlib/harness');

const h = useServers();

const connect = (prefix) => h.connect('standalone', prefix);

const worker = (q, handler, opts) => h.track(new Worker(q, handler, { blockTimeout: 200, ...opts }));

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test("a job's count keeps the newest completed and failed jobs", async () => {
  const q = await connect('ret-count');
  const ids = [];
  for (let i = 0; i < 5; i++) ids.push(await q.add('ok', i, { removeOnComplete: 2 }));
  const bad = [];
  for (let i = 0; i < 3; i++) bad.push(await q.add('bad', i, { removeOnFail: { count: 1 } }));
  // Queue-wide: keep everything, so what goes is the jobs' own retention.
  worker(q, async (job) => {
    if (job.name === 'bad') throw new Error('no');
    return 1;
  }, { removeOnComplete: false, removeOnFail: false });
  await waitFor('the jobs\' own retention', async () => {
    const c = await q.counts();
    return c.completed === 2 && c.failed === 1 && c.waiting === 0 && c.active === 0;
  }, 15_000);
  const kept = [];
  for (const id of ids) kept.push((await q.get(id)) !== null);
  assert.deepEqual(kept, [false, false, false, true, true]);
  assert.notEqual(await q.get(bad[2]), null);
});

test("a job's age (ms) removes it once it is that old", async () => {
  const q = await connect('ret-age');
  worker(q, async () => 1, { removeOnComplete: false });
  const id = await q.add('a', 1, { removeOnComplete: { age: 800 } });
  assert.equal(await q.wait(id, { timeout: 10_000 }), 1);
  await sleep(300);
  assert.notEqual(await q.get(id), null, 'kept while younger than its age');
  // The worker's periodic trim (every 5 s) applies the job's age once it has passed.
  await waitFor('the job to age out', async () => (await q.get(id)) === null, 15_000);
});

test('per-job retention shapes: accepted, stored, and refused', async () => {
  const q = await connect('ret-shapes');
  const id = await q.add('x', 1, { removeOnComplete: 3, removeOnFail: { count: 10, age: 60_000 } });
  const job = await q.get(id);
  assert.deepEqual(job.options.remove_on_complete, { count: 3 });
  assert.deepEqual(job.options.remove_on_fail, { count: 10, age_ms: 60_000 });
  for (const bad of [{}, -1, 1.5, { count: -1 }, { age: -5 }]) {
    await assert.rejects(q.add('x', 1, { removeOnComplete: bad }), (e) => e.code === 'invalid_option', JSON.stringify(bad));
  }
});
