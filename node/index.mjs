// The ES module entry of emq: the same objects as the CommonJS entry (index.js), so `instanceof`
// holds across `import` and `require`, with every export named (Node cannot see the error classes
// of index.js as named exports, since that file builds them in a loop). A test checks that this
// list and index.js's exports are the same.
import emq from './index.js';

export default emq;
export const {
  Queue,
  Worker,
  EventStream,
  EmqError,
  UnrecoverableError,
  DelayedError,
  JobInterrupted,
  errorCodes,
  InvalidQueueName,
  InvalidJobId,
  InvalidOption,
  InvalidPayload,
  ServerUnavailable,
  AuthFailed,
  PermissionDenied,
  IncompatibleVersion,
  CrossSlot,
  UndeclaredKey,
  ScriptError,
  LeaseLost,
  NodeLeaseLost,
  JobNotFound,
  InvalidState,
  Timeout,
  NotReplicated,
  Closed,
  HandlerFailed,
  Internal,
} = emq;
