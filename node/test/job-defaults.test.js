'use strict';
// A queue's job defaults from Node (the core's core/src/job_defaults.rs), against a real server
// from emq-harness: a job added with no options runs with the queue's attempts and backoff and is
// removed on completion as the defaults say, its record storing no options; the defaults read
// back as given (camelCase, ms); a bad or foreign option is refused with its error class and
// changes nothing.
process.env.EMQ_GUARD = '1';

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { Queue, Worker, InvalidOption } = require('..');
const { useServers, waitFor, unique } = require('../testlib/harness');

const h = useServers();

for (const topology of ['standalone', 'cluster']) {
  test(`a job without options runs with the queue's defaults (${topology})`, async () => {
    const url = h.url(topology);
    const q = await Queue.connect(url, unique('defaults'));
    h.track(q);
    await q.setJobDefaults({ attempts: 3, backoff: 20, removeOnComplete: true });
    assert.deepEqual(await q.jobDefaults(), { attempts: 3, backoff: { type: 'fixed', delay: 20 }, removeOnComplete: true });
    const id = await q.add('charge', { n: 1 });
    assert.deepEqual((await q.get(id)).options, {}, 'no options stored');
    const seen = [];
    const w = new Worker(q, async (job) => {
      seen.push(job.attempts);
      if (seen.length < 3) throw new Error('not yet');
      return 'ok';
    }, { blockTimeout: 200 });
    await waitFor('three runs and removed', async () => (await q.get(id)) === null);
    await w.close();
    assert.deepEqual(seen, [3, 3, 3]);
    const c = await q.counts();
    assert.deepEqual([c.completed, c.failed], [0, 0]);
  });
}

test('defaults read back as given, and bad ones change nothing', async () => {
  const q = await Queue.connect(h.servers.standalone, unique('defaults-back'));
  h.track(q);
  const given = {
    attempts: 5,
    backoff: { type: 'exponential', delay: 500, max: 30000 },
    jitter: 0.25,
    removeOnComplete: { count: 100, age: 3600000 },
    removeOnFail: 10,
  };
  await q.setJobDefaults(given);
  assert.deepEqual(await q.jobDefaults(), given);
  await assert.rejects(q.setJobDefaults({ attempts: 0 }), InvalidOption);
  await assert.rejects(q.setJobDefaults({ priority: 2 }), InvalidOption);
  await assert.rejects(q.setJobDefaults({ jitter: 1.5 }), InvalidOption);
  assert.deepEqual(await q.jobDefaults(), given, 'unchanged by the refusals');
  await q.setJobDefaults({});
  assert.deepEqual(await q.jobDefaults(), {});
});
