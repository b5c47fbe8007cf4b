'use strict';
// Run by node/test/control.test.js in a child process: a worker with `handleSignals: true` on the
// queue EMQ_TEST_QUEUE. Its handler prints `started <id>` and runs until its signal aborts (or
// 20 s). On SIGINT/SIGTERM the worker closes gracefully (grace: 300 ms), then the queue closes and
// the process exits by itself.
process.env.EMQ_GUARD = '1';
const { Queue, Worker } = require('..');

(async () => {
  const q = await Queue.connect(process.env.EMQ_TEST_URL, process.env.EMQ_TEST_QUEUE);
  const worker = new Worker(
    q,
    (job) =>
      new Promise((resolve, reject) => {
        console.log(`started ${job.id}`);
        const timer = setTimeout(() => resolve('ran to the end'), 20_000);
        job.signal.addEventListener('abort', () => {
          clearTimeout(timer);
          console.log(`aborted ${job.signal.reason.code}`);
          reject(job.signal.reason);
        });
      }),
    { blockTimeout: 200, shutdownTimeout: 300, handleSignals: true },
  );
  worker.on('closed', () => {
    console.log('closed');
    q.close().catch(() => {});
  });
  console.log('ready');
})().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
