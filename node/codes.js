'use strict';
// Generated from core/src/error.rs (ErrorCode::ALL) by `cargo run -q -p emq --example error_codes`.
// Do not edit: change the core's table and run that command again.

/** Every stable error code of the core, in its order, with its error class's name. */
const CLASS_NAMES = Object.freeze({
  invalid_queue_name: 'InvalidQueueName',
  invalid_job_id: 'InvalidJobId',
  invalid_option: 'InvalidOption',
  invalid_payload: 'InvalidPayload',
  server_unavailable: 'ServerUnavailable',
  auth_failed: 'AuthFailed',
  permission_denied: 'PermissionDenied',
  incompatible_version: 'IncompatibleVersion',
  cross_slot: 'CrossSlot',
  undeclared_key: 'UndeclaredKey',
  script_error: 'ScriptError',
  lease_lost: 'LeaseLost',
  node_lease_lost: 'NodeLeaseLost',
  job_not_found: 'JobNotFound',
  invalid_state: 'InvalidState',
  timeout: 'Timeout',
  not_replicated: 'NotReplicated',
  closed: 'Closed',
  handler_failed: 'HandlerFailed',
  internal: 'Internal',
  group_full: 'GroupFull',
});

module.exports = { CLASS_NAMES };
