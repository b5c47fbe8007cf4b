'use strict';
// Dead-letter queues from Node (the core's core/src/dead_letter.rs), against a real server from
// emq-harness: a job that fails for good moves to its `deadLetter` queue with its data and origin,
// the queue default applies to jobs without the option, replay sends it back with its attempts
// reset, and a bad name is refused with its error class.
process.env.EMQ_GUARD = '1';

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { Queue, Worker, InvalidQueueName, InvalidOption } = require('..');
const { useServers, waitFor, unique } = require('../testlib/harness');

const h = useServers();

test('a job failed for good moves to its dead-letter queue, and replays', async () => {
  const name = unique('dl');
  const q = await Queue.connect(h.servers.standalone, name);
  const dlq = await Queue.connect(h.servers.standalone, `${name}-dlq`);
  const other = await Queue.connect(h.servers.standalone, `${name}-other`);
  h.track(q, dlq, other);
  await q.setDeadLetter(`${name}-other`);
  assert.equal(await q.deadLetter(), `${name}-other`);
  const data = { to: 'ada@example.com', n: 1.5, s: 'é\u2028' };
  const own = await q.add('charge', data, { attempts: 2, backoff: { type: 'fixed', delay: 10 }, deadLetter: `${name}-dlq` });
  const byDefault = await q.add('charge', { n: 2 }, { attempts: 1 });
  let fail = true;
  const handler = async (job) => {
    if (fail) throw new Error(`card declined ${JSON.stringify(job.data)}`);
    return 'ok';
  };
  let w = new Worker(q, handler, { blockTimeout: 200 });
  await waitFor('both jobs dead-lettered', async () =>
    (await dlq.deadLetters()).length === 1 && (await other.deadLetters()).length === 1);
  await w.close();
  const [entry] = await dlq.deadLetters();
  assert.deepEqual(
    [entry.origin.queue, entry.origin.id, entry.origin.attemptsMade],
    [name, own, 2],
    JSON.stringify(entry),
  );
  assert.ok(entry.origin.failure.message.includes('card declined'), JSON.stringify(entry));
  assert.ok(Number.isSafeInteger(entry.origin.failedMs) && entry.origin.failedMs > 0);
  assert.deepEqual((await dlq.get(entry.id)).data, data);
  assert.equal((await other.deadLetters())[0].origin.id, byDefault);
  assert.equal(await q.get(own), null, 'the original left its queue');

  fail = false;
  const replayed = await dlq.replayDeadLetters([entry.id]);
  assert.deepEqual(replayed.map((r) => [r.queue, r.originId]), [[name, own]]);
  assert.deepEqual(await dlq.deadLetters(), []);
  w = new Worker(q, handler, { blockTimeout: 200 });
  h.track(w);
  const done = await waitFor('the replayed job completes', async () => {
    const j = await q.get(own);
    return j && j.state === 'completed' ? j : null;
  });
  assert.equal(done.attemptsMade, 1);
  assert.deepEqual(done.data, data);
});

test('bad dead-letter names are refused with their classes, and nothing is written', async () => {
  const name = unique('dlbad');
  const q = await Queue.connect(h.servers.standalone, name);
  h.track(q);
  await assert.rejects(q.add('x', {}, { deadLetter: 'bad{name}' }), InvalidQueueName);
  await assert.rejects(q.add('x', {}, { deadLetter: name }), InvalidOption);
  await assert.rejects(q.setDeadLetter(''), InvalidQueueName);
  assert.equal((await q.counts()).waiting, 0);
  await q.setDeadLetter(null);
  assert.equal(await q.deadLetter(), null);
});
