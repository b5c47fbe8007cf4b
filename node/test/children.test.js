'use strict';
// Children added by a running job (the core's JobContext::add_child / Queue::add_child), against
// real servers from emq-harness (standalone and cluster): the job waits for them in
// waiting-children and runs again with their results; a waiting parent takes one more child; a
// parent that is not waiting refuses (InvalidState), a dedup key is refused (InvalidOption).
process.env.EMQ_GUARD = '1';

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { Queue, Worker, InvalidState, InvalidOption, InvalidJobId } = require('..');
const { useServers, waitFor, unique } = require('../testlib/harness');

const h = useServers();

for (const topology of ['standalone', 'cluster']) {
  test(`${topology}: a running job adds children and runs again with their results`, async () => {
    const url = h.servers[topology];
    const name = unique('spawn');
    const q = await Queue.connect(url, name);
    const kids = await Queue.connect(url, `${name}-kids`);
    h.track(q, kids);
    const id = await q.add('import', { rows: 3 });
    const runs = [];
    const pw = new Worker(q, async (job) => {
      const results = await job.childrenResults();
      runs.push(Object.keys(results).length);
      if (Object.keys(results).length === 0) {
        for (let n = 1; n <= job.data.rows; n++) await job.addChild(kids.name, 'row', { n }, { attempts: 2 });
        return 'spawned';
      }
      return Object.values(results).reduce((a, b) => a + b, 0);
    }, { blockTimeout: 200 });
    await waitFor('the parent waits', async () => (await q.get(id)).state === 'waiting-children');
    const waiting = await kids.list('waiting');
    assert.equal(waiting.length, 3);
    assert.ok(waiting.every((j) => j.attempts === 2), JSON.stringify(waiting));
    const cw = new Worker(kids, async (job) => job.data.n * 10, { blockTimeout: 200 });
    await waitFor('the parent done', async () => (await q.get(id)).state === 'completed');
    await cw.close();
    await pw.close();
    const got = await q.get(id);
    assert.equal(got.result, 60);
    assert.deepEqual(runs, [0, 3]);
  });
}

test('a waiting parent takes one more child; others refuse', async () => {
  const name = unique('addchild');
  const q = await Queue.connect(h.servers.standalone, name);
  h.track(q);
  const ids = await q.addFlow({ queue: name, name: 'p', data: null, children: [{ queue: name, name: 'c', data: 1 }] });
  const extra = await q.addChild(ids.id, name, 'c', 2);
  assert.equal((await q.get(extra)).state, 'waiting');
  const lone = await q.add('lone', null);
  await assert.rejects(q.addChild(lone, name, 'c', 3), InvalidState);
  await assert.rejects(q.addChild(ids.id, name, 'c', 4, { dedup: 'k' }), InvalidOption);
  await assert.rejects(q.addChild('nope', name, 'c', 5), InvalidJobId);
  assert.equal((await q.counts()).waiting, 3);
});
