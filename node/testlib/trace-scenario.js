'use strict';
// The tracing scenario of node/test/tracing.test.js, run in a child process whose NODE_PATH finds
// the OpenTelemetry packages (testlib/otel.js): spans read back from the SDK's in-memory exporter.
// Asserts as it goes (a failure exits non-zero with the assertion); prints "tracing ok" at the end.
//   node trace-scenario.js <redis url>
process.env.EMQ_GUARD = '1';

const assert = require('node:assert/strict');
const api = require('@opentelemetry/api');
const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');
const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks');
const { Queue, Worker, InvalidOption, tracing } = require('..');

api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
const exporter = new InMemorySpanExporter();
api.trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
const tracer = api.trace.getTracer('emq-tests');
const OWN = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

const named = (n) => exporter.getFinishedSpans().filter((s) => s.name === n);
const tp = (s) => `00-${s.spanContext().traceId}-${s.spanContext().spanId}-0${s.spanContext().traceFlags}`;
const parentOf = (s) => (s.parentSpanContext ? s.parentSpanContext.spanId : undefined);

async function until(what, check, limitMs = 20_000) {
  const end = Date.now() + limitMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function main(url) {
  assert.equal(tracing.enabled, true);
  const name = `trace-${process.pid}`;
  const q = await Queue.connect(url, name);
  const kids = await Queue.connect(url, `${name}-kids`);

  // An add in a request's span, and its two runs (the first fails).
  const id = await tracer.startActiveSpan('request', async (span) => {
    try {
      return await q.add('charge', { n: 1 }, { attempts: 2, backoff: 50 });
    } finally {
      span.end();
    }
  });
  const [request] = named('request');
  const [send] = named(`send ${name}`);
  assert.equal(send.kind, api.SpanKind.PRODUCER);
  assert.equal(parentOf(send), request.spanContext().spanId);
  assert.equal(send.attributes['messaging.system'], 'emq');
  assert.equal(send.attributes['messaging.destination.name'], name);
  assert.equal(send.attributes['messaging.operation.type'], 'send');
  assert.equal(send.attributes['messaging.message.id'], id);
  const stored = await q.get(id);
  assert.deepEqual(stored.options.trace, { traceparent: tp(send) });
  assert.deepEqual(stored.data, { n: 1 }, 'the data is untouched');

  const seen = [];
  const kidIds = [];
  const w = new Worker(q, async (job) => {
    seen.push([job.traceparent, api.trace.getSpanContext(api.context.active())]);
    if (job.name === 'spawn') {
      if (kidIds.length === 0) kidIds.push(await job.addChild(kids.name, 'kid', {}));
      return 'spawned';
    }
    if (job.name === 'charge' && job.attemptsMade === 0) throw new Error('card declined');
    return 'ok';
  });
  await until('the retry completes', async () => (await q.get(id)).state === 'completed');
  const runs = named(`process ${name}`).sort((a, b) => a.attributes['emq.job.attempt'] - b.attributes['emq.job.attempt']);
  assert.deepEqual(runs.map((r) => r.attributes['emq.job.attempt']), [1, 2]);
  assert.deepEqual(runs.map((r) => r.attributes['emq.job.outcome']), ['failed', 'completed']);
  runs.forEach((run, i) => {
    assert.equal(run.kind, api.SpanKind.CONSUMER);
    assert.equal(seen[i][0], tp(send), 'job.traceparent');
    assert.equal(seen[i][1].spanId, run.spanContext().spanId, 'the handler runs in the span');
    assert.equal(run.links.length, 1);
    assert.equal(run.links[0].context.spanId, send.spanContext().spanId);
    assert.equal(run.links[0].context.traceId, send.spanContext().traceId);
    assert.notEqual(run.spanContext().traceId, send.spanContext().traceId, 'linked, not a child');
    assert.equal(parentOf(run), undefined);
    assert.equal(run.attributes['messaging.message.id'], id);
    assert.equal(run.attributes['emq.job.name'], 'charge');
  });
  assert.equal(runs[0].status.code, api.SpanStatusCode.ERROR);
  assert.match(runs[0].status.message, /card declined/);
  assert.deepEqual(runs[0].events.map((e) => e.name), ['exception']);
  assert.notEqual(runs[1].status.code, api.SpanStatusCode.ERROR);

  // A bulk add is one span; a caller's own traceparent wins.
  exporter.reset();
  const ids = await q.addBulk([{ name: 'a', data: 1 }, { name: 'b', data: 2 }, { name: 'c', data: 3, opts: { traceparent: OWN } }]);
  const [bulk] = named(`send ${name}`);
  assert.equal(bulk.attributes['messaging.batch.message_count'], 3);
  const got = [];
  for (const i of ids) got.push((await q.get(i)).options.trace.traceparent);
  assert.deepEqual(got, [tp(bulk), tp(bulk), OWN]);

  // A child added by a running job carries the run's context.
  exporter.reset();
  await q.add('spawn', {});
  await until('a child is added', async () => kidIds.length === 1);
  await until('the spawner is waiting', async () => named(`process ${name}`).some((s) => s.attributes['emq.job.name'] === 'spawn'));
  const [spawnRun] = named(`process ${name}`).filter((s) => s.attributes['emq.job.name'] === 'spawn');
  assert.equal((await kids.get(kidIds[0])).options.trace.traceparent, tp(spawnRun));
  await w.close();

  // relation 'child': the run's span is the producer's child, in its trace.
  tracing.configure({ relation: 'child' });
  exporter.reset();
  const cq = await Queue.connect(url, `${name}-child`);
  const cid = await cq.add('x', 1);
  const cw = new Worker(cq, async () => 'done');
  await until('the child-relation job completes', async () => (await cq.get(cid)).state === 'completed');
  await cw.close();
  const [csend] = named(`send ${name}-child`);
  const [crun] = named(`process ${name}-child`);
  assert.equal(parentOf(crun), csend.spanContext().spanId);
  assert.equal(crun.spanContext().traceId, csend.spanContext().traceId);
  assert.equal(crun.links.length, 0);
  assert.throws(() => tracing.configure({ relation: 'sibling' }), InvalidOption);
  tracing.configure({ relation: 'link' });

  // A malformed context is refused and adds nothing.
  const bq = await Queue.connect(url, `${name}-bad`);
  for (const opts of [{ traceparent: '00-abc' }, { tracestate: 'a=b' }]) {
    await assert.rejects(bq.add('x', 1, opts), (e) => e instanceof InvalidOption && e.code === 'invalid_option');
  }
  const counts = await bq.counts();
  assert.equal(Object.values(counts).reduce((a, b) => a + b, 0), 0);

  for (const c of [q, kids, cq, bq]) await c.close();
  console.log('tracing ok');
}

main(process.argv[2]).then(
  () => process.exit(0),
  (e) => {
    console.error(e && e.stack ? e.stack : e);
    process.exit(1);
  },
);
