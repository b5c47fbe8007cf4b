'use strict';
// The Node sides of bench/add_cpu.sh: `node node_side.js <bullmq|emq> PORT N`. BullMQ Node (the
// anchors' pin, installed in BULLMQ_DIR, default /tmp/emq-bullmq) or emq Node (node/), each
// `await queue.add('j', { i })` one at a time (the anchors' add_sequential), N timed adds after
// 200 untimed; prints client CPU (all threads) and wall time per add.
const path = require('path');
const [side, port, n] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4] || 5000)];

async function open() {
  if (side === 'bullmq') {
    const { Queue } = require(path.join(process.env.BULLMQ_DIR || '/tmp/emq-bullmq', 'node_modules', 'bullmq'));
    return new Queue('add-cpu-bullmq', { connection: { host: '127.0.0.1', port } });
  }
  if (side === 'emq') return require('../../node').Queue.connect(`redis://127.0.0.1:${port}`, 'add-cpu-node');
  throw new Error(`usage: node node_side.js <bullmq|emq> PORT N (got ${side})`);
}

(async () => {
  const q = await open();
  for (let i = 0; i < 200; i++) await q.add('j', { i });
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await q.add('j', { i });
  const c = process.cpuUsage(c0);
  const wall = Number(process.hrtime.bigint() - t0) / 1000;
  console.log(JSON.stringify({ side: `${side}_node`, cpu_us_per_add: (c.user + c.system) / n, wall_us_per_add: wall / n }));
  await q.obliterate({ force: true });
  await q.close();
})();
