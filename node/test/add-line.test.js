'use strict';
// The awaited one-job add's way back from the addon (bindings/node/src/add_line.rs,
// node/src/add_line.ts), against a real server the harness starts: each add settles with its own
// id or its own typed error; a pending add keeps the process alive until it settles, and a queue
// handle with nothing pending does not keep it alive (a script that adds and never closes exits).
process.env.EMQ_GUARD = '1';

const { test } = require('node:test');
const assert = require('node:assert/strict');
const path = require('path');
const fs = require('fs');
const os = require('os');
const { spawn } = require('child_process');
const { Queue, GroupFull, InvalidOption } = require('..');
const { useServers, unique } = require('../testlib/harness');

const h = useServers();

test('awaited adds one at a time each settle with their own id or typed error', async () => {
  const q = await Queue.connect(h.servers.standalone, unique('add-line'));
  h.track(q);
  await q.setGroupMaxWaiting(1, 'g');
  const first = await q.add('a', { n: 1 }, { group: 'g' });
  await assert.rejects(q.add('b', { n: 2 }, { group: 'g' }), (e) => e instanceof GroupFull && e.code === 'group_full');
  await assert.rejects(q.add('c', 3, { priority: -1 }), (e) => e instanceof InvalidOption && e.code === 'invalid_option');
  const next = await q.add('d', { n: 4 });
  assert.notEqual(first, next);
  assert.deepEqual((await q.get(first)).data, { n: 1 });
  assert.equal((await q.get(next)).name, 'd');
  const counts = await q.counts();
  assert.equal(counts.waiting, 2, 'the refused jobs were not added');
  // Many handles' lines at once, interleaved with awaited adds on each.
  const qs = await Promise.all([0, 1, 2].map(() => Queue.connect(h.servers.standalone, unique('add-line-many'))));
  h.track(...qs);
  for (let i = 0; i < 50; i++) {
    const ids = await Promise.all(qs.map((h, k) => h.add('j', { i, k })));
    for (let k = 0; k < qs.length; k++) assert.deepEqual((await qs[k].get(ids[k])).data, { i, k });
  }
});

function runScript(source) {
  // A plain node process (not one the test runner would treat as its own child), with no pipes:
  // a child whose stdout is a pipe it writes to can exit with a handle still referenced, so the
  // script writes what it saw to a file instead.
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT;
  const out = path.join(os.tmpdir(), `emq-add-line-${process.pid}-${Date.now()}.txt`);
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(process.execPath, ['-e', source, out], { env, stdio: 'ignore', timeout: 30000 });
    child.on('exit', (code, signal) => {
      let text = '';
      try {
        text = fs.readFileSync(out, 'utf8');
        fs.unlinkSync(out);
      } catch {}
      resolve({ code, signal, text, ms: Date.now() - started });
    });
  });
}

test('a pending add keeps the process alive; a handle with nothing pending lets it exit', async () => {
  const pkg = JSON.stringify(path.resolve(__dirname, '..'));
  const name = JSON.stringify(unique('add-line-exit'));
  const url = JSON.stringify(h.servers.standalone);
  // Nothing but the add holds the event loop: without the line's hold the process would exit
  // before the add settles (no outcome written); with a hold that is never let go, it would not
  // exit at all (killed at the timeout).
  const { code, signal, text, ms } = await runScript(
    `const fs = require('fs');
     const out = process.argv[process.argv.length - 1];
     const { Queue } = require(${pkg});
     Queue.connect(${url}, ${name}).then((q) => {
       q.add('j', { x: 1 }).then(
         (id) => fs.writeFileSync(out, 'added ' + id + '\\n'),
         (e) => fs.writeFileSync(out, 'failed ' + e + '\\n'),
       );
     }, (e) => fs.writeFileSync(out, 'connect failed ' + e + '\\n'));`,
  );
  assert.equal(signal, null, `the script exits on its own (not killed at the timeout, after ${ms} ms)`);
  assert.equal(code, 0, `the script exits cleanly: ${text}`);
  assert.match(text, /^added j[0-9a-z]{15}$/m, `the add settled before the process exited: ${text}`);
  const q = await Queue.connect(h.servers.standalone, JSON.parse(name));
  h.track(q);
  assert.equal((await q.counts()).waiting, 1);
});
