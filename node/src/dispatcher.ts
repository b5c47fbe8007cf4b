// The worker's dispatcher: the addon hands jobs over in batches (one JSON array per wake-up) and
// the dispatcher runs the handler on each, settling each back through the native worker.

import { DelayedError, JobInterrupted, UnrecoverableError, emqError } from './errors';
import type { NativeWorker } from './loader';
import { given } from './payload';
import { ENABLED as tracingOn, consumer } from './tracing';
import type { Queue } from './queue';
import type { ActiveJob, Handler, JobId, JobOptions, Json } from './types';

/** A job handed to the handler and not settled yet. */
interface Live {
  job: ActiveJob | null;
  ctrl: AbortController | null;
  reason: JobInterrupted | null;
}

/** What the dispatcher shares with its Worker. */
export interface Slot {
  native: NativeWorker | null;
  live: Map<number, Live> | null;
  abortAll: ((code: 'shutdown', message: string) => void) | null;
  mask: number;
  emit(event: string, ...args: unknown[]): void;
  error(e: unknown): void;
  progress(seq: number, id: string, p: unknown, queue: string | undefined): Promise<void>;
  addChild(seq: number, queue: string, name: string, data: unknown, opts: JobOptions | undefined): Promise<JobId>;
  events(batchText: string): void;
}

/** A job as the addon hands it over (`{ s, q, id, name, data, attemptsMade, attempts, fence }`), or an abort. */
interface Entry {
  s: number;
  /** The job's queue, by name. */
  q?: string;
  abort?: 'cancelled' | 'timeout' | 'shutdown';
  reason?: string;
  id: string;
  name: string;
  data: unknown;
  attemptsMade: number;
  attempts: number;
  fence: number;
  /** A job of a batch: its batch (core/src/batch/). */
  batch?: { queue: string; id: string };
  /** The W3C trace context it was added in (core/src/trace.rs). */
  trace?: { traceparent: string; tracestate?: string };
}

/** The failure of a job as the native worker records it, from whatever the handler threw. */
function failure(e: unknown): { message: string; stack?: string; code?: string; unrecoverable?: boolean } {
  const isObj = e !== null && (typeof e === 'object' || typeof e === 'function');
  const o = e as { message?: unknown; stack?: unknown; code?: unknown; unrecoverable?: unknown };
  let message: string;
  if (isObj && typeof o.message === 'string') message = o.message;
  else {
    try {
      message = String(e);
    } catch (_) {
      message = 'the handler failed';
    }
  }
  const out: { message: string; stack?: string; code?: string; unrecoverable?: boolean } = { message };
  if (isObj && typeof o.stack === 'string') out.stack = o.stack;
  if (isObj && typeof o.code === 'string' && o.code) out.code = o.code;
  if (e instanceof UnrecoverableError || (isObj && o.unrecoverable === true)) out.unrecoverable = true;
  return out;
}

/**
 * The dispatcher: the addon calls it with a JSON array of entries (one call per wake-up, as many
 * as arrived since the last one): jobs, and aborts (`{ s, abort, reason }`: the core interrupted
 * the run of job `s`). It runs `handler` on each job and settles each through the native worker
 * (whose settling calls cannot fail): successes are gathered and sent in one `complete` call per
 * microtask checkpoint, failures one `fail` call each. An abort aborts the job's `signal`; the
 * core ends the run only once the handler's promise has settled. It never throws, and no outcome
 * ever rejects: a synchronous throw, a rejection or an unserialisable result fails that job only.
 */
export function dispatcher(handler: Handler, queues: Queue[], slot: Slot): (batchText: string) => void {
  // A job's queue, by the name the addon sends (`q`); the first when absent.
  const byName = new Map(queues.map((q) => [q.name, q]));
  const queueOf = (name: string | undefined): Queue => (name !== undefined && byName.get(name)) || queues[0];
  let seqs: number[] = [];
  let results: (string | null)[] = [];
  let flushQueued = false;
  // Jobs handed to the handler and not settled yet, by sequence number.
  const live = new Map<number, Live>();
  slot.live = live;
  const worker = (): NativeWorker => slot.native as NativeWorker;
  const flush = (): void => {
    flushQueued = false;
    const s = seqs;
    const r = results;
    seqs = [];
    results = [];
    worker().complete(s, r);
  };
  const fail = (seq: number, e: unknown): void => {
    live.delete(seq);
    if (e instanceof DelayedError && typeof e.delay === 'number') {
      // The number is validated by the core (invalid_option, naming its bounds).
      worker().delay(seq, e.delay, e.countAttempt === true);
      return;
    }
    if (e instanceof DelayedError) {
      // Not a number: the job fails as the core fails a bad delay (invalid_option), naming the value.
      const why = `DelayedError: the delay must be a number of milliseconds, got ${given(e.delay)}`;
      worker().fail(seq, why, 'invalid_option', e.stack ?? null, false);
      return;
    }
    const f = failure(e);
    worker().fail(seq, f.message, f.code ?? null, f.stack ?? null, f.unrecoverable === true);
    // The 'failed' event comes from the core once the failure is recorded (workerEvents).
  };
  const ok = (seq: number, value: unknown): void => {
    let text: string | null = null;
    if (value !== undefined && value !== null) {
      try {
        text = JSON.stringify(value) ?? null;
      } catch (e) {
        fail(seq, e);
        return;
      }
    }
    live.delete(seq);
    seqs.push(seq);
    results.push(text);
    if (!flushQueued) {
      flushQueued = true;
      queueMicrotask(flush);
    }
    // 'completed' (or, for an interrupted run, 'failed') comes from the core once recorded.
  };
  const abort = (st: Live, code: 'cancelled' | 'timeout' | 'shutdown', message: string): void => {
    if (st.reason) return;
    st.reason = new JobInterrupted(code, message);
    if (st.ctrl) st.ctrl.abort(st.reason);
  };
  slot.abortAll = (code, message) => {
    for (const st of live.values()) abort(st, code, message);
  };
  return (batchText: string) => {
    let jobs: Entry[];
    try {
      jobs = JSON.parse(batchText);
    } catch (e) {
      // Never produced by the addon; its jobs would time out rather than crash the process.
      slot.error(emqError('internal', `the addon handed over a batch that is not JSON: ${(e as Error).message}`, { cause: e }));
      return;
    }
    for (let i = 0; i < jobs.length; i++) {
      const raw = jobs[i];
      const seq = raw.s;
      if (raw.abort !== undefined) {
        const st = live.get(seq);
        if (st !== undefined) abort(st, raw.abort, raw.reason ?? '');
        continue;
      }
      const id = raw.id;
      const queue = queueOf(raw.q);
      // The AbortController is made on first use of `job.signal`.
      const st: Live = { job: null, ctrl: null, reason: null };
      const job = {
        id,
        name: raw.name,
        data: raw.data,
        attemptsMade: raw.attemptsMade,
        attempts: raw.attempts,
        fence: raw.fence,
        traceparent: raw.trace ? raw.trace.traceparent : null,
        tracestate: raw.trace && raw.trace.tracestate !== undefined ? raw.trace.tracestate : null,
        get signal(): AbortSignal {
          if (st.ctrl === null) {
            st.ctrl = new AbortController();
            if (st.reason) st.ctrl.abort(st.reason);
          }
          return st.ctrl.signal;
        },
        // Through the run's context, so the worker reports a 'progress' event.
        updateProgress: (p: unknown) => slot.progress(seq, id, p, raw.q),
        log: (line: string) => queue.log(id, line),
        childrenResults: (): Promise<Record<string, Json>> => queue.childrenResults(id),
        // Through the run's context: the child counts in under this run's lease.
        addChild: (q: string, name: string, data: unknown, opts?: JobOptions) => slot.addChild(seq, q, name, data, opts),
        batch: raw.batch ? queue.openBatch(raw.batch.id, raw.batch.queue) : null,
      } as ActiveJob;
      st.job = job;
      live.set(seq, st);
      let r: unknown;
      try {
        r = tracingOn ? consumer(queue.name, job, () => handler(job)) : handler(job);
      } catch (e) {
        fail(seq, e);
        continue;
      }
      if (r !== null && (typeof r === 'object' || typeof r === 'function')) {
        // A promise (or any thenable, through Promise.resolve, which also catches a throwing `then`).
        const p = r instanceof Promise ? r : Promise.resolve(r);
        p.then(
          (v) => ok(seq, v),
          (e) => fail(seq, e),
        );
      } else {
        ok(seq, r);
      }
    }
  };
}
