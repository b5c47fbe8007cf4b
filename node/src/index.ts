// emq for Node.js: a thin wrapper over the native addon (bindings/node, napi-rs). The queue logic
// lives in the Rust core; these modules load the addon (loader), check and shape arguments
// (payload), turn native errors into EmqError (errors), and run the handler (dispatcher, worker):
// the addon hands jobs over in batches and the dispatcher settles each through the native worker.
// Compiled by tsc (node/tsconfig.json) into dist/: CommonJS (index.js) and the ES module entry
// (index.mjs, from index.mts), with the declaration files.

export { Queue } from './queue';
export { Batch } from './batch';
export { Worker } from './worker';
export { EventStream } from './events';
export { tracing } from './tracing';
export {
  EmqError, UnrecoverableError, DelayedError, JobInterrupted, errorCodes,
  InvalidQueueName, InvalidJobId, InvalidOption, InvalidPayload, ServerUnavailable, AuthFailed, PermissionDenied,
  IncompatibleVersion, CrossSlot, UndeclaredKey, ScriptError, LeaseLost, NodeLeaseLost, JobNotFound, InvalidState,
  Timeout, NotReplicated, Closed, HandlerFailed, Internal, GroupFull,
} from './errors';
export type { ErrorCode, ErrorOptions } from './errors';
export type * from './types';
