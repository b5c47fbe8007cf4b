'use strict';
// Fair groups through the Node binding, against real servers (standalone and a 3-master cluster
// from emq-harness), every script run under the core's undeclared-key guard: each setting read back
// through queue.groups(), GroupFull (typed, nothing written) past a group's cap on waiting jobs, a
// paused group's jobs waiting while another group's run, bad settings refused as invalid_option.
process.env.EMQ_GUARD = '1';

const { test } = require('node:test');
const assert = require('node:assert/strict');
const emq = require('..');
const { Queue, Worker, EmqError, GroupFull, InvalidOption } = emq;
const { useServers, waitFor, unique } = require('../testlib/harness');

const h = useServers();

const connect = (topology, prefix) => h.connect(topology, prefix);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const FAST = { blockTimeout: 200 };

function info(name, fields = {}) {
  return { name, waiting: 0, running: 0, weight: 1, concurrency: null, maxWaiting: null, paused: false, ...fields };
}

const many = (group, n, name = group) => Array.from({ length: n }, (_, i) => ({ name, data: i, opts: { group } }));

for (const topology of ['standalone', 'cluster']) {
  test(`every group setting reads back through groups() (${topology})`, async () => {
    const q = await connect(topology, 'groups-view');
    assert.deepEqual(await q.groups(), []);
    await q.addBulk(many('b', 2));
    await q.add('a', 0, { group: 'a' });
    await q.setGroupWeight('a', 7);
    await q.setGroupConcurrency(4, 'a');
    await q.setGroupMaxWaiting(9, 'a');
    await q.setGroupConcurrency(2); // the default of every group
    await q.pauseGroup('b');
    const groups = await q.groups();
    assert.deepEqual(groups, [
      info('a', { waiting: 1, weight: 7, concurrency: 4, maxWaiting: 9 }),
      info('b', { waiting: 2, concurrency: 2, paused: true }),
    ]);
    assert.deepEqual(await q.groups(1), groups.slice(1));
    assert.deepEqual(await q.groups(0, 1), groups.slice(0, 1));
    // Each setting lifted or undone reads back so.
    await q.resumeGroup('b');
    await q.setGroupConcurrency(null);
    await q.setGroupConcurrency(null, 'a');
    await q.setGroupMaxWaiting(null, 'a');
    await q.setGroupWeight('a', 1);
    assert.deepEqual(await q.groups(0, 100), [info('a', { waiting: 1 }), info('b', { waiting: 2 })]);
    // The default cap on waiting jobs shows on every group without its own.
    await q.setGroupMaxWaiting(50, null);
    await q.setGroupMaxWaiting(5, 'b');
    assert.deepEqual((await q.groups()).map((g) => g.maxWaiting), [50, 5]);
  });

  test(`an add past a group's cap rejects with GroupFull and writes nothing (${topology})`, async () => {
    const q = await connect(topology, 'groups-full');
    await q.setGroupMaxWaiting(2, 'g');
    await q.addBulk(many('g', 2));
    await assert.rejects(q.add('g', 2, { group: 'g' }), (e) => {
      assert.ok(e instanceof GroupFull, `a GroupFull: ${e}`);
      assert.ok(e instanceof EmqError);
      assert.equal(e.code, 'group_full');
      assert.equal(e.name, 'GroupFull');
      return true;
    });
    // A batch that would pass the cap is refused whole, its other group's job too.
    await assert.rejects(q.addBulk([...many('other', 1), ...many('g', 1)]), (e) => e instanceof GroupFull);
    assert.equal((await q.counts()).waiting, 2);
    assert.deepEqual((await q.groups()).map((g) => [g.name, g.waiting]), [['g', 2]]);
    // Another group and ungrouped jobs are not held by g's cap; lifted, g takes adds again.
    await q.add('o', 1, { group: 'other' });
    await q.add('u', 1);
    await q.setGroupMaxWaiting(null, 'g');
    await q.add('g', 4, { group: 'g' });
    assert.equal((await q.counts()).waiting, 5);
  });

  test(`a paused group's jobs wait while another group's run (${topology})`, async () => {
    const q = await connect(topology, 'groups-pause');
    await q.pauseGroup('held');
    await q.addBulk(many('held', 3));
    await q.addBulk(many('free', 3));
    const ran = [];
    const w = new Worker(q, async (job) => {
      ran.push(job.name);
      return null;
    }, { concurrency: 1, ...FAST });
    try {
      await waitFor('the free group to complete', async () => (await q.counts()).completed === 3);
      await sleep(300);
      assert.deepEqual(ran, ['free', 'free', 'free']);
      const held = (await q.groups()).find((g) => g.name === 'held');
      assert.deepEqual(held, info('held', { waiting: 3, paused: true }));
      assert.equal((await q.counts()).waiting, 3);
      await q.resumeGroup('held');
      await waitFor('the held group to complete once resumed', async () => (await q.counts()).completed === 6);
    } finally {
      await w.close();
    }
    assert.deepEqual(ran.slice().sort(), ['free', 'free', 'free', 'held', 'held', 'held']);
  });
}

test('bad group settings reject with InvalidOption and change nothing', async () => {
  const q = await connect('standalone', 'groups-bad');
  await q.add('a', 0, { group: 'a' });
  await q.setGroupWeight('a', 3);
  const before = await q.groups();
  const calls = [
    () => q.setGroupWeight('a', 0),
    () => q.setGroupWeight('a', 1001),
    () => q.setGroupWeight('a', -1),
    () => q.setGroupWeight('a', 1.5),
    () => q.setGroupWeight('a', NaN),
    () => q.setGroupWeight('a', '2'),
    () => q.setGroupWeight(7, 2),
    () => q.setGroupConcurrency(0),
    () => q.setGroupConcurrency(0, 'a'),
    () => q.setGroupMaxWaiting(0, 'a'),
    () => q.setGroupMaxWaiting(-3),
    () => q.pauseGroup(''),
    () => q.pauseGroup('a\0b'),
    () => q.resumeGroup(''),
    () => q.groups(-1),
  ];
  for (const call of calls) {
    await assert.rejects(call(), (e) => {
      assert.ok(e instanceof InvalidOption, `${call}: an InvalidOption: ${e}`);
      assert.equal(e.code, 'invalid_option');
      return true;
    });
  }
  assert.deepEqual(await q.groups(), before);
});
