'use strict';
// emq for Node.js: a thin wrapper over the native addon (bindings/node, napi-rs). The queue logic
// lives in the Rust core; this file only loads the addon, adapts arguments (payloads through
// JSON.stringify, backoff shorthands; batches such as addBulk, flows and schedulers cross as one JSON
// string), turns native errors into EmqError, and runs the handler: the addon hands jobs over in
// batches (one JSON array per wake-up) and this file settles each back through the native worker.

const path = require('path');
const { EventEmitter } = require('events');

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

// code → class name for every stable code of the core; generated from core/src/error.rs.
const { CLASS_NAMES } = require('./codes.js');

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

/**
 * The addon, as napi-rs packages do it: EMQ_NATIVE_ADDON when set; else a local
 * `emq.<triple>.node` beside this file (a checkout after node/build.sh, for development); else the
 * platform package `@emq/<triple>` (an optional dependency of `emq`: npm installs the one that
 * matches the machine, with the prebuilt addon inside, so no Rust toolchain is needed).
 */
function loadNative() {
  const triple = platformTriple();
  const tried = [];
  const attempt = (what) => {
    try {
      return { addon: require(what) };
    } catch (e) {
      tried.push(`${what}: ${e.message.split('\n')[0]}`);
      return { error: e };
    }
  };
  let r;
  if (process.env.EMQ_NATIVE_ADDON) {
    r = attempt(process.env.EMQ_NATIVE_ADDON);
  } else {
    const local = path.join(__dirname, `emq.${triple}.node`);
    r = require('fs').existsSync(local) ? attempt(local) : { error: null };
    if (!r.addon) {
      const viaPackage = attempt(`@emq/${triple}`);
      if (viaPackage.addon || !r.error) r = viaPackage;
    }
  }
  if (r.addon) return r.addon;
  const lib = process.platform === 'darwin' ? 'libemq_node.dylib' : process.platform === 'win32' ? 'emq_node.dll' : 'libemq_node.so';
  const err = new Error(
    `emq: cannot load the native addon for ${triple}; tried:\n  ${tried.join('\n  ')}\n` +
      `npm installs the prebuilt addon as the optional dependency @emq/${triple} (check that ` +
      `optional dependencies were not omitted, e.g. by --no-optional or --omit=optional). ` +
      `For a platform without one, build it from a checkout of the emq repository:\n` +
      `  cargo build --release -p emq-node\n` +
      `  cp target/release/${lib} node/emq.${triple}.node\n` +
      `(or run node/build.sh), then install the package from that node/ folder.`,
    { cause: r.error },
  );
  err.code = 'EMQ_ADDON_NOT_FOUND';
  throw err;
}

const native = loadNative();

// ---------------------------------------------------------------------------------------------
// Argument adapters

// A lone (unpaired) surrogate: napi would turn it into U+FFFD, and JSON cannot carry it to other
// languages. In a `u` regexp a surrogate pair is one code point, so only lone ones match.
const LONE_SURROGATE = /\p{Cs}/u;

/** A queue name as the core will see it: a string with no lone surrogate (napi would rename it). */
function queueName(name, what = 'the queue name') {
  if (typeof name !== 'string') throw emqError('invalid_queue_name', `${what} must be a string`);
  if (LONE_SURROGATE.test(name)) {
    throw emqError(
      'invalid_queue_name',
      `${what} ${JSON.stringify(name)} holds a lone surrogate (half of a UTF-16 pair), which is not text; it would name another queue`,
    );
  }
  return name;
}

/** A job name with no lone surrogate (napi would store U+FFFD in its place). */
function jobName(name, what) {
  if (typeof name === 'string' && LONE_SURROGATE.test(name)) {
    throw emqError('invalid_payload', `the name of ${what} ${JSON.stringify(name)} holds a lone surrogate, which is not text`);
  }
  return name;
}

// The core refuses payloads nested 128 levels or more; the walk below stops a little deeper.
const WALK_DEPTH = 130;

function kindOf(v) {
  const ctor = v && v.constructor;
  return ctor && typeof ctor.name === 'string' && ctor.name ? ctor.name : 'non-plain object';
}

/**
 * Why `v` would not read back exactly through JSON, or null: undefined and NaN/±Infinity (JSON
 * writes null), a hole in an array, a function or symbol (left out), and any object that is not a
 * plain object or an array (a Map or Set becomes {}, a Date a string, a class instance loses its
 * class, a toJSON method replaces the value). A property whose value is undefined is left out, as
 * JSON.stringify does: reading it back gives undefined again, so it is accepted. Strings with lone
 * surrogates, nesting and integer range are the core's checks. The path is built on the way out.
 */
function notJson(v, depth) {
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return null;
    case 'number':
      return Number.isFinite(v) ? null : { path: [], why: `${v}, which JSON stores as null` };
    case 'undefined':
      return { path: [], why: 'undefined, which JSON stores as null (pass null for no data)' };
    case 'bigint':
      return { path: [], why: 'a BigInt, which JSON cannot hold (pass a number or a string)' };
    case 'function':
    case 'symbol':
      return { path: [], why: `a ${typeof v}, which JSON leaves out` };
    default:
      break;
  }
  if (v === null || depth > WALK_DEPTH) return null;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const e = v[i];
      if (e === undefined) {
        return { path: [`[${i}]`], why: i in v ? 'undefined, which JSON stores as null' : 'a hole, which JSON stores as null' };
      }
      if (typeof e === 'string' || typeof e === 'boolean' || e === null) continue;
      const p = notJson(e, depth + 1);
      if (p) {
        p.path.push(`[${i}]`);
        return p;
      }
    }
    return null;
  }
  const proto = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) {
    return {
      path: [],
      why: `a ${kindOf(v)}, which JSON does not keep as it is (job data is plain objects, arrays, strings, finite numbers, booleans and null)`,
    };
  }
  if (Object.getOwnPropertySymbols(v).length > 0) return { path: [], why: 'an object with symbol keys, which JSON leaves out' };
  for (const k of Object.keys(v)) {
    const e = v[k];
    if (e === undefined || typeof e === 'string' || typeof e === 'boolean' || e === null) continue;
    if (k === 'toJSON' && typeof e === 'function') return { path: [], why: 'an object with a toJSON method, which JSON would call' };
    const p = notJson(e, depth + 1);
    if (p) {
      p.path.push(/^[A-Za-z_$][\w$]*$/.test(k) ? `.${k}` : `[${JSON.stringify(k)}]`);
      return p;
    }
  }
  return null;
}

/** Refuses with invalid_payload what would not read back exactly (see `notJson`). */
function checkPayload(what, value) {
  const p = notJson(value, 0);
  if (p) {
    const at = p.path.length ? ` at ${p.path.reverse().join('')}` : '';
    throw emqError('invalid_payload', `the ${what} cannot be stored as it is: its value${at} is ${p.why}`);
  }
}

/** JSON text of job data (or progress), refused when it would not read back exactly. */
function payloadJson(what, value) {
  checkPayload(what, value);
  return toJson(what, value);
}

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
  'removeOnComplete', 'removeOnFail', 'dedup', 'dedupTtl', 'debounce', 'group', 'parentPolicy', 'id',
]);
const WORKER_OPTIONS = new Set([
  'concurrency', 'lease', 'stalledInterval', 'maxStalls', 'blockTimeout', 'shutdownTimeout',
  'removeOnComplete', 'removeOnFail', 'handleSignals',
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

/** Numbers must be finite: JSON (how batches cross) would turn NaN and Infinity into null. */
function checkFinite(what, v) {
  if (typeof v === 'number' && !Number.isFinite(v)) {
    throw emqError('invalid_option', `${what} must be a finite number, got ${v}`);
  }
}

function jobOpts(opts) {
  opts = checkKeys('job', opts, JOB_OPTIONS);
  if (opts === undefined) return undefined;
  const out = {};
  for (const [k, v] of Object.entries(opts)) {
    if (v !== undefined && v !== null) {
      checkFinite(k, v);
      out[k] = v;
    }
  }
  if (typeof out.backoff === 'number') out.backoff = { type: 'fixed', delay: out.backoff };
  if (out.backoff && typeof out.backoff === 'object') {
    checkFinite('backoff.delay', out.backoff.delay);
    checkFinite('backoff.max', out.backoff.max);
  }
  return out;
}

/**
 * `data` for a JSON batch, refused when it would not read back exactly (see `notJson`); with
 * `optional`, an absent (undefined) `data` is null.
 */
function batchData(what, data, optional = false) {
  if (data === undefined && optional) return null;
  checkPayload(what, data);
  return data;
}

/** JSON text of a batch; on failure, names the payload that could not be serialised. */
function batchJson(what, batch, payloads) {
  try {
    return JSON.stringify(batch);
  } catch (e) {
    for (const [name, data] of payloads()) toJson(name, data);
    throw emqError('invalid_option', `the ${what} cannot be serialised as JSON: ${e.message}`, { cause: e });
  }
}

const RATE_LIMIT_KEYS = new Set(['max', 'window']);
const SCHEDULER_KEYS = new Set([
  'every', 'cron', 'tz', 'firstAfter', 'limit', 'endAfter', 'name', 'data', 'opts',
]);
const FLOW_KEYS = new Set(['queue', 'name', 'data', 'opts', 'children']);

/** A flow checked and shaped for JSON. */
function flowSpec(flow, what) {
  if (!flow || typeof flow !== 'object' || Array.isArray(flow)) {
    throw emqError('invalid_option', `${what} must be an object { name, data, opts, queue, children }`);
  }
  checkKeys('flow', flow, FLOW_KEYS);
  const children = flow.children ?? [];
  if (!Array.isArray(children)) throw emqError('invalid_option', `${what}: children must be an array`);
  return {
    queue: flow.queue == null ? undefined : queueName(flow.queue, `the queue of ${what}`),
    name: jobName(flow.name, what),
    data: batchData(`payload of ${what}`, flow.data),
    opts: jobOpts(flow.opts),
    children: children.map((c, i) => flowSpec(c, `${what}.children[${i}]`)),
  };
}

function flowPayloads(flow, what, out = []) {
  out.push([`payload of ${what}`, flow.data]);
  (flow.children || []).forEach((c, i) => flowPayloads(c, `${what}.children[${i}]`, out));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Queue

const kTlsKeys = ['caCert', 'clientCert', 'clientKey'];

/** `Queue.connect`'s options: only the TLS files, each a string or a Buffer (checked by the core). */
function connectTls(opts) {
  if (opts === undefined || opts === null) return undefined;
  if (typeof opts !== 'object' || Array.isArray(opts)) {
    throw emqError('invalid_option', 'Queue.connect options must be an object ({ caCert, clientCert, clientKey, durable })');
  }
  const tls = {};
  for (const key of Object.keys(opts)) {
    if (key === 'durable') continue;
    if (!kTlsKeys.includes(key)) {
      throw emqError('invalid_option', `unknown Queue.connect option ${JSON.stringify(key)} (known: ${kTlsKeys.join(', ')}, durable)`);
    }
    const v = opts[key];
    if (v === undefined || v === null) continue;
    if (typeof v === 'string' || Buffer.isBuffer(v)) {
      tls[key] = v;
    } else if (v instanceof Uint8Array) {
      tls[key] = Buffer.from(v);
    } else {
      throw emqError('invalid_option', `${key} must be a path or PEM text (a string) or the PEM as a Buffer`);
    }
  }
  return tls;
}

const kNative = Symbol('emq.native');
const kToken = Symbol('emq.token');
const kSlot = Symbol('emq.slot');

/** A handle on one queue. Get one with `await Queue.connect(url | urls, name)`. */
class Queue {
  constructor(token, nativeQueue) {
    if (token !== kToken) {
      throw emqError('invalid_option', 'use `await Queue.connect(url, name)` to open a queue');
    }
    this[kNative] = nativeQueue;
  }

  /**
   * Connects to a datastore (one URL, or a list of cluster seed URLs) and opens the queue `name`.
   * `opts` for `rediss://`: `caCert` (a private CA), `clientCert` + `clientKey` (mutual TLS), each
   * a path or PEM text (a string) or the PEM as a Buffer; `durable: [replicas, timeoutMs]`: every
   * add waits for that many replicas (WAIT).
   */
  static async connect(urls, name, opts) {
    const list = Array.isArray(urls) ? urls : [urls];
    if (list.length === 0 || list.some((u) => typeof u !== 'string')) {
      throw emqError('invalid_option', 'Queue.connect needs a URL string or a non-empty array of URL strings');
    }
    queueName(name);
    const tls = connectTls(opts);
    // opts.durable: [replicas, timeoutMs]: every add waits for that many replicas (WAIT).
    const durable = opts && opts.durable ? Array.from(opts.durable) : undefined;
    const nq = await call(() => native.connect(list, name, durable, tls));
    return new Queue(kToken, nq);
  }

  get name() {
    return this[kNative].name;
  }

  /** Mints a job id now, to add later with `{ id }`: adding the same id again adds nothing. */
  mintId() {
    return callSync(() => this[kNative].mintId());
  }

  /** Adds a job; resolves to its id (or, with a `dedup` key held by a live job, that job's id). */
  async add(name, data, opts) {
    jobName(name, 'the job');
    const text = payloadJson('payload', data);
    const o = jobOpts(opts);
    return call(() => this[kNative].add(name, text, o));
  }

  /** Adds many jobs `[{ name, data, opts }]` in pipelined round trips; resolves to their ids in order. */
  async addBulk(jobs) {
    if (!Array.isArray(jobs)) throw emqError('invalid_option', 'addBulk takes an array of { name, data, opts }');
    // The whole batch crosses as one JSON string; options shared by many jobs are checked once.
    const batch = new Array(jobs.length);
    let lastOpts;
    let lastChecked;
    for (let i = 0; i < jobs.length; i++) {
      const j = jobs[i];
      if (!j || typeof j !== 'object') throw emqError('invalid_option', `addBulk: job ${i} is not an object`);
      let o = j.opts;
      if (o === undefined || o === null) o = undefined;
      else if (o === lastOpts) o = lastChecked;
      else {
        lastOpts = o;
        o = lastChecked = jobOpts(o);
      }
      batch[i] = { name: jobName(j.name, `job ${i}`), data: batchData(`payload of job ${i}`, j.data), opts: o };
    }
    const text = batchJson('addBulk batch', batch, () => jobs.map((j, i) => [`payload of job ${i}`, j.data]));
    const ids = await call(() => this[kNative].addBulkJson(text));
    return ids === '' ? [] : ids.split(',');
  }

  /**
   * Adds a flow: `{ name, data, opts, queue?, children: [flow, ...] }`, a parent that runs once its
   * children finished (children may name other queues of the same datastore). Resolves to the ids
   * in the flow's shape: `{ queue, id, children: [...] }`.
   */
  async addFlow(flow) {
    const spec = flowSpec(flow, 'the flow');
    const text = batchJson('flow', spec, () => flowPayloads(flow, 'the flow'));
    return JSON.parse(await call(() => this[kNative].addFlow(text)));
  }

  /** A parent's children's results by `<queue>:<id>` (a failed child under `ignore`: `{ failed }`). */
  async childrenResults(id) {
    return JSON.parse(await call(() => this[kNative].childrenResults(String(id))));
  }

  /** Reads a job as a plain object, or null when there is no such job. */
  async get(id) {
    const text = await call(() => this[kNative].get(String(id)));
    return text == null ? null : JSON.parse(text);
  }

  /** Jobs in one state, a page at a time (oldest first; completed and failed newest first). */
  async list(state, { offset = 0, limit = 100 } = {}) {
    return JSON.parse(await call(() => this[kNative].list(String(state), offset, limit)));
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

  /** Sends a failed job back to wait with its attempts reset; false when it is not failed. */
  async retry(id) {
    return call(() => this[kNative].retry(String(id)));
  }

  /** Retries every failed job; resolves to how many. */
  async retryFailed() {
    return call(() => this[kNative].retryFailed());
  }

  /** Runs a delayed job now; false when it is not delayed. */
  async promote(id) {
    return call(() => this[kNative].promote(String(id)));
  }

  /**
   * Gives a job that has not finished a new priority (0: none, lower runs first); false when there
   * is no such job or it has finished. A waiting job moves at once; a delayed one when due.
   */
  async changePriority(id, priority) {
    return call(() => this[kNative].changePriority(String(id), priority));
  }

  /** Removes every waiting, paused and prioritized job (and delayed ones with `delayed: true`). */
  async drain({ delayed = false } = {}) {
    return call(() => this[kNative].drain(Boolean(delayed)));
  }

  /** Removes up to `limit` jobs of `state` ('completed' | 'failed') finished more than `grace` ms ago. */
  async clean(state, { grace = 0, limit = 1000 } = {}) {
    return call(() => this[kNative].clean(String(state), grace, limit));
  }

  /** Deletes the whole queue (every job and key); refuses while jobs are active unless `force`. */
  async obliterate({ force = false } = {}) {
    return call(() => this[kNative].obliterate(Boolean(force)));
  }

  async updateProgress(id, progress) {
    const text = payloadJson('progress', progress);
    return call(() => this[kNative].updateProgress(String(id), text));
  }

  async log(id, line) {
    return call(() => this[kNative].log(String(id), String(line)));
  }

  /** A job's log lines, oldest first. */
  async logs(id) {
    return call(() => this[kNative].logs(String(id)));
  }

  /** At most `max` jobs of this queue active at once across all workers; null lifts it. */
  async setGlobalConcurrency(max) {
    if (max !== null && max !== undefined) checkFinite('globalConcurrency', max);
    return call(() => this[kNative].setGlobalConcurrency(max ?? null));
  }

  /** At most `max` jobs start per `window` ms (a fixed window on the server's clock); null lifts it. */
  async setRateLimit(limit) {
    if (limit === null || limit === undefined) return call(() => this[kNative].setRateLimit(null, null));
    checkKeys('rate limit', limit, RATE_LIMIT_KEYS);
    if (limit.max === undefined || limit.window === undefined) {
      throw emqError('invalid_option', 'setRateLimit takes { max, window } (or null to lift it)');
    }
    return call(() => this[kNative].setRateLimit(limit.max, limit.window));
  }

  /** Each job group (the `group` job option) starts at most `max` jobs per `window` ms, every group
   * on its own (on the server's clock); null lifts it. */
  async setGroupRateLimit(limit) {
    if (limit === null || limit === undefined) return call(() => this[kNative].setGroupRateLimit(null, null));
    checkKeys('group rate limit', limit, RATE_LIMIT_KEYS);
    if (limit.max === undefined || limit.window === undefined) {
      throw emqError('invalid_option', 'setGroupRateLimit takes { max, window } (or null to lift it)');
    }
    return call(() => this[kNative].setGroupRateLimit(limit.max, limit.window));
  }

  /**
   * Creates or replaces the job scheduler `id`: every `every` ms, or at each occurrence of the cron
   * expression `cron` (5 fields, or 6 with seconds first) in the IANA zone `tz` (default UTC), it
   * enqueues `{ name, data, opts }` — starting `firstAfter` ms from now, stopping after `limit` runs
   * or `endAfter` ms. An existing scheduler keeps its count. Resolves to true when it was created.
   * Workers of the queue fire due schedulers.
   */
  async upsertScheduler(id, spec) {
    if (typeof id !== 'string') throw emqError('invalid_option', 'the scheduler id must be a string');
    checkKeys('scheduler', spec, SCHEDULER_KEYS);
    if (!spec) throw emqError('invalid_option', 'upsertScheduler(id, { every | cron, tz, name, data, opts, firstAfter, limit, endAfter })');
    for (const k of ['every', 'firstAfter', 'limit', 'endAfter']) checkFinite(k, spec[k]);
    const body = {
      every: spec.every ?? undefined,
      cron: spec.cron ?? undefined,
      tz: spec.tz ?? undefined,
      firstAfter: spec.firstAfter ?? undefined,
      limit: spec.limit ?? undefined,
      endAfter: spec.endAfter ?? undefined,
      name: jobName(spec.name, 'the scheduled job'),
      data: batchData('payload of the scheduled job', spec.data, true),
      opts: jobOpts(spec.opts),
    };
    const text = batchJson('scheduler', body, () => [['payload of the scheduled job', spec.data]]);
    return call(() => this[kNative].upsertScheduler(id, text));
  }

  /** Deletes the scheduler `id`; resolves to true when it existed. */
  async removeScheduler(id) {
    return call(() => this[kNative].removeScheduler(String(id)));
  }

  /** Every scheduler: `[{ id, every, cron, tz, count, limit, nextIn, endsIn, name }]` (ms; null when not set). */
  async schedulers() {
    return JSON.parse(await call(() => this[kNative].schedulers()));
  }

  /**
   * Follows the queue's events from now on (or after the stream id `after`): an EventStream to read
   * with `for await (const ev of stream)` or `await stream.next()`; `stream.close()` ends it.
   */
  async events({ after } = {}) {
    const ne = await call(() => this[kNative].events(after == null ? null : String(after)));
    return new EventStream(kToken, ne);
  }

  /** The newest `limit` events, oldest first, without waiting. */
  async recentEvents(limit = 100) {
    return JSON.parse(await call(() => this[kNative].recentEvents(limit)));
  }

  /** Counts, finished jobs per minute over the last hour, and lifetime counters. */
  async metrics() {
    return JSON.parse(await call(() => this[kNative].metrics()));
  }

  /**
   * Copies the BullMQ queue `<fromPrefix>:<sourceQueue>` (`bull` is BullMQ's default prefix, `emq`
   * EchoMQ 1.x's) into this queue, crash-safe and idempotent, as `emq migrate` does (MIGRATING.md).
   * `opts`: `fromPrefix` ('bull'), `dryRun`, `completed`, `deleteSource` (false), `batch` (500).
   * Resolves to the report (`states`, `reasons`, `not_mapped`, `log_lines`, `elapsed_ms`…).
   */
  async migrateFromBullmq(sourceQueue, opts = {}) {
    if (typeof sourceQueue !== 'string') throw emqError('invalid_option', 'sourceQueue must be a string');
    const o = opts || {};
    const known = ['fromPrefix', 'dryRun', 'completed', 'deleteSource', 'batch'];
    for (const k of Object.keys(o)) {
      if (!known.includes(k)) throw emqError('invalid_option', `unknown migrate option ${JSON.stringify(k)} (known: ${known.join(', ')})`);
    }
    const text = await call(() => this[kNative].migrateFromBullmq(
      sourceQueue, o.fromPrefix === undefined ? 'bull' : String(o.fromPrefix),
      Boolean(o.dryRun), Boolean(o.completed), Boolean(o.deleteSource),
      o.batch === undefined ? 500 : Number(o.batch),
    ));
    return JSON.parse(text);
  }

  /**
   * Cancels a job with `reason`. Resolves to 'cancelled' (it was waiting or delayed: it will not
   * run, and ends failed with the failure code `cancelled`), 'requested' (it is running: the
   * worker aborts its `job.signal`, and it ends failed with the code `cancelled`, not retried),
   * 'finished' (it had already finished) or 'not_found'.
   */
  async cancel(id, reason = '') {
    if (typeof reason !== 'string') throw emqError('invalid_option', 'cancel(id, reason): reason must be a string');
    return call(() => this[kNative].cancel(id, reason));
  }

  /**
   * Waits up to `timeout` ms (default 30000) for a job to finish, also one that finished before
   * the call. Resolves to its result; rejects with a HandlerFailed (code `handler_failed`) whose
   * `failureCode` is the job's failure code (`handler_failed`, `timeout`, `cancelled`, `stalled`,
   * or the handler's own), with the failure's message and `stack`; with a Timeout (code
   * `timeout`) when it did not finish in time; with JobNotFound when there is no such job.
   */
  async wait(id, { timeout = 30000 } = {}) {
    checkFinite('timeout', timeout);
    const r = JSON.parse(await call(() => this[kNative].wait(id, timeout)));
    if (r.ok) return r.result;
    const f = r.failure || {};
    const e = emqError('handler_failed', f.message ?? 'the job failed');
    e.failureCode = f.code ?? 'handler_failed';
    e.failure = f;
    if (typeof f.stack === 'string') e.stack = f.stack;
    throw e;
  }

  /** The live workers of this queue: `{ id, queue, host, pid, language, concurrency, running, ... }`. */
  async workers() {
    return JSON.parse(await call(() => this[kNative].workers()));
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

/**
 * Throw it from a handler to put the job back to delayed for `delay` ms instead of failing it
 * (BullMQ's DelayedError): it runs again once that long has passed on the server's clock. The run
 * does not count as an attempt unless `{ countAttempt: true }`. A worker whose lease was lost cannot
 * delay the job; a negative or non-finite delay, or one over 365 days, fails it with `invalid_option`.
 */
class DelayedError extends Error {
  constructor(delay, options) {
    super(`delayed for ${delay} ms`);
    this.delay = delay;
    this.countAttempt = !!(options && options.countAttempt);
  }
  get name() {
    return 'DelayedError';
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

/**
 * Why a running job's `job.signal` was aborted (its `reason`): `code` is 'cancelled'
 * (queue.cancel), 'timeout' (the job's timeout) or 'shutdown' (the worker's close grace period
 * ended, or worker.abort()). Not an EmqError: nothing went wrong.
 */
class JobInterrupted extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
  get name() {
    return 'JobInterrupted';
  }
}

/**
 * The worker's dispatcher: the addon calls it with a JSON array of entries (one call per wake-up,
 * as many as arrived since the last one): jobs, and aborts (`{ s, abort, reason }`: the core
 * interrupted the run of job `s`). It runs `handler` on each job and settles each through the
 * native worker: successes are gathered and sent in one `complete` call per microtask checkpoint,
 * failures one `fail` call each. An abort aborts the job's `signal`; the core ends the run only
 * once the handler's promise has settled. It never throws, and no outcome ever rejects: a
 * synchronous throw, a rejection or an unserialisable result fails that job only.
 */
function dispatcher(handler, queue, slot) {
  let seqs = [];
  let results = [];
  let flushQueued = false;
  // Jobs handed to the handler and not settled yet, by sequence number.
  const live = new Map();
  slot.live = live;
  const flush = () => {
    flushQueued = false;
    const s = seqs;
    const r = results;
    seqs = [];
    results = [];
    try {
      slot.native.complete(s, r);
    } catch (e) {
      slot.error(e); // the worker is gone: its jobs were released
    }
  };
  const settled = (seq) => {
    const st = live.get(seq);
    if (st !== undefined) live.delete(seq);
    return st;
  };
  const fail = (seq, e) => {
    settled(seq);
    if (e instanceof DelayedError) {
      try {
        // Validated by the core (a non-number is NaN there: invalid_option).
        slot.native.delay(seq, typeof e.delay === 'number' ? e.delay : NaN, e.countAttempt === true);
      } catch (err) {
        slot.error(err); // the worker is gone
      }
      return;
    }
    try {
      const f = failure(e).error;
      slot.native.fail(seq, f.message, f.code ?? null, f.stack ?? null, f.unrecoverable === true);
    } catch (err) {
      slot.error(err); // the worker is gone
    }
    // The 'failed' event comes from the core once the failure is recorded (workerEvents).
  };
  const ok = (seq, value) => {
    let text = null;
    if (value !== undefined && value !== null) {
      try {
        text = JSON.stringify(value);
      } catch (e) {
        fail(seq, e);
        return;
      }
      if (text === undefined) text = null;
    }
    settled(seq);
    seqs.push(seq);
    results.push(text);
    if (!flushQueued) {
      flushQueued = true;
      queueMicrotask(flush);
    }
    // 'completed' (or, for an interrupted run, 'failed') comes from the core once recorded.
  };
  const abort = (st, code, message) => {
    if (st.reason) return;
    st.reason = new JobInterrupted(code, message);
    if (st.ctrl) st.ctrl.abort(st.reason);
  };
  slot.abortAll = (code, message) => {
    for (const st of live.values()) abort(st, code, message);
  };
  return (batchText) => {
    let jobs;
    try {
      jobs = JSON.parse(batchText);
    } catch (e) {
      slot.error(e);
      return; // never produced by the addon; its jobs would time out rather than crash the process
    }
    for (let i = 0; i < jobs.length; i++) {
      const raw = jobs[i];
      const seq = raw.s;
      if (raw.abort !== undefined) {
        const st = live.get(seq);
        if (st !== undefined) abort(st, raw.abort, raw.reason);
        continue;
      }
      const id = raw.id;
      // The AbortController is made on first use of `job.signal`.
      const st = { job: null, ctrl: null, reason: null };
      const job = {
        id,
        name: raw.name,
        data: raw.data,
        attemptsMade: raw.attemptsMade,
        attempts: raw.attempts,
        get signal() {
          if (st.ctrl === null) {
            st.ctrl = new AbortController();
            if (st.reason) st.ctrl.abort(st.reason);
          }
          return st.ctrl.signal;
        },
        // Through the run's context, so the worker reports a 'progress' event.
        updateProgress: (p) => slot.progress(seq, id, p),
        log: (line) => queue.log(id, line),
        childrenResults: () => queue.childrenResults(id),
      };
      st.job = job;
      live.set(seq, st);
      let r;
      try {
        r = handler(job);
      } catch (e) {
        fail(seq, e);
        continue;
      }
      if (r !== null && (typeof r === 'object' || typeof r === 'function')) {
        // A promise (or any thenable, through Promise.resolve, which also catches a throwing `then`).
        const p = r instanceof Promise ? r : Promise.resolve(r);
        p.then(
          (v) => ok(seq, v),
          (e) => fail(seq, e),
        );
      } else {
        ok(seq, r);
      }
    }
  };
}

/** The bit of each worker event kind in the native worker's listening mask. */
const WORKER_EVENT_BITS = { completed: 1, failed: 2, progress: 4, stalled: 8, error: 16 };

/** The job of a worker event, as its run saw it (the fields of `queue.get`'s jobs). */
function eventJob(j) {
  return { ...j };
}

/**
 * The listener arguments of one of the core's worker events (`{ kind, ... }`, from the addon's
 * `worker_events.rs`).
 */
function workerEventArgs(ev) {
  switch (ev.kind) {
    case 'completed':
      return [eventJob(ev.job), ev.result ?? null];
    case 'failed': {
      const f = ev.failure || {};
      const e = emqError('handler_failed', f.message ?? 'the job failed');
      e.failureCode = f.code ?? 'handler_failed';
      e.failure = f;
      e.willRetry = ev.willRetry === true;
      if (typeof f.stack === 'string') e.stack = f.stack;
      return [eventJob(ev.job), e];
    }
    case 'progress':
      return [eventJob(ev.job), ev.value ?? null];
    case 'stalled':
      return [ev.jobId, ev.to];
    case 'error': {
      const err = ev.error || {};
      return [emqError(err.code || 'internal', err.message || 'worker error')];
    }
    default:
      return null;
  }
}

/**
 * A worker: runs `handler(job)` on the queue's jobs. An EventEmitter of the core's worker events
 * (each once the worker recorded it): 'completed' (job, result); 'failed' (job, error) for each
 * failed run — error a HandlerFailed with `failureCode` (`handler_failed`, `timeout`,
 * `cancelled`, …), `message`, `stack` and `willRetry`; a job given back at shutdown is neither
 * completed nor failed; 'progress' (job, value) when a handler of this worker reported progress;
 * 'stalled' (jobId, to) when this worker's stalled sweep recovered a job whose worker vanished
 * (`to`: 'wait' or 'failed'); 'error' (error) for faults of the worker itself — a lost
 * connection, a failed lease renewal (it keeps trying), a listener that threw, a failed close on
 * a signal; and 'closed' once `close` has finished (after the last events). `job` is a snapshot
 * (`id`, `name`, `data`, `attemptsMade`, `attempts`, …). Without an 'error' listener such errors
 * are dropped: the worker keeps going and never throws into the process. Events of a kind are
 * kept only while it has a listener.
 */
class Worker extends EventEmitter {
  constructor(queue, handler, opts) {
    super();
    if (!(queue instanceof Queue)) {
      throw emqError('invalid_option', 'new Worker(queue, handler): queue must come from Queue.connect');
    }
    if (typeof handler !== 'function') {
      throw emqError('invalid_option', 'new Worker(queue, handler): handler must be a function');
    }
    let o = checkKeys('worker', opts, WORKER_OPTIONS);
    let handleSignals = false;
    if (o !== undefined && 'handleSignals' in o) {
      ({ handleSignals, ...o } = o);
    }
    // The dispatcher settles jobs through the native worker; it first runs on a later event-loop
    // turn, after this constructor has set `slot.native`.
    const slot = {
      native: null,
      live: null,
      abortAll: null,
      emit: (event, ...args) => {
        if (this.listenerCount(event) === 0) return;
        try {
          this.emit(event, ...args);
        } catch (e) {
          slot.error(e);
        }
      },
      error: (e) => {
        if (this.listenerCount('error') === 0) return;
        try {
          this.emit('error', e instanceof Error ? e : toEmqError(e));
        } catch (_) {
          /* an 'error' listener threw: nothing more to tell */
        }
      },
    };
    slot.progress = async (seq, id, p) => {
      const text = payloadJson('progress', p);
      return call(() => slot.native.progress(seq, String(id), text));
    };
    // The core's events, a JSON array at a time (on a later event-loop turn, or from `close`).
    slot.events = (batchText) => {
      let events;
      try {
        events = JSON.parse(batchText);
      } catch (e) {
        slot.error(e);
        return;
      }
      for (const ev of events) {
        const args = workerEventArgs(ev);
        if (args === null) continue;
        if (ev.kind === 'error') slot.error(args[0]);
        else slot.emit(ev.kind, ...args);
      }
    };
    // Only the kinds with a listener are kept by the addon.
    const relisten = (extra) => {
      let mask = 0;
      for (const [kind, b] of Object.entries(WORKER_EVENT_BITS)) {
        if (kind === extra || this.listenerCount(kind) > 0) mask |= b;
      }
      if (mask !== slot.mask && slot.native !== null) {
        slot.mask = mask;
        try {
          slot.native.listen(mask);
        } catch (_) {
          /* closed */
        }
      }
    };
    slot.mask = 0;
    this.on('newListener', (event) => {
      if (event in WORKER_EVENT_BITS) relisten(event);
    });
    this.on('removeListener', (event) => {
      if (event in WORKER_EVENT_BITS) relisten(null);
    });
    this[kSlot] = slot;
    this[kNative] = slot.native = callSync(() =>
      queue[kNative].worker(dispatcher(handler, queue, slot), (text) => slot.events(text), o),
    );
    this.queue = queue;
    this._closing = null;
    this._signals = null;
    if (handleSignals) this.closeOnSignals();
  }

  /** As `new Worker(...)`, as a promise. */
  static async start(queue, handler, opts) {
    return new Worker(queue, handler, opts);
  }

  /**
   * Counters: completed (jobs), failed (jobs failed for good), retried (runs that went back for
   * another attempt), leaseLost, recovered, running (after close: the final figures, running 0).
   */
  stats() {
    return this[kNative].stats();
  }

  /**
   * Graceful shutdown: stops fetching, lets running handlers finish for up to `timeout` ms
   * (default: the `shutdownTimeout` option, 10000), then aborts the signals of those still running
   * (reason code 'shutdown') and gives their jobs back to waiting, their attempt not counted.
   * Stops keeping the process alive. Resolves to how many jobs were given back.
   */
  async close({ timeout } = {}) {
    if (!this._closing) {
      this._closing = call(() => this[kNative].close(timeout)).finally(() => {
        this._unhookSignals();
        // The events recorded during the close, before 'closed'.
        try {
          this[kSlot].events(this[kNative].takeEvents());
        } catch (e) {
          this[kSlot].error(e);
        }
        this[kSlot].emit('closed');
      });
    }
    return this._closing;
  }

  /**
   * Stops at once (a second Ctrl-C): aborts every running job's signal (reason code 'shutdown'),
   * releases nothing (the jobs come back through their leases, as after a crash), and cuts a close
   * in progress short. Resolves when the worker is closed.
   */
  async abort() {
    callSync(() => this[kNative].abort());
    if (this[kSlot].abortAll) this[kSlot].abortAll('shutdown', 'the worker was aborted');
    return this.close();
  }

  /**
   * Closes on SIGINT / SIGTERM: the first signal closes gracefully (see `close`), a second one
   * aborts (see `abort`). The handlers are removed once the worker is closed, so the process then
   * exits as usual when nothing else keeps it alive. Same as the option `handleSignals: true`.
   * Returns the worker.
   */
  closeOnSignals({ signals = ['SIGINT', 'SIGTERM'] } = {}) {
    if (this._signals || this._closing) return this;
    let seen = 0;
    const onSignal = () => {
      seen += 1;
      if (seen === 1) this.close().catch((e) => this[kSlot].error(e));
      else this.abort().catch((e) => this[kSlot].error(e));
    };
    for (const sig of signals) process.on(sig, onSignal);
    this._signals = { signals, onSignal };
    return this;
  }

  _unhookSignals() {
    if (!this._signals) return;
    for (const sig of this._signals.signals) process.removeListener(sig, this._signals.onSignal);
    this._signals = null;
  }
}

// ---------------------------------------------------------------------------------------------
// Events

/**
 * A subscriber on a queue's events (from `queue.events()`). Each event is
 * `{ streamId, kind, jobId, fields }`; `kind` is added, active, completed, retrying, failed,
 * stalled, released, removed, progress, paused, resumed, ... Iterate with `for await`, or call
 * `next()`. `close()` ends it (a read in progress resolves at once, and the iteration stops).
 */
class EventStream {
  constructor(token, nativeEvents) {
    if (token !== kToken) throw emqError('invalid_option', 'use `await queue.events()`');
    this[kNative] = nativeEvents;
    this.closed = false;
  }

  /** The next events (waiting up to `wait` ms, default 1000, for the first); [] when none came. */
  async next({ wait = 1000, count = 100 } = {}) {
    if (this.closed) return [];
    return JSON.parse(await call(() => this[kNative].next(wait, count)));
  }

  /** Ends the subscription. */
  close() {
    this.closed = true;
    this[kNative].close();
  }

  async *[Symbol.asyncIterator]() {
    try {
      while (!this.closed) {
        for (const ev of await this.next()) {
          yield ev;
          if (this.closed) return;
        }
      }
    } finally {
      this.close();
    }
  }
}

module.exports = {
  Queue,
  Worker,
  EventStream,
  EmqError,
  UnrecoverableError,
  DelayedError,
  JobInterrupted,
  errorCodes: Object.keys(CLASS_NAMES),
  ...errors,
};
