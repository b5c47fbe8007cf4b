// Quick start, Node (ES module) producer: adds one job to the queue `emails` and waits for its result.
//   npm install emq
//   node worker.mjs      # in one terminal
//   node producer.mjs    # in another
// The datastore is EMQ_URL, default redis://127.0.0.1:6379.
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue, InvalidJobId } from 'emq';

const URL = process.env.EMQ_URL || 'redis://127.0.0.1:6379';

const queue = await Queue.connect(URL, 'emails');
const id = await queue.add('send', { to: 'ada@example.com' }, { attempts: 3, backoff: { type: 'exponential', delay: 1000 } });
console.log('added', id);

// Errors are classes with a stable code: a malformed id is InvalidJobId, not a missing job.
try {
  await queue.get('not-an-id');
} catch (e) {
  if (!(e instanceof InvalidJobId)) throw e;
}

// Read the result back: poll the job until a worker has finished it (at most 30 s).
let job = null;
for (let i = 0; i < 300; i++) {
  job = await queue.get(id);
  if (job && (job.state === 'completed' || job.state === 'failed')) break;
  await sleep(100);
}
if (!job || (job.state !== 'completed' && job.state !== 'failed')) {
  throw new Error(`job ${id} did not finish within 30 s: is worker.mjs running?`);
}
console.log(job.state, JSON.stringify(job.result));
await queue.close();
