'use strict';
// The datastore's refusals as their own error classes (issue 16, defect 5), not ScriptError.
process.env.EMQ_GUARD = '1';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const emq = require('..');
const { startServers, unique } = require('../testlib/harness');

let servers;
before(async () => {
  servers = await startServers();
});
after(async () => {
  if (servers) await servers.stop();
});

test('a wrong password is auth_failed, a database number out of range invalid_option', async () => {
  const host = servers.standalone.split('://')[1];
  await assert.rejects(emq.Queue.connect(`redis://nobody:wrong@${host}`, unique('errs')), (e) => {
    assert.ok(e instanceof emq.AuthFailed, e.stack);
    assert.equal(e.code, 'auth_failed');
    return true;
  });
  await assert.rejects(emq.Queue.connect(`${servers.standalone}/999`, unique('errs')), (e) => {
    assert.ok(e instanceof emq.InvalidOption, e.stack);
    assert.match(e.message, /database/);
    return true;
  });
  assert.ok(emq.errorCodes.includes('permission_denied'));
});
