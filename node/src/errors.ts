// The errors of emq: `EmqError` (a stable `.code`, the core's ErrorCode strings) and one subclass
// per code; the addon throws plain JS errors whose `code` is the core's code (napi's error status,
// see bindings/node/src/lib.rs), which `toEmqError` turns into the subclass of that code: the code
// is read from `code`, never from the message. Also the errors a handler throws (UnrecoverableError,
// DelayedError) and the reason of an aborted job signal (JobInterrupted).

import { CLASS_NAMES } from '../codes.js';
import type { ErrorCode } from '../codes.js';
import type { Failure } from './types';

export type { ErrorCode };

/** The options of an Error (`cause`). */
export interface ErrorOptions {
  cause?: unknown;
}

/** Every error emq raises; `code` is the core's stable code. */
export class EmqError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode | string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code as ErrorCode;
  }
  get name(): string {
    return this.constructor.name;
  }
}

export class InvalidQueueName extends EmqError {
  declare readonly code: 'invalid_queue_name';
  constructor(message: string, options?: ErrorOptions) {
    super('invalid_queue_name', message, options);
  }
}

export class InvalidJobId extends EmqError {
  declare readonly code: 'invalid_job_id';
  constructor(message: string, options?: ErrorOptions) {
    super('invalid_job_id', message, options);
  }
}

export class InvalidOption extends EmqError {
  declare readonly code: 'invalid_option';
  constructor(message: string, options?: ErrorOptions) {
    super('invalid_option', message, options);
  }
}

export class InvalidPayload extends EmqError {
  declare readonly code: 'invalid_payload';
  constructor(message: string, options?: ErrorOptions) {
    super('invalid_payload', message, options);
  }
}

export class ServerUnavailable extends EmqError {
  declare readonly code: 'server_unavailable';
  constructor(message: string, options?: ErrorOptions) {
    super('server_unavailable', message, options);
  }
}

/** The datastore refused the credentials (wrong user or password, or none: NOAUTH). */
export class AuthFailed extends EmqError {
  declare readonly code: 'auth_failed';
  constructor(message: string, options?: ErrorOptions) {
    super('auth_failed', message, options);
  }
}

/** The datastore's ACL refuses this user the command or key (NOPERM). */
export class PermissionDenied extends EmqError {
  declare readonly code: 'permission_denied';
  constructor(message: string, options?: ErrorOptions) {
    super('permission_denied', message, options);
  }
}

export class IncompatibleVersion extends EmqError {
  declare readonly code: 'incompatible_version';
  constructor(message: string, options?: ErrorOptions) {
    super('incompatible_version', message, options);
  }
}

export class CrossSlot extends EmqError {
  declare readonly code: 'cross_slot';
  constructor(message: string, options?: ErrorOptions) {
    super('cross_slot', message, options);
  }
}

export class UndeclaredKey extends EmqError {
  declare readonly code: 'undeclared_key';
  constructor(message: string, options?: ErrorOptions) {
    super('undeclared_key', message, options);
  }
}

export class ScriptError extends EmqError {
  declare readonly code: 'script_error';
  constructor(message: string, options?: ErrorOptions) {
    super('script_error', message, options);
  }
}

export class LeaseLost extends EmqError {
  declare readonly code: 'lease_lost';
  constructor(message: string, options?: ErrorOptions) {
    super('lease_lost', message, options);
  }
}

export class NodeLeaseLost extends EmqError {
  declare readonly code: 'node_lease_lost';
  constructor(message: string, options?: ErrorOptions) {
    super('node_lease_lost', message, options);
  }
}

export class JobNotFound extends EmqError {
  declare readonly code: 'job_not_found';
  constructor(message: string, options?: ErrorOptions) {
    super('job_not_found', message, options);
  }
}

export class InvalidState extends EmqError {
  declare readonly code: 'invalid_state';
  constructor(message: string, options?: ErrorOptions) {
    super('invalid_state', message, options);
  }
}

export class Timeout extends EmqError {
  declare readonly code: 'timeout';
  constructor(message: string, options?: ErrorOptions) {
    super('timeout', message, options);
  }
}

/** A durable add was written on the master but fewer replicas than asked acknowledged it in time (it can be lost in a failover; add again with the same id). */
export class NotReplicated extends EmqError {
  declare readonly code: 'not_replicated';
  constructor(message: string, options?: ErrorOptions) {
    super('not_replicated', message, options);
  }
}

export class Closed extends EmqError {
  declare readonly code: 'closed';
  constructor(message: string, options?: ErrorOptions) {
    super('closed', message, options);
  }
}

/** A job failed (from `queue.wait`, and a worker's 'failed' event): `failureCode`, `message` and `stack` are the job's failure's. */
export class HandlerFailed extends EmqError {
  declare readonly code: 'handler_failed';
  /** The job's failure code: `handler_failed`, `timeout`, `cancelled`, `stalled`, or the handler's own. */
  failureCode?: string;
  failure?: Failure;
  constructor(message: string, options?: ErrorOptions) {
    super('handler_failed', message, options);
  }
}

export class Internal extends EmqError {
  declare readonly code: 'internal';
  constructor(message: string, options?: ErrorOptions) {
    super('internal', message, options);
  }
}

/** An add would put more jobs in a group's backlog than its cap allows (`queue.setGroupMaxWaiting`): nothing was written; add again once the group has drained. */
export class GroupFull extends EmqError {
  declare readonly code: 'group_full';
  constructor(message: string, options?: ErrorOptions) {
    super('group_full', message, options);
  }
}

type ErrorClass = new (message: string, options?: ErrorOptions) => EmqError;

/** The class of each code; tsc checks that every code of the core's table (codes.d.ts) has one. */
const BY_CODE: { readonly [C in ErrorCode]: ErrorClass } = {
  invalid_queue_name: InvalidQueueName,
  invalid_job_id: InvalidJobId,
  invalid_option: InvalidOption,
  invalid_payload: InvalidPayload,
  server_unavailable: ServerUnavailable,
  auth_failed: AuthFailed,
  permission_denied: PermissionDenied,
  incompatible_version: IncompatibleVersion,
  cross_slot: CrossSlot,
  undeclared_key: UndeclaredKey,
  script_error: ScriptError,
  lease_lost: LeaseLost,
  node_lease_lost: NodeLeaseLost,
  job_not_found: JobNotFound,
  invalid_state: InvalidState,
  timeout: Timeout,
  not_replicated: NotReplicated,
  closed: Closed,
  handler_failed: HandlerFailed,
  internal: Internal,
  group_full: GroupFull,
};

/** Every error code this version knows, in the core's order. */
export const errorCodes: ErrorCode[] = Object.keys(CLASS_NAMES) as ErrorCode[];

for (const code of errorCodes) {
  if (BY_CODE[code].name !== CLASS_NAMES[code]) {
    throw new Error(`emq: the class of ${code} is ${BY_CODE[code].name}, codes.js says ${CLASS_NAMES[code]}`);
  }
}

function isCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.prototype.hasOwnProperty.call(BY_CODE, code);
}

/** An EmqError of the subclass for `code` (plain EmqError for a code this version does not know). */
export function emqError(code: ErrorCode | string, message: string, options?: ErrorOptions): EmqError {
  return isCode(code) ? new BY_CODE[code](message, options) : new EmqError(code, message, options);
}

/** napi's statuses for an argument of the wrong type (a number where a string was expected, ...). */
const NAPI_ARGUMENT = /Expected$|^InvalidArg$/;

/**
 * Turns whatever the addon threw into an EmqError: its `code` is the core's code (napi's error
 * status), or napi's own status when napi refused an argument (invalid_option).
 */
export function toEmqError(e: unknown): EmqError {
  if (e instanceof EmqError) return e;
  const err = e as { message?: unknown; code?: unknown } | null;
  const message = err && typeof err.message === 'string' ? err.message : String(e);
  const code = err ? err.code : undefined;
  if (isCode(code)) return emqError(code, message);
  if (typeof code === 'string' && NAPI_ARGUMENT.test(code)) return emqError('invalid_option', message, { cause: e });
  return emqError('internal', message, { cause: e });
}

/** Runs an addon call, its failure as an EmqError. */
export async function call<T>(fn: () => Promise<T> | T): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    throw toEmqError(e);
  }
}

/** As `call`, for a synchronous addon call. */
export function callSync<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    throw toEmqError(e);
  }
}

/** Throw it from a handler to fail the job without its remaining attempts. */
export class UnrecoverableError extends Error {
  /** @param message Why the job cannot succeed: its failure's message. */
  constructor(message?: string) {
    super(message);
  }

  get name(): string {
    return 'UnrecoverableError';
  }
}

/**
 * Throw it from a handler to put the job back to delayed for `delay` ms (BullMQ's DelayedError):
 * it runs again once that long has passed on the server's clock. The run does not count as an
 * attempt unless `{ countAttempt: true }`. A worker whose lease was lost cannot delay the job; a
 * negative or non-finite delay, or one over 365 days, fails it with `invalid_option`.
 */
export class DelayedError extends Error {
  readonly delay: number;
  readonly countAttempt: boolean;
  constructor(delay: number, options?: { countAttempt?: boolean }) {
    super(`delayed for ${delay} ms`);
    this.delay = delay;
    this.countAttempt = !!(options && options.countAttempt);
  }
  get name(): string {
    return 'DelayedError';
  }
}

/**
 * Why a running job's `job.signal` was aborted (its `reason`): `code` is 'cancelled'
 * (queue.cancel), 'timeout' (the job's timeout) or 'shutdown' (the worker's close grace period
 * ended, or worker.abort()). Not an EmqError: nothing went wrong.
 */
export class JobInterrupted extends Error {
  readonly code: 'cancelled' | 'timeout' | 'shutdown';
  constructor(code: 'cancelled' | 'timeout' | 'shutdown', message: string) {
    super(message);
    this.code = code;
  }
  get name(): string {
    return 'JobInterrupted';
  }
}
