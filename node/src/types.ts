// The public types of the `emq` package: the shapes its methods take and return. tsc writes
// them into the generated declaration files (dist/*.d.ts) with the classes that use them.

import type { HandlerFailed } from './errors';

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
  /** The job's group: groups take turns (`setGroupWeight`, `setGroupConcurrency`, `setGroupMaxWaiting`, `pauseGroup`) and `setGroupRateLimit` limits each on its own. */
  group?: string;
  /** Words for people about this job (at most 1,024 bytes), shown by `emq job` and `emq ui`. */
  description?: string;
  /**
   * A queue name: once the job fails for good it moves there, as a new waiting job (see
   * `Queue.deadLetters`, `Queue.replayDeadLetters`); without it, the queue's own
   * (`Queue.setDeadLetter`), if any.
   */
  deadLetter?: string;
  /**
   * The W3C `traceparent` of the span that adds the job; filled from the active OpenTelemetry
   * span when `@opentelemetry/api` is installed and this is not given (see the "Tracing" page).
   */
  traceparent?: string;
  /** The W3C `tracestate` that travels with `traceparent` (needs it). */
  tracestate?: string;
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
 * A queue's job defaults (`Queue.setJobDefaults`): stored once with the queue, not in every job;
 * a job that leaves one of these at its built-in default (1 attempt, no backoff, no jitter, kept)
 * runs with the queue's. Times in ms.
 */
export type JobDefaults = Pick<JobOptions, 'attempts' | 'backoff' | 'jitter' | 'removeOnComplete' | 'removeOnFail'>;

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
   * This run's fencing token: a number that only grows across the job's runs (the datastore's
   * clock in microseconds when this run's lease was written; below 2^53, so exact as a number).
   * Send it with each write to a downstream store and have the store refuse a write whose fence is
   * below the highest it accepted: a zombie run (a worker frozen past its lease while the job ran
   * again elsewhere) is then refused there.
   */
  fence: number;
  /** The W3C trace context the job was added in (`00-<trace id>-<span id>-<flags>`), or null. */
  traceparent: string | null;
  /** Its W3C `tracestate`, or null. */
  tracestate: string | null;
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
  /**
   * Adds a child job to `queue` (any queue) that this job waits for, as a flow's parent waits for
   * its children: when this run returns, the job waits in 'waiting-children' instead of
   * completing, and once its last child is done it runs again, their results in
   * `childrenResults()` (check them, so the second run ends the job). A child that fails for good
   * fails this job under its `parentPolicy` 'fail' (the default), counts as done under 'ignore'.
   * The options of `queue.add` (no `dedup`); resolves to the child's id.
   */
  addChild<C = unknown>(queue: string, name: string, data: C, opts?: JobOptions): Promise<JobId>;
  /**
   * The batch this job belongs to (null when it was not added through one): jobs it adds count in
   * before they are added, so the batch is not done until they are.
   */
  readonly batch: import('./batch').Batch | null;
}

/** A batch's callback: the job added when it falls due. */
export interface BatchCallback<T = unknown> {
  /** The queue it goes to (any queue). */
  queue: string;
  name: string;
  data?: T;
  opts?: JobOptions;
}

/** What `queue.batch` takes. */
export interface BatchOptions {
  /** Added once, when every job of the sealed batch has its outcome. */
  onComplete?: BatchCallback;
  /** Added once, when every job of the sealed batch has completed (then, or after a retry). */
  onSuccess?: BatchCallback;
  /** Words for people (at most 1,024 bytes). */
  description?: string;
}

/** A batch's state (`batch.status()`). */
export interface BatchStatus {
  id: string;
  description: string | null;
  total: number;
  pending: number;
  completed: number;
  failed: number;
  sealed: boolean;
  cancelled: boolean;
  done: boolean;
  /** The batch it sits inside (`batch.batch(...)`), or null. */
  parent: { queue: string; id: string } | null;
  /** One page of the failed jobs, oldest failure first. */
  failedJobs: Array<{ queue: string; id: JobId }>;
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
  /** Completed runs' lengths over the queue's life. */
  run: Histogram;
  /** Completed first runs' waits (add or due time to the claim) over the queue's life. */
  wait: Histogram;
  /** [minute since the epoch, run lengths completed in it], oldest first, over the last hour. */
  runPerMinute: [number, Histogram][];
  /** [minute since the epoch, waits of the first runs completed in it], over the last hour. */
  waitPerMinute: [number, Histogram][];
  /** The buckets' upper bounds in ms (`Histogram.counts` has one more: above the last). */
  latencyBucketsMs: number[];
}

/** A latency histogram: jobs per bucket (not cumulative) and the sum of the latencies in ms. */
export interface Histogram {
  counts: number[];
  sumMs: number;
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
  /** Spread the queue over this many slots (1 to 256), stored as the queue's count the first time; without it, the stored count (else a plain queue). Another count than the stored one rejects with InvalidOption. */
  partitions?: number;
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

export type CancelOutcome = 'cancelled' | 'requested' | 'finished' | 'not_found';

/** A live worker as registered (times: server ms). */
/** Where a dead-lettered job failed (`queue.deadLetters()`; names as the core writes them). */
export interface DeadLetterOrigin {
  /** The queue it failed in. */
  queue: string;
  /** Its id there (a replay adds it back under it). */
  id: string;
  /** The attempts it made there. */
  attemptsMade: number;
  /** The stalls it had there. */
  stalls: number;
  /** Its last failure: `{code, message, stack}`. */
  failure: Failure;
  /** When it failed for good (server ms). */
  failedMs: number;
  /** Its options there, as stored (non-default ones only). */
  options: Record<string, Json>;
}

/** A dead-lettered job a dead-letter queue holds. */
export interface DeadLetter {
  /** Its id in the dead-letter queue. */
  id: string;
  name: string;
  state: JobState | null;
  origin: DeadLetterOrigin;
}

/** A job a replay sent back (`queue.replayDeadLetters()`). */
export interface Replayed {
  /** Its id in the dead-letter queue (removed there). */
  id: string;
  /** The queue it went back to. */
  queue: string;
  /** Its id there. */
  originId: string;
}

/** One group of a queue (`queue.groups()`): the `group` job option's tenants. */
export interface GroupInfo {
  /** The group's name (the `group` job option). */
  name: string;
  /** Jobs of the group ready to run (not delayed, not running). */
  waiting: number;
  /** Jobs of the group leased to workers now. */
  running: number;
  /** Its weight (1 unless set). */
  weight: number;
  /** Most jobs of the group running at once: its own cap, else the queue's default, else null. */
  concurrency: number | null;
  /** Most jobs of the group waiting: its own cap, else the queue's default, else null. */
  maxWaiting: number | null;
  /** Whether the group is paused (`queue.pauseGroup`). */
  paused: boolean;
}

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
  /**
   * A worker on several queues (`new Worker([qa, qb], ...)`): no job of a later queue starts
   * while an earlier one has a ready job. Excludes `weights`.
   */
  strict?: boolean;
  /**
   * A worker on several queues: starts shared by weight while the queues have work, keyed by
   * queue name (1 to 1000; a queue not named has 1; the default: all 1).
   */
  weights?: Record<string, number>;
  /** Same as calling `worker.closeOnSignals()`: SIGINT/SIGTERM close gracefully, a second aborts. */
  handleSignals?: boolean;
}

/** The counters of one of a worker's queues (`worker.statsByQueue()`), as `WorkerStats` less `running`. */
export interface QueueStats {
  /** The queue's name. */
  queue: string;
  completed: number;
  failed: number;
  retried: number;
  leaseLost: number;
  recovered: number;
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

/** The events of a `Worker`. */
export type WorkerEventName = 'completed' | 'failed' | 'progress' | 'stalled' | 'error' | 'closed';

/** The error of a worker's 'failed' event: the run's recorded failure. */
export interface WorkerFailure extends HandlerFailed {
  /** The failure's code: `handler_failed`, `timeout`, `cancelled`, or the handler's own. */
  readonly failureCode: string;
  /** True when the job goes back for another attempt. */
  readonly willRetry: boolean;
}

