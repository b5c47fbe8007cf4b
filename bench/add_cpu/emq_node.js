'use strict';
// One side of bench/add_cpu.sh: emq Node, `await queue.add('j', { i })` one at a time.
const { Queue } = require('../../node');
const [port, n] = [Number(process.argv[2]), Number(process.argv[3] || 5000)];
(async () => {
  const q = await Queue.connect(`redis://127.0.0.1:${port}`, 'add-cpu-node');
  for (let i = 0; i < 200; i++) await q.add('j', { i });
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await q.add('j', { i });
  const c = process.cpuUsage(c0);
  const wall = Number(process.hrtime.bigint() - t0) / 1000;
  console.log(JSON.stringify({ side: 'emq_node', cpu_us_per_add: (c.user + c.system) / n, wall_us_per_add: wall / n }));
  await q.obliterate({ force: true });
  await q.close();
})();
