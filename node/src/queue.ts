// Queue: a handle on one queue, each method adapting its arguments (payload.ts), calling the
// addon and reading its reply (values too rich for a napi object come as JSON text).

import { call, callSync, emqError, toEmqError } from './errors';
import type { HandlerFailed } from './errors';
import { AddLine } from './add_line';
import { DirectAdds } from './direct';
import { Batch, batchSpec } from './batch';
import { EventStream } from './events';
import { ENABLED as tracingOn, inject, producer } from './tracing';
import { kNative, kToken, native } from './loader';
import type { NativeQueue } from './loader';
import {
  batchData, batchJson, checkFinite, checkKeys, connectTls, flowPayloads, flowSpec, jobName, jobOpts, jobOptsJson, payloadJson, queueName,
} from './payload';
import type {
  BulkJob, CancelOutcome, ConnectOptions, Counts, FlowIds, FlowJob, Job, JobId, JobOptions, JobState, Json, MigrateReport,
  QueueEvent, QueueMetrics, RateLimit, SchedulerInfo, SchedulerSpec, WorkerInfo, Failure, GroupInfo, DeadLetter, DeadLetterOrigin,
  Replayed, BatchOptions, JobDefaults,
} from './types';

const RATE_LIMIT_KEYS = ['max', 'window'];
const SCHEDULER_KEYS = ['every', 'cron', 'tz', 'firstAfter', 'limit', 'endAfter', 'name', 'data', 'opts'];
const MIGRATE_KEYS = ['fromPrefix', 'dryRun', 'completed', 'deleteSource', 'batch'];

/** The HandlerFailed of a job's recorded failure (queue.wait, a worker's 'failed' event). */
export function failedError(f: Partial<Failure> | undefined): HandlerFailed {
  const failure = f || {};
  const e = emqError('handler_failed', failure.message ?? 'the job failed') as HandlerFailed;
  e.failureCode = failure.code ?? 'handler_failed';
  e.failure = failure as Failure;
  if (typeof failure.stack === 'string') e.stack = failure.stack;
  return e;
}

/** A group name (the core checks its length and characters). */
function groupName(group: unknown): string {
  if (typeof group !== 'string') throw emqError('invalid_option', 'the group must be a string');
  return group;
}

/** A group name, or null for every group's default. */
function optionalGroup(group: unknown): string | null {
  return group === null || group === undefined ? null : groupName(group);
}

/** An add waiting for the end of its turn of the event loop (`Queue.addInTurn`). */
interface PendingAdd {
  name: string;
  text: string;
  opts: string | undefined;
  resolve: (id: JobId) => void;
  reject: (e: unknown) => void;
}

/** A handle on one queue. Get one with `await Queue.connect(url | urls, name)`. */
export class Queue {
  /** @internal */
  readonly [kNative]: NativeQueue;
  /** The adds of this turn of the event loop, not yet sent (`addInTurn`). */
  private turn: PendingAdd[] | null = null;
  private adds: AddLine | null = null;
  /** Lone one-job adds on the event loop's own socket (`direct.ts`). */
  private direct: DirectAdds | null = null;

  private constructor(token: symbol, nativeQueue: NativeQueue) {
    if (token !== kToken) {
      throw emqError('invalid_option', 'use `await Queue.connect(url, name)` to open a queue');
    }
    this[kNative] = nativeQueue;
  }

  /**
   * Connects to a datastore (one URL, or a list of cluster seed URLs) and opens the queue `name`
   * (`orders` or `{orders}`). `opts` for `rediss://`: `caCert` (a private CA), `clientCert` +
   * `clientKey` (mutual TLS), each a path or PEM text (a string) or the PEM as a Buffer;
   * `durable: [replicas, timeoutMs]`: every add waits for that many replicas (WAIT);
   * `partitions: N` (1 to 256) spreads the queue over N slots (see the "Partitioned queues" page).
   */
  static async connect(urls: string | string[], name: string, opts?: ConnectOptions): Promise<Queue> {
    const list: unknown[] = Array.isArray(urls) ? urls : [urls];
    if (list.length === 0 || list.some((u) => typeof u !== 'string')) {
      throw emqError('invalid_option', 'Queue.connect needs a URL string or a non-empty array of URL strings');
    }
    queueName(name);
    const tls = connectTls(opts);
    const durable = opts && opts.durable ? Array.from(opts.durable) : undefined;
    const partitions = opts && opts.partitions !== undefined ? opts.partitions : undefined;
    if (partitions !== undefined && typeof partitions !== 'number') {
      throw emqError('invalid_option', `partitions must be a number, got ${typeof partitions}`);
    }
    const nq = await call(() => native.connect(list as string[], name, durable, tls, partitions));
    return new Queue(kToken, nq);
  }

  get name(): string {
    return this[kNative].name;
  }

  /** How many partitions the queue has (1: a plain queue). */
  get partitions(): number {
    return this[kNative].partitions;
  }

  /** Mints a job id now, to add later with `{ id }`: adding the same id again adds nothing. */
  mintId(): JobId {
    return callSync(() => this[kNative].mintId()) as JobId;
  }

  /** Adds a job (payload through `JSON.stringify`); resolves to its id (or, with a `dedup` key held by a live job, that job's id). */
  async add<T = unknown>(name: string, data: T, opts?: JobOptions): Promise<JobId> {
    jobName(name, 'the job');
    const text = payloadJson('payload', data);
    if (!tracingOn) return this.addInTurn(name, text, jobOptsJson(opts));
    return producer(this.name, undefined, (span) => this.addInTurn(name, text, jobOptsJson(inject(opts, span))), (id) => id);
  }

  /**
   * The adds of one turn of the event loop (a `Promise.all` of adds, a busy server's requests
   * handled in one tick) cross into the addon together: the first add of a turn goes at once, as
   * the plain one-job `add`, and opens the turn's line; the adds after it in the same turn join
   * the line, which a microtask (no timer) sends when the turn's synchronous code is done, as one
   * `addMany` call (one of them alone: `add`). Each job is still its own add (own id, own error),
   * which the core's coalescer carries to the datastore in shared calls.
   */
  private addInTurn(name: string, text: string, opts: string | undefined): Promise<JobId> {
    const line = this.turn;
    if (line === null) {
      this.turn = [];
      queueMicrotask(() => this.sendTurn());
      return this.addAlone(name, text, opts);
    }
    return new Promise<JobId>((resolve, reject) => {
      line.push({ name, text, opts, resolve, reject });
    });
  }

  /** One add on its own: direct when the core takes it (`direct.ts`), else through the handle's add line. */
  private addAlone(name: string, text: string, opts: string | undefined): Promise<JobId> {
    const direct = (this.direct ??= new DirectAdds(this[kNative]));
    let sent: { id: string; settled: Promise<string | null> } | null;
    try {
      sent = direct.add(name, text, opts);
    } catch (e) {
      return Promise.reject(toEmqError(e));
    }
    if (sent === null) return (this.adds ??= new AddLine(this[kNative])).add(name, text, opts);
    const { id, settled } = sent;
    return settled.then((got) => {
      if (got !== null) return got as JobId;
      // Not "added": the usual way, with the same id (nothing is added twice).
      return (this.adds ??= new AddLine(this[kNative])).add(name, text, withId(opts, id));
    });
  }

  private sendTurn(): void {
    const line = this.turn as PendingAdd[];
    this.turn = null;
    if (line.length === 0) return;
    const native = this[kNative];
    if (line.length === 1) {
      const a = line[0];
      this.addAlone(a.name, a.text, a.opts).then(a.resolve, a.reject);
      return;
    }
    const names = new Array<string>(line.length);
    const data = new Array<string>(line.length);
    const opts = new Array<string>(line.length);
    for (let i = 0; i < line.length; i++) {
      names[i] = line[i].name;
      data[i] = line[i].text;
      opts[i] = line[i].opts ?? '';
    }
    call(() => native.addMany(names, data, opts)).then(
      (outcomes) => {
        for (let i = 0; i < line.length; i++) {
          const o = outcomes[i];
          if (o.charCodeAt(0) !== 33 /* '!' */) line[i].resolve(o as JobId);
          else {
            const colon = o.indexOf(':');
            line[i].reject(emqError(o.slice(1, colon), o.slice(colon + 1)));
          }
        }
      },
      (e) => {
        for (const a of line) a.reject(e);
      },
    );
  }

  /** Adds many jobs `[{ name, data, opts }]` in pipelined round trips; resolves to their ids in order. */
  async addBulk<T = unknown>(jobs: BulkJob<T>[]): Promise<JobId[]> {
    if (!Array.isArray(jobs)) throw emqError('invalid_option', 'addBulk takes an array of { name, data, opts }');
    if (tracingOn) {
      return producer(this.name, jobs.length, (span) =>
        this.addBulkNow(jobs.map((j) => (j && typeof j === 'object' ? { ...j, opts: inject(j.opts, span) } : j))),
      );
    }
    return this.addBulkNow(jobs);
  }

  private async addBulkNow<T>(jobs: BulkJob<T>[]): Promise<JobId[]> {
    // The whole batch crosses as one JSON string; options shared by many jobs are checked once.
    const batch = new Array(jobs.length);
    let lastOpts: JobOptions | undefined;
    let lastChecked: Record<string, unknown> | undefined;
    for (let i = 0; i < jobs.length; i++) {
      const j = jobs[i];
      if (!j || typeof j !== 'object') throw emqError('invalid_option', `addBulk: job ${i} is not an object`);
      let o: Record<string, unknown> | undefined;
      if (j.opts === undefined || j.opts === null) o = undefined;
      else if (j.opts === lastOpts) o = lastChecked;
      else {
        lastOpts = j.opts;
        o = lastChecked = jobOpts(j.opts);
      }
      batch[i] = { name: jobName(j.name, `job ${i}`), data: batchData(`payload of job ${i}`, j.data), opts: o };
    }
    const text = batchJson('addBulk batch', batch, () => jobs.map((j, i) => [`payload of job ${i}`, j.data]));
    const ids = await call(() => this[kNative].addBulkJson(text));
    return ids === '' ? [] : (ids.split(',') as JobId[]);
  }

  /**
   * Adds a flow: `{ name, data, opts, queue?, children: [flow, ...] }`, a parent that runs once its
   * children finished (children may name other queues of the same datastore). Resolves to the ids
   * in the flow's shape: `{ queue, id, children: [...] }`.
   */
  async addFlow<T = unknown>(flow: FlowJob<T>): Promise<FlowIds> {
    if (tracingOn && flow && typeof flow === 'object') {
      return producer(this.name, undefined, (span) => this.addFlowNow({ ...flow, opts: inject(flow.opts, span) }));
    }
    return this.addFlowNow(flow);
  }

  private async addFlowNow<T>(flow: FlowJob<T>): Promise<FlowIds> {
    const spec = flowSpec(flow, 'the flow');
    const text = batchJson('flow', spec, () => flowPayloads(flow, 'the flow'));
    return JSON.parse(await call(() => this[kNative].addFlow(text)));
  }

  /**
   * Adds a child job to `queue` for `parent`, a job of this queue waiting for its children (a
   * flow's parent, or a job whose run added children): it waits for this one too. A running job
   * adds its own with `job.addChild`. The options of `add` (no `dedup`); resolves to the child's
   * id. InvalidState when the parent is not waiting for children (the child is not added),
   * JobNotFound when there is no such job.
   */
  async addChild<T = unknown>(parent: JobId | string, queue: string, name: string, data: T, opts?: JobOptions): Promise<JobId> {
    jobName(name, 'the child');
    const text = payloadJson('payload', data);
    const o = jobOptsJson(tracingOn ? inject(opts) : opts);
    return (await call(() => this[kNative].addChild(String(parent), queueName(queue), name, text, o))) as JobId;
  }

  /** A parent's children's results by `<queue>:<id>` (a failed child under `ignore`: `{ failed: Failure }`). */
  async childrenResults(id: JobId | string): Promise<Record<string, Json>> {
    return JSON.parse(await call(() => this[kNative].childrenResults(String(id))));
  }

  /** Reads a job, or null when there is no such job. Rejects with `InvalidJobId` for a forged id. */
  async get<T = any, R = any>(id: JobId | string): Promise<Job<T, R> | null> {
    const text = await call(() => this[kNative].get(String(id)));
    return text == null ? null : JSON.parse(text);
  }

  /** Jobs in one state, a page at a time (waiting states oldest first; completed and failed newest first). */
  async list<T = any, R = any>(state: JobState, { offset = 0, limit = 100 }: { offset?: number; limit?: number } = {}): Promise<Job<T, R>[]> {
    return JSON.parse(await call(() => this[kNative].list(String(state), offset, limit)));
  }

  /** Number of jobs per state. */
  async counts(): Promise<Counts> {
    return (await call(() => this[kNative].counts())) as Counts;
  }

  /** Stops handing out jobs (adds still land, in paused). */
  async pause(): Promise<void> {
    return call(() => this[kNative].pause());
  }

  async resume(): Promise<void> {
    return call(() => this[kNative].resume());
  }

  /**
   * Grows this partitioned queue to `count` partitions while producers and workers run; resolves
   * to the count now. The new partitions get the queue's settings; jobs with a `group`, a `dedup`
   * key or an `id` of their own keep going to the partition they always did (per-key order
   * holds), the others spread over all. Each worker restarts itself over the grown queue within
   * about a second (as `close()` and a new start would). Only growing: `invalid_option` for a
   * plain queue, a count not above the present one or above 256.
   */
  async growPartitions(count: number): Promise<number> {
    if (typeof count !== 'number') {
      throw emqError('invalid_option', `partitions must be a number, got ${typeof count}`);
    }
    return call(() => this[kNative].growPartitions(count));
  }

  async isPaused(): Promise<boolean> {
    return call(() => this[kNative].isPaused());
  }

  /** Removes a job that is not active; resolves to true when it existed. */
  async remove(id: JobId | string): Promise<boolean> {
    return call(() => this[kNative].remove(String(id)));
  }

  /** Sends a failed job back to wait with its attempts reset; false when it is not failed. */
  async retry(id: JobId | string): Promise<boolean> {
    return call(() => this[kNative].retry(String(id)));
  }

  /**
   * Sets this queue's default dead-letter queue (null clears it): its jobs without a `deadLetter`
   * option of their own move there, as new waiting jobs, once they fail for good.
   */
  async setDeadLetter(queue: string | null): Promise<void> {
    return call(() => this[kNative].setDeadLetter(queue));
  }

  /**
   * Sets the queue's job defaults, replacing the ones before (`{}`: removes them): `attempts`,
   * `backoff`, `jitter`, `removeOnComplete`, `removeOnFail`, as `add` takes them (ms). Stored once
   * with the queue, not in every job: a job that leaves one of them at its built-in default (1
   * attempt, no backoff, no jitter, kept) runs with the queue's. Workers read them before their
   * first job and every 2 s, so a change applies to jobs already waiting. Another option:
   * `InvalidOption`.
   */
  async setJobDefaults(defaults: JobDefaults): Promise<void> {
    const o = jobOptsJson(defaults);
    return call(() => this[kNative].setJobDefaults(o));
  }

  /** The queue's job defaults, as `setJobDefaults` took them (`{}`: none; a numeric backoff reads back as `{ type: 'fixed', delay }`). */
  async jobDefaults(): Promise<JobDefaults> {
    const raw = JSON.parse(await call(() => this[kNative].jobDefaults())) as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(raw)) out[k.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())] = v;
    return out as JobDefaults;
  }

  /** This queue's default dead-letter queue, or null. */
  async deadLetter(): Promise<string | null> {
    return call(() => this[kNative].deadLetter());
  }

  /**
   * The dead-lettered jobs this queue holds (as a dead-letter queue): `id`, `name`, `state` and
   * `origin` (`queue`, `id`, `attemptsMade`, `stalls`, `failure`, `failedMs`, `options`).
   */
  async deadLetters(limit = 100): Promise<DeadLetter[]> {
    type Raw = Omit<DeadLetter, 'origin'> & {
      origin: Omit<DeadLetterOrigin, 'attemptsMade' | 'failedMs'> & { attempts_made: number; failed_ms: number };
    };
    const raw = JSON.parse(await call(() => this[kNative].deadLetters(limit))) as Raw[];
    return raw.map(({ origin: { attempts_made, failed_ms, ...origin }, ...rest }) => ({
      ...rest,
      origin: { ...origin, attemptsMade: attempts_made, failedMs: failed_ms },
    }));
  }

  /**
   * Sends dead-lettered jobs (`ids`, or all) back to their queues with their attempts reset and
   * removes them here; resolves to `[{id, queue, originId}]`.
   */
  async replayDeadLetters(ids?: Array<JobId | string>): Promise<Replayed[]> {
    const list = ids === undefined ? null : ids.map(String);
    const raw = JSON.parse(await call(() => this[kNative].replayDeadLetters(list))) as Array<
      Omit<Replayed, 'originId'> & { origin_id: string }
    >;
    return raw.map(({ origin_id, ...rest }) => ({ ...rest, originId: origin_id }));
  }

  /**
   * Creates a batch held by this queue: `onComplete` and `onSuccess` are job specs `{queue, name,
   * data, opts}`, added once (see docs/site/concepts/batches.md); a callback job finds the batch
   * and its counts in its options' `batch_done`.
   */
  async batch(opts: BatchOptions = {}): Promise<Batch> {
    const spec = batchSpec(opts);
    return new Batch(await call(() => this[kNative].batch(spec)));
  }

  /** A handle on batch `id` (of `queue`, by default this one). */
  openBatch(id: string, queue?: string): Batch {
    return new Batch(callSync(() => this[kNative].openBatch(String(id), queue ?? null)));
  }

  /** Retries every failed job; resolves to how many. */
  async retryFailed(): Promise<number> {
    return call(() => this[kNative].retryFailed());
  }

  /** Runs a delayed job now; false when it is not delayed. */
  async promote(id: JobId | string): Promise<boolean> {
    return call(() => this[kNative].promote(String(id)));
  }

  /**
   * Gives a job that has not finished a new priority (0: none, lower runs first); false when there
   * is no such job or it has finished. A waiting job moves at once; a delayed one when due.
   */
  async changePriority(id: JobId | string, priority: number): Promise<boolean> {
    return call(() => this[kNative].changePriority(String(id), priority));
  }

  /** Removes every waiting, paused and prioritized job (and delayed ones with `delayed: true`); resolves to how many. */
  async drain({ delayed = false }: { delayed?: boolean } = {}): Promise<number> {
    return call(() => this[kNative].drain(Boolean(delayed)));
  }

  /** Removes up to `limit` (default 1000) completed or failed jobs finished more than `grace` ms (default 0) ago. */
  async clean(state: 'completed' | 'failed', { grace = 0, limit = 1000 }: { grace?: number; limit?: number } = {}): Promise<number> {
    return call(() => this[kNative].clean(String(state), grace, limit));
  }

  /** Deletes the whole queue (every job and key); rejects with InvalidState while jobs are active unless `force`. */
  async obliterate({ force = false }: { force?: boolean } = {}): Promise<number> {
    return call(() => this[kNative].obliterate(Boolean(force)));
  }

  async updateProgress(id: JobId | string, progress: unknown): Promise<void> {
    const text = payloadJson('progress', progress);
    return call(() => this[kNative].updateProgress(String(id), text));
  }

  /** Appends a line to a job's log; resolves to the number of lines kept. */
  async log(id: JobId | string, line: string): Promise<number> {
    return call(() => this[kNative].log(String(id), String(line)));
  }

  /** A job's log lines, oldest first. */
  async logs(id: JobId | string): Promise<string[]> {
    return call(() => this[kNative].logs(String(id)));
  }

  /** At most `max` jobs of this queue active at once across all workers; null lifts it. */
  async setGlobalConcurrency(max: number | null): Promise<void> {
    if (max !== null && max !== undefined) checkFinite('globalConcurrency', max);
    return call(() => this[kNative].setGlobalConcurrency(max ?? null));
  }

  /** At most `max` jobs start per `window` ms (a fixed window on the server's clock); null lifts it. */
  async setRateLimit(limit: RateLimit | null): Promise<void> {
    if (limit === null || limit === undefined) return call(() => this[kNative].setRateLimit(null, null));
    checkKeys('rate limit', limit, RATE_LIMIT_KEYS);
    if (limit.max === undefined || limit.window === undefined) {
      throw emqError('invalid_option', 'setRateLimit takes { max, window } (or null to lift it)');
    }
    return call(() => this[kNative].setRateLimit(limit.max, limit.window));
  }

  /**
   * Each job group (the `group` job option) starts at most `max` jobs per `window` ms, every group
   * on its own (on the server's clock); null lifts it.
   */
  async setGroupRateLimit(limit: RateLimit | null): Promise<void> {
    if (limit === null || limit === undefined) return call(() => this[kNative].setGroupRateLimit(null, null));
    checkKeys('group rate limit', limit, RATE_LIMIT_KEYS);
    if (limit.max === undefined || limit.window === undefined) {
      throw emqError('invalid_option', 'setGroupRateLimit takes { max, window } (or null to lift it)');
    }
    return call(() => this[kNative].setGroupRateLimit(limit.max, limit.window));
  }

  /**
   * Sets a group's weight, 1 to 1000 (every group's is 1 unless set): while groups have work, one of
   * weight 3 runs three jobs for each job of a group of weight 1.
   */
  async setGroupWeight(group: string, weight: number): Promise<void> {
    checkFinite('weight', weight);
    return call(() => this[kNative].setGroupWeight(groupName(group), weight));
  }

  /**
   * At most `limit` jobs of `group` (omitted or null: by default, of every group) running at once
   * across all workers; a group's own cap wins over the default. A null `limit` lifts it.
   */
  async setGroupConcurrency(limit: number | null, group?: string | null): Promise<void> {
    if (limit !== null && limit !== undefined) checkFinite('limit', limit);
    return call(() => this[kNative].setGroupConcurrency(limit ?? null, optionalGroup(group)));
  }

  /**
   * At most `limit` jobs of `group` (omitted or null: by default, of every group) waiting to run;
   * an add past it rejects with `GroupFull` (code 'group_full') and writes nothing. A null `limit`
   * lifts it.
   */
  async setGroupMaxWaiting(limit: number | null, group?: string | null): Promise<void> {
    if (limit !== null && limit !== undefined) checkFinite('limit', limit);
    return call(() => this[kNative].setGroupMaxWaiting(limit ?? null, optionalGroup(group)));
  }

  /** Stops handing out jobs of `group`; its jobs keep waiting (and adds still land) while the rest of the queue runs. */
  async pauseGroup(group: string): Promise<void> {
    return call(() => this[kNative].pauseGroup(groupName(group)));
  }

  /** Hands out jobs of a paused group again. */
  async resumeGroup(group: string): Promise<void> {
    return call(() => this[kNative].resumeGroup(groupName(group)));
  }

  /**
   * One page of the queue's groups, ordered by name (`limit` after the first `offset`):
   * `[{ name, waiting, running, weight, concurrency, maxWaiting, paused }]` (caps null when none).
   * A group is listed while it has jobs waiting or running or a setting of its own.
   */
  async groups(offset = 0, limit = 100): Promise<GroupInfo[]> {
    checkFinite('offset', offset);
    checkFinite('limit', limit);
    return JSON.parse(await call(() => this[kNative].groups(offset, limit)));
  }

  /**
   * Creates or replaces the job scheduler `id`: every `every` ms, or at each occurrence of the cron
   * expression `cron` (5 fields, or 6 with seconds first) in the IANA zone `tz` (default UTC), it
   * enqueues `{ name, data, opts }` — starting `firstAfter` ms from now, stopping after `limit` runs
   * or `endAfter` ms. An existing scheduler keeps its count. Resolves to true when it was created.
   * Workers of the queue fire due schedulers.
   */
  async upsertScheduler<T = unknown>(id: string, spec: SchedulerSpec<T>): Promise<boolean> {
    if (typeof id !== 'string') throw emqError('invalid_option', 'the scheduler id must be a string');
    checkKeys('scheduler', spec, SCHEDULER_KEYS);
    if (!spec) throw emqError('invalid_option', 'upsertScheduler(id, { every | cron, tz, name, data, opts, firstAfter, limit, endAfter })');
    for (const k of ['every', 'firstAfter', 'limit', 'endAfter'] as const) checkFinite(k, spec[k]);
    const body = {
      every: spec.every ?? undefined,
      cron: spec.cron ?? undefined,
      tz: spec.tz ?? undefined,
      firstAfter: spec.firstAfter ?? undefined,
      limit: spec.limit ?? undefined,
      endAfter: spec.endAfter ?? undefined,
      name: jobName(spec.name, 'the scheduled job'),
      data: batchData('payload of the scheduled job', spec.data, true),
      opts: jobOpts(spec.opts),
    };
    const text = batchJson('scheduler', body, () => [['payload of the scheduled job', spec.data]]);
    return call(() => this[kNative].upsertScheduler(id, text));
  }

  /** Deletes the scheduler `id`; resolves to true when it existed. */
  async removeScheduler(id: string): Promise<boolean> {
    return call(() => this[kNative].removeScheduler(String(id)));
  }

  /** Every scheduler: `[{ id, every, cron, tz, count, limit, nextIn, endsIn, name }]` (ms; null when not set). */
  async schedulers(): Promise<SchedulerInfo[]> {
    // The core's view (`SchedulerView`, in ms), its two-word names in JavaScript's case.
    type Raw = Omit<SchedulerInfo, 'endsIn' | 'nextIn'> & { ends_in: number | null; next_in: number | null };
    const raw = JSON.parse(await call(() => this[kNative].schedulers())) as Raw[];
    return raw.map(({ ends_in, next_in, ...rest }) => ({ ...rest, endsIn: ends_in, nextIn: next_in }));
  }

  /**
   * Follows the queue's events from now on (or after the stream id `after`): an EventStream to read
   * with `for await (const ev of stream)` or `await stream.next()`; `stream.close()` ends it.
   */
  async events({ after }: { after?: string } = {}): Promise<EventStream> {
    const ne = await call(() => this[kNative].events(after == null ? null : String(after)));
    return EventStream.open(kToken, ne);
  }

  /** The newest `limit` (default 100) events, oldest first, without waiting. */
  async recentEvents(limit = 100): Promise<QueueEvent[]> {
    return JSON.parse(await call(() => this[kNative].recentEvents(limit)));
  }

  /** Counts, finished jobs per minute over the last hour, and lifetime counters. */
  async metrics(): Promise<QueueMetrics> {
    return JSON.parse(await call(() => this[kNative].metrics()));
  }

  /**
   * Copies the BullMQ queue `<fromPrefix>:<sourceQueue>` (`bull` is BullMQ's default prefix, `emq`
   * EchoMQ 1.x's) into this queue, crash-safe and idempotent, as `emq migrate` does (MIGRATING.md).
   * `opts`: `fromPrefix` ('bull'), `dryRun`, `completed`, `deleteSource` (false), `batch` (500).
   * Resolves to the report (`states`, `reasons`, `not_mapped`, `log_lines`, `elapsed_ms`…).
   */
  async migrateFromBullmq(
    sourceQueue: string,
    opts: { fromPrefix?: string; dryRun?: boolean; completed?: boolean; deleteSource?: boolean; batch?: number } = {},
  ): Promise<MigrateReport> {
    if (typeof sourceQueue !== 'string') throw emqError('invalid_option', 'sourceQueue must be a string');
    const o = opts || {};
    for (const k of Object.keys(o)) {
      if (!MIGRATE_KEYS.includes(k)) {
        throw emqError('invalid_option', `unknown migrate option ${JSON.stringify(k)} (known: ${MIGRATE_KEYS.join(', ')})`);
      }
    }
    const text = await call(() =>
      this[kNative].migrateFromBullmq(
        sourceQueue,
        o.fromPrefix === undefined ? 'bull' : String(o.fromPrefix),
        Boolean(o.dryRun),
        Boolean(o.completed),
        Boolean(o.deleteSource),
        o.batch === undefined ? 500 : Number(o.batch),
      ),
    );
    return JSON.parse(text);
  }

  /**
   * Cancels a job with `reason`. Resolves to 'cancelled' (it was waiting or delayed: it will not
   * run, and ends failed with the failure code `cancelled` and `reason` in its message),
   * 'requested' (it is running: its worker aborts `job.signal`; it ends failed `cancelled`, not
   * retried), 'finished' (it had already finished) or 'not_found'.
   */
  async cancel(id: JobId | string, reason = ''): Promise<CancelOutcome> {
    if (typeof reason !== 'string') throw emqError('invalid_option', 'cancel(id, reason): reason must be a string');
    return (await call(() => this[kNative].cancel(id, reason))) as CancelOutcome;
  }

  /**
   * Waits up to `timeout` ms (default 30000) for a job to finish, also one that finished before
   * the call. Resolves to its result; rejects with a HandlerFailed (code `handler_failed`) whose
   * `failureCode` is the job's failure code (`handler_failed`, `timeout`, `cancelled`, `stalled`,
   * or the handler's own), with the failure's message and `stack`; with a Timeout (code
   * `timeout`) when it did not finish in time; with JobNotFound when there is no such job.
   */
  async wait<R = Json>(id: JobId | string, { timeout = 30000 }: { timeout?: number } = {}): Promise<R> {
    checkFinite('timeout', timeout);
    const r = JSON.parse(await call(() => this[kNative].wait(id, timeout)));
    if (r.ok) return r.result;
    throw failedError(r.failure);
  }

  /** The live workers of this queue (every language): `{ id, queue, host, pid, language, concurrency, running, ... }`. */
  async workers(): Promise<WorkerInfo[]> {
    return JSON.parse(await call(() => this[kNative].workers()));
  }

  /** Releases the queue's node-id lease. */
  async close(): Promise<void> {
    this.direct?.close();
    return call(() => this[kNative].close());
  }
}

/** A job's options (the JSON text `addStart` takes) with its id pinned. */
function withId(opts: string | undefined, id: string): string {
  return JSON.stringify({ ...(opts === undefined ? {} : (JSON.parse(opts) as object)), id });
}
