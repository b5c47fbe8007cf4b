'use strict';
// BullMQ (OSS, Node) side of the fairness benchmark (bench/fairness.sh): the starvation case.
// BullMQ OSS has no groups (they are a BullMQ Pro feature), so a queue is FIFO: this measures how
// many of A's jobs run before B's one job, and how long B waits. Usage: node bullmq_fairness.js OUT.json
// Needs the anchors' node_modules: ANCHORS_DIR (default /tmp/anchors).
//
// - starve_cold_c10: FAIR_STARVE_JOBS (100,000) jobs {g: 'A', i} queued (addBulk, chunks of 1,000),
//   then one job {g: 'B'} (add), then a Worker starts (concurrency 10).
// - starve_live_c10: the same jobs, the Worker started first; once FAIR_LIVE_AFTER (1,000) A jobs
//   have started, B is added.
// The processor numbers every start; a_started_before_b = starts before B's, ms_add_to_start =
// B's add called -> B's processor's first line. Queue defaultJobOptions {removeOnComplete: true},
// as the anchors'. FLUSHALL before each run; every wait is bounded by SCENARIO_TIMEOUT_S.
const fs = require('node:fs');
const { performance } = require('node:perf_hooks');
const anchors = process.env.ANCHORS_DIR || '/tmp/anchors';
const req = (m) => require(require.resolve(m, { paths: [anchors] }));
const { Queue, Worker } = req('bullmq');
const IORedis = req('ioredis');

const envInt = (name, dflt) => {
  const v = Number.parseInt(process.env[name] ?? '', 10);
  return Number.isFinite(v) && v > 0 ? v : dflt;
};
const port = envInt('REDIS_PORT', 6395);
const n = envInt('FAIR_STARVE_JOBS', 100000);
const liveAfter = envInt('FAIR_LIVE_AFTER', 1000);
const reps = envInt('REPS', 1);
const rep0 = Number.parseInt(process.env.FAIR_REP ?? '0', 10) || 0;
const timeoutMs = envInt('SCENARIO_TIMEOUT_S', 120) * 1000;
const connection = { host: '127.0.0.1', port };
const now = () => performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitFor(cond, what) {
  const end = now() + timeoutMs;
  while (!cond()) {
    if (now() > end) throw new Error(`timeout after ${timeoutMs} ms waiting for ${what}`);
    await sleep(1);
  }
}

async function starvation(admin, cold) {
  await admin.flushall();
  const name = cold ? 'fair-starve-cold' : 'fair-starve-live';
  const q = new Queue(name, { connection, defaultJobOptions: { removeOnComplete: true } });
  await q.waitUntilReady();
  let worker = null;
  try {
    const tLoad = now();
    for (let start = 0; start < n; start += 1000) {
      const jobs = [];
      for (let i = start; i < Math.min(n, start + 1000); i++) jobs.push({ name: 'a', data: { g: 'A', i } });
      await q.addBulk(jobs);
    }
    const loadS = (now() - tLoad) / 1000;
    let seq = 0;
    let b = null;
    const startWorker = () => new Worker(name, async (job) => {
      const t = now();
      const k = seq++;
      if (job.data.g === 'B' && !b) b = [k, t];
    }, { connection, concurrency: 10 });
    let seqAtAdd = 0;
    let tAdd;
    let tAdded;
    if (cold) {
      tAdd = now();
      await q.add('b', { g: 'B' });
      tAdded = now();
      worker = startWorker();
    } else {
      worker = startWorker();
      await waitFor(() => seq >= liveAfter, 'the first A jobs');
      seqAtAdd = seq;
      tAdd = now();
      await q.add('b', { g: 'B' });
      tAdded = now();
    }
    await waitFor(() => b !== null, "B's start");
    await worker.close();
    worker = null;
    return {
      a_jobs: n,
      a_started_before_b: b[0],
      started_after_add_before_b: b[0] - seqAtAdd,
      ms_add_to_start: b[1] - tAdd,
      b_add_rtt_ms: tAdded - tAdd,
      load_jobs_per_s: n / loadS,
    };
  } finally {
    if (worker) await worker.close(true);
    await q.close();
  }
}

async function main() {
  const out = process.argv[2];
  if (!out) throw new Error('usage: node bullmq_fairness.js OUT.jsonl');
  const admin = new IORedis({ ...connection, maxRetriesPerRequest: 1 });
  const lines = [];
  let errors = 0;
  try {
    for (let rep = rep0; rep < rep0 + reps; rep++) {
      for (const [scenario, cold] of [['starve_cold_c10', true], ['starve_live_c10', false]]) {
        const line = { impl: 'bullmq-node', scenario, side: 'fifo', rep };
        try {
          Object.assign(line, await starvation(admin, cold));
        } catch (e) {
          errors++;
          line.error = String(e && e.message ? e.message : e);
          console.error(`bullmq_fairness: rep ${rep} ${scenario}: ${line.error}`);
        }
        lines.push(JSON.stringify(line));
        console.error(`bullmq_fairness: ${lines[lines.length - 1]}`);
      }
    }
    await admin.flushall();
  } finally {
    admin.disconnect();
  }
  fs.writeFileSync(out, lines.map((l) => `${l}\n`).join(''));
  return errors ? 1 : 0;
}

main().then((c) => { process.exitCode = c; }).catch((e) => { console.error('bullmq_fairness:', e); process.exitCode = 2; });
