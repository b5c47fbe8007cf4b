'use strict';
// Issue 30 item 5: a one-job `Queue.add` completed on the event loop's own socket
// (node/src/direct.ts, the core's queue/direct.rs), adds of separate turns pipelined on it up to
// its depth, and every way it falls back to the usual path with the same id: the script not
// loaded, the socket closed under it, a reply that does not come, a job the core does not take, a
// cluster.
process.env.EMQ_GUARD = '1';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const emq = require('..');
const direct = require('../dist/direct');
const { startServers, unique } = require('../testlib/harness');

let servers;
before(async () => {
  servers = await startServers();
});
after(async () => {
  if (servers) await servers.stop();
});

/** One command on a plain socket; its raw reply. */
function raw(url, ...args) {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const s = net.connect({ host: u.hostname, port: Number(u.port) }, () => {
      s.write(`*${args.length}\r\n` + args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join(''));
    });
    s.once('data', (d) => {
      s.destroy();
      resolve(d.toString());
    });
    s.once('error', reject);
  });
}

/** Adds until the direct socket is open (the first add opens it and goes the usual way). */
async function warm(q) {
  let i = 0;
  for (; i < 50 && !(q.direct && q.direct.conn && !q.direct.conn.broken); i++) {
    await q.add('warm', i);
    await new Promise((r) => setTimeout(r, 5));
  }
  assert.ok(q.direct.conn && !q.direct.conn.broken, 'the direct socket opened');
  warm.added = i;
  return q.direct.conn;
}

test('adds go direct and read back exactly; an existing id returns it; many at once each get their own id', async () => {
  const q = await emq.Queue.connect(servers.standalone, unique('direct'));
  const conn = await warm(q);
  const before = (await q.counts()).waiting;
  const pinned = q.mintId();
  const ids = [
    await q.add('plain', { n: 1, s: 'é\u2028' }),
    await q.add('opts', [1, 2.5, null], { attempts: 3, backoff: { type: 'fixed', delay: 2000 }, removeOnComplete: true }),
    await q.add('pinned', 'text', { id: pinned }),
  ];
  assert.equal(ids[2], pinned);
  assert.equal(await q.add('pinned', 'other', { id: pinned }), pinned);
  assert.ok(q.direct.conn === conn && !conn.broken && conn.waiting.length === 0);
  const jobs = await Promise.all(ids.map((id) => q.get(id)));
  assert.deepEqual(jobs.map((j) => j.name), ['plain', 'opts', 'pinned']);
  assert.deepEqual(jobs.map((j) => j.data), [{ n: 1, s: 'é\u2028' }, [1, 2.5, null], 'text']);
  assert.equal(jobs[1].attempts, 3);
  const many = await Promise.all(Array.from({ length: 300 }, (_, i) => q.add('many', { i })));
  assert.equal(new Set(many).size, 300);
  for (const i of [0, 150, 299]) assert.deepEqual((await q.get(many[i])).data, { i });
  assert.equal((await q.counts()).waiting, before + 303);
  await q.obliterate({ force: true });
  await q.close();
});

test('adds of separate turns while others are unanswered are pipelined on the direct socket, up to its depth', async () => {
  const q = await emq.Queue.connect(servers.standalone, unique('direct-pipe'));
  const conn = await warm(q);
  const native = q[Object.getOwnPropertySymbols(q)[0]];
  const seen = { direct: 0, usual: 0, deepest: 0 };
  const { addStart, addMany, directAdd } = native;
  native.directAdd = (...a) => {
    const call = directAdd.apply(native, a);
    if (call !== null) seen.direct += 1;
    return call;
  };
  native.addStart = (...a) => { seen.usual += 1; return addStart.apply(native, a); };
  native.addMany = (names, ...a) => { seen.usual += names.length; return addMany.call(native, names, ...a); };
  const before = (await q.counts()).waiting;
  // One add per turn of the event loop (as a web server's requests come), none awaited first,
  // while the server holds its replies back (a write pause of 300 ms), so they are unanswered.
  const turns = async (n, tag) => {
    assert.match(await raw(servers.standalone, 'CLIENT', 'PAUSE', '300', 'WRITE'), /^\+OK/);
    const adds = [];
    for (let i = 0; i < n; i++) {
      adds.push(q.add(tag, { i }));
      seen.deepest = Math.max(seen.deepest, conn.waiting.length);
      await new Promise((r) => setImmediate(r));
    }
    return Promise.all(adds);
  };
  const ids = await turns(40, 'pipe');
  assert.deepEqual([seen.direct, seen.usual], [40, 0], 'every add went direct');
  assert.ok(seen.deepest >= 20, `pipelined: ${seen.deepest} unanswered at once`);
  assert.equal(new Set(ids).size, 40);
  assert.deepEqual((await q.get(ids[39])).data, { i: 39 });
  // Past the depth, an add goes the usual way; each job is added once either way.
  direct.setDepth(2);
  try {
    seen.direct = 0;
    seen.deepest = 0;
    const more = await turns(40, 'deep');
    assert.equal(seen.deepest, 2, `${seen.deepest} unanswered at once`);
    assert.equal(seen.direct + seen.usual, 40);
    assert.ok(seen.usual >= 30, `${seen.usual} went the usual way`);
    assert.equal(new Set(more).size, 40);
  } finally {
    direct.setDepth(64);
  }
  assert.ok(!conn.broken);
  assert.equal((await q.counts()).waiting, before + 80);
  await q.obliterate({ force: true });
  await q.close();
});

test('a script not loaded, a socket closed under it and a reply that does not come fall back once with the same id', async () => {
  const q = await emq.Queue.connect(servers.standalone, unique('direct-fb'));
  const conn = await warm(q);
  const before = (await q.counts()).waiting;
  assert.match(await raw(servers.standalone, 'SCRIPT', 'FLUSH'), /^\+OK/);
  const a = await q.add('after flush', 2);
  assert.equal((await q.get(a)).data, 2);
  assert.ok(q.direct.conn === conn && !conn.broken, 'a refused call keeps the socket');
  assert.equal(await raw(servers.standalone, 'CLIENT', 'KILL', 'ADDR', `127.0.0.1:${conn.socket.localPort}`), ':1\r\n');
  const b = await q.add('after kill', 3);
  assert.equal((await q.get(b)).data, 3);
  assert.ok(conn.broken);
  const fresh = await warm(q);
  const warmed = warm.added;
  assert.notEqual(fresh, conn);
  direct.setReplyTimeoutMs(500);
  try {
    assert.match(await raw(servers.standalone, 'CLIENT', 'PAUSE', '2500', 'ALL'), /^\+OK/);
    const c = await q.add('paused', 4);
    assert.ok(fresh.broken, 'the reply did not come in time: the socket was given up');
    assert.equal((await q.get(c)).data, 4);
  } finally {
    direct.setReplyTimeoutMs(30000);
  }
  // Each job once: the three above and the second warm-up's.
  assert.equal((await q.counts()).waiting, before + 3 + warmed);
  await q.obliterate({ force: true });
  await q.close();
});

test('jobs the core does not take and a cluster go the usual way', async () => {
  const q = await emq.Queue.connect(servers.standalone, unique('direct-usual'));
  await warm(q);
  const d = await q.add('delayed', 1, { delay: 30000 });
  const p = await q.add('prio', 2, { priority: 1 });
  const k1 = await q.add('dedup', 3, { dedup: 'k' });
  const k2 = await q.add('dedup', 4, { dedup: 'k' });
  assert.equal(k1, k2);
  const c = await q.counts();
  assert.deepEqual([c.delayed, c.prioritized], [1, 1]);
  assert.equal((await q.get(d)).data, 1);
  assert.equal((await q.get(p)).data, 2);
  await assert.rejects(q.add('bad', 1, { attempts: 0 }), (e) => e instanceof emq.InvalidOption);
  await assert.rejects(q.add('bad', 1, { id: 'not-an-id' }), (e) => e.code === 'invalid_job_id');
  await q.obliterate({ force: true });
  await q.close();
  const cq = await emq.Queue.connect(servers.cluster, unique('direct-cluster'));
  const ids = [];
  for (let i = 0; i < 3; i++) ids.push(await cq.add('c', i));
  assert.deepEqual(await Promise.all(ids.map(async (id) => (await cq.get(id)).data)), [0, 1, 2]);
  assert.equal(cq.direct.conn, null);
  await cq.obliterate({ force: true });
  await cq.close();
});
