'use strict';
// `emq-worker` (node/bin/emq-worker.js, the package's `bin`; issue 15 item 7) run as a subprocess
// against a real server from emq-harness: --help, usage errors, a CommonJS default export and an
// ES module's named `handler` completing jobs, failures logged, and SIGTERM mid-job leaving the job
// waiting with its attempts intact.
process.env.EMQ_GUARD = '1';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const path = require('path');
const fs = require('fs');
const os = require('os');
const { spawn } = require('child_process');
const { Queue } = require('..');
const { startServers, waitFor, unique } = require('../testlib/harness');

const BIN = path.join(__dirname, '..', 'bin', 'emq-worker.js');

let servers;
let dir;
const open = [];
const children = [];

before(async () => {
  servers = await startServers();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'emq-worker-cli-'));
  fs.writeFileSync(
    path.join(dir, 'double.cjs'),
    "module.exports = async (job) => {\n  if (job.name === 'bad') throw new Error('bad job ' + job.data.n);\n  return { doubled: job.data.n * 2 };\n};\n",
  );
  fs.writeFileSync(
    path.join(dir, 'named.mjs'),
    "export const other = 1;\nexport async function handler(job) {\n  return { esm: job.data.n + 1 };\n}\n",
  );
  fs.writeFileSync(
    path.join(dir, 'long.cjs'),
    [
      'exports.handler = (job) => new Promise((resolve, reject) => {',
      "  process.stdout.write('started ' + job.id + '\\n');",
      "  const t = setTimeout(() => resolve('ran to the end'), 20000);",
      "  job.signal.addEventListener('abort', () => { clearTimeout(t); reject(job.signal.reason); });",
      '});',
      '',
    ].join('\n'),
  );
  fs.writeFileSync(path.join(dir, 'none.cjs'), 'module.exports = { notAHandler: 1 };\n');
});

after(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const q of open.reverse()) await q.close().catch(() => {});
  if (servers) await servers.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

async function connect(prefix) {
  const q = await Queue.connect(servers.standalone, unique(prefix));
  open.push(q);
  return q;
}

/** Starts `emq-worker args...`; `.exited` resolves to the exit code (or signal), bounded at 30 s. */
function run(args, { env = {}, cwd = dir } = {}) {
  const { EMQ_URL, ...rest } = process.env;
  void EMQ_URL;
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd,
    env: { ...rest, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  child.out = '';
  child.err = '';
  child.stdout.on('data', (d) => (child.out += d));
  child.stderr.on('data', (d) => (child.err += d));
  child.exited = new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve('did not exit within 30 s');
    }, 30_000);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve(code ?? signal);
    });
  });
  return child;
}

test('--help prints the usage on stdout and exits 0', async () => {
  const c = run(['--help']);
  assert.equal(await c.exited, 0, c.err);
  for (const needle of ['Usage: emq-worker <module> --queue <name>', '--concurrency', '--shutdown-timeout', '--stalled-interval', 'EMQ_URL']) {
    assert.ok(c.out.includes(needle), `${needle} in\n${c.out}`);
  }
});

test('usage errors exit 2 with the reason on stderr', async () => {
  for (const [args, reason] of [
    [['./double.cjs'], /--queue is required/],
    [['--queue', 'q'], /name the handler module/],
    [['./double.cjs', '--queue', 'q', '--concurrency', 'lots'], /--concurrency takes a whole number/],
    [['./double.cjs', '--queue', 'q', '--no-such-flag'], /no-such-flag/],
    [['./missing.js', '--queue', 'q'], /cannot find the module/],
    [['./none.cjs', '--queue', 'q'], /exports no handler/],
    [['./named.mjs', '--queue', 'q', '--export', 'other'], /no function export 'other'/],
  ]) {
    const c = run(args);
    assert.equal(await c.exited, 2, `${args.join(' ')}: ${c.err}`);
    assert.match(c.err, reason, args.join(' '));
  }
  // A bound the core enforces comes back as the library's invalid_option.
  const q = await connect('cli-bound');
  const c = run(['./double.cjs', '--queue', q.name, '--url', servers.standalone, '--concurrency', '0']);
  assert.equal(await c.exited, 2, c.err);
  assert.match(c.err, /\[invalid_option\]/);
});

test('a CommonJS default export completes jobs; failures are logged; SIGTERM stops it cleanly', async () => {
  const q = await connect('cli-cjs');
  const ids = [];
  for (let n = 1; n <= 5; n++) ids.push(await q.add('double', { n }));
  const bad = await q.add('bad', { n: 9 }, { attempts: 1 });
  const c = run(['./double.cjs', '--queue', q.name, '--url', servers.standalone, '-c', '4', '--block-timeout', '200', '-v']);
  await waitFor('the worker to start', async () => c.err.includes('worker started'), 20_000);
  assert.match(c.err, /handler default of \.\/double\.cjs, concurrency 4/);
  for (let i = 0; i < ids.length; i++) {
    assert.deepEqual(await q.wait(ids[i], { timeout: 10_000 }), { doubled: (i + 1) * 2 });
  }
  await assert.rejects(q.wait(bad, { timeout: 10_000 }), (e) => e.code === 'handler_failed' && /bad job 9/.test(e.message));
  await waitFor('the failure to be logged', async () => c.err.includes(`job ${bad} (bad) failed`), 5_000);
  assert.ok(c.err.includes(`job ${ids[0]} (double) completed`), c.err);
  c.kill('SIGTERM');
  assert.equal(await c.exited, 0, c.err);
  assert.match(c.err, /SIGTERM: closing/);
  assert.match(c.err, /worker stopped: 5 completed, 1 failed/);
});

test("an ES module's named `handler`, the datastore from EMQ_URL", async () => {
  const q = await connect('cli-esm');
  const id = await q.add('inc', { n: 41 });
  const c = run(['./named.mjs', '--queue', q.name, '--block-timeout', '200'], { env: { EMQ_URL: servers.standalone } });
  assert.deepEqual(await q.wait(id, { timeout: 15_000 }), { esm: 42 });
  assert.match(c.err, /handler handler of \.\/named\.mjs/);
  c.kill('SIGINT');
  assert.equal(await c.exited, 0, c.err);
  assert.match(c.err, /worker stopped: 1 completed, 0 failed/);
});

test('SIGTERM mid-job: the worker exits 0 and the job is back in waiting with its attempts intact', async () => {
  const q = await connect('cli-sigterm');
  const id = await q.add('long', { n: 1 }, { attempts: 2 });
  const c = run(['./long.cjs', '--queue', q.name, '--url', servers.standalone, '--block-timeout', '200', '--shutdown-timeout', '300']);
  await waitFor('the handler to start the job', async () => c.out.includes(`started ${id}`), 20_000);
  assert.equal((await q.get(id)).state, 'active');
  c.kill('SIGTERM');
  assert.equal(await c.exited, 0, c.err);
  assert.match(c.err, /SIGTERM: closing; 1 running job\(s\) get up to 300 ms/);
  assert.match(c.err, /worker stopped: 0 completed, 0 failed/);
  const job = await q.get(id);
  assert.equal(job.state, 'waiting', c.err);
  assert.equal(job.attemptsMade, 0);
  assert.equal(job.attempts, 2);
});
