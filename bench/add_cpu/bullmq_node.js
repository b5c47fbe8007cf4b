'use strict';
// One side of bench/add_cpu.sh: BullMQ Node, `await queue.add('j', { i })` one at a time (the
// anchors' add_sequential), N timed adds after 200 untimed (bench/add_cpu.sh); prints client CPU and wall per add.
const path = require('path');
const { Queue } = require(path.join(process.env.BULLMQ_DIR || '/tmp/emq-bullmq', 'node_modules', 'bullmq'));
const [port, n] = [Number(process.argv[2]), Number(process.argv[3] || 5000)];
(async () => {
  const q = new Queue('add-cpu-bullmq', { connection: { host: '127.0.0.1', port } });
  for (let i = 0; i < 200; i++) await q.add('j', { i });
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await q.add('j', { i });
  const c = process.cpuUsage(c0);
  const wall = Number(process.hrtime.bigint() - t0) / 1000;
  console.log(JSON.stringify({ side: 'bullmq_node', cpu_us_per_add: (c.user + c.system) / n, wall_us_per_add: wall / n }));
  await q.obliterate({ force: true });
  await q.close();
})();
