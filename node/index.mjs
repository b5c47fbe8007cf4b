// The ES module entry of emq: the same objects as the CommonJS entry (index.js), so `instanceof`
// holds across `import` and `require`, with every export named (Node cannot see the error classes
// of index.js as named exports, since that file builds them in a loop: they come named from the
// generated codes.mjs). scripts/test-packages checks that these and index.js's exports are the same.
import emq from './index.js';

export * from './codes.mjs';
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
} = emq;
