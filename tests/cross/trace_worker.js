'use strict';
// The Node side of the cross-language trace (bindings/uniffi/kotlin's TraceAcrossLanguagesTest runs
// it, with NODE_PATH finding the OpenTelemetry packages: node/testlib/otel.js): a worker on
// <queue> whose runs are children of the producer's span (relation 'child'); the first run of the
// job adds a child job to <child queue> and waits for it, the second completes. Prints one JSON
// line with its process spans (trace id, span id, parent span id, attempt) and the child's id.
//   node trace_worker.js <redis url> <queue> <child queue>
process.env.EMQ_GUARD = '1';

const api = require('@opentelemetry/api');
const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');
const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks');
const emq = require(process.env.EMQ_NODE_PACKAGE || require('path').join(__dirname, '..', '..', 'node'));

api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
const exporter = new InMemorySpanExporter();
api.trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
emq.tracing.configure({ relation: 'child' });

async function main(url, name, childQueue) {
  const q = await emq.Queue.connect(url, name);
  let childId = null;
  let jobId = null;
  const w = new emq.Worker(q, async (job) => {
    jobId = job.id;
    if (childId === null) {
      childId = await job.addChild(childQueue, 'invoice', { order: job.data.order });
      return 'waiting for the invoice';
    }
    return 'shipped';
  });
  const end = Date.now() + 60_000;
  for (;;) {
    if (jobId !== null && (await q.get(jobId)).state === 'completed') break;
    if (Date.now() > end) throw new Error('the job did not complete within 60 s');
    await new Promise((r) => setTimeout(r, 50));
  }
  await w.close();
  await q.close();
  const runs = exporter.getFinishedSpans().filter((s) => s.name === `process ${name}`).map((s) => ({
    trace_id: s.spanContext().traceId,
    span_id: s.spanContext().spanId,
    parent_id: s.parentSpanContext ? s.parentSpanContext.spanId : null,
    attempt: s.attributes['emq.job.attempt'],
    job_id: s.attributes['messaging.message.id'],
  }));
  console.log(JSON.stringify({ runs, child_id: childId, job_id: jobId }));
}

main(process.argv[2], process.argv[3], process.argv[4]).then(
  () => process.exit(0),
  (e) => {
    console.error(e && e.stack ? e.stack : e);
    process.exit(1);
  },
);
