// OpenTelemetry spans for emq's jobs, with `@opentelemetry/api` when the application has it
// installed (an optional peer dependency); without it every function here does nothing and costs
// one check.
//
// - A producer span per `queue.add` (`send <queue>`, kind PRODUCER), one per `addBulk` / `addFlow`
//   call (with `messaging.batch.message_count`); the job keeps that span's W3C context
//   (`traceparent`, `tracestate`) in its own record (its options, never its data). A caller's own
//   `traceparent` option wins; with no tracer provider registered, nothing is created or stored.
// - A consumer span per run (`process <queue>`, kind CONSUMER) around the handler, with the
//   attempt, the outcome and the error. By default it links to the producer's span;
//   `tracing.configure({ relation: 'child' })` makes that span its parent instead.
// - Children a running job adds (`job.addChild`) carry the consumer span's context.
// Attributes follow OpenTelemetry's messaging conventions (`messaging.system` = "emq",
// `messaging.destination.name`, `messaging.operation.name` / `.type`, `messaging.message.id`) and
// add `emq.job.name`, `emq.job.attempt`, `emq.job.outcome`. The W3C carrier is written and read
// here (no global propagator needed); the core checks it.

import { emqError } from './errors';

// The API's shape as used here (the package is optional, so its types are not imported).
interface SpanContext { traceId: string; spanId: string; traceFlags: number; isRemote?: boolean; traceState?: { serialize(): string } }
export interface Span {
  spanContext(): SpanContext;
  setAttribute(k: string, v: unknown): void;
  recordException(e: unknown): void;
  setStatus(s: { code: number; message?: string }): void;
  end(): void;
}
interface Api {
  trace: {
    getTracer(name: string, version?: string): {
      startActiveSpan<R>(name: string, opts: object, ctx: unknown, fn: (span: Span) => R): R;
      startSpan(name: string, opts: object, ctx: unknown): Span;
    };
    getSpanContext(ctx: unknown): SpanContext | undefined;
    setSpanContext(ctx: unknown, sc: SpanContext): unknown;
  };
  context: { active(): unknown };
  createTraceState?(s: string): unknown;
  SpanKind: { PRODUCER: number; CONSUMER: number };
  SpanStatusCode: { ERROR: number };
  ROOT_CONTEXT: unknown;
}

function load(): Api | null {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require('@opentelemetry/api') as Api;
  } catch {
    return null;
  }
}

const api: Api | null = load();
const SYSTEM = 'emq';
const VERSION: string = (() => {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return String(require('../package.json').version);
  } catch {
    return '';
  }
})();
let relation: 'link' | 'child' = 'link';

/** Whether `@opentelemetry/api` is installed (the callers' one check). */
export const ENABLED = api !== null;

/** How a run's span relates to the span that added its job: `'link'` (the default) or `'child'`. */
export function configure(opts: { relation?: 'link' | 'child' }): void {
  const r = opts && opts.relation !== undefined ? opts.relation : 'link';
  if (r !== 'link' && r !== 'child') {
    throw emqError('invalid_option', `relation must be "link" or "child", got ${JSON.stringify(r)}`);
  }
  relation = r;
}

// One tracer for the process: the API's proxy finds a provider registered later by itself.
let cachedTracer: ReturnType<Api['trace']['getTracer']> | null = null;
function tracer() {
  if (cachedTracer === null) cachedTracer = (api as Api).trace.getTracer('emq', VERSION);
  return cachedTracer;
}

/**
 * `opts` with the W3C context of `span` (a producer span), or else of the active span, added,
 * unless the caller gave one (or none records).
 */
export function inject<O extends object>(opts: O | undefined | null, span?: Span): O | undefined {
  if (api === null) return opts ?? undefined;
  const o = (opts ?? {}) as Record<string, unknown>;
  if (o.traceparent !== undefined || o.tracestate !== undefined) return opts ?? undefined;
  const sc = span !== undefined ? span.spanContext() : api.trace.getSpanContext(api.context.active());
  if (!sc || !/^[0-9a-f]{32}$/.test(sc.traceId) || /^0+$/.test(sc.traceId) || /^0+$/.test(sc.spanId)) {
    return opts ?? undefined;
  }
  const out: Record<string, unknown> = { ...o, traceparent: `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 0xff).toString(16).padStart(2, '0')}` };
  const state = sc.traceState ? sc.traceState.serialize() : '';
  if (state) out.tracestate = state;
  return out as O;
}

/**
 * Runs `fn` with a `send <queue>` span (`count`: a bulk call's jobs), a child of the caller's active
 * span, handed to `fn` to stamp the jobs with (`inject(opts, span)`); `idOf` names the job added.
 * The span is not made active around `fn` (nothing in an add starts spans of its own), which
 * saves a context switch per add.
 */
export async function producer<R>(queue: string, count: number | undefined, fn: (span: Span) => Promise<R>, idOf?: (r: R) => string): Promise<R> {
  const a = api as Api;
  const attributes: Record<string, unknown> = {
    'messaging.system': SYSTEM,
    'messaging.destination.name': queue,
    'messaging.operation.name': 'send',
    'messaging.operation.type': 'send',
  };
  if (count !== undefined) attributes['messaging.batch.message_count'] = count;
  const span = tracer().startSpan(`send ${queue}`, { kind: a.SpanKind.PRODUCER, attributes }, a.context.active());
  try {
    const r = await fn(span);
    if (idOf) span.setAttribute('messaging.message.id', idOf(r));
    return r;
  } catch (e) {
    span.recordException(e as Error);
    span.setStatus({ code: a.SpanStatusCode.ERROR, message: String((e as Error)?.message ?? e) });
    throw e;
  } finally {
    span.end();
  }
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The job's W3C context as a remote span context, or undefined. */
function remote(traceparent: string | null, tracestate: string | null): SpanContext | undefined {
  const m = traceparent ? TRACEPARENT.exec(traceparent) : null;
  if (!m) return undefined;
  const sc: SpanContext = { traceId: m[1], spanId: m[2], traceFlags: parseInt(m[3], 16), isRemote: true };
  if (tracestate && api && api.createTraceState) sc.traceState = api.createTraceState(tracestate) as { serialize(): string };
  return sc;
}

/** The job fields a run's span reads. */
export interface Traced { id: string; name: string; attemptsMade: number; traceparent: string | null; tracestate: string | null }

/**
 * Runs `fn` (the handler on `job`) in a `process <queue>` span linked to (or, under
 * `relation: 'child'`, a child of) the span that added the job; ends it when the handler's
 * promise settles, recording an error.
 */
export function consumer<R>(queue: string, job: Traced, fn: () => R): R {
  const a = api as Api;
  const sc = remote(job.traceparent, job.tracestate);
  const attributes = {
    'messaging.system': SYSTEM,
    'messaging.destination.name': queue,
    'messaging.operation.name': 'process',
    'messaging.operation.type': 'process',
    'messaging.message.id': job.id,
    'emq.job.name': job.name,
    'emq.job.attempt': job.attemptsMade + 1,
  };
  const child = sc !== undefined && relation === 'child';
  const parent = child ? a.trace.setSpanContext(a.ROOT_CONTEXT, sc) : a.context.active();
  const links = sc !== undefined && !child ? [{ context: sc }] : [];
  return tracer().startActiveSpan(`process ${queue}`, { kind: a.SpanKind.CONSUMER, attributes, links, root: !child }, parent, (span) => {
    const failed = (e: unknown) => {
      span.setAttribute('emq.job.outcome', 'failed');
      span.recordException(e as Error);
      span.setStatus({ code: a.SpanStatusCode.ERROR, message: String((e as Error)?.message ?? e) });
      span.end();
    };
    let r: R;
    try {
      r = fn();
    } catch (e) {
      failed(e);
      throw e;
    }
    if (r !== null && (typeof r === 'object' || typeof r === 'function') && typeof (r as { then?: unknown }).then === 'function') {
      return Promise.resolve(r).then(
        (v) => {
          span.setAttribute('emq.job.outcome', 'completed');
          span.end();
          return v;
        },
        (e) => {
          failed(e);
          throw e;
        },
      ) as R;
    }
    span.setAttribute('emq.job.outcome', 'completed');
    span.end();
    return r;
  });
}

/** The `tracing` export: `tracing.configure({ relation })`, `tracing.enabled`. */
export const tracing = {
  configure,
  get enabled(): boolean {
    return ENABLED;
  },
};
