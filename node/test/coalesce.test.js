'use strict';
// Coalesced adds through the Node binding (core/src/queue/coalesce.rs), against real servers
// (standalone and a 3-master cluster from emq-harness), guarded: 1,000 adds started at once on one
// queue (Promise.all) each get their own id and read back with their own name, data and options; a
// job past its group's cap among them fails alone, typed GroupFull; the adds of one turn of the
// event loop cross into the addon in one call, which the core carries in a handful of script calls.
process.env.EMQ_GUARD = '1';

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { Queue, GroupFull } = require('..');
const { execFileSync } = require('child_process');
const { useServers, unique } = require('../testlib/harness');

/** The server's EVALSHA + EVAL calls so far (INFO commandstats). */
function scriptCalls(url) {
  const info = execFileSync('redis-cli', ['-u', url, 'INFO', 'commandstats'], { timeout: 10000 }).toString();
  let calls = 0;
  for (const m of info.matchAll(/^cmdstat_(evalsha|eval):calls=(\d+)/gm)) calls += Number(m[2]);
  return calls;
}

const h = useServers();

for (const topology of ['standalone', 'cluster']) {
  test(`1,000 concurrent adds each get their own id and read back (${topology})`, async () => {
    const url = h.url(topology);
    const q = await Queue.connect(url, unique('coalesce'));
    h.track(q);
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
    const url = h.url(topology);
    const q = await Queue.connect(url, unique('coalesce-full'));
    h.track(q);
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

test('the adds of one turn cross into the addon in two calls, and the core carries them in a handful of calls', async () => {
  const q = await Queue.connect(h.servers.standalone, unique('coalesce-turn'));
  h.track(q);
  await q.add('warm', 0); // the scripts loaded, the connection up
  // Count the addon's calls: the native handle is the queue's one symbol-keyed property.
  const native = q[Object.getOwnPropertySymbols(q)[0]];
  const crossings = { add: 0, addMany: [] };
  const { addStart, addMany, directAdd } = native;
  native.addStart = (...a) => { crossings.add += 1; return addStart.apply(native, a); };
  // (a lone add may go direct, on the event loop's own socket: node/src/direct.ts)
  native.directAdd = (...a) => {
    const call = directAdd.apply(native, a);
    if (call !== null) crossings.add += 1;
    return call;
  };
  native.addMany = (names, ...a) => { crossings.addMany.push(names.length); return addMany.call(native, names, ...a); };
  const n = 1000;
  const before = scriptCalls(h.servers.standalone);
  const ids = await Promise.all(Array.from({ length: n }, (_, i) => q.add('j', { i })));
  const calls = scriptCalls(h.servers.standalone) - before;
  // two crossings for the turn's 1,000 adds: the first at once (as the plain add or direct), the
  // 999 after it together (one at a time, they made 1,000)
  assert.deepEqual(crossings, { add: 1, addMany: [n - 1] });
  assert.equal(new Set(ids).size, n);
  // the first alone, the rest in calls of up to 250 as they reach the core's line
  assert.ok(calls >= 5 && calls <= 20, `${calls} script calls for ${n} concurrent adds`);
  assert.equal((await q.counts()).waiting, n + 1);
  // a lone add is the plain one-job add
  await q.add('alone', 1);
  assert.deepEqual(crossings, { add: 2, addMany: [n - 1] });
});

test('a bad add among the adds of one turn fails alone, typed, and the others are added', async () => {
  const q = await Queue.connect(h.servers.standalone, unique('coalesce-bad'));
  h.track(q);
  const out = await Promise.allSettled([
    q.add('a', 1),
    q.add('b', 2, { priority: -1 }),
    q.add('c', 3, { id: 'not-a-job-id' }),
    q.add('d', 4, { attempts: 2 }),
  ]);
  assert.equal(out[0].status, 'fulfilled');
  assert.equal(out[1].status, 'rejected');
  assert.equal(out[1].reason.code, 'invalid_option', String(out[1].reason));
  assert.equal(out[2].status, 'rejected');
  assert.equal(out[2].reason.code, 'invalid_job_id', String(out[2].reason));
  assert.equal(out[3].status, 'fulfilled');
  assert.equal((await q.get(out[3].value)).attempts, 2);
  assert.equal((await q.counts()).waiting, 2);
});
