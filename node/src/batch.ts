// Batches (core/src/batch/): jobs on any queues, grown while they run, with an onComplete
// callback once every job has its outcome and an onSuccess one once every job has completed.
// `queue.batch(...)` creates one; a running job of a batch gets it as `job.batch`. Arguments are
// shaped here (payload.ts); the core checks them.

import { call, emqError } from './errors';
import type { NativeBatch } from './loader';
import { batchData, batchJson, checkKeys, jobName, jobOpts, jobOptsJson, payloadJson, queueName } from './payload';
import type { BatchCallback, BatchOptions, BatchStatus, BulkJob, JobId, JobOptions } from './types';

const native = Symbol('native');

/** A callback as the addon takes it: `{queue, name, data, opts}`, its options checked. */
export function callbackSpec(what: string, c: BatchCallback | undefined): object | undefined {
  if (c === undefined || c === null) return undefined;
  if (typeof c !== 'object') throw emqError('invalid_option', `${what} is a { queue, name, data, opts } object`);
  return {
    queue: queueName(c.queue, `${what}'s queue`),
    name: jobName(c.name, what),
    data: batchData(`payload of ${what}`, c.data, true),
    opts: jobOpts(c.opts) ?? {},
  };
}

/** `queue.batch`'s options as the addon takes them (JSON text), checked. */
export function batchSpec(opts: BatchOptions): string {
  checkKeys('batch options', opts, ['onComplete', 'onSuccess', 'description']);
  return JSON.stringify({
    onComplete: callbackSpec('onComplete', opts.onComplete),
    onSuccess: callbackSpec('onSuccess', opts.onSuccess),
    description: opts.description,
  });
}

/** A handle on one batch: add jobs on any queue, seal it, read its status, cancel it. */
export class Batch {
  private readonly [native]: NativeBatch;

  /** @internal */
  constructor(nativeBatch: NativeBatch) {
    this[native] = nativeBatch;
  }

  /** The batch's id. */
  get id(): string {
    return this[native].id;
  }

  /** The queue that created it. */
  get queue(): string {
    return this[native].queue;
  }

  /**
   * Adds a job to `queue` (any queue) as part of this batch (the options of `queue.add`, no
   * `dedup`); resolves to its id. It is counted in first, then added, so an add repeated with the
   * same `id` adds it once. JobNotFound for no such batch, InvalidState for a cancelled or done one.
   */
  async add<T = unknown>(queue: string, name: string, data: T, opts?: JobOptions): Promise<JobId> {
    jobName(name, 'the job');
    const text = payloadJson('payload', data);
    const o = jobOptsJson(opts);
    return (await call(() => this[native].add(queueName(queue), name, text, o))) as JobId;
  }

  /** Adds many jobs `[{ name, data, opts }]` to `queue` as part of this batch; their ids in order. */
  async addBulk<T = unknown>(queue: string, jobs: BulkJob<T>[]): Promise<JobId[]> {
    if (!Array.isArray(jobs)) throw emqError('invalid_option', 'addBulk takes an array of { name, data, opts }');
    const batch = jobs.map((j, i) => {
      if (!j || typeof j !== 'object') throw emqError('invalid_option', `addBulk: job ${i} is not an object`);
      return { name: jobName(j.name, `job ${i}`), data: batchData(`payload of job ${i}`, j.data), opts: jobOpts(j.opts) };
    });
    const text = batchJson('addBulk batch', batch, () => jobs.map((j, i) => [`payload of job ${i}`, j.data]));
    const ids = await call(() => this[native].addBulkJson(queueName(queue), text));
    return ids === '' ? [] : (ids.split(',') as JobId[]);
  }

  /**
   * Its creator has added its jobs: from now on the batch is done once every job counted in has
   * its outcome, and its callbacks are added then (at once, if they all have one).
   */
  async seal(): Promise<void> {
    await call(() => this[native].seal());
  }

  /** Its counts and one page of its failed jobs (`[{queue, id}]`, oldest failure first). */
  async status(offset = 0, limit = 100): Promise<BatchStatus> {
    const raw = JSON.parse(await call(() => this[native].status(offset, limit)));
    const { failed_jobs, ...rest } = raw;
    return { ...rest, failedJobs: failed_jobs } as BatchStatus;
  }

  /**
   * Creates a batch inside this one (the options of `queue.batch`), held by the same queue. It
   * counts here as one job: pending until it is done, then completed when every job of it
   * completed and failed otherwise (completed later, if its failed jobs are retried to success).
   * Seal it as any batch. Cancelling this batch cancels it; cancelling it alone counts it failed
   * here. Its `status()` names this batch as `parent`.
   */
  async batch(opts: BatchOptions = {}): Promise<Batch> {
    const spec = batchSpec(opts);
    return new Batch(await call(() => this[native].batch(spec)));
  }

  /** Cancels the batch (no more jobs, no callback) and its jobs without an outcome; how many. */
  async cancel(): Promise<number> {
    return call(() => this[native].cancel());
  }
}
