// Generated from core/src/error.rs (ErrorCode::ALL) by `cargo run -q -p emq --example error_codes`.
// Do not edit: change the core's table and run that command again.
// The error classes as named ES exports (index.js builds them in a loop, which Node cannot
// see as named exports); node/index.mjs re-exports them.
import emq from './index.js';

export const {
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
