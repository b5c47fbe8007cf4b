// Quick start, Node (TypeScript) producer: adds one typed job to the queue `emails` and waits for
// its result (see worker.ts for how to compile and run both).
// The datastore is EMQ_URL, default redis://127.0.0.1:6379.
import { Queue, HandlerFailed, Timeout, type JobId } from 'emq';
import type { Email, Sent } from './worker';

const URL = process.env.EMQ_URL ?? 'redis://127.0.0.1:6379';

async function main(): Promise<void> {
  const queue = await Queue.connect(URL, 'emails');
  const id: JobId = await queue.add<Email>('send', { to: 'ada@example.com' }, { attempts: 3, backoff: { type: 'exponential', delay: 1000 } });
  console.log('added', id);

  // Wait (at most 30 s) for a worker to finish it: its result, or the error it failed with.
  try {
    const result = await queue.wait<Sent>(id, { timeout: 30_000 });
    console.log('completed', JSON.stringify(result));
  } catch (e) {
    if (e instanceof Timeout) throw new Error(`job ${id} did not finish within 30 s: is worker.js running?`);
    if (e instanceof HandlerFailed) console.log('failed', e.failureCode, e.message);
    else throw e;
  } finally {
    await queue.close();
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
