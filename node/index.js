'use strict';
// emq for Node.js: a thin wrapper over the native addon (bindings/node, napi-rs). The queue logic
// lives in the Rust core; this file only loads the addon, adapts arguments (payloads through
// JSON.stringify, backoff shorthands), turns native errors into EmqError, and adapts the handler.

const path = require('path');

// ---------------------------------------------------------------------------------------------
// Errors

/** Every emq error: a stable `.code` (the core's ErrorCode strings) and a message. */
class EmqError extends Error {
  constructor(code, message, options) {
    super(message, options);
    this.code = code;
  }
  get name() {
    return this.constructor.name;
  }
}

const CLASS_NAMES = {
  invalid_queue_name: 'InvalidQueueName',
  invalid_job_id: 'InvalidJobId',
  invalid_option: 'InvalidOption',
  invalid_payload: 'InvalidPayload',
  server_unavailable: 'ServerUnavailable',
  incompatible_version: 'IncompatibleVersion',
  cross_slot: 'CrossSlot',
  undeclared_key: 'UndeclaredKey',
  script_error: 'ScriptError',
  lease_lost: 'LeaseLost',
  node_lease_lost: 'NodeLeaseLost',
  job_not_found: 'JobNotFound',
  invalid_state: 'InvalidState',
  timeout: 'Timeout',
  closed: 'Closed',
  handler_failed: 'HandlerFailed',
  internal: 'Internal',
};

const errors = {};
const byCode = {};
for (const [code, className] of Object.entries(CLASS_NAMES)) {
  const cls = {
    [className]: class extends EmqError {
      constructor(message, options) {
        super(code, message, options);
      }
    },
  }[className];
  errors[className] = cls;
  byCode[code] = cls;
}

/** An EmqError of the subclass for `code` (plain EmqError for a code this version does not know). */
function emqError(code, message, options) {
  const cls = byCode[code];
  return cls ? new cls(message, options) : new EmqError(code, message, options);
}

const NATIVE_MESSAGE = /^\[emq:([a-z_]+)\] ([\s\S]*)$/;

/** Turns whatever the addon threw into an EmqError. */
function toEmqError(e) {
  if (e instanceof EmqError) return e;
  const message = e && typeof e.message === 'string' ? e.message : String(e);
  const m = NATIVE_MESSAGE.exec(message);
  if (m) return emqError(m[1], m[2]);
  // napi's own argument conversion (a number where a string was expected, ...).
  if (e && typeof e.code === 'string' && /Expected$|^InvalidArg$/.test(e.code)) {
    return emqError('invalid_option', message, { cause: e });
  }
  return emqError('internal', message, { cause: e });
}

async function call(fn) {
  try {
    return await fn();
  } catch (e) {
    throw toEmqError(e);
  }
}

function callSync(fn) {
  try {
    return fn();
  } catch (e) {
    throw toEmqError(e);
  }
}

// ---------------------------------------------------------------------------------------------
// The addon

function platformTriple() {
  const { platform, arch } = process;
  if (platform === 'linux') {
    let glibc = true;
    try {
      glibc = Boolean(process.report.getReport().header.glibcVersionRuntime);
    } catch (_) {
      /* assume glibc */
    }
    return `linux-${arch}-${glibc ? 'gnu' : 'musl'}`;
  }
  if (platform === 'win32') return `win32-${arch}-msvc`;
  return `${platform}-${arch}`;
}

function loadNative() {
  const triple = platformTriple();
  const file = process.env.EMQ_NATIVE_ADDON || path.join(__dirname, `emq.${triple}.node`);
  try {
    return require(file);
  } catch (e) {
    const lib = process.platform === 'darwin' ? 'libemq_node.dylib' : process.platform === 'win32' ? 'emq_node.dll' : 'libemq_node.so';
    const err = new Error(
      `emq: cannot load the native addon ${file} (${e.message}).\n` +
        `This package ships a prebuilt addon for linux-x64-gnu only. To build it for ${triple}, ` +
        `from a checkout of the emq repository run:\n` +
        `  cargo build --release -p emq-node\n` +
        `  cp target/release/${lib} node/emq.${triple}.node\n` +
        `(or run node/build.sh), then install the package from that node/ folder.`,
      { cause: e },
    );
    err.code = 'EMQ_ADDON_NOT_FOUND';
    throw err;
  }
}

const native = loadNative();

// ---------------------------------------------------------------------------------------------
// Argument adapters

function toJson(what, value) {
  if (value === undefined) return 'null';
  let text;
  try {
    text = JSON.stringify(value);
  } catch (e) {
    throw emqError('invalid_payload', `the ${what} cannot be serialised as JSON: ${e.message}`, { cause: e });
  }
  if (text === undefined) {
    throw emqError('invalid_payload', `the ${what} cannot be serialised as JSON (got a ${typeof value})`);
  }
  return text;
}

const JOB_OPTIONS = new Set([
  'delay', 'priority', 'lifo', 'attempts', 'backoff', 'jitter', 'lease', 'timeout',
  'removeOnComplete', 'removeOnFail', 'dedup', 'id',
]);
const WORKER_OPTIONS = new Set([
  'concurrency', 'lease', 'stalledInterval', 'maxStalls', 'blockTimeout', 'shutdownTimeout',
]);

function checkKeys(kind, opts, allowed) {
  if (opts === undefined || opts === null) return undefined;
  if (typeof opts !== 'object' || Array.isArray(opts)) {
    throw emqError('invalid_option', `${kind} options must be an object`);
  }
  for (const k of Object.keys(opts)) {
    if (!allowed.has(k)) {
      throw emqError('invalid_option', `unknown ${kind} option '${k}'; one of ${[...allowed].join(', ')}`);
    }
  }
  return opts;
}

function jobOpts(opts) {
  opts = checkKeys('job', opts, JOB_OPTIONS);
  if (opts === undefined) return undefined;
  const out = {};
  for (const [k, v] of Object.entries(opts)) {
    if (v !== undefined && v !== null) out[k] = v;
  }
  if (typeof out.backoff === 'number') out.backoff = { type: 'fixed', delay: out.backoff };
  return out;
}

// ---------------------------------------------------------------------------------------------
// Queue

const kNative = Symbol('emq.native');
const kToken = Symbol('emq.token');

/** A handle on one queue. Get one with `await Queue.connect(url | urls, name)`. */
class Queue {
  constructor(token, nativeQueue) {
    if (token !== kToken) {
      throw emqError('invalid_option', 'use `await Queue.connect(url, name)` to open a queue');
    }
    this[kNative] = nativeQueue;
  }

  /** Connects to a datastore (one URL, or a list of cluster seed URLs) and opens the queue `name`. */
  static async connect(urls, name) {
    const list = Array.isArray(urls) ? urls : [urls];
    if (list.length === 0 || list.some((u) => typeof u !== 'string')) {
      throw emqError('invalid_option', 'Queue.connect needs a URL string or a non-empty array of URL strings');
    }
    if (typeof name !== 'string') {
      throw emqError('invalid_queue_name', 'the queue name must be a string');
    }
    const nq = await call(() => native.connect(list, name));
    return new Queue(kToken, nq);
  }

  get name() {
    return this[kNative].name;
  }

  /** Adds a job; resolves to its id (or, with a `dedup` key held by a live job, that job's id). */
  async add(name, data, opts) {
    const text = toJson('payload', data);
    const o = jobOpts(opts);
    return call(() => this[kNative].add(name, text, o));
  }

  /** Adds many jobs `[{ name, data, opts }]` in pipelined round trips; resolves to their ids in order. */
  async addBulk(jobs) {
    if (!Array.isArray(jobs)) throw emqError('invalid_option', 'addBulk takes an array of { name, data, opts }');
    const batch = jobs.map((j, i) => {
      if (!j || typeof j !== 'object') throw emqError('invalid_option', `addBulk: job ${i} is not an object`);
      return { name: j.name, data: toJson(`payload of job ${i}`, j.data), opts: jobOpts(j.opts) };
    });
    return call(() => this[kNative].addBulk(batch));
  }

  /** Reads a job as a plain object, or null when there is no such job. */
  async get(id) {
    const text = await call(() => this[kNative].get(String(id)));
    return text == null ? null : JSON.parse(text);
  }

  /** Number of jobs per state. */
  async counts() {
    return call(() => this[kNative].counts());
  }

  async pause() {
    return call(() => this[kNative].pause());
  }

  async resume() {
    return call(() => this[kNative].resume());
  }

  async isPaused() {
    return call(() => this[kNative].isPaused());
  }

  /** Removes a job that is not active; resolves to true when it existed. */
  async remove(id) {
    return call(() => this[kNative].remove(String(id)));
  }

  async updateProgress(id, progress) {
    const text = toJson('progress', progress);
    return call(() => this[kNative].updateProgress(String(id), text));
  }

  async log(id, line) {
    return call(() => this[kNative].log(String(id), String(line)));
  }

  /** Releases the queue's node-id lease. */
  async close() {
    return call(() => this[kNative].close());
  }
}

// ---------------------------------------------------------------------------------------------
// Worker

/** Throw it from a handler to fail the job without the remaining attempts. */
class UnrecoverableError extends Error {
  get name() {
    return 'UnrecoverableError';
  }
}

function failure(e) {
  const isObj = e !== null && (typeof e === 'object' || typeof e === 'function');
  let message;
  if (isObj && typeof e.message === 'string') message = e.message;
  else {
    try {
      message = String(e);
    } catch (_) {
      message = 'the handler failed';
    }
  }
  const out = { message };
  if (isObj && typeof e.stack === 'string') out.stack = e.stack;
  if (isObj && typeof e.code === 'string' && e.code) out.code = e.code;
  if (e instanceof UnrecoverableError || (isObj && e.unrecoverable === true)) out.unrecoverable = true;
  return { error: out };
}

/** Adapts a user handler: job JSON in, outcome JSON out; it never throws or rejects. */
function adapt(handler, queue) {
  return async (jobText) => {
    let outcome;
    try {
      const job = JSON.parse(jobText);
      job.updateProgress = (p) => queue.updateProgress(job.id, p);
      job.log = (line) => queue.log(job.id, line);
      const result = await handler(job);
      const text = result === undefined ? 'null' : JSON.stringify(result);
      outcome = `{"ok":${text === undefined ? 'null' : text}}`;
    } catch (e) {
      outcome = JSON.stringify(failure(e));
    }
    return outcome;
  };
}

/**
 * Runs `handler(job)` on the jobs of `queue`, `concurrency` at a time. A returned value (or the
 * value a returned promise resolves to) becomes the job's result; a throw or a rejection fails the
 * job (retried while attempts remain). Call `await worker.close()` to stop it.
 */
class Worker {
  constructor(queue, handler, opts) {
    if (!(queue instanceof Queue)) {
      throw emqError('invalid_option', 'new Worker(queue, handler): queue must come from Queue.connect');
    }
    if (typeof handler !== 'function') {
      throw emqError('invalid_option', 'new Worker(queue, handler): handler must be a function');
    }
    const o = checkKeys('worker', opts, WORKER_OPTIONS);
    this[kNative] = callSync(() => queue[kNative].worker(adapt(handler, queue), o));
    this.queue = queue;
    this._closing = null;
  }

  /** As `new Worker(...)`, as a promise. */
  static async start(queue, handler, opts) {
    return new Worker(queue, handler, opts);
  }

  /** Counters: completed, failed, leaseLost, recovered, running. */
  stats() {
    return this[kNative].stats();
  }

  /**
   * Stops fetching, waits up to `timeout` ms for in-flight jobs, gives the rest back to the queue,
   * and stops keeping the process alive. Resolves to how many jobs were given back.
   */
  async close({ timeout } = {}) {
    if (!this._closing) this._closing = call(() => this[kNative].close(timeout));
    return this._closing;
  }
}

module.exports = {
  Queue,
  Worker,
  EmqError,
  UnrecoverableError,
  errorCodes: Object.keys(CLASS_NAMES),
  ...errors,
};
