'use strict';
// `job.fence`, the run's fencing token (the core's `JobContext::fence`), against a real server from
// emq-harness: a job whose first run fails and second succeeds sees a positive fence on each run,
// the second greater than the first.
process.env.EMQ_GUARD = '1';

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { Queue, Worker } = require('..');
const { useServers, waitFor, unique } = require('../testlib/harness');

const h = useServers();

test('job.fence is positive on each run and grows across the runs of one job', async () => {
  const q = await Queue.connect(h.servers.standalone, unique('fence'));
  h.track(q);
  const id = await q.add('charge', {}, { attempts: 2, backoff: { type: 'fixed', delay: 50 } });
  const fences = [];
  const w = new Worker(
    q,
    async (job) => {
      fences.push(job.fence);
      if (job.attemptsMade === 0) throw new Error('first run fails');
      return job.fence;
    },
    { blockTimeout: 200 },
  );
  h.track(w);
  const done = await waitFor('the job to finish', async () => {
    const j = await q.get(id);
    return j && (j.state === 'completed' || j.state === 'failed') ? j : null;
  });
  assert.equal(done.state, 'completed', JSON.stringify(done));
  assert.equal(fences.length, 2, String(fences));
  for (const f of fences) assert.ok(Number.isSafeInteger(f) && f > 0, `fence ${f}`);
  assert.ok(fences[1] > fences[0], String(fences));
  assert.equal(done.result, fences[1]);
});
