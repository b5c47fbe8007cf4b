// Quick start, Node (CommonJS) producer: adds one job to the queue `emails` and waits for its result.
//   npm install emq
//   node worker.cjs      # in one terminal
//   node producer.cjs    # in another
// The datastore is EMQ_URL, default redis://127.0.0.1:6379.
const { Queue } = require('emq');

const URL = process.env.EMQ_URL || 'redis://127.0.0.1:6379';
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function main() {
  const queue = await Queue.connect(URL, 'emails');
  const id = await queue.add('send', { to: 'ada@example.com' }, { attempts: 3, backoff: { type: 'exponential', delay: 1000 } });
  console.log('added', id);

  // Read the result back: poll the job until a worker has finished it (at most 30 s).
  let job = null;
  for (let i = 0; i < 300; i++) {
    job = await queue.get(id);
    if (job && (job.state === 'completed' || job.state === 'failed')) break;
    await sleep(100);
  }
  if (!job || (job.state !== 'completed' && job.state !== 'failed')) {
    throw new Error(`job ${id} did not finish within 30 s: is worker.cjs running?`);
  }
  console.log(job.state, JSON.stringify(job.result));
  await queue.close();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
