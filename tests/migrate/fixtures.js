// BullMQ fixtures for `emq migrate`'s tests (cli/tests/migrate.rs): real BullMQ (the npm package,
// pinned in tests/migrate/package.json, installed by the test into $EMQ_BULLMQ_DIR) writes one
// queue in every state, then prints a JSON summary on stdout.
//
//   node fixtures.js <redis url> <prefix> <queue> all       every state (see below)
//   node fixtures.js <redis url> <prefix> <queue> many <N>  N waiting jobs {n: 0..N-1}
//
// `all`: "done" completed; "fail-me" failed after 2 attempts ("boom 1", "boom 2"); each run
// logs "run <attempt> of <name>"; "held" active
// with a live lock (60 s; this process exits without releasing it); a flow "parent" waiting for
// "child-1" and "child-2"; 10 waiting "w" {n: 0..9} (n 0 with deduplication id "w-zero") then "w-lifo" (LIFO); 4 prioritized "p"
// (priorities 3, 1, 2, 1); one delayed "d" (8 s; its due time in the summary); job schedulers
// "every-hour" (every 3,600,000 ms) and "cron-9" ("0 9 * * *", Europe/Berlin).
'use strict';
const path = require('path');
const dir = process.env.EMQ_BULLMQ_DIR || '/tmp/emq-bullmq';
const { Queue, Worker, FlowProducer } = require(path.join(dir, 'node_modules', 'bullmq'));

const [url, prefix, name, mode, count] = process.argv.slice(2);
const u = new URL(url);
const connection = { host: u.hostname, port: Number(u.port), maxRetriesPerRequest: null };

function timeout(ms, what) {
  return new Promise((_, reject) => setTimeout(() => reject(new Error(`timed out: ${what}`)), ms).unref());
}

async function main() {
  const queue = new Queue(name, { connection, prefix });
  const out = { prefix, queue: name };
  if (mode === 'many') {
    const n = Number(count);
    for (let i = 0; i < n; i += 1000) {
      const jobs = [];
      for (let j = i; j < Math.min(n, i + 1000); j++) jobs.push({ name: 'm', data: { n: j } });
      await queue.addBulk(jobs);
    }
    out.waiting = await queue.getWaitingCount();
    await queue.close();
    return out;
  }
  // Finished jobs first, with a real worker, before anything else waits.
  const worker = new Worker(name, async (job) => {
    await job.log(`run ${job.attemptsMade + 1} of ${job.name}`);
    if (job.name === 'fail-me') throw new Error(`boom ${job.attemptsMade + 1}`);
    return { ok: 1, n: job.data.n };
  }, { connection, prefix, concurrency: 1 });
  const finished = new Promise((resolve) => {
    let left = 2;
    const one = () => { if (--left === 0) resolve(); };
    worker.on('completed', one);
    worker.on('failed', (job) => { if (job.attemptsMade >= 2) one(); });
  });
  await queue.add('done', { n: 100 });
  await queue.add('fail-me', { n: 101 }, { attempts: 2 });
  await Promise.race([finished, timeout(20000, 'finished jobs')]);
  await worker.close();

  // An active job whose lock lives: taken by a manual worker that never finishes it.
  await queue.add('held', { n: 102 });
  const manual = new Worker(name, null, { connection, prefix, lockDuration: 60000 });
  const held = await manual.getNextJob('fixture-token');
  out.held = held && held.id;

  const flows = new FlowProducer({ connection, prefix });
  await flows.add({
    name: 'parent', queueName: name, data: { n: 103 },
    children: [
      { name: 'child-1', queueName: name, data: { n: 104 } },
      { name: 'child-2', queueName: name, data: { n: 105 } },
    ],
  });
  await flows.close();

  // "w" n=0 carries a deduplication id (BullMQ's `deduplication: { id }`).
  for (let i = 0; i < 10; i++) {
    await queue.add('w', { n: i }, i === 0 ? { deduplication: { id: 'w-zero' } } : {});
  }
  await queue.add('w-lifo', { n: 10 }, { lifo: true });
  const prios = [3, 1, 2, 1];
  for (let i = 0; i < prios.length; i++) {
    await queue.add('p', { n: 20 + i, priority: prios[i] }, { priority: prios[i], attempts: 3, backoff: { type: 'exponential', delay: 1000 } });
  }
  // BullMQ takes a delayed job's due time from this process's clock: the job's timestamp + delay.
  const d = await queue.add('d', { n: 30 }, { delay: 8000 });
  out.delayed_due_ms = d.timestamp + 8000;
  await queue.upsertJobScheduler('every-hour', { every: 3600000 }, { name: 'tick', data: { t: 1 } });
  await queue.upsertJobScheduler('cron-9', { pattern: '0 9 * * *', tz: 'Europe/Berlin' }, { name: 'cron', data: { t: 2 } });
  out.counts = await queue.getJobCounts();
  await queue.close();
  // `manual` is not closed: closing would release the lock; the process exits holding it.
  return out;
}

Promise.race([main(), timeout(60000, 'fixtures')]).then(
  (out) => { process.stdout.write(JSON.stringify(out) + '\n'); process.exit(0); },
  (err) => { console.error(err); process.exit(1); },
);
