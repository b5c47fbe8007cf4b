// The Node side of the cross-language suite, driven by test_cross.py one command per process:
//   node node_helper.js add  '<urls JSON>' <queue> '<[{name, data}] JSON>'   → prints the ids (JSON)
//   node node_helper.js get  '<urls JSON>' <queue> '<[id] JSON>'             → prints the jobs (JSON)
//   node node_helper.js work '<urls JSON>' <queue> <fail name> <n>           → prints the stats (JSON)
// `work` runs the suite's echo handler: result { lang: 'node', id, name, data }; a job named
// <fail name> throws Error(data.message). It stops after n jobs handled (completed or failed).
// Loads the package from EMQ_NODE_PACKAGE. Every wait is bounded (DEADLINE_MS).
'use strict';
const emq = require(process.env.EMQ_NODE_PACKAGE);

const DEADLINE_MS = 60000;

function echo(failName) {
  return async (job) => {
    if (job.name === failName) {
      const msg = job.data && typeof job.data.message === 'string' ? job.data.message : `job ${job.id} failed on request`;
      throw new Error(msg);
    }
    return { lang: 'node', id: job.id, name: job.name, data: job.data };
  };
}

async function main() {
  const [cmd, urlsJson, queueName, ...rest] = process.argv.slice(2);
  const q = await emq.Queue.connect(JSON.parse(urlsJson), queueName);
  let out;
  if (cmd === 'add') {
    const jobs = JSON.parse(rest[0]);
    out = [];
    for (const j of jobs) out.push(await q.add(j.name, j.data));
  } else if (cmd === 'get') {
    out = [];
    for (const id of JSON.parse(rest[0])) out.push(await q.get(id));
  } else if (cmd === 'work') {
    const [failName, n] = [rest[0], Number(rest[1])];
    const w = new emq.Worker(q, echo(failName), { blockTimeout: 200 });
    const deadline = Date.now() + DEADLINE_MS;
    for (;;) {
      const s = w.stats();
      if (s.completed + s.failed >= n) break;
      if (Date.now() > deadline) throw new Error(`handled ${s.completed + s.failed} of ${n} jobs in ${DEADLINE_MS} ms`);
      await new Promise((r) => setTimeout(r, 20));
    }
    // Read before close: a closed worker's stats() reads all zeros.
    const s = w.stats();
    await w.close();
    out = { completed: s.completed, failed: s.failed };
  } else {
    throw new Error(`unknown command ${cmd}`);
  }
  await q.close();
  process.stdout.write(JSON.stringify(out) + '\n', () => process.exit(0));
}

main().catch((e) => {
  process.stderr.write(`node_helper: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
