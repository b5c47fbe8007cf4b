'use strict';
// Payloads read back exactly or refused at add with invalid_payload (issue 16, defect 1): the
// core's one check, reached through add, addBulk and a worker's handler.
process.env.EMQ_GUARD = '1';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const emq = require('..');
const { Queue, Worker, EmqError } = emq;
const { startServers, waitFor, unique } = require('../testlib/harness');

let servers;
let q;

before(async () => {
  servers = await startServers();
  q = await Queue.connect(servers.standalone, unique('payloads'));
});

after(async () => {
  if (q) await q.close().catch(() => {});
  if (servers) await servers.stop();
});

function nested(levels) {
  let v = 1;
  for (let i = 0; i < levels; i++) v = [v];
  return v;
}

function isInvalidPayload(e) {
  assert.ok(e instanceof EmqError, `expected an EmqError, got ${e && e.stack}`);
  assert.equal(e.code, 'invalid_payload', e.message);
  return true;
}

test('depth 127 reads back, 128 is refused; lone surrogates refused; wide integers', async () => {
  const deep = nested(127);
  const deepId = await q.add('deep', deep);
  assert.deepEqual((await q.get(deepId)).data, deep);
  // A JS number is a double: 2**70 crosses as 1.1805916207174113e+21 and reads back the same.
  const edges = { big: 2 ** 70, safe: Number.MAX_SAFE_INTEGER, s: '\u{1F600}' };
  const edgesId = await q.add('edges', edges);
  assert.deepEqual((await q.get(edgesId)).data, edges);

  for (const [what, bad] of [
    ['128 levels', nested(128)],
    ['lone surrogate', { s: '\ud800' }],
    // JSON.stringify writes doubles below 1e21 as integers: beyond 64 bits the core refuses them
    // (a Python or Rust reader would get a float where the text says integer).
    ['2**64 as an integer literal', [2 ** 64]],
    ['a BigInt', { n: 2n ** 70n }],
  ]) {
    await assert.rejects(q.add('bad', bad), isInvalidPayload, what);
    await assert.rejects(q.addBulk([{ name: 'ok', data: 1 }, { name: 'bad', data: bad }]), isInvalidPayload, what);
  }
  const c = await q.counts();
  assert.equal(c.waiting, 2, JSON.stringify(c));

  const seen = [];
  const worker = new Worker(q, async (job) => {
    seen.push(job.data);
    return job.data;
  }, { blockTimeout: 300 });
  try {
    await waitFor('2 completions', async () => (await q.counts()).completed === 2);
  } finally {
    await worker.close();
  }
  assert.deepEqual(seen.find((d) => Array.isArray(d)), deep);
  assert.deepEqual(seen.find((d) => !Array.isArray(d)), edges);
  assert.deepEqual((await q.get(deepId)).result, deep);
});

test('a minted id added twice is one job (the retry a producer makes after server_unavailable)', async () => {
  const id = q.mintId();
  assert.match(id, /^j[0-9a-z]{15}$/);
  const before = await q.counts();
  assert.equal(await q.add('once', { n: 1 }, { id }), id);
  assert.equal(await q.add('once', { n: 2 }, { id }), id);
  assert.deepEqual(await q.addBulk([{ name: 'once', data: { n: 3 }, opts: { id } }]), [id]);
  const after = await q.counts();
  assert.equal(after.waiting - before.waiting, 1);
  assert.deepEqual((await q.get(id)).data, { n: 1 });
});
