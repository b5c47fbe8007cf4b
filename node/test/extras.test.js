'use strict';
// The queue's extras through the Node binding, against real servers (standalone and a 3-master
// cluster from emq-harness), every script run under the core's undeclared-key guard: flows, job
// schedulers (every-N and cron), rate limits (per queue and per group) and global concurrency, the
// events subscriber, drain/clean/obliterate, dedup with a TTL,
// dedup/debounce, and the batched worker hand-off under mixed outcomes.
process.env.EMQ_GUARD = '1';

const { test } = require('node:test');
const assert = require('node:assert/strict');
const emq = require('..');
const { Queue, Worker, EmqError } = emq;
const { useServers, waitFor, unique } = require('../testlib/harness');

const h = useServers();

const connect = (topology, prefix) => h.connect(topology, prefix);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const FAST = { blockTimeout: 200 };

for (const topology of ['standalone', 'cluster']) {
  test(`a flow's parent runs after its children, across queues, and reads their results (${topology})`, async () => {
    const parents = await connect(topology, 'flow-parents');
    const kids = await connect(topology, 'flow-kids');
    const ids = await parents.addFlow({
      name: 'sum',
      data: { label: 'total' },
      children: [
        { name: 'square', data: { n: 3 } },
        { queue: kids.name, name: 'square', data: { n: 4 } },
        { queue: kids.name, name: 'flaky', data: {}, opts: { parentPolicy: 'ignore' } },
      ],
    });
    assert.equal(ids.queue, parents.name);
    assert.match(ids.id, /^j[0-9a-z]{15}$/);
    assert.deepEqual(ids.children.map((c) => c.queue), [parents.name, kids.name, kids.name]);
    assert.equal((await parents.get(ids.id)).state, 'waiting-children');

    let parentSaw = null;
    const handler = async (job) => {
      if (job.name === 'square') return job.data.n * job.data.n;
      if (job.name === 'flaky') throw new Error('child failed');
      parentSaw = await job.childrenResults();
      return Object.values(parentSaw).filter((v) => typeof v === 'number').reduce((a, b) => a + b, 0);
    };
    const w1 = new Worker(parents, handler, { concurrency: 2, ...FAST });
    const w2 = new Worker(kids, handler, { concurrency: 2, ...FAST });
    try {
      await waitFor('the parent to complete', async () => (await parents.get(ids.id)).state === 'completed');
    } finally {
      await w1.close();
      await w2.close();
    }
    const ref = (c) => `${c.queue}:${c.id}`;
    assert.equal(parentSaw[ref(ids.children[0])], 9);
    assert.equal(parentSaw[ref(ids.children[1])], 16);
    assert.equal(parentSaw[ref(ids.children[2])].failed.message, 'child failed');
    assert.equal((await parents.get(ids.id)).result, 25);
    assert.deepEqual(await parents.childrenResults(ids.id), parentSaw);
    assert.equal((await kids.get(ids.children[1].id)).parent, `${parents.name}:${ids.id}`);
  });

  test(`a child's failure fails its parent under the default policy (${topology})`, async () => {
    const q = await connect(topology, 'flow-fail');
    const ids = await q.addFlow({ name: 'parent', data: null, children: [{ name: 'bad', data: 1 }] });
    let parentRan = false;
    const w = new Worker(
      q,
      async (job) => {
        if (job.name === 'parent') parentRan = true;
        throw new Error('nope');
      },
      FAST,
    );
    try {
      await waitFor('the parent to fail', async () => (await q.get(ids.id)).state === 'failed');
    } finally {
      await w.close();
    }
    assert.equal(parentRan, false, 'the parent never ran');
    assert.equal((await q.get(ids.children[0].id)).state, 'failed');
  });

  test(`a job scheduler enqueues runs that a worker processes, up to its limit (${topology})`, async () => {
    const q = await connect(topology, 'sched');
    assert.equal(await q.upsertScheduler('tick', { every: 150, limit: 3, name: 'tick', data: { k: 1 }, opts: { attempts: 2 } }), true);
    assert.equal(await q.upsertScheduler('later', { every: 1000, firstAfter: 60_000, name: 'later' }), true);
    assert.equal(await q.upsertScheduler('later', { every: 2000, firstAfter: 60_000, name: 'later' }), false, 'a replace');
    const list = await q.schedulers();
    assert.deepEqual(list.map((s) => s.id), ['later', 'tick']);
    assert.equal(list[0].every, 2000);
    assert.ok(list[0].nextIn > 50_000, `nextIn ${list[0].nextIn}`);
    assert.equal(list[1].limit, 3);
    // The core's SchedulerView, in ms, with JavaScript's (camelCase) names.
    for (const s of list) {
      assert.deepEqual(Object.keys(s).sort(), ['count', 'cron', 'endsIn', 'every', 'id', 'limit', 'name', 'nextIn', 'tz']);
    }

    const runs = [];
    const w = new Worker(
      q,
      async (job) => {
        runs.push({ id: job.id, name: job.name, data: job.data, attempts: job.attempts, at: Date.now() });
        return null;
      },
      FAST,
    );
    try {
      await waitFor('three runs', async () => runs.length >= 3);
      await sleep(600); // no fourth run: the limit is 3
    } finally {
      await w.close();
    }
    assert.equal(runs.length, 3);
    assert.equal(new Set(runs.map((r) => r.id)).size, 3, 'each run is its own job');
    for (const r of runs) {
      assert.equal(r.name, 'tick');
      assert.deepEqual(r.data, { k: 1 });
      assert.equal(r.attempts, 2);
    }
    assert.ok(runs[2].at - runs[0].at >= 200, `runs spaced by ~150 ms: ${runs.map((r) => r.at - runs[0].at)}`);
    // A scheduler that reached its limit is gone.
    assert.deepEqual((await q.schedulers()).map((s) => s.id), ['later']);
    assert.equal(await q.removeScheduler('tick'), false);
    assert.equal(await q.removeScheduler('later'), true);
    assert.deepEqual(await q.schedulers(), []);
    await assert.rejects(q.upsertScheduler('x', { every: 0, name: 'x' }), (e) => e.code === 'invalid_option');
    await assert.rejects(q.upsertScheduler('x', { every: NaN, name: 'x' }), (e) => e.code === 'invalid_option');
    await assert.rejects(q.upsertScheduler('x', { every: 10, name: 'x', cron: '* * *' }), (e) => e.code === 'invalid_option');
  });

  test(`a rate limit spaces job starts; global concurrency caps jobs at once (${topology})`, async () => {
    const q = await connect(topology, 'limits');
    await q.setRateLimit({ max: 2, window: 400 });
    await q.addBulk(Array.from({ length: 6 }, (_, i) => ({ name: 'r', data: { i } })));
    const starts = [];
    let w = new Worker(
      q,
      async () => {
        starts.push(Date.now());
        return null;
      },
      { concurrency: 6, ...FAST },
    );
    try {
      await waitFor('six completions', async () => (await q.counts()).completed === 6);
    } finally {
      await w.close();
    }
    starts.sort((a, b) => a - b);
    const rel = starts.map((t) => t - starts[0]);
    assert.ok(rel[2] >= 300 && rel[4] - rel[2] >= 300, `two starts per 400 ms window: ${rel}`);
    await q.setRateLimit(null);
    await assert.rejects(q.setRateLimit({ max: 0, window: 100 }), (e) => e.code === 'invalid_option');
    await assert.rejects(q.setRateLimit({ max: 1 }), (e) => e.code === 'invalid_option');

    await q.setGlobalConcurrency(1);
    await q.addBulk(Array.from({ length: 4 }, (_, i) => ({ name: 'g', data: { i } })));
    let running = 0;
    let most = 0;
    w = new Worker(
      q,
      async () => {
        running += 1;
        most = Math.max(most, running);
        await sleep(60);
        running -= 1;
        return null;
      },
      { concurrency: 4, ...FAST },
    );
    try {
      await waitFor('four more completions', async () => (await q.counts()).completed === 10);
    } finally {
      await w.close();
    }
    assert.equal(most, 1, 'one job at a time under global concurrency 1');
    await q.setGlobalConcurrency(null);
    await assert.rejects(q.setGlobalConcurrency(0), (e) => e.code === 'invalid_option');
  });

  test(`the events subscriber sees a job's transitions in order; close ends a read at once (${topology})`, async () => {
    const q = await connect(topology, 'events');
    const stream = await q.events();
    const id = await q.add('e', { x: 1 });
    const w = new Worker(q, async () => 'done', FAST);
    const seen = [];
    try {
      const until = Date.now() + 20_000;
      for await (const ev of stream) {
        if (ev.jobId === id) seen.push(ev.kind);
        if (seen.includes('completed') || Date.now() > until) break;
      }
    } finally {
      await w.close();
    }
    assert.deepEqual(seen, ['added', 'active', 'completed']);
    assert.equal(stream.closed, true, 'leaving the loop closes the stream');
    assert.deepEqual(await stream.next(), []);

    const recent = await q.recentEvents(10);
    assert.deepEqual(
      recent.filter((e) => e.jobId === id).map((e) => e.kind),
      ['added', 'active', 'completed'],
    );
    assert.match(recent[0].streamId, /^\d+-\d+$/);

    const idle = await q.events();
    const t0 = Date.now();
    const pending = idle.next({ wait: 10_000 });
    await sleep(100);
    idle.close();
    assert.deepEqual(await pending, []);
    assert.ok(Date.now() - t0 < 5_000, 'close ended the blocked read');
  });
}

test('drain, clean, obliterate, retry, promote, changePriority, list, logs, metrics', async () => {
  const q = await connect('cluster', 'ops2');
  const waiting = await q.addBulk([{ name: 'a', data: 1 }, { name: 'b', data: 2 }, { name: 'c', data: 3, opts: { priority: 2 } }]);
  const later = await q.add('d', 4, { delay: 60_000 });
  assert.deepEqual((await q.list('waiting')).map((j) => j.id), waiting.slice(0, 2));
  assert.equal(await q.drain(), 3);
  assert.equal((await q.counts()).delayed, 1);
  assert.equal(await q.promote(later), true);
  assert.equal(await q.promote(later), false);
  assert.equal((await q.get(later)).state, 'waiting');
  const urgent = await q.add('e', 5, { delay: 60_000 });
  assert.equal(await q.changePriority(urgent, 3), true);
  assert.equal(await q.promote(urgent), true);
  assert.equal((await q.get(urgent)).state, 'prioritized', 'promoted with the priority it was given');
  assert.equal(await q.changePriority(later, 0), true, 'a waiting job without a priority stays');
  await assert.rejects(q.changePriority(urgent, -1), (e) => e.code === 'invalid_option');
  assert.equal(await q.drain({ delayed: true }), 2);

  const [ok, bad] = await q.addBulk([{ name: 'ok', data: null }, { name: 'bad', data: null }]);
  const w = new Worker(
    q,
    async (job) => {
      await job.log(`running ${job.name}`);
      if (job.name === 'bad') throw new Error('bad job');
      return 'fine';
    },
    FAST,
  );
  try {
    await waitFor('two outcomes', async () => {
      const c = await q.counts();
      return c.completed === 1 && c.failed === 1;
    });
  } finally {
    await w.close();
  }
  assert.deepEqual(await q.logs(ok), ['running ok']);
  assert.deepEqual((await q.list('failed')).map((j) => j.id), [bad]);
  const m = await q.metrics();
  assert.equal(m.counts.completed, 1);
  assert.equal(m.counts.failed, 1);
  assert.ok(m.added >= 6);
  // The latency histograms (the core's emq::latency): one completed run, its first-run wait.
  assert.equal(m.latencyBucketsMs.length, 16);
  assert.equal(m.run.counts.length, 17);
  assert.equal(m.run.counts.reduce((a, b) => a + b, 0), 1);
  assert.equal(m.wait.counts.reduce((a, b) => a + b, 0), 1);
  assert.equal(typeof m.run.sumMs, 'number');
  assert.equal(m.runPerMinute.map(([, h]) => h.counts.reduce((a, b) => a + b, 0)).reduce((a, b) => a + b, 0), 1);
  assert.equal(m.waitPerMinute.length >= 1, true);
  assert.equal(await q.retry(bad), true);
  assert.equal((await q.get(bad)).state, 'waiting');
  assert.equal(await q.retryFailed(), 0);
  assert.equal(await q.clean('completed', { grace: 0 }), 1);
  assert.equal(await q.get(ok), null);
  await assert.rejects(q.clean('waiting'), (e) => e.code === 'invalid_option');
  await assert.rejects(q.list('nope'), (e) => e.code === 'invalid_option');
  assert.equal(await q.obliterate(), 1);
  assert.equal(Object.values(await q.counts()).reduce((a, b) => a + b, 0), 0);
});

test('dedup keeps one job; debounce replaces the delayed holder\'s data', async () => {
  const q = await connect('standalone', 'debounce');
  const a = await q.add('d', { v: 1 }, { dedup: 'k', delay: 30_000, debounce: true });
  const b = await q.add('d', { v: 2 }, { dedup: 'k', delay: 30_000, debounce: true });
  assert.equal(a, b);
  const job = await q.get(a);
  assert.equal(job.state, 'delayed');
  assert.deepEqual(job.data, { v: 2 });
  assert.equal((await q.counts()).delayed, 1);
  await assert.rejects(q.add('d', {}, { debounce: true }), (e) => e.code === 'invalid_option');
  await assert.rejects(q.add('d', {}, { parentPolicy: 'maybe' }), (e) => e.code === 'invalid_option');
  const bulk = await q.addBulk([
    { name: 'x', data: 1, opts: { dedup: 'bulk-k' } },
    { name: 'x', data: 2, opts: { dedup: 'bulk-k' } },
  ]);
  assert.equal(bulk[0], bulk[1]);
});

test('the batched hand-off settles every job of mixed sync, async, thrown and rejected outcomes', async () => {
  const q = await connect('standalone', 'mixed');
  const n = 300;
  const ids = await q.addBulk(Array.from({ length: n }, (_, i) => ({ name: 'm', data: { i } })));
  const w = new Worker(
    q,
    (job) => {
      const i = job.data.i;
      switch (i % 4) {
        case 0:
          return i; // sync value
        case 1:
          return Promise.resolve().then(() => ({ twice: i * 2 })); // async value
        case 2:
          throw new EmqError('my_code', `sync throw ${i}`); // sync throw with a code
        default:
          return sleep(i % 7).then(() => Promise.reject(new Error(`rejected ${i}`)));
      }
    },
    { concurrency: 50, ...FAST },
  );
  try {
    await waitFor('all outcomes', async () => {
      const c = await q.counts();
      return c.completed + c.failed === n;
    });
  } finally {
    await w.close();
  }
  const c = await q.counts();
  assert.equal(c.completed, n / 2);
  assert.equal(c.failed, n / 2);
  for (const i of [0, 1, 2, 3, 297, 298, 299]) {
    const job = await q.get(ids[i]);
    switch (i % 4) {
      case 0:
        assert.equal(job.result, i);
        break;
      case 1:
        assert.deepEqual(job.result, { twice: i * 2 });
        break;
      case 2:
        assert.equal(job.failure.code, 'my_code');
        assert.equal(job.failure.message, `sync throw ${i}`);
        break;
      default:
        assert.equal(job.failure.message, `rejected ${i}`);
    }
  }
});

test('a promise that never settles keeps its job past the timeout (no retry overlaps it); close gives it back', async () => {
  const q = await connect('standalone', 'hang');
  const id = await q.add('hang', {}, { timeout: 300, attempts: 2 });
  let runs = 0;
  let reason = null;
  const w = new Worker(q, (job) => {
    runs += 1;
    job.signal.addEventListener('abort', () => (reason = job.signal.reason));
    return new Promise(() => {});
  }, FAST);
  let given;
  try {
    await waitFor('the timeout to abort the signal', async () => reason !== null, 10_000);
    assert.equal(reason.code, 'timeout');
    await sleep(700);
    // The handler ignores its signal: the run goes on, so the job is neither failed nor retried.
    assert.equal(runs, 1);
    assert.equal((await q.get(id)).state, 'active');
  } finally {
    given = await w.close({ timeout: 200 });
  }
  // The close's grace ended and the handler still ran: its job went back to waiting, uncounted.
  assert.equal(given, 1);
  const job = await q.get(id);
  assert.equal(job.state, 'waiting');
  assert.equal(job.attemptsMade, 0);
});

for (const topology of ['standalone', 'cluster']) {
  test(`a group rate limit holds one busy group while other groups flow (${topology})`, async () => {
    const q = await connect(topology, 'groups');
    await q.setGroupRateLimit({ max: 1, window: 400 });
    const busy = await q.addBulk(Array.from({ length: 4 }, (_, i) => ({ name: 'b', data: i, opts: { group: 'busy' } })));
    const others = await q.addBulk(Array.from({ length: 4 }, (_, i) => ({ name: 'o', data: i, opts: { group: `g${i}` } })));
    const w = new Worker(q, async () => null, { concurrency: 4, ...FAST });
    try {
      await waitFor('eight completions', async () => (await q.counts()).completed === 8);
    } finally {
      await w.close();
    }
    const started = async (ids) => Promise.all(ids.map(async (id) => (await q.get(id)).processedMs));
    const b = (await started(busy)).sort((x, y) => x - y);
    const o = await started(others);
    for (let i = 1; i < b.length; i++) {
      assert.ok(b[i] - b[i - 1] >= 400, `one start of the busy group per 400 ms window (server clock): ${b}`);
    }
    assert.ok(Math.max(...o) < b[b.length - 1], `the other groups did not wait behind it: ${o} vs ${b}`);
    await q.setGroupRateLimit(null);
    await assert.rejects(q.setGroupRateLimit({ max: 0, window: 100 }), (e) => e.code === 'invalid_option');
    await assert.rejects(q.add('x', 1, { group: '' }), (e) => e.code === 'invalid_option');
  });
}

test('a cron scheduler in a time zone is stored and listed; a dedup TTL hold outlives its job', async () => {
  const q = await connect('standalone', 'cron');
  assert.equal(await q.upsertScheduler('nightly', { cron: '0 3 * * *', tz: 'Europe/Berlin', name: 'report', data: { k: 1 } }), true);
  const listed = (await q.schedulers()).find((s) => s.id === 'nightly');
  assert.equal(listed.cron, '0 3 * * *');
  assert.equal(listed.tz, 'Europe/Berlin');
  assert.equal(listed.every, null);
  assert.ok(listed.nextIn > 0 && listed.nextIn <= 25 * 3600_000, `next run within a day: ${listed.nextIn}`);
  await assert.rejects(q.upsertScheduler('bad', { cron: '* * * * *', tz: 'Mars/Base', name: 'n' }), (e) => e.code === 'invalid_option');
  await assert.rejects(q.upsertScheduler('bad', { name: 'n' }), (e) => e.code === 'invalid_option');
  await assert.rejects(q.upsertScheduler('bad', { every: 10, cron: '* * * * *', name: 'n' }), (e) => e.code === 'invalid_option');
  assert.equal(await q.removeScheduler('nightly'), true);

  const first = await q.add('mail', 1, { dedup: 'welcome-7', dedupTtl: 60_000, removeOnComplete: true });
  const w = new Worker(q, async () => null, FAST);
  try {
    await waitFor('the job to complete and be removed', async () => (await q.get(first)) === null);
  } finally {
    await w.close();
  }
  assert.equal(await q.add('mail', 2, { dedup: 'welcome-7', dedupTtl: 60_000 }), first, 'held for its TTL');
  await assert.rejects(q.add('x', 1, { dedupTtl: 5 }), (e) => e.code === 'invalid_option');
});

test('a description reads back exactly, through add and addBulk, and is bounded', async () => {
  const q = await connect('standalone', 'described');
  const text = 'nightly import of account 7 — ünïcode, "quotes" and\nnewlines';
  const one = await q.add('import', 1, { description: text });
  const [two] = await q.addBulk([{ name: 'import', data: 2, opts: { description: text } }]);
  assert.equal((await q.get(one)).options.description, text);
  assert.equal((await q.get(two)).options.description, text);
  assert.equal((await q.get(await q.add('plain', 3))).options.description, undefined);
  await assert.rejects(q.add('import', 4, { description: 'x'.repeat(1025) }), (e) => e instanceof emq.InvalidOption && /description/.test(e.message));
  await assert.rejects(q.add('import', 5, { description: 5 }), (e) => e.code === 'invalid_option' && /description/.test(e.message));
  assert.equal((await q.counts()).waiting, 3);
});
