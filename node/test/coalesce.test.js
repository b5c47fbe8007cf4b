'use strict';
// Coalesced adds through the Node binding (core/src/queue/coalesce.rs), against real servers
// (standalone and a 3-master cluster from emq-harness), guarded: 1,000 adds started at once on one
// queue (Promise.all) each get their own id and read back with their own name, data and options; a
// job past its group's cap among them fails alone, typed GroupFull.
process.env.EMQ_GUARD = '1';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { Queue, GroupFull } = require('..');
const { startServers, unique } = require('../testlib/harness');

let servers;
const open = [];

before(async () => {
  servers = await startServers();
});

after(async () => {
  for (const q of open) await q.close().catch(() => {});
  if (servers) await servers.stop();
});

for (const topology of ['standalone', 'cluster']) {
  test(`1,000 concurrent adds each get their own id and read back (${topology})`, async () => {
    const url = topology === 'cluster' ? servers.cluster : servers.standalone;
    const q = await Queue.connect(url, unique('coalesce'));
    open.push(q);
    const n = 1000;
    const ids = await Promise.all(
      Array.from({ length: n }, (_, i) => q.add(`job-${i}`, { i }, i % 2 ? { priority: 1 + (i % 5) } : {})),
    );
    assert.equal(new Set(ids).size, n, 'distinct ids');
    for (let i = 0; i < n; i++) {
      const job = await q.get(ids[i]);
      assert.ok(job, `job ${i} was written`);
      assert.equal(job.name, `job-${i}`);
      assert.deepEqual(job.data, { i });
      assert.equal(job.priority, i % 2 ? 1 + (i % 5) : 0);
    }
  });

  test(`a job past its group's cap among concurrent adds fails alone (${topology})`, async () => {
    const url = topology === 'cluster' ? servers.cluster : servers.standalone;
    const q = await Queue.connect(url, unique('coalesce-full'));
    open.push(q);
    await q.setGroupMaxWaiting(1, 'g');
    const out = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) => q.add('j', i, i === 5 || i === 9 ? { group: 'g' } : {})),
    );
    const failed = out.map((r, i) => [r, i]).filter(([r]) => r.status === 'rejected');
    assert.equal(failed.length, 1, 'one of the two of group g');
    // (concurrent adds have no order: either of the two may be the one past the cap)
    assert.ok([5, 9].includes(failed[0][1]), `job ${failed[0][1]} failed`);
    assert.ok(failed[0][0].reason instanceof GroupFull, String(failed[0][0].reason));
    const ok = out.filter((r) => r.status === 'fulfilled').map((r) => r.value);
    assert.equal(new Set(ok).size, 19);
  });
}
