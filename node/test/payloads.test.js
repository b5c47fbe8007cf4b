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

// Issue 16, defect 6 (the Node part): JSON.stringify would store undefined and NaN as null and a
// Map as {}, and napi would turn a lone surrogate in a queue name into U+FFFD (another queue).
// A value that is accepted reads back exactly; the others are refused with a typed error.
test('values JSON would change are refused with invalid_payload; what is accepted reads back exactly', async () => {
  class Point {
    constructor() {
      this.x = 1;
    }
  }
  const sparse = [1, , 3]; // eslint-disable-line no-sparse-arrays
  const before = await q.counts();
  for (const [what, bad] of [
    ['undefined', undefined],
    ['NaN', NaN],
    ['Infinity', Infinity],
    ['-Infinity in an array', [1, -Infinity]],
    ['NaN nested', { a: { b: [NaN] } }],
    ['undefined in an array', [1, undefined]],
    ['a hole in an array', sparse],
    ['a Map', new Map([['k', 1]])],
    ['a Map nested', { m: new Map() }],
    ['a Set', new Set([1])],
    ['a Date', new Date(0)],
    ['a class instance', new Point()],
    ['a typed array', new Uint8Array([1, 2])],
    ['a boxed string', { s: new String('x') }], // eslint-disable-line no-new-wrappers
    ['a function value', { f() {} }],
    ['a symbol value', { s: Symbol('s') }],
    ['a symbol key', { [Symbol('k')]: 1 }],
    ['a toJSON method', { toJSON: () => 1 }],
  ]) {
    await assert.rejects(q.add('bad', bad), isInvalidPayload, `add: ${what}`);
    await assert.rejects(q.addBulk([{ name: 'ok', data: 1 }, { name: 'bad', data: bad }]), isInvalidPayload, `addBulk: ${what}`);
    await assert.rejects(q.addFlow({ name: 'p', data: {}, children: [{ name: 'c', data: bad }] }), isInvalidPayload, `addFlow: ${what}`);
  }
  assert.deepEqual(await q.counts(), before, 'nothing was added');

  // Accepted: plain JSON values, objects with a null prototype, and properties whose value is
  // undefined, which are left out as JSON.stringify does (reading the property gives undefined again).
  const bare = Object.create(null);
  bare.k = 'v';
  const good = { n: 1.5, neg: -2, s: 'é\u{1F600}', t: true, nil: null, arr: [[], {}, ''], bare };
  const id = await q.add('good', good);
  assert.deepEqual((await q.get(id)).data, { ...good, bare: { k: 'v' } });
  const dropped = await q.add('dropped', { a: 1, b: undefined });
  const back = (await q.get(dropped)).data;
  assert.deepEqual(back, { a: 1 });
  assert.equal(back.b, undefined);
  await q.remove(id);
  await q.remove(dropped);
});

test('a queue name with a lone surrogate is refused with invalid_queue_name, not renamed', async () => {
  for (const name of ['q\ud800', '\udfffq', 'a\ud83d']) {
    await assert.rejects(Queue.connect(servers.standalone, name), (e) => {
      assert.ok(e instanceof emq.InvalidQueueName, `${JSON.stringify(name)}: ${e && e.stack}`);
      assert.equal(e.code, 'invalid_queue_name');
      return true;
    });
    await assert.rejects(
      q.addFlow({ name: 'p', data: {}, children: [{ queue: name, name: 'c', data: {} }] }),
      (e) => e.code === 'invalid_queue_name',
      `flow child queue ${JSON.stringify(name)}`,
    );
  }
  // A well-formed astral character (a surrogate pair) is a valid name, kept as it is.
  const astralName = unique('q\u{1F600}');
  const astral = await Queue.connect(servers.standalone, astralName);
  try {
    assert.equal(astral.name, astralName);
  } finally {
    await astral.close();
  }
});
