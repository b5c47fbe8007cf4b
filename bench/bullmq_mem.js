'use strict';
// Redis memory per waiting job for BullMQ (Node), the counterpart of emq-bench's `memory`
// scenario (the anchors do not measure it). Usage: node bullmq_mem.js OUT.json
// Needs the anchors' node_modules: ANCHORS_DIR (default /tmp/anchors).
// FLUSHALL, open a Queue (defaultJobOptions {removeOnComplete: true}; with MEM_TYPICAL=1 also
// attempts 3 and an exponential backoff of 1 s), read INFO memory
// used_memory, addBulk N_JOBS jobs `{i}` in chunks of 1000 (no worker), read used_memory again.
const fs = require('node:fs');
const path = require('node:path');
const anchors = process.env.ANCHORS_DIR || '/tmp/anchors';
const req = (m) => require(require.resolve(m, { paths: [anchors] }));
const { Queue } = req('bullmq');
const IORedis = req('ioredis');

const envInt = (name, dflt) => {
  const v = Number.parseInt(process.env[name] ?? '', 10);
  return Number.isFinite(v) && v > 0 ? v : dflt;
};
const port = envInt('REDIS_PORT', 6390);
const n = envInt('N_JOBS', 20000);
const reps = envInt('REPS', 1);
const connection = { host: '127.0.0.1', port };
// MEM_TYPICAL=1: the options BullMQ users typically set (emq-bench's `memory_typical`).
const defaultJobOptions = process.env.MEM_TYPICAL === '1'
  ? { removeOnComplete: true, attempts: 3, backoff: { type: 'exponential', delay: 1000 } }
  : { removeOnComplete: true };

async function usedMemory(admin) {
  const info = await admin.info('memory');
  return Number(info.match(/^used_memory:(\d+)/m)[1]);
}

async function main() {
  const out = process.argv[2];
  if (!out) throw new Error('usage: node bullmq_mem.js OUT.json');
  const admin = new IORedis({ ...connection, maxRetriesPerRequest: 1 });
  const result = { impl: 'bullmq-node', scenarios: { memory: [] }, errors: [] };
  try {
    for (let rep = 0; rep < reps; rep++) {
      await admin.flushall();
      const q = new Queue('bench-memory', { connection, defaultJobOptions });
      await q.waitUntilReady();
      const m0 = await usedMemory(admin);
      for (let start = 0; start < n; start += 1000) {
        const jobs = [];
        for (let i = start; i < Math.min(n, start + 1000); i++) jobs.push({ name: 'j', data: { i } });
        await q.addBulk(jobs);
      }
      const m1 = await usedMemory(admin);
      const waiting = await q.getWaitingCount();
      await q.close();
      if (waiting !== n) result.errors.push(`rep ${rep} memory: ${waiting} waiting, expected ${n}`);
      else result.scenarios.memory.push({ bytes_per_waiting_job: (m1 - m0) / n, used_memory_delta: m1 - m0 });
    }
    await admin.flushall();
  } finally {
    admin.disconnect();
  }
  fs.writeFileSync(out, JSON.stringify(result, null, 1));
  return result.errors.length ? 1 : 0;
}

main().then((c) => { process.exitCode = c; }).catch((e) => { console.error('bullmq_mem:', e); process.exitCode = 2; });
