'use strict';
// Run by the tests in a child process: connect, process one job, close the worker and the queue,
// then simply return. The process must exit by itself (no process.exit here).
process.env.EMQ_GUARD = '1';
const { Queue, Worker } = require('..');

(async () => {
  const q = await Queue.connect(process.env.EMQ_TEST_URL, `exit-${process.pid}`);
  let done;
  const finished = new Promise((r) => (done = r));
  const worker = new Worker(q, async (job) => {
    setImmediate(done);
    return job.data.n + 1;
  }, { blockTimeout: 200 });
  try {
    const id = await q.add('inc', { n: 41 });
    await finished;
    await worker.close();
    for (let i = 0; i < 100; i++) {
      const job = await q.get(id);
      if (job && job.state === 'completed') {
        console.log(`result ${JSON.stringify(job.result)}`);
        break;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    await worker.close();
    await q.close();
  }
})().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
