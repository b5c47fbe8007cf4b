'use strict';
// Issue 16: the durable add (`Queue.connect(url, name, { durable: [replicas, timeoutMs] })`, the
// core's ConnectOptions::durable): every add waits for that many replicas (WAIT).
process.env.EMQ_GUARD = '1';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const emq = require('..');
const { startServers, unique } = require('../testlib/harness');

let servers;
before(async () => {
  servers = await startServers();
});
after(async () => {
  if (servers) await servers.stop();
});

test('with more replicas asked than exist a durable add rejects with NotReplicated naming its job, which is written', async () => {
  const q = await emq.Queue.connect(servers.standalone, unique('dur'), { durable: [1, 200] });
  const id = q.mintId();
  const t0 = Date.now();
  await assert.rejects(q.add('d', { n: 1 }, { id }), (e) => {
    assert.ok(e instanceof emq.NotReplicated, e.stack);
    assert.equal(e.code, 'not_replicated');
    assert.ok(e.message.includes(id) && e.message.includes('0 of 1 replicas'), e.message);
    return true;
  });
  assert.ok(Date.now() - t0 >= 190);
  assert.ok((await q.get(id)) !== null);
  await q.close();
});

test('durable bounds are the core\'s', async () => {
  for (const durable of [[0, 100], [65, 100], [1, 0], [1, 60001], [-1, 100], [1.5, 100]]) {
    await assert.rejects(emq.Queue.connect(servers.standalone, unique('dur'), { durable }), (e) => {
      assert.ok(e instanceof emq.InvalidOption, `${durable}: ${e.stack}`);
      assert.match(e.message, /durable/);
      return true;
    });
  }
});
