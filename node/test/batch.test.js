'use strict';
// Batches from Node (the core's core/src/batch.rs), against real servers from emq-harness
// (standalone and cluster): jobs on another queue, a running job adding to its batch, the
// callbacks added once after the last outcome with the batch's counts, the failed jobs paged by
// `status`, `cancel`, and bad input refused with its error class.
process.env.EMQ_GUARD = '1';

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { Queue, Worker, Batch, InvalidState, InvalidQueueName, InvalidOption, InvalidJobId, JobNotFound } = require('..');
const { useServers, waitFor, unique } = require('../testlib/harness');

const h = useServers();

for (const topology of ['standalone', 'cluster']) {
  test(`${topology}: callbacks run once after the jobs and the jobs they added`, async () => {
    const url = h.servers[topology];
    const name = unique('batch');
    const q = await Queue.connect(url, name);
    const jobs = await Queue.connect(url, `${name}-jobs`);
    const cb = await Queue.connect(url, `${name}-cb`);
    h.track(q, jobs, cb);
    const batch = await q.batch({
      onComplete: { queue: cb.name, name: 'complete', data: { k: 1 }, opts: { attempts: 2 } },
      onSuccess: { queue: cb.name, name: 'success' },
      description: 'import',
    });
    assert.ok(batch instanceof Batch);
    assert.equal(batch.queue, name);
    await batch.add(jobs.name, 'spawn', { children: 2 });
    const ids = await batch.addBulk(jobs.name, [{ name: 'work', data: { fail: true } }, { name: 'work', data: {} }]);
    await batch.seal();
    const w = new Worker(jobs, async (job) => {
      if (job.name === 'spawn') {
        assert.equal(job.batch.id, batch.id);
        for (let i = 0; i < job.data.children; i++) await job.batch.add(jobs.name, 'child', { i });
      }
      if (job.data.fail) throw new Error('broke');
      return 'ok';
    }, { concurrency: 4, blockTimeout: 200 });
    await waitFor('the batch done', async () => (await batch.status()).done);
    await w.close();
    const st = await batch.status();
    assert.deepEqual([st.total, st.completed, st.failed, st.pending], [5, 4, 1, 0], JSON.stringify(st));
    assert.equal(st.description, 'import');
    assert.deepEqual(st.failedJobs, [{ queue: jobs.name, id: ids[0] }]);
    const waiting = await cb.list('waiting');
    assert.deepEqual(waiting.map((j) => j.name), ['complete']);
    const done = waiting[0].options.batch_done;
    assert.deepEqual([done.kind, done.id, done.total, done.failed], ['complete', batch.id, 5, 1]);
    assert.equal(waiting[0].attempts, 2);
    await assert.rejects(batch.add(jobs.name, 'late', 1), InvalidState);
  });
}

test('an outside id is counted out, and a removed job counts failed', async () => {
  const name = unique('batch-out');
  const q = await Queue.connect(h.servers.standalone, name);
  const jobs = await Queue.connect(h.servers.standalone, `${name}-jobs`);
  h.track(q, jobs);
  const loose = await jobs.add('work', { i: 'loose' });
  const batch = await q.batch();
  // An id of a job that is no batch's: returned, the job left as it was, not counted in.
  assert.equal(await batch.add(jobs.name, 'work', { i: 'again' }, { id: loose }), loose);
  assert.deepEqual((await jobs.get(loose)).data, { i: 'loose' });
  const [kept, gone] = await batch.addBulk(jobs.name, [{ name: 'work', data: 1 }, { name: 'work', data: 2 }]);
  let st = await batch.status();
  assert.deepEqual([st.total, st.pending], [2, 2], JSON.stringify(st));
  // A job of the batch removed before its outcome counts as failed at once.
  assert.equal(await jobs.remove(gone), true);
  st = await batch.status();
  assert.deepEqual([st.pending, st.failed], [1, 1], JSON.stringify(st));
  assert.deepEqual(st.failedJobs, [{ queue: jobs.name, id: gone }]);
  await batch.seal();
  const w = new Worker(jobs, async () => 'ok', { concurrency: 2, blockTimeout: 200 });
  await waitFor('the batch done', async () => (await batch.status()).done);
  await w.close();
  st = await batch.status();
  assert.deepEqual([st.total, st.completed, st.failed], [2, 1, 1], JSON.stringify(st));
  assert.equal((await jobs.get(kept)).state, 'completed');
});

test('status, cancel and bad input', async () => {
  const name = unique('batch-bad');
  const q = await Queue.connect(h.servers.standalone, name);
  h.track(q);
  const batch = await q.batch();
  await batch.addBulk(`${name}-j`, [0, 1, 2].map((i) => ({ name: 'a', data: i })));
  await batch.seal();
  assert.equal(await batch.cancel(), 3);
  assert.equal(await batch.cancel(), 0);
  const st = await batch.status(0, 2);
  assert.ok(st.cancelled && !st.done && st.failed === 3 && st.failedJobs.length === 2, JSON.stringify(st));
  await assert.rejects(batch.add(`${name}-j`, 'more', 1), InvalidState);
  await assert.rejects(q.batch({ onComplete: { queue: 'a b', name: 'x' } }), InvalidQueueName);
  await assert.rejects(q.batch({ description: 'x'.repeat(1025) }), InvalidOption);
  await assert.rejects(q.batch({ onSuccess: { queue: name, name: 'x', opts: { attempts: 0 } } }), InvalidOption);
  await assert.rejects(batch.add(name, 'd', 1, { dedup: 'k' }), InvalidOption);
  assert.throws(() => q.openBatch('nope'), InvalidJobId);
  await assert.rejects(q.openBatch(q.mintId()).status(), JobNotFound);
});

for (const topology of ['standalone', 'cluster']) {
  test(`${topology}: a batch inside a batch counts as one job of its parent`, async () => {
    const url = h.servers[topology];
    const name = unique('batch-nest');
    const q = await Queue.connect(url, name);
    const jobs = await Queue.connect(url, `${name}-jobs`);
    const cb = await Queue.connect(url, `${name}-cb`);
    h.track(q, jobs, cb);
    const parent = await q.batch({ onComplete: { queue: cb.name, name: 'parent-done' } });
    await parent.add(jobs.name, 'direct', 1);
    const child = await parent.batch({ onSuccess: { queue: cb.name, name: 'child-ok' }, description: 'pages' });
    assert.ok(child instanceof Batch);
    await child.addBulk(jobs.name, [0, 1, 2].map((i) => ({ name: 'page', data: i })));
    await child.seal();
    await parent.seal();
    assert.equal((await parent.status()).total, 2);
    const cst = await child.status();
    assert.deepEqual(cst.parent, { queue: name, id: parent.id });
    assert.equal(cst.description, 'pages');
    assert.equal((await parent.status()).parent, null);
    const w = new Worker(jobs, async () => 'ok', { concurrency: 2, blockTimeout: 200 });
    await waitFor('the parent batch done', async () => (await parent.status()).done);
    await w.close();
    const st = await parent.status();
    assert.deepEqual([st.total, st.completed, st.failed, st.pending], [2, 2, 0, 0], JSON.stringify(st));
    assert.ok((await child.status()).done);
    const names = (await cb.list('waiting')).map((j) => j.name).sort();
    assert.deepEqual(names, ['child-ok', 'parent-done']);
  });
}

test('a child batch cancelled alone counts failed in its parent; bad options are refused', async () => {
  const name = unique('batch-nest-cancel');
  const q = await Queue.connect(h.servers.standalone, name);
  h.track(q);
  const parent = await q.batch();
  const child = await parent.batch({ description: 'inner' });
  await child.add(name, 'one', 1);
  await child.seal();
  await parent.seal();
  assert.equal(await child.cancel(), 1);
  const st = await parent.status();
  assert.deepEqual([st.total, st.failed, st.done], [1, 1, true], JSON.stringify(st));
  await assert.rejects(parent.batch({ description: 'x'.repeat(1025) }), InvalidOption);
  await assert.rejects(parent.batch({ bogus: 1 }), InvalidOption);
});
