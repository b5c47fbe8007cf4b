// Worker: runs a handler on a queue's jobs (through the dispatcher) and emits the core's worker
// events; closes gracefully, aborts, and closes on signals.

import { EventEmitter } from 'events';
import { EmqError, call, callSync, emqError, toEmqError } from './errors';
import { dispatcher } from './dispatcher';
import type { Slot } from './dispatcher';
import { kNative } from './loader';
import type { NativeWorker } from './loader';
import { jobName, jobOptsJson, payloadJson, queueName, workerOpts } from './payload';
import { ENABLED as tracingOn, inject } from './tracing';
import { Queue, failedError } from './queue';
import { native as addon } from './loader';
import type { Handler, Job, JobId, Json, QueueStats, WorkerEventName, WorkerFailure, WorkerOptions, WorkerStats } from './types';

/** The bit of each worker event kind in the native worker's listening mask. */
const WORKER_EVENT_BITS: Record<string, number> = { completed: 1, failed: 2, progress: 4, stalled: 8, error: 16 };

/** One of the core's worker events (`{ kind, ... }`, from the addon's `worker_events.rs`). */
interface WorkerEvent {
  kind: string;
  job?: Record<string, unknown>;
  result?: unknown;
  failure?: { code?: string; message?: string; stack?: string };
  willRetry?: boolean;
  value?: unknown;
  jobId?: string;
  to?: string;
  error?: { code?: string; message?: string };
}

/** The listener arguments of one of the core's worker events, or null for a kind this version does not know. */
function workerEventArgs(ev: WorkerEvent): unknown[] | null {
  switch (ev.kind) {
    case 'completed':
      return [{ ...ev.job }, ev.result ?? null];
    case 'failed': {
      const e = failedError(ev.failure) as WorkerFailure & { willRetry: boolean };
      e.willRetry = ev.willRetry === true;
      return [{ ...ev.job }, e];
    }
    case 'progress':
      return [{ ...ev.job }, ev.value ?? null];
    case 'stalled':
      return [ev.jobId, ev.to];
    case 'error': {
      const err = ev.error || {};
      return [emqError(err.code || 'internal', err.message || 'worker error')];
    }
    default:
      return null;
  }
}

/** EventEmitter, typed as far as the declarations need it (they must not need Node's types). */
interface Emitter {
  emit(event: string, ...args: unknown[]): boolean;
  on(event: string, listener: (...args: any[]) => void): this;
  once(event: string, listener: (...args: any[]) => void): this;
  off(event: string, listener: (...args: any[]) => void): this;
  removeListener(event: string, listener: (...args: any[]) => void): this;
  listenerCount(event: string): number;
}
const EmitterBase = EventEmitter as unknown as new () => Emitter;

/**
 * A worker: runs `handler(job)` on the queue's jobs; a throw or rejection fails the job, a
 * returned value is its result. An EventEmitter of the core's worker events (each once the worker
 * recorded it): 'completed' (job, result); 'failed' (job, error) for each failed run — error a
 * `WorkerFailure` (a HandlerFailed with `failureCode`: `handler_failed`, `timeout`, `cancelled`,
 * …; `message`, `stack` and `willRetry`); a job given back at shutdown is neither completed nor
 * failed; 'progress' (job, value) when a handler of this worker reported progress; 'stalled'
 * (jobId, to) when this worker's stalled sweep recovered a job whose worker vanished (`to`: 'wait'
 * or 'failed'); 'error' (error) for faults of the worker itself — a lost connection, a failed
 * lease renewal (it keeps trying), a listener that threw, a failed close on a signal; and
 * 'closed' once `close` has finished (after the last events). `job` is a snapshot (`id`, `name`,
 * `data`, `attemptsMade`, `attempts`, …). Without an 'error' listener such errors are dropped: the
 * worker keeps going and never throws into the process. Events of a kind are kept only while it
 * has a listener.
 */
export class Worker<T = any, R = unknown> extends EmitterBase {
  /** @internal */
  readonly [kNative]: NativeWorker;
  /** @internal */
  private readonly slot: Slot;
  /** Its (first) queue. */
  readonly queue: Queue;
  private closing: Promise<number> | null = null;
  private signals: { signals: string[]; onSignal: () => void } | null = null;

  /**
   * Starts processing at once. `queue` may be a list of queues: one worker on all of them,
   * sharing `concurrency`, ordered by `opts.strict` or `opts.weights` (see `WorkerOptions`).
   */
  constructor(queue: Queue | Queue[], handler: Handler<T, R>, opts?: WorkerOptions) {
    super();
    const list = Array.isArray(queue) ? queue : [queue];
    if (!list.every((q) => q instanceof Queue)) {
      throw emqError('invalid_option', 'new Worker(queue, handler): queue must come from Queue.connect (or be a list of such)');
    }
    if (typeof handler !== 'function') {
      throw emqError('invalid_option', 'new Worker(queue, handler): handler must be a function');
    }
    const { native: o, handleSignals } = workerOpts(opts);
    // The emitter itself (the overloads below only type the listeners users add).
    const em = this as unknown as Emitter;
    // The dispatcher settles jobs through the native worker; it first runs on a later event-loop
    // turn, after this constructor has set `slot.native`.
    const slot: Slot = {
      native: null,
      live: null,
      abortAll: null,
      mask: 0,
      emit: (event, ...args) => {
        if (em.listenerCount(event) === 0) return;
        try {
          em.emit(event, ...args);
        } catch (e) {
          slot.error(e); // a listener threw: its error, as it threw it
        }
      },
      error: (e) => {
        if (em.listenerCount('error') === 0) return;
        try {
          em.emit('error', e instanceof Error ? e : toEmqError(e));
        } catch (_) {
          /* an 'error' listener threw: nothing more to tell */
        }
      },
      progress: async (seq, id, p, q) => {
        const text = payloadJson('progress', p);
        return call(() => (slot.native as NativeWorker).progress(seq, String(id), text, q));
      },
      addChild: async (seq, q, name, data, opts) => {
        jobName(name, 'the child');
        const text = payloadJson('payload', data);
        const o = jobOptsJson(tracingOn ? inject(opts) : opts);
        return (await call(() => (slot.native as NativeWorker).addChild(seq, queueName(q), name, text, o))) as JobId;
      },
      // The core's events, a JSON array at a time (on a later event-loop turn, or from `close`).
      events: (batchText) => {
        let events: WorkerEvent[];
        try {
          events = JSON.parse(batchText);
        } catch (e) {
          slot.error(emqError('internal', `the addon sent worker events that are not JSON: ${(e as Error).message}`, { cause: e }));
          return;
        }
        for (const ev of events) {
          const args = workerEventArgs(ev);
          if (args === null) continue;
          if (ev.kind === 'error') slot.error(args[0]);
          else slot.emit(ev.kind, ...args);
        }
      },
    };
    // Only the kinds with a listener are kept by the addon.
    const relisten = (extra: string | null): void => {
      let mask = 0;
      for (const [kind, b] of Object.entries(WORKER_EVENT_BITS)) {
        if (kind === extra || em.listenerCount(kind) > 0) mask |= b;
      }
      if (mask !== slot.mask && slot.native !== null) {
        slot.mask = mask;
        slot.native.listen(mask);
      }
    };
    em.on('newListener', (event: string) => {
      if (event in WORKER_EVENT_BITS) relisten(event);
    });
    em.on('removeListener', (event: string) => {
      if (event in WORKER_EVENT_BITS) relisten(null);
    });
    this.slot = slot;
    const dispatch = dispatcher(handler as Handler, list, slot);
    const onEvents = (text: string): void => slot.events(text);
    this[kNative] = slot.native = callSync(() =>
      Array.isArray(queue)
        ? addon.startWorkerMany(list.map((q) => q[kNative]), dispatch, onEvents, o)
        : queue[kNative].worker(dispatch, onEvents, o),
    );
    this.queue = list[0];
    if (handleSignals) this.closeOnSignals();
  }

  /** As `new Worker(...)`, as a promise. */
  static async start<T = any, R = unknown>(queue: Queue | Queue[], handler: Handler<T, R>, opts?: WorkerOptions): Promise<Worker<T, R>> {
    return new Worker(queue, handler, opts);
  }

  /**
   * Counters: completed (jobs), failed (jobs failed for good), retried (runs that went back for
   * another attempt), leaseLost, recovered, running (after close: the final figures, running 0).
   */
  stats(): WorkerStats {
    return this[kNative].stats();
  }

  /** The names of its queues, in the order it was given them. */
  get queues(): string[] {
    return this[kNative].queues;
  }

  /** Counters per queue, in the worker's order, while it runs (`[]` once closed; `stats` keeps the final sums). */
  statsByQueue(): QueueStats[] {
    return this[kNative].statsByQueue();
  }

  /**
   * Graceful shutdown: stops fetching, lets running handlers finish for up to `timeout` ms
   * (default: the `shutdownTimeout` option, 10000), then aborts the signals of those still running
   * (reason code 'shutdown') and gives their jobs back to waiting, their attempt not counted.
   * Stops keeping the process alive. Resolves to how many jobs were given back.
   */
  async close({ timeout }: { timeout?: number } = {}): Promise<number> {
    if (!this.closing) {
      this.closing = call(() => this[kNative].close(timeout)).finally(() => {
        this.unhookSignals();
        // The events recorded during the close, before 'closed'.
        this.slot.events(this[kNative].takeEvents());
        this.slot.emit('closed');
      });
    }
    return this.closing;
  }

  /**
   * Stops at once (a second Ctrl-C): aborts every running job's signal (reason code 'shutdown'),
   * releases nothing (the jobs come back through their leases, as after a crash), and cuts a close
   * in progress short. Resolves when the worker is closed.
   */
  async abort(): Promise<number> {
    this[kNative].abort();
    if (this.slot.abortAll) this.slot.abortAll('shutdown', 'the worker was aborted');
    return this.close();
  }

  /**
   * Closes on SIGINT / SIGTERM (or `signals`): the first signal closes gracefully (see `close`), a
   * second one aborts (see `abort`). The handlers are removed once the worker is closed, so the
   * process then exits as usual when nothing else keeps it alive. Same as the option
   * `handleSignals: true`. Returns the worker.
   */
  closeOnSignals({ signals = ['SIGINT', 'SIGTERM'] }: { signals?: string[] } = {}): this {
    if (this.signals || this.closing) return this;
    let seen = 0;
    const onSignal = (): void => {
      seen += 1;
      if (seen === 1) this.close().catch((e) => this.slot.error(e));
      else this.abort().catch((e) => this.slot.error(e));
    };
    for (const sig of signals) process.on(sig, onSignal);
    this.signals = { signals, onSignal };
    return this;
  }

  private unhookSignals(): void {
    if (!this.signals) return;
    for (const sig of this.signals.signals) process.removeListener(sig, this.signals.onSignal);
    this.signals = null;
  }
}

/** The listeners of a Worker's events. */
export interface Worker<T = any, R = unknown> {
  on(event: 'completed', listener: (job: Job<T, R>, result: R) => void): this;
  on(event: 'failed', listener: (job: Job<T, R>, error: WorkerFailure) => void): this;
  on(event: 'progress', listener: (job: Job<T, R>, value: Json) => void): this;
  on(event: 'stalled', listener: (jobId: JobId, to: 'wait' | 'failed') => void): this;
  on(event: 'error', listener: (error: EmqError | Error) => void): this;
  on(event: 'closed', listener: () => void): this;
  once(event: 'completed', listener: (job: Job<T, R>, result: R) => void): this;
  once(event: 'failed', listener: (job: Job<T, R>, error: WorkerFailure) => void): this;
  once(event: 'progress', listener: (job: Job<T, R>, value: Json) => void): this;
  once(event: 'stalled', listener: (jobId: JobId, to: 'wait' | 'failed') => void): this;
  once(event: 'error', listener: (error: EmqError | Error) => void): this;
  once(event: 'closed', listener: () => void): this;
  off(event: WorkerEventName, listener: (...args: any[]) => void): this;
  removeListener(event: WorkerEventName, listener: (...args: any[]) => void): this;
  listenerCount(event: WorkerEventName): number;
}
