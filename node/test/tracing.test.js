'use strict';
// OpenTelemetry spans (node/src/tracing.ts) against a real server: the scenario
// (testlib/trace-scenario.js) runs in a child process that finds @opentelemetry/api and the SDK
// (testlib/otel.js installs them outside the package); this process, like an install without
// them, has tracing off and stores no trace context.
process.env.EMQ_GUARD = '1';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { execFile } = require('node:child_process');
const path = require('node:path');
const { Queue, Worker, tracing } = require('..');
const { startServers, waitFor, unique } = require('../testlib/harness');
const { otelNodePath } = require('../testlib/otel');

let servers;

before(async () => {
  servers = await startServers({ flags: ['--standalone'] });
});

after(async () => {
  if (servers) await servers.stop();
});

test('adds and runs make linked spans (in-memory exporter, in a child process)', async () => {
  const modules = otelNodePath();
  const out = await new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [path.join(__dirname, '..', 'testlib', 'trace-scenario.js'), servers.standalone],
      { env: { ...process.env, NODE_PATH: modules }, timeout: 120_000 },
      (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout)),
    );
  });
  assert.match(out, /tracing ok/);
});

test('without @opentelemetry/api nothing is traced or stored', async () => {
  assert.equal(tracing.enabled, false);
  const q = await Queue.connect(servers.standalone, unique('untraced'));
  try {
    const id = await q.add('x', 1);
    assert.equal((await q.get(id)).options.trace, undefined);
    const w = new Worker(q, async (job) => job.traceparent);
    await waitFor('the job completes', async () => (await q.get(id)).state === 'completed');
    await w.close();
    assert.equal((await q.get(id)).result, null);
  } finally {
    await q.close();
  }
});
