'use strict';
// Queue.migrateFromBullmq through the Node binding, on a real server: a BullMQ-shaped source queue
// (written with redis-cli, the keys BullMQ writes for waiting jobs) is copied with its data exact;
// a dry run writes nothing; a second run copies nothing twice; bad options are invalid_option.
process.env.EMQ_GUARD = '1';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('child_process');
const { Queue } = require('..');
const { startServers, unique } = require('../testlib/harness');

let servers;

before(async () => {
  servers = await startServers();
});

after(async () => {
  if (servers) await servers.stop();
});

function bullmqSource(url, prefix, queue, n) {
  for (let i = 1; i <= n; i++) {
    execFileSync('redis-cli', ['-u', url, 'HSET', `${prefix}:${queue}:${i}`, 'name', `job-${i}`,
      'data', JSON.stringify({ n: i }), 'opts', JSON.stringify({ attempts: 3 }),
      'timestamp', '1700000000000', 'atm', '0'], { timeout: 10000 });
    execFileSync('redis-cli', ['-u', url, 'LPUSH', `${prefix}:${queue}:wait`, String(i)], { timeout: 10000 });
  }
}

const written = (report, state) => report.states.filter((s) => s.state === state).reduce((a, s) => a + s.written, 0);

test('a BullMQ queue is copied once, data exact', async () => {
  const name = unique('mig');
  const src = `${name}-src`;
  bullmqSource(servers.standalone, 'bull', src, 3);
  const q = await Queue.connect(servers.standalone, name);
  try {
    const dry = await q.migrateFromBullmq(src, { dryRun: true });
    assert.equal(dry.dry_run, true);
    assert.equal(written(dry, 'wait'), 3);
    assert.equal((await q.counts()).waiting, 0, 'the dry run wrote jobs');
    const report = await q.migrateFromBullmq(src);
    assert.equal(written(report, 'wait'), 3);
    const jobs = await q.list('waiting', { limit: 10 });
    assert.deepEqual(jobs.map((j) => [j.name, j.data]).sort(), [['job-1', { n: 1 }], ['job-2', { n: 2 }], ['job-3', { n: 3 }]]);
    const again = await q.migrateFromBullmq(src, { fromPrefix: 'bull' });
    assert.equal(written(again, 'wait'), 0);
    await assert.rejects(q.migrateFromBullmq(src, { fromPrefx: 'bull' }), (e) => e.code === 'invalid_option');
    await assert.rejects(q.migrateFromBullmq(src, { fromPrefix: '' }), (e) => e.code === 'invalid_option');
  } finally {
    await q.obliterate({ force: true });
    await q.close();
  }
});
