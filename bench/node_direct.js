'use strict';
// Issue 30 item 5 in Node: client CPU of an awaited one-job add with and without the crossing to
// the addon's threads. N awaited adds one at a time per side, REPS repetitions alternating which
// side goes first, one process: `hop` is `queue.add` with direct adds off on its handle (the path
// before: the addon's add line, a threadsafe function back), `direct` is `queue.add` as shipped
// (node/src/direct.ts: the core builds the call, the event loop's own socket carries it).
// process.cpuUsage() covers every thread of the process. Prints one JSON line per side and
// repetition, then the medians. Usage: node bench/node_direct.js redis://127.0.0.1:PORT
const { Queue } = require('../node');

const URL = process.argv[2] || 'redis://127.0.0.1:6391';
const N = Number(process.argv[3] || 5000);
const REPS = 5;

async function run(q, side) {
  for (let i = 0; i < 200; i++) await q.add('j', { i }, { removeOnComplete: true });
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) await q.add('j', { i }, { removeOnComplete: true });
  const c = process.cpuUsage(c0);
  const wall = Number(process.hrtime.bigint() - t0) / 1000;
  return { side, cpu_us_per_add: (c.user + c.system) / N, wall_us_per_add: wall / N };
}

function median(v) {
  const s = [...v].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

(async () => {
  const direct = await Queue.connect(URL, 'node-direct');
  const hop = await Queue.connect(URL, 'node-direct');
  hop.direct = { add: () => null, close() {} }; // direct adds off on this handle
  const rows = [];
  for (let rep = 0; rep < REPS; rep++) {
    const sides = rep % 2 === 0 ? ['hop', 'direct'] : ['direct', 'hop'];
    for (const side of sides) {
      const row = { rep, ...(await run(side === 'hop' ? hop : direct, side)) };
      rows.push(row);
      console.log(JSON.stringify(row));
    }
  }
  const counts = await direct.counts();
  console.log(JSON.stringify({ waiting: counts.waiting, expected: REPS * 2 * (N + 200) }));
  for (const key of ['cpu_us_per_add', 'wall_us_per_add']) {
    for (const side of ['hop', 'direct']) {
      const v = rows.filter((r) => r.side === side).map((r) => r[key]);
      console.log(`${side} ${key}: median ${median(v).toFixed(1)} [${Math.min(...v).toFixed(1)}-${Math.max(...v).toFixed(1)}]`);
    }
    const h = rows.filter((r) => r.side === 'hop');
    const d = rows.filter((r) => r.side === 'direct');
    const saved = h.map((r, i) => r[key] - d[i][key]);
    console.log(`saved ${key} (hop - direct, per repetition): median ${median(saved).toFixed(1)} [${Math.min(...saved).toFixed(1)}-${Math.max(...saved).toFixed(1)}]`);
  }
  await direct.obliterate({ force: true });
  await direct.close();
  await hop.close();
})();
