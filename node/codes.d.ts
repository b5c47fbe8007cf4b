// Generated from core/src/error.rs (ErrorCode::ALL) by `cargo run -q -p emq --example error_codes`.
// Do not edit: change the core's table and run that command again.

/** A stable error code of the core (`EmqError.code`). */
export type ErrorCode =
  | 'invalid_queue_name'
  | 'invalid_job_id'
  | 'invalid_option'
  | 'invalid_payload'
  | 'server_unavailable'
  | 'auth_failed'
  | 'permission_denied'
  | 'incompatible_version'
  | 'cross_slot'
  | 'undeclared_key'
  | 'script_error'
  | 'lease_lost'
  | 'node_lease_lost'
  | 'job_not_found'
  | 'invalid_state'
  | 'timeout'
  | 'not_replicated'
  | 'closed'
  | 'handler_failed'
  | 'internal'
  | 'group_full';

/** Code → error class name, for every code (node/codes.js). */
export declare const CLASS_NAMES: { readonly [C in ErrorCode]: string };
