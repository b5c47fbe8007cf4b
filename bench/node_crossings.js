'use strict';
// Context switches per one-job add in Node (issue 30 item 3), for the package at EMQ_NODE_PKG:
// ROUNDS rounds of CONC adds started at once (Promise.all), and SEQ awaited adds one at a time;
// process.resourceUsage() (every thread of the process: the JS thread, tokio's, napi's) before
// and after each part. Usage: EMQ_NODE_PKG=dir REDIS_PORT=6391 node bench/node_crossings.js
const { Queue } = require(process.env.EMQ_NODE_PKG || '../node');
const port = Number(process.env.REDIS_PORT || 6391);
const rounds = Number(process.env.ROUNDS || 20);
const conc = Number(process.env.CONC || 1000);
const seq = Number(process.env.SEQ || 5000);

function usage() {
  const u = process.resourceUsage();
  return { vol: u.voluntaryContextSwitches, invol: u.involuntaryContextSwitches, cpu: u.userCPUTime + u.systemCPUTime };
}

function per(a, b, n) {
  return { voluntary: (b.vol - a.vol) / n, involuntary: (b.invol - a.invol) / n, cpu_us: (b.cpu - a.cpu) / n };
}

async function main() {
  const q = await Queue.connect(`redis://127.0.0.1:${port}`, `crossings-${process.pid}`);
  await q.add('warm', 0);
  let u0 = usage();
  for (let r = 0; r < rounds; r++) {
    await Promise.all(Array.from({ length: conc }, (_, i) => q.add('j', { i }, { removeOnComplete: true })));
  }
  let u1 = usage();
  const concurrent = per(u0, u1, rounds * conc);
  u0 = usage();
  for (let i = 0; i < seq; i++) await q.add('j', { i }, { removeOnComplete: true });
  u1 = usage();
  const sequential = per(u0, u1, seq);
  await q.obliterate({ force: true });
  await q.close();
  console.log(JSON.stringify({ concurrent, sequential }));
}

main().catch((e) => { console.error(e); process.exitCode = 1; });
