// The ES module entry of emq: the very objects of the CommonJS entry (index.js), so `instanceof`
// holds across `import` and `require` (one module instance), every export named, and the whole
// module as the default export. Named one by one: `export *` would also export the CommonJS
// marker `__esModule`. node/test/esm.test.mjs checks that the two entries' exports agree.
import emq from './index.js';

export {
  Queue, Batch, Worker, EventStream, tracing, EmqError, UnrecoverableError, DelayedError, JobInterrupted, errorCodes,
  InvalidQueueName, InvalidJobId, InvalidOption, InvalidPayload, ServerUnavailable, AuthFailed, PermissionDenied,
  IncompatibleVersion, CrossSlot, UndeclaredKey, ScriptError, LeaseLost, NodeLeaseLost, JobNotFound, InvalidState,
  Timeout, NotReplicated, Closed, HandlerFailed, Internal, GroupFull,
} from './index.js';
export type * from './index.js';
export default emq;
