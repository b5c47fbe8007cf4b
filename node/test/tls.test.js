'use strict';
// TLS with a private CA and mutual TLS (issue 16, defect 7), on the harness's TLS servers
// (`emq-harness up --tls --mtls`: ACL user emq/emq-secret, certificates from a throwaway CA).
process.env.EMQ_GUARD = '1';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const emq = require('..');
const { startServers, waitFor, unique } = require('../testlib/harness');

let servers;
before(async () => {
  servers = await startServers({ flags: ['--tls', '--mtls'] });
});
after(async () => {
  if (servers) await servers.stop();
});

test('a private CA as a path, PEM text or a Buffer; without it the server is not trusted', async () => {
  const { url, ca } = servers.tls;
  for (const caCert of [ca, fs.readFileSync(ca, 'utf8'), fs.readFileSync(ca)]) {
    const q = await emq.Queue.connect(url, unique('tls'), { caCert });
    const id = await q.add('t', { secure: true });
    assert.deepEqual((await q.get(id)).data, { secure: true });
    await q.close();
  }
  await assert.rejects(emq.Queue.connect(url, unique('tls')), (e) => {
    assert.ok(e instanceof emq.ServerUnavailable, e.stack);
    assert.match(e.message, /caCert|ca_cert/);
    return true;
  });
});

test('TLS options are checked: a certificate without its key, no PEM, a plain URL, unknown keys', async () => {
  const { url, ca, cert } = servers.tls;
  const bad = [
    [url, { caCert: ca, clientCert: cert }, /client_key/],
    [url, { caCert: Buffer.from('not a certificate') }, /ca_cert/],
    [url, { caCert: '/nonexistent/ca.pem' }, /ca_cert/],
    ['redis://127.0.0.1:1', { caCert: ca }, /rediss/],
    [url, { caCert: 42 }, /caCert/],
    [url, { ca }, /unknown/],
  ];
  for (const [u, opts, re] of bad) {
    await assert.rejects(emq.Queue.connect(u, unique('tls'), opts), (e) => {
      assert.ok(e instanceof emq.InvalidOption, `${JSON.stringify(opts)}: ${e.stack}`);
      assert.match(e.message, re);
      return true;
    });
  }
});

test('mutual TLS: refused without a client certificate, served with one', async () => {
  const { url, ca, cert, key } = servers.mtls;
  await assert.rejects(emq.Queue.connect(url, unique('mtls'), { caCert: ca }), (e) => {
    assert.ok(e instanceof emq.ServerUnavailable, e.stack);
    assert.match(e.message, /client_cert|clientCert/);
    return true;
  });
  const q = await emq.Queue.connect(url, unique('mtls'), { caCert: ca, clientCert: cert, clientKey: fs.readFileSync(key) });
  const id = await q.add('t', { mutual: true });
  const worker = new emq.Worker(q, async (job) => ({ echo: job.data }), { concurrency: 1 });
  try {
    await waitFor('the mTLS job', async () => (await q.get(id)).state === 'completed');
  } finally {
    await worker.close();
  }
  assert.deepEqual((await q.get(id)).result, { echo: { mutual: true } });
  await q.close();
});
