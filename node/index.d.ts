// Type declarations of the `emq` package (Node.js bindings of the emq core).

import type { ErrorCode } from './codes';

// Node's AbortSignal, as far as emq's types use it (merges with the DOM's or @types/node's
// declaration when either is present; this file needs neither).
declare global {
  interface AbortSignal {
    readonly aborted: boolean;
    readonly reason: any;
    addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
    removeEventListener(type: 'abort', listener: () => void): void;
  }
}

/** A job id minted by the core: `j` + 15 lowercase base32 characters. Only the core mints them. */
export type JobId = string & { readonly __brand: 'JobId' };

/** Any value `JSON.stringify` can serialise. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export type JobState =
  | 'waiting'
  | 'paused'
  | 'active'
  | 'delayed'
  | 'prioritized'
  | 'completed'
  | 'failed'
  | 'stalled'
  | 'waiting-children';

export interface BackoffOptions {
  type: 'fixed' | 'exponential';
  /** Wait before the first retry, in ms. */
  delay?: number;
  /** Largest wait for `exponential`, in ms (0 or absent: no cap). */
  max?: number;
}

/** Options of one job. Times are in milliseconds. */
export interface JobOptions {
  /** Run no sooner than this after the server receives the job. */
  delay?: number;
  /** 0 for none; otherwise lower numbers run first (1 is the most urgent). */
  priority?: number;
  /** Run before the jobs already waiting. */
  lifo?: boolean;
  /** Most attempts (at least 1; default 1). */
  attempts?: number;
  /** Wait between attempts; a number is a fixed delay in ms. */
  backoff?: BackoffOptions | number;
  /** Fraction (0..1) of each backoff taken off at random. */
  jitter?: number;
  /** Lease length for this job (default: the worker's). */
  lease?: number;
  /** Time limit for one run of the handler (default: none). */
  timeout?: number;
  /**
   * `true`: delete the job as soon as it completes; a count or `{ count, age }` (age in ms): keep
   * it, and keep the queue's completed jobs within that (BullMQ's `removeOnComplete`; the latest
   * job's wins, applied by its worker); `false` (default): the worker's queue-wide retention.
   */
  removeOnComplete?: Retention;
  /** As `removeOnComplete`, for jobs that finally failed. */
  removeOnFail?: Retention;
  /** While a job with this key is waiting or active, adding another returns the first one's id. */
  dedup?: string;
  /** With `dedup`: hold the key this many ms after the add, whatever becomes of the job. */
  dedupTtl?: number;
  /** The job's group, for `setGroupRateLimit` (each group limited on its own). */
  group?: string;
  /**
   * With `dedup` and `delay`: while the job holding the key is still delayed, replace its data and
   * push its start to `delay` ms from now (debounce) instead of dropping the new job.
   */
  debounce?: boolean;
  /** In a flow: what this job's final failure does to its parent (default 'fail'). */
  parentPolicy?: ParentPolicy;
  /** Use this id (minted earlier by emq) instead of minting one: adding the same id twice adds one job. */
  id?: JobId;
}

/**
 * What a flow child's final failure does to its parent: `fail` fails the parent; `ignore` counts the
 * child as done and records its failure for the parent (`{ failed: Failure }` in childrenResults);
 * `remove` drops the dependency.
 */
export type ParentPolicy = 'fail' | 'ignore' | 'remove';

export interface BulkJob<T = unknown> {
  name: string;
  data: T;
  opts?: JobOptions;
}

export interface Failure {
  /** `handler_failed`, `timeout`, `cancelled`, `stalled`, or the thrown error's own string `code`. */
  code: string;
  message: string;
  stack?: string;
}

/** A job as `queue.get` returns it. Times are server milliseconds since the Unix epoch. */
export interface Job<T = any, R = any> {
  id: JobId;
  name: string;
  data: T;
  state: JobState | null;
  attemptsMade: number;
  attempts: number;
  stalls: number;
  priority: number;
  createdMs: number;
  processedMs: number | null;
  finishedMs: number | null;
  progress: Json | null;
  result: R | null;
  failure: Failure | null;
  /** The options it was added with, as stored by the core (snake_case keys). */
  options: Record<string, unknown>;
  /** In a flow, its parent as `<queue>:<id>`. */
  parent: string | null;
}

/** A leased job as a handler receives it. */
export interface ActiveJob<T = any> {
  id: JobId;
  name: string;
  data: T;
  /** Attempts made before this one (0 on the first run). */
  attemptsMade: number;
  attempts: number;
  /**
   * Aborted when the worker asks this run to stop; `signal.reason` is a `JobInterrupted` whose
   * `code` says why: 'cancelled' (`queue.cancel`), 'timeout' (the job's `timeout`) or 'shutdown'
   * (the close grace period ended, or `worker.abort()`). Pass it to `fetch` & co, or listen for
   * 'abort' and return/throw: the job's outcome is recorded (and a retry can start) only once the
   * handler's promise has settled, whatever it settles with.
   */
  readonly signal: AbortSignal;
  /** Records progress (any JSON value). */
  updateProgress(progress: unknown): Promise<void>;
  /** Appends a line to the job's log; resolves to the number of lines kept. */
  log(line: string): Promise<number>;
  /** In a flow: the results of this job's children by `<queue>:<id>`. */
  childrenResults(): Promise<Record<string, Json>>;
}

/** A job of a flow and its children. */
export interface FlowJob<T = unknown> {
  /** The queue it goes to (default: the queue adding the flow); any queue of the same datastore. */
  queue?: string;
  name: string;
  data: T;
  opts?: JobOptions;
  /** Jobs that must finish before this one runs. */
  children?: FlowJob[];
}

/** The ids a flow was given, in the flow's shape. */
export interface FlowIds {
  queue: string;
  id: JobId;
  children: FlowIds[];
}

/**
 * A job scheduler: enqueues `{ name, data, opts }` every `every` ms, or at each occurrence of
 * `cron` in the zone `tz`, on the server's clock. Give exactly one of `every` and `cron`.
 */
export interface SchedulerSpec<T = unknown> {
  /** Interval in ms (at least 1). */
  every?: number;
  /** A cron expression: 5 fields, or 6 with seconds first (e.g. `0 9 * * MON-FRI`). */
  cron?: string;
  /** The cron expression's IANA time zone (default 'UTC'), e.g. 'Europe/Berlin'. */
  tz?: string;
  /** The first run this many ms after the upsert (default 0: now). */
  firstAfter?: number;
  /** Stop after this many runs, then delete the scheduler (default: never). */
  limit?: number;
  /** Stop this many ms after the upsert: no run due later is enqueued (default: never). */
  endAfter?: number;
  name: string;
  data?: T;
  /** The runs' options (delay and dedup are not used for scheduled runs; priority is). */
  opts?: JobOptions;
}

export interface SchedulerInfo {
  id: string;
  /** Interval in ms, or null for a cron scheduler. */
  every: number | null;
  /** The cron expression, or null. */
  cron: string | null;
  /** The cron expression's zone, or null. */
  tz: string | null;
  /** Ms until the scheduler's end, or null when it has none. */
  endsIn: number | null;
  /** Runs so far. */
  count: number;
  /** Most runs, or null for no limit. */
  limit: number | null;
  /** Ms until the next run, or null when none is due (limit reached). */
  nextIn: number | null;
  name: string;
}

/** At most `max` jobs start per `window` ms (a fixed window on the server's clock). */
export interface RateLimit {
  max: number;
  window: number;
}

/** One event of a queue's events stream. */
export interface QueueEvent {
  /** The stream entry id (`<server ms>-<seq>`); pass it as `after` to resume. */
  streamId: string;
  /** added, active, completed, retrying, failed, stalled, released, removed, progress, paused, resumed, ... */
  kind: string;
  /** The job it happened to, when there is one. */
  jobId: JobId | null;
  /** Every field of the entry. */
  fields: Record<string, string>;
}

/** A subscriber on a queue's events: `for await (const ev of stream)`, or `next()`; `close()` ends it. */
export declare class EventStream implements AsyncIterable<QueueEvent> {
  private constructor();
  readonly closed: boolean;
  /** The next events, waiting up to `wait` ms (default 1000) for the first; [] when none came or once closed. */
  next(opts?: { wait?: number; count?: number }): Promise<QueueEvent[]>;
  /** Ends the subscription; a read in progress resolves to [] at once. */
  close(): void;
  [Symbol.asyncIterator](): AsyncIterator<QueueEvent>;
}

export interface QueueMetrics {
  queue: string;
  counts: Counts;
  /** [minute since the epoch, jobs completed in it], oldest first, over the last hour. */
  completedPerMinute: [number, number][];
  failedPerMinute: [number, number][];
  /** Jobs ever added. */
  added: number;
  /** Job records ever deleted. */
  deleted: number;
  /** Completions refused because the lease was lost. */
  leaseLost: number;
  /** Stalled jobs recovered. */
  stalled: number;
}

export interface Counts {
  waiting: number;
  paused: number;
  active: number;
  delayed: number;
  prioritized: number;
  completed: number;
  failed: number;
  stalled: number;
  waitingChildren: number;
}

/** TLS files for `rediss://`: each a path or PEM text (a string), or the PEM as a Buffer. */
export interface ConnectOptions {
  /** A private CA to trust (else the system's roots). */
  caCert?: string | Uint8Array;
  /** A client certificate for mutual TLS (`tls-auth-clients yes`), with `clientKey`. */
  clientCert?: string | Uint8Array;
  /** The client certificate's private key. */
  clientKey?: string | Uint8Array;
  /** Every add waits for this many replicas to acknowledge it (`WAIT`), within `timeoutMs`; else it rejects with NotReplicated. */
  durable?: [replicas: number, timeoutMs: number];
}

/** What a migration did (the core's `MigrateReport`). */
export interface MigrateReport {
  source: string;
  target: string;
  dry_run: boolean;
  states: { state: string; read: number; written: number; already: number; skipped: number }[];
  reasons: Record<string, number>;
  skipped: { state: string; source_id: string; reason: string }[];
  not_mapped: Record<string, number>;
  source_deleted: number;
  log_lines: number;
  notes: string[];
  elapsed_ms: number;
}

export declare class Queue {
  private constructor();
  /** Connects (one URL, or cluster seed URLs) and opens the queue `name` (`orders` or `{orders}`). */
  static connect(urls: string | string[], name: string, opts?: ConnectOptions): Promise<Queue>;
  readonly name: string;
  /** Adds a job (payload through `JSON.stringify`); resolves to its id. */
  /** Mints a job id now, to add later with `{ id }`: adding the same id again adds nothing. */
  mintId(): JobId;
  add<T = unknown>(name: string, data: T, opts?: JobOptions): Promise<JobId>;
  /** Adds many jobs in pipelined round trips; resolves to their ids in order. */
  addBulk<T = unknown>(jobs: BulkJob<T>[]): Promise<JobId[]>;
  /** Reads a job, or null when there is no such job. Rejects with `InvalidJobId` for a forged id. */
  get<T = any, R = any>(id: JobId | string): Promise<Job<T, R> | null>;
  counts(): Promise<Counts>;
  /** Stops handing out jobs (adds still land, in paused). */
  pause(): Promise<void>;
  resume(): Promise<void>;
  isPaused(): Promise<boolean>;
  /** Removes a job that is not active; resolves to true when it existed. */
  remove(id: JobId | string): Promise<boolean>;
  updateProgress(id: JobId | string, progress: unknown): Promise<void>;
  log(id: JobId | string, line: string): Promise<number>;
  /** A job's log lines, oldest first. */
  logs(id: JobId | string): Promise<string[]>;
  /** Jobs in one state, a page at a time (waiting states oldest first; completed and failed newest first). */
  list<T = any, R = any>(state: JobState, opts?: { offset?: number; limit?: number }): Promise<Job<T, R>[]>;
  /** Sends a failed job back to wait with its attempts reset; false when it is not failed. */
  retry(id: JobId | string): Promise<boolean>;
  /** Retries every failed job; resolves to how many. */
  retryFailed(): Promise<number>;
  /** Runs a delayed job now; false when it is not delayed. */
  promote(id: JobId | string): Promise<boolean>;
  /**
   * Gives a job that has not finished a new priority (0: none, lower runs first); false when there
   * is no such job or it has finished. A waiting job moves at once; a delayed one when due.
   */
  changePriority(id: JobId | string, priority: number): Promise<boolean>;
  /** Removes every waiting, paused and prioritized job (and delayed ones with `delayed`); resolves to how many. */
  drain(opts?: { delayed?: boolean }): Promise<number>;
  /** Removes up to `limit` (default 1000) completed or failed jobs finished more than `grace` ms (default 0) ago. */
  clean(state: 'completed' | 'failed', opts?: { grace?: number; limit?: number }): Promise<number>;
  /** Deletes the whole queue (every job and key); rejects with InvalidState while jobs are active unless `force`. */
  obliterate(opts?: { force?: boolean }): Promise<number>;
  /** Adds a flow: the parent runs once its children finished. Resolves to the ids in the flow's shape. */
  addFlow<T = unknown>(flow: FlowJob<T>): Promise<FlowIds>;
  /** A parent's children's results by `<queue>:<id>` (a failed child under `ignore`: `{ failed: Failure }`). */
  childrenResults(id: JobId | string): Promise<Record<string, Json>>;
  /** At most `max` jobs of this queue active at once across all workers; null lifts it. */
  setGlobalConcurrency(max: number | null): Promise<void>;
  /** Limits how many jobs start per window; null lifts it. */
  setRateLimit(limit: RateLimit | null): Promise<void>;
  /** Each job group (the `group` option) starts at most `max` jobs per `window` ms; null lifts it. */
  setGroupRateLimit(limit: RateLimit | null): Promise<void>;
  /** Creates or replaces a job scheduler (an existing one keeps its due time and count); true when created. */
  upsertScheduler<T = unknown>(id: string, spec: SchedulerSpec<T>): Promise<boolean>;
  /** Deletes a scheduler; true when it existed. */
  removeScheduler(id: string): Promise<boolean>;
  /** Every scheduler of the queue, by id. */
  schedulers(): Promise<SchedulerInfo[]>;
  /** Follows the queue's events from now on (or after the stream id `after`). */
  events(opts?: { after?: string }): Promise<EventStream>;
  /** The newest `limit` (default 100) events, oldest first, without waiting. */
  recentEvents(limit?: number): Promise<QueueEvent[]>;
  /** Counts, jobs finished per minute over the last hour, and lifetime counters. */
  metrics(): Promise<QueueMetrics>;
  /** Copies the BullMQ queue `<fromPrefix>:<sourceQueue>` into this queue (as `emq migrate`). */
  migrateFromBullmq(
    sourceQueue: string,
    opts?: { fromPrefix?: string; dryRun?: boolean; completed?: boolean; deleteSource?: boolean; batch?: number },
  ): Promise<MigrateReport>;
  /**
   * Cancels a job: 'cancelled' (it was waiting or delayed: it will not run, and ends failed with
   * the failure code `cancelled` and `reason` in its message), 'requested' (it is running: its
   * worker aborts `job.signal`; it ends failed `cancelled`, not retried), 'finished' (too late),
   * 'not_found'.
   */
  cancel(id: JobId | string, reason?: string): Promise<CancelOutcome>;
  /**
   * Waits up to `timeout` ms (default 30000) for a job to finish, also one that finished before
   * the call: resolves to its result; rejects with `HandlerFailed` (`failureCode`, `message`,
   * `stack` of the job's failure) when it failed for good, `Timeout` when it did not finish in
   * time, `JobNotFound` when there is no such job.
   */
  wait<R = Json>(id: JobId | string, opts?: { timeout?: number }): Promise<R>;
  /** The live workers of this queue (every language), from the worker registry. */
  workers(): Promise<WorkerInfo[]>;
  /** Releases the queue's node-id lease. */
  close(): Promise<void>;
}

export type CancelOutcome = 'cancelled' | 'requested' | 'finished' | 'not_found';

/** A live worker as registered (times: server ms). */
export interface WorkerInfo {
  id: string;
  queue: string;
  host: string;
  pid: number;
  /** 'node', 'python', 'rust', ... */
  language: string;
  concurrency: number;
  running: number;
  version: string;
  startedMs: number;
  beatMs: number;
  lapseMs: number;
}

/**
 * Retention of finished jobs, queue-wide (applied by the workers in the background, every 5 s):
 * `true` keeps none, `false` keeps all (memory grows without bound), a number keeps the newest
 * that many, `{ count, age }` keeps at most `count` and none older than `age` ms (a field left
 * out is no limit).
 */
export type Retention = boolean | number | { count?: number; age?: number };

/** Options of a worker. Times are in milliseconds. */
export interface WorkerOptions {
  /** Jobs run at once (default 1). */
  concurrency?: number;
  /** Lease length, renewed while the handler runs (default 30000, at least 300). */
  lease?: number;
  /** How often the stalled sweep runs (default 15000). */
  stalledInterval?: number;
  /** Stalls allowed before a job fails (default 1). */
  maxStalls?: number;
  /** Longest single wait for work (default 5000). */
  blockTimeout?: number;
  /**
   * The shutdown grace period: how long `close` lets running handlers finish (default 10000)
   * before it aborts their `job.signal` (reason code 'shutdown') and gives their jobs back to
   * waiting, their attempt not counted.
   */
  shutdownTimeout?: number;
  /**
   * Retention of completed jobs, queue-wide (default: the newest 1,000, none older than a day;
   * the last worker started wins).
   */
  removeOnComplete?: Retention;
  /** Retention of failed jobs, queue-wide (default: the newest 10,000, none older than 7 days). */
  removeOnFail?: Retention;
  /** Same as calling `worker.closeOnSignals()`: SIGINT/SIGTERM close gracefully, a second aborts. */
  handleSignals?: boolean;
}

/** A worker's counters (they count jobs, not runs, except `retried`). */
export interface WorkerStats {
  /** Jobs completed. */
  completed: number;
  /**
   * Jobs failed for good: their last attempt failed, or an unrecoverable error, a cancel or a
   * timeout with no attempt left ended them. A job given back at shutdown is not counted.
   */
  failed: number;
  /**
   * Runs that failed and went back for another attempt (to waiting, or delayed for the backoff):
   * a job with `attempts: 3` that always fails counts `failed` 1 and `retried` 2.
   */
  retried: number;
  /** Completions or failures refused because the job's lease was lost. */
  leaseLost: number;
  /** Stalled jobs this worker's sweep recovered. */
  recovered: number;
  /** Jobs running now (0 once closed). */
  running: number;
}

export type Handler<T = any, R = unknown> = (job: ActiveJob<T>) => R | Promise<R>;

/**
 * A worker, and an EventEmitter of the core's worker events, each once the worker recorded it:
 * 'completed' (job, result); 'failed' (job, error) for each failed run, error a
 * `WorkerFailure` (`failureCode`: `handler_failed`, `timeout`, `cancelled`, …; `willRetry`); a job
 * given back at shutdown is neither completed nor failed; 'progress' (job, value) when a handler of
 * this worker reported progress; 'stalled' (jobId, to) when this worker's stalled sweep recovered a
 * job whose worker vanished; 'error' (error) for faults of the worker itself: a lost connection, a
 * failed lease renewal (it keeps trying), a listener that threw, a close on a signal that failed;
 * 'closed' once `close` finished (after the last events). `job` is a snapshot of the job as its run
 * saw it. Without an 'error' listener those are dropped: a worker never throws into the process.
 */
export declare class Worker<T = any, R = unknown> {
  /** Starts processing at once. A throw or rejection fails the job; a returned value is its result. */
  constructor(queue: Queue, handler: Handler<T, R>, opts?: WorkerOptions);
  static start<T = any, R = unknown>(queue: Queue, handler: Handler<T, R>, opts?: WorkerOptions): Promise<Worker<T, R>>;
  readonly queue: Queue;
  /** Counters (after `close`: the final figures, `running` 0). */
  stats(): WorkerStats;
  /**
   * Graceful shutdown: stops fetching, lets running handlers finish for up to `timeout` ms
   * (default: `shutdownTimeout`), then aborts the signals of those still running and gives their
   * jobs back to waiting, attempts not counted; stops keeping the process alive. Resolves to how
   * many jobs were given back.
   */
  close(opts?: { timeout?: number }): Promise<number>;
  /**
   * Stops at once (a second Ctrl-C): aborts every running job's signal (code 'shutdown'), releases
   * nothing (the jobs come back through their leases, as after a crash), cuts a close short.
   */
  abort(): Promise<number>;
  /** SIGINT/SIGTERM (or `signals`): the first closes gracefully, a second aborts. Returns the worker. */
  closeOnSignals(opts?: { signals?: string[] }): this;
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
  /** EventEmitter's (a Worker is one at run time). */
  off(event: WorkerEventName, listener: (...args: any[]) => void): this;
  removeListener(event: WorkerEventName, listener: (...args: any[]) => void): this;
  listenerCount(event: WorkerEventName): number;
}

/** The events of a `Worker`. */
export type WorkerEventName = 'completed' | 'failed' | 'progress' | 'stalled' | 'error' | 'closed';

/** The error of a worker's 'failed' event: the run's recorded failure. */
export interface WorkerFailure extends HandlerFailed {
  /** The failure's code: `handler_failed`, `timeout`, `cancelled`, or the handler's own. */
  readonly failureCode: string;
  /** True when the job goes back for another attempt. */
  readonly willRetry: boolean;
}

/** Why a job's signal was aborted (`job.signal.reason`); not an EmqError (nothing went wrong). */
export declare class JobInterrupted extends Error {
  readonly code: 'cancelled' | 'timeout' | 'shutdown';
}

/** A stable error code of the core (generated into node/codes.d.ts from core/src/error.rs). */
export type { ErrorCode };

/** Every error emq raises; `code` is the core's stable code. */
export declare class EmqError extends Error {
  constructor(code: ErrorCode | string, message: string, options?: { cause?: unknown });
  readonly code: ErrorCode;
}
export declare class InvalidQueueName extends EmqError { readonly code: 'invalid_queue_name'; constructor(message: string); }
export declare class InvalidJobId extends EmqError { readonly code: 'invalid_job_id'; constructor(message: string); }
export declare class InvalidOption extends EmqError { readonly code: 'invalid_option'; constructor(message: string); }
export declare class InvalidPayload extends EmqError { readonly code: 'invalid_payload'; constructor(message: string); }
export declare class ServerUnavailable extends EmqError { readonly code: 'server_unavailable'; constructor(message: string); }
/** The datastore refused the credentials (wrong user or password, or none: NOAUTH). */
export declare class AuthFailed extends EmqError { readonly code: 'auth_failed'; constructor(message: string); }
/** The datastore's ACL refuses this user the command or key (NOPERM). */
export declare class PermissionDenied extends EmqError { readonly code: 'permission_denied'; constructor(message: string); }
export declare class IncompatibleVersion extends EmqError { readonly code: 'incompatible_version'; constructor(message: string); }
export declare class CrossSlot extends EmqError { readonly code: 'cross_slot'; constructor(message: string); }
export declare class UndeclaredKey extends EmqError { readonly code: 'undeclared_key'; constructor(message: string); }
export declare class ScriptError extends EmqError { readonly code: 'script_error'; constructor(message: string); }
export declare class LeaseLost extends EmqError { readonly code: 'lease_lost'; constructor(message: string); }
export declare class NodeLeaseLost extends EmqError { readonly code: 'node_lease_lost'; constructor(message: string); }
export declare class JobNotFound extends EmqError { readonly code: 'job_not_found'; constructor(message: string); }
export declare class InvalidState extends EmqError { readonly code: 'invalid_state'; constructor(message: string); }
export declare class Timeout extends EmqError { readonly code: 'timeout'; constructor(message: string); }
/** A durable add was written on the master but fewer replicas than asked acknowledged it in time (it can be lost in a failover; add again with the same id). */
export declare class NotReplicated extends EmqError { readonly code: 'not_replicated'; constructor(message: string); }
export declare class Closed extends EmqError { readonly code: 'closed'; constructor(message: string); }
/** A job failed (from `queue.wait`): `failureCode`, `message` and `stack` are the job's failure's. */
export declare class HandlerFailed extends EmqError {
  readonly code: 'handler_failed';
  constructor(message: string);
  /** The job's failure code: `handler_failed`, `timeout`, `cancelled`, `stalled`, or the handler's own. */
  readonly failureCode?: string;
  readonly failure?: Failure;
}
export declare class Internal extends EmqError { readonly code: 'internal'; constructor(message: string); }

/** Throw it from a handler to fail the job without its remaining attempts. */
export declare class UnrecoverableError extends Error {}

/**
 * Throw it from a handler to put the job back to delayed for `delay` ms (server clock) instead of
 * failing it; the run is not an attempt unless `countAttempt`.
 */
export declare class DelayedError extends Error {
  constructor(delay: number, options?: { countAttempt?: boolean });
  readonly delay: number;
  readonly countAttempt: boolean;
}

/** Every error code this version knows. */
export declare const errorCodes: ErrorCode[];
