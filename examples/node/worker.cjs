// Quick start, Node (CommonJS) worker: processes the jobs of the queue `emails` until SIGINT or
// SIGTERM, then finishes the jobs it is running and exits.
// The datastore is EMQ_URL, default redis://127.0.0.1:6379.
const { Queue, Worker } = require('emq');

const URL = process.env.EMQ_URL || 'redis://127.0.0.1:6379';

async function main() {
  const queue = await Queue.connect(URL, 'emails');
  const worker = new Worker(queue, async (job) => {
    // job: { id, name, data, attemptsMade, attempts, updateProgress(p), log(line) }
    await job.log(`sending to ${job.data.to}`);
    return { sent: job.data.to }; // the job's result
  }, { concurrency: 4 });
  console.log('worker started; Ctrl-C to stop');

  const stop = async () => {
    await worker.close(); // stops fetching, waits for running jobs, gives the rest back
    await queue.close();
    console.log('worker stopped');
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
