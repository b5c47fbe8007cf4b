// The Node worker of `emq demo`, embedded in the emq binary and run as `node -e <this>`.
//
// Loads the package at EMQ_NODE_PACKAGE, reads EMQ_DEMO_URLS (JSON list), EMQ_DEMO_QUEUES (JSON
// list) and EMQ_DEMO_CONCURRENCY, runs one emq.Worker per queue whose handler returns
// { lang: 'node', id: <job id> }, and talks to the demo over stdout, one line at a time:
//   ready                     every worker is running
//   done <n>                  jobs completed so far (about every 250 ms, when it changed)
//   final {"lang": ..., ...}  after stdin closed and every worker closed: counters and the ids run
// It stops when stdin reaches EOF (the demo closes it, or the demo died).
'use strict';
const emq = require(process.env.EMQ_NODE_PACKAGE);

async function main() {
  const urls = JSON.parse(process.env.EMQ_DEMO_URLS);
  const names = JSON.parse(process.env.EMQ_DEMO_QUEUES);
  const concurrency = Number(process.env.EMQ_DEMO_CONCURRENCY || '32');
  const ran = [];
  const handler = async (job) => {
    ran.push(job.id);
    return { lang: 'node', id: job.id };
  };
  const queues = [];
  for (const name of names) queues.push(await emq.Queue.connect(urls, name));
  const workers = queues.map((q) => new emq.Worker(q, handler, { concurrency, blockTimeout: 500 }));
  process.stdout.write('ready\n');

  let last = -1;
  const report = () => {
    const completed = workers.reduce((n, w) => n + w.stats().completed, 0);
    if (completed !== last) {
      last = completed;
      process.stdout.write(`done ${completed}\n`);
    }
  };
  const timer = setInterval(report, 250);
  await new Promise((resolve) => {
    process.stdin.on('end', resolve);
    process.stdin.on('error', resolve);
    process.stdin.resume();
  });
  clearInterval(timer);
  report();

  for (const w of workers) await w.close();
  const stats = workers.map((w) => w.stats());
  for (const q of queues) await q.close();
  const final = {
    lang: 'node',
    completed: stats.reduce((n, s) => n + s.completed, 0),
    failed: stats.reduce((n, s) => n + s.failed, 0),
    runs: ran.length,
    ids: ran,
  };
  process.stdout.write(`final ${JSON.stringify(final)}\n`, () => process.exit(0));
}

main().catch((e) => {
  process.stderr.write(`node demo worker: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
