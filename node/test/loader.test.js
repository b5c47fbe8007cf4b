'use strict';
// The loader: a missing addon gives an error that says how to build it. No servers needed.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const path = require('path');
const { spawnSync } = require('child_process');

test('a missing addon explains how to build it', () => {
  const r = spawnSync(process.execPath, ['-e', `require(${JSON.stringify(path.join(__dirname, '..'))})`], {
    env: { ...process.env, EMQ_NATIVE_ADDON: path.join(__dirname, 'no-such-addon.node') },
    encoding: 'utf8',
    timeout: 30_000,
  });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /cargo build --release -p emq-node/);
  assert.match(r.stderr, /libemq_node\.so/);
  assert.match(r.stderr, /emq\.linux-x64-gnu\.node/);
});
