// Quick start, Node (TypeScript) worker: processes the jobs of the queue `emails` until SIGINT or
// SIGTERM, then finishes the jobs it is running and exits. The job data and result are typed.
//   npm install emq && npm install --save-dev typescript @types/node
//   npx tsc --strict --module nodenext worker.ts producer.ts
//   node worker.js      # in one terminal
//   node producer.js    # in another
// The datastore is EMQ_URL, default redis://127.0.0.1:6379.
import { Queue, Worker, type ActiveJob } from 'emq';

export interface Email {
  to: string;
}

export interface Sent {
  sent: string;
}

const URL = process.env.EMQ_URL ?? 'redis://127.0.0.1:6379';

async function send(job: ActiveJob<Email>): Promise<Sent> {
  await job.log(`sending to ${job.data.to}`);
  return { sent: job.data.to }; // the job's result
}

async function main(): Promise<void> {
  const queue = await Queue.connect(URL, 'emails');
  const worker = new Worker<Email, Sent>(queue, send, { concurrency: 4 });
  worker.on('failed', (job, error) => console.error(`job ${job.id} failed:`, error));
  console.log('worker started; Ctrl-C to stop');

  const stop = async (): Promise<void> => {
    await worker.close(); // stops fetching, waits for running jobs, gives the rest back
    await queue.close();
    console.log('worker stopped');
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
