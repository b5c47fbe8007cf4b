'use strict';
// Typed errors end to end (issue 25): the addon's errors carry the core's code as napi's error
// status (`err.code`), never in the message, so a message that reads like another code's, or
// like a payload fault, still yields the right class; refusals name the option, its bounds and the
// value as given.
process.env.EMQ_GUARD = '1';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const emq = require('..');
const { Queue, Worker, EmqError } = emq;
const { startServers, waitFor, unique } = require('../testlib/harness');

let servers;
let q;

before(async () => {
  servers = await startServers({ flags: ['--standalone'] });
  q = await Queue.connect(servers.standalone, unique('typed'));
});

after(async () => {
  if (q) await q.close().catch(() => {});
  if (servers) await servers.stop();
});

/** A checker for assert.throws / rejects: the class and code of `code`, and the exact message. */
function typed(code, message) {
  const cls = emq[Object.entries(require('../codes.js').CLASS_NAMES).find(([c]) => c === code)[1]];
  return (e) => {
    assert.ok(e instanceof EmqError, `expected an EmqError, got ${e && e.stack}`);
    assert.ok(e instanceof cls, `expected ${cls.name}, got ${e.name}: ${e.message}`);
    assert.equal(e.code, code, e.message);
    assert.equal(e.name, cls.name);
    assert.ok(!e.message.startsWith(`[emq:${code}] `), `the code is not in the message: ${e.message}`);
    if (message instanceof RegExp) assert.match(e.message, message);
    else assert.equal(e.message, message);
    return true;
  };
}

test("the addon's errors carry the core's code as their own `code`, the message as the core wrote it", async () => {
  // The addon as the package loads it, below the JS layer: a plain Error whose `code` is napi's
  // error status, set to the core's code (it used to be 'GenericFailure', the code in the text).
  const { native } = require('../dist/loader.js');
  const raw = (code, message) => (e) => {
    assert.ok(e instanceof Error && !(e instanceof EmqError), `a plain Error, got ${e && e.stack}`);
    assert.equal(e.code, code, e.message);
    if (message instanceof RegExp) assert.match(e.message, message);
    else assert.equal(e.message, message);
    return true;
  };
  const nq = await native.connect([servers.standalone], unique('raw'), undefined, undefined);
  try {
    // Rejected promises (async methods) ...
    await assert.rejects(nq.get('[emq:job_not_found] x'), raw('invalid_job_id', '"[emq:job_not_found] x" is not a job id minted by emq (wrong length)'));
    await assert.rejects(nq.list('[emq:timeout] x', 0, 10), raw('invalid_option', /^unknown job state "\[emq:timeout\] x"/));
    await assert.rejects(nq.addBulkJson('[{"name":"a","data":1,"opts":{"delay":"recursion limit"}}]'), raw('invalid_option', /^addBulk: \[0\]\.opts\.delay: invalid type: string "recursion limit"/));
    // ... and synchronous throws.
    assert.throws(() => nq.worker(() => {}, () => {}, { concurrency: -1 }), raw('invalid_option', 'concurrency must be a whole number between 1 and 10000, got -1'));
  } finally {
    await nq.close();
  }
  await assert.rejects(native.connect(['redis://127.0.0.1:1'], 'q', undefined, undefined), raw('server_unavailable', /.+/));
});

test("a native error's message is the core's, with no code prefix, whatever text it quotes", async () => {
  await assert.rejects(
    q.get('[emq:job_not_found] x'),
    typed('invalid_job_id', '"[emq:job_not_found] x" is not a job id minted by emq (wrong length)'),
  );
  await assert.rejects(q.list('[emq:timeout] x'), typed('invalid_option', /^unknown job state "\[emq:timeout\] x"; one of waiting, /));
  await assert.rejects(
    q.add('n', 1, { parentPolicy: '[emq:not_replicated] x' }),
    typed('invalid_option', 'parent_policy must be "fail", "ignore" or "remove", got "[emq:not_replicated] x"'),
  );
  await assert.rejects(
    Queue.connect('[emq:server_unavailable] x', 'q'),
    typed('invalid_option', /^cannot use the URL "\[emq:server_unavailable\] x": /),
  );
  // A synchronous native call (the worker's start) throws typed too.
  assert.throws(() => new Worker(q, async () => {}, { lease: 1 }), typed('invalid_option', /lease/));
  // A code from the server side of a call: the datastore is not there.
  await assert.rejects(Queue.connect('redis://127.0.0.1:1', 'q'), typed('server_unavailable', /.+/));
});

test("a batch's spec error is classified by serde's kind of error, not by the words of its message", async () => {
  // A field whose name holds every word the old substring check looked for ("recursion limit",
  // "surrogate", "escape"): a shape error, so invalid_option (it used to be invalid_payload).
  const odd = { type: 'fixed', delay: 10, 'recursion limit, surrogate escape': 1 };
  await assert.rejects(
    q.addBulk([{ name: 'a', data: 1, opts: { backoff: odd } }]),
    typed('invalid_option', /^addBulk: \[0\]\.opts\.backoff\..*: unknown field `recursion limit, surrogate escape`, expected one of `type`, `delay`, `max`/),
  );
  await assert.rejects(q.addFlow({ name: 'p', data: 1, opts: { backoff: odd } }), typed('invalid_option', /unknown field `recursion limit/));
  // Nested past what the core reads back: serde's syntax kind, so invalid_payload.
  const deep = JSON.parse('['.repeat(200) + ']'.repeat(200));
  await assert.rejects(q.addBulk([{ name: 'a', data: deep }]), typed('invalid_payload', /^addBulk: a payload does not read back as written: /));
  assert.equal((await q.counts()).waiting, 0, 'nothing was added');
});

test('a worker count names its real bounds and the value as given', () => {
  const handler = async () => {};
  for (const [v, shown] of [[NaN, 'NaN'], [-1, '-1'], [0, '0'], [2.5, '2.5'], [10_001, '10001']]) {
    assert.throws(
      () => new Worker(q, handler, { concurrency: v }),
      typed('invalid_option', `concurrency must be a whole number between 1 and 10000, got ${shown}`),
    );
  }
  assert.throws(() => new Worker(q, handler, { maxStalls: -1 }), typed('invalid_option', 'max_stalls must be a whole number between 0 and 1000, got -1'));
  assert.throws(() => new Worker(q, handler, { maxStalls: NaN }), typed('invalid_option', 'max_stalls must be a whole number between 0 and 1000, got NaN'));
});

test('an option of the wrong type is refused in emq words, naming the option and the value', async () => {
  // A job's options are read by the core (its JobSpec, as JSON): the message names the option by
  // its path in what the call sent, and the value.
  const delay = 'delay: invalid type: string "soon", expected a duration';
  await assert.rejects(q.add('n', 1, { delay: 'soon' }), typed('invalid_option', new RegExp(`^${delay}`)));
  await assert.rejects(q.addBulk([{ name: 'n', data: 1, opts: { delay: 'soon' } }]), typed('invalid_option', new RegExp(`^addBulk: \\[0\\]\\.opts\\.${delay}`)));
  await assert.rejects(
    q.addFlow({ name: 'p', data: 1, children: [{ name: 'c', data: 2, opts: { delay: 'soon' } }] }),
    typed('invalid_option', new RegExp(`^addFlow: children\\[0\\]\\.opts\\.${delay}`)),
  );
  await assert.rejects(q.add('n', 1, { attempts: [3] }), typed('invalid_option', /^attempts: invalid type: sequence/));
  await assert.rejects(q.add('n', 1, { lifo: 'yes' }), typed('invalid_option', /^lifo: invalid type: string "yes", expected a boolean/));
  await assert.rejects(q.add('n', 1, { dedup: 7 }), typed('invalid_option', /^dedup: invalid type: integer `7`, expected a string/));
  await assert.rejects(q.add('n', 1, { id: 7 }), typed('invalid_job_id', /^id: a job id is its text form/));
  await assert.rejects(q.add('n', 1, { delai: 5 }), typed('invalid_option', /^delai: unknown field `delai`/));
  await assert.rejects(q.add('n', 1, { dedup_ttl: 5 }), typed('invalid_option', /camelCase/));
  await assert.rejects(q.add('n', 1, { delay: NaN }), typed('invalid_option', 'delay must be a finite number, got NaN'));
  // A worker's options are a napi object, checked in JS before napi reads them.
  assert.throws(() => new Worker(q, async () => {}, { concurrency: '4' }), typed('invalid_option', 'concurrency must be a whole number, got "4" (a string)'));
  assert.throws(
    () => new Worker(q, async () => {}, { lease: 'long' }),
    typed('invalid_option', 'lease must be a duration in milliseconds (a finite number, at least 0), got "long" (a string)'),
  );
  // Numbers still reach the core, which checks their range.
  await assert.rejects(q.add('n', 1, { delay: -5 }), typed('invalid_option', /delay/));
  assert.equal((await q.counts()).waiting, 0, 'nothing was added');
});

test("a handler's error text that reads like an emq code stays the handler's failure", async () => {
  const thrown = Object.assign(new Error('[emq:job_not_found] the card was declined'), { code: 'E_CARD' });
  const w = new Worker(q, async () => {
    throw thrown;
  }, { blockTimeout: 300 });
  const failed = [];
  w.on('failed', (job, e) => failed.push(e));
  try {
    const id = await q.add('charge', { n: 1 });
    await assert.rejects(q.wait(id, { timeout: 20_000 }), (e) => {
      typed('handler_failed', '[emq:job_not_found] the card was declined')(e);
      assert.equal(e.failureCode, 'E_CARD');
      return true;
    });
    await waitFor('the failed event', () => failed.length === 1);
    typed('handler_failed', '[emq:job_not_found] the card was declined')(failed[0]);
    assert.equal(failed[0].failureCode, 'E_CARD');
    assert.equal(failed[0].willRetry, false);
  } finally {
    await w.close();
  }
});

test('a DelayedError whose delay is not a number fails its job naming the value as given', async () => {
  const w = new Worker(q, async (job) => {
    throw new emq.DelayedError(job.data.delay);
  }, { blockTimeout: 300 });
  try {
    const soon = await q.add('later', { delay: 'soon' });
    const none = await q.add('later', { delay: null });
    await assert.rejects(q.wait(soon, { timeout: 20_000 }), (e) => {
      typed('handler_failed', 'DelayedError: the delay must be a number of milliseconds, got "soon" (a string)')(e);
      assert.equal(e.failureCode, 'invalid_option');
      return true;
    });
    await assert.rejects(q.wait(none, { timeout: 20_000 }), (e) => {
      typed('handler_failed', 'DelayedError: the delay must be a number of milliseconds, got null')(e);
      return true;
    });
  } finally {
    await w.close();
  }
});
