'use strict';
// Partitioned queues from Node (the core's core/src/partitions.rs), against real servers from
// emq-harness (standalone and the 3-master cluster): `partitions` reads back and is the queue's
// (found without it, another count refused with InvalidOption), bad counts are refused, one
// worker runs every job of every partition, groups and schedulers span the partitions, a flow
// spans partitioned queues, the queue-wide limits hold over the partitions, and a queue grows
// while its worker runs (`growPartitions`).
process.env.EMQ_GUARD = '1';

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { Queue, Worker, InvalidOption } = require('..');
const { useServers, waitFor, unique } = require('../testlib/harness');

const h = useServers();

test('the partition count reads back and is the queue\'s', async () => {
  const name = unique('part');
  const q = await Queue.connect(h.servers.standalone, name, { partitions: 6 });
  h.track(q);
  assert.equal(q.partitions, 6);
  const again = await Queue.connect(h.servers.standalone, name);
  h.track(again);
  assert.equal(again.partitions, 6);
  await assert.rejects(Queue.connect(h.servers.standalone, name, { partitions: 4 }),
    (e) => e instanceof InvalidOption && /has 6 partitions/.test(e.message));
  const plain = await Queue.connect(h.servers.standalone, `${name}-plain`);
  h.track(plain);
  assert.equal(plain.partitions, 1);
  for (const bad of [0, -1, 257, 2.5, Number.NaN]) {
    await assert.rejects(Queue.connect(h.servers.standalone, `${name}-bad`, { partitions: bad }),
      (e) => e instanceof InvalidOption && /partitions/.test(e.message), String(bad));
  }
  await assert.rejects(Queue.connect(h.servers.standalone, `${name}-bad`, { partitions: '3' }), InvalidOption);
});

for (const topology of ['standalone', 'cluster']) {
  test(`one worker runs every job of every partition (${topology})`, async () => {
    const q = await Queue.connect(h.servers[topology], unique('part-work'), { partitions: 4 });
    h.track(q);
    const ids = await q.addBulk(Array.from({ length: 200 }, (_, i) => ({ name: 'x', data: { i } })));
    ids.push(await q.add('x', { i: 200 }));
    assert.equal((await q.counts()).waiting, 201);
    assert.deepEqual((await q.get(ids[57])).data, { i: 57 });
    const done = [];
    const w = new Worker(q, async (job) => { done.push(job.data.i); }, { concurrency: 4 });
    await waitFor('all 201 done', async () => done.length === 201);
    assert.equal(w.queues.length, 4, 'one member per partition');
    await w.close();
    assert.deepEqual(done.sort((a, b) => a - b), Array.from({ length: 201 }, (_, i) => i));
    assert.equal((await q.counts()).completed, 201);
  });
}

for (const topology of ['standalone', 'cluster']) {
  test(`a partitioned queue grows while a worker runs (${topology})`, async () => {
    const q = await Queue.connect(h.servers[topology], unique('part-grow'), { partitions: 2 });
    h.track(q);
    const done = [];
    const w = new Worker(q, async (job) => { done.push(job.data.i); }, { concurrency: 4 });
    await q.addBulk(Array.from({ length: 50 }, (_, i) => ({ name: 'x', data: { i } })));
    assert.equal(await q.growPartitions(3), 3);
    assert.equal(q.partitions, 3);
    await q.addBulk(Array.from({ length: 150 }, (_, i) => ({ name: 'x', data: { i: i + 50 } })));
    // The worker restarts itself over all three partitions and runs every job once.
    await waitFor('the worker serves 3 partitions', async () => w.queues.length === 3);
    await waitFor('all 200 done', async () => (await q.counts()).completed === 200);
    await w.close();
    assert.deepEqual(done.sort((a, b) => a - b), Array.from({ length: 200 }, (_, i) => i));
    for (const bad of [3, 1, 257, 2.5, Number.NaN]) {
      await assert.rejects(q.growPartitions(bad), (e) => e instanceof InvalidOption, String(bad));
    }
    await assert.rejects(q.growPartitions('4'), InvalidOption);
    const plain = await Queue.connect(h.servers[topology], unique('part-grow-plain'));
    h.track(plain);
    await assert.rejects(plain.growPartitions(2), (e) => e instanceof InvalidOption && /not partitioned/.test(e.message));
  });
}

for (const topology of ['standalone', 'cluster']) {
  test(`groups and schedulers span the partitions (${topology})`, async () => {
    const q = await Queue.connect(h.servers[topology], unique('part-gs'), { partitions: 3 });
    h.track(q);
    const names = Array.from({ length: 12 }, (_, i) => `t${String(i).padStart(2, '0')}`);
    for (const g of names) await q.add('g', g, { group: g });
    assert.deepEqual((await q.groups(0, 100)).map((g) => g.name), names, 'every group once, by name');
    assert.deepEqual((await q.groups(4, 3)).map((g) => g.name), names.slice(4, 7));
    await q.drain();
    assert.equal(await q.upsertScheduler('tick', { every: 40, limit: 3, name: 'tick', opts: { group: 't01' } }), true);
    assert.equal(await q.upsertScheduler('later', { every: 60_000, firstAfter: 60_000, name: 'later' }), true);
    assert.deepEqual((await q.schedulers()).map((s) => s.id), ['later', 'tick']);
    const ran = [];
    const w = new Worker(q, async (job) => { ran.push(job.id); }, { concurrency: 2 });
    await waitFor('three runs', async () => (await q.counts()).completed === 3);
    await w.close();
    const groups = [];
    for (const id of ran) groups.push((await q.get(id)).options.group);
    assert.deepEqual(groups, ['t01', 't01', 't01'], 'the runs carry the scheduler\'s group');
    assert.deepEqual((await q.schedulers()).map((s) => s.id), ['later'], 'removed at its limit');
    assert.equal(await q.removeScheduler('later'), true);
    assert.equal(await q.removeScheduler('later'), false);
  });
}

for (const topology of ['standalone', 'cluster']) {
  test(`a flow spans partitioned queues (${topology})`, async () => {
    const parents = h.track(await Queue.connect(h.servers[topology], unique('part-flow'), { partitions: 3 }));
    const kids = h.track(await Queue.connect(h.servers[topology], unique('part-flow-kids'), { partitions: 3 }));
    const ids = await parents.addFlow({
      name: 'sum',
      data: null,
      children: [1, 2, 3, 4].map((n) => ({ queue: kids.name, name: 'c', data: n })),
    });
    assert.equal(ids.queue, parents.name);
    assert.deepEqual(ids.children.map((c) => c.queue), Array(4).fill(kids.name));
    assert.equal((await parents.get(ids.id)).state, 'waiting-children');
    const extra = await parents.addChild(ids.id, kids.name, 'c', 5);
    let saw = null;
    const wp = new Worker(parents, async (job) => {
      saw = await job.childrenResults();
      return Object.values(saw).reduce((a, b) => a + b, 0);
    });
    const wk = new Worker(kids, async (job) => job.data * 10);
    try {
      await waitFor('the parent to complete', async () => (await parents.get(ids.id)).state === 'completed');
    } finally {
      await wp.close();
      await wk.close();
    }
    assert.equal((await parents.get(ids.id)).result, 150);
    // The children's results are named by the logical queue.
    const want = [...ids.children.map((c) => `${kids.name}:${c.id}`), `${kids.name}:${extra}`].sort();
    assert.deepEqual(Object.keys(saw).sort(), want);
    assert.deepEqual(await parents.childrenResults(ids.id), saw);
  });
}

test('the queue-wide limits hold over the partitions', async () => {
  const q = h.track(await Queue.connect(h.servers.standalone, unique('part-limits'), { partitions: 3 }));
  await assert.rejects(q.setGlobalConcurrency(0), (e) => e instanceof InvalidOption);
  // The global concurrency holds over all partitions, below their count too; so does the rate
  // limit.
  await q.setRateLimit({ max: 2, window: 500 });
  await q.setRateLimit(null);
  await q.setGlobalConcurrency(2);
  await q.addBulk(Array.from({ length: 24 }, (_, i) => ({ name: 'c', data: i })));
  let running = 0;
  let most = 0;
  const w = new Worker(q, async () => {
    running += 1;
    most = Math.max(most, running);
    await new Promise((r) => setTimeout(r, 30));
    running -= 1;
  }, { concurrency: 10 });
  await waitFor('24 done', async () => (await q.counts()).completed === 24);
  await w.close();
  assert.equal(most, 2, `${most} ran at once (limit 2)`);
  await q.setGlobalConcurrency(null);
});
