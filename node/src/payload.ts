// Arguments as the addon takes them: names and payloads checked so that they read back exactly
// (payloads cross as JSON text), and options shaped for the addon: a job's options cross as the
// JSON of the core's JobSpec (one add's, and every job of addBulk, a flow or a scheduler, whose
// batches cross as one JSON string), whose names, types and values the core checks; a worker's
// options are checked here for unknown keys and wrong types (napi reads them as an object).

import { emqError } from './errors';
import type { NativeTls } from './loader';
import type { ConnectOptions, FlowJob, JobOptions } from './types';

// A lone (unpaired) surrogate: napi would turn it into U+FFFD, and JSON cannot carry it to other
// languages. In a `u` regexp a surrogate pair is one code point, so only lone ones match.
const LONE_SURROGATE = /\p{Cs}/u;

/** A queue name as the core will see it: a string with no lone surrogate (napi would rename it). */
export function queueName(name: unknown, what = 'the queue name'): string {
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
export function jobName<T>(name: T, what: string): T {
  if (typeof name === 'string' && LONE_SURROGATE.test(name)) {
    throw emqError('invalid_payload', `the name of ${what} ${JSON.stringify(name)} holds a lone surrogate, which is not text`);
  }
  return name;
}

// The core refuses payloads nested 128 levels or more; the walk below stops a little deeper.
const WALK_DEPTH = 130;

interface NotJson {
  path: string[];
  why: string;
}

function kindOf(v: object): string {
  const ctor = (v as { constructor?: { name?: unknown } }).constructor;
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
function notJson(v: unknown, depth: number): NotJson | null {
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
      const e: unknown = v[i];
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
  const obj = v as Record<string, unknown>;
  const proto = Object.getPrototypeOf(obj);
  if (proto !== Object.prototype && proto !== null) {
    return {
      path: [],
      why: `a ${kindOf(obj)}, which JSON does not keep as it is (job data is plain objects, arrays, strings, finite numbers, booleans and null)`,
    };
  }
  if (Object.getOwnPropertySymbols(obj).length > 0) return { path: [], why: 'an object with symbol keys, which JSON leaves out' };
  for (const k of Object.keys(obj)) {
    const e = obj[k];
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
function checkPayload(what: string, value: unknown): void {
  const p = notJson(value, 0);
  if (p) {
    const at = p.path.length ? ` at ${p.path.reverse().join('')}` : '';
    throw emqError('invalid_payload', `the ${what} cannot be stored as it is: its value${at} is ${p.why}`);
  }
}

/** JSON text of job data (or progress), refused when it would not read back exactly. */
export function payloadJson(what: string, value: unknown): string {
  checkPayload(what, value);
  return toJson(what, value);
}

function toJson(what: string, value: unknown): string {
  if (value === undefined) return 'null';
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (e) {
    throw emqError('invalid_payload', `the ${what} cannot be serialised as JSON: ${(e as Error).message}`, { cause: e });
  }
  if (text === undefined) {
    throw emqError('invalid_payload', `the ${what} cannot be serialised as JSON (got a ${typeof value})`);
  }
  return text;
}

/** What an option takes, for the ones whose type the addon would refuse in napi's words. */
type Kind = 'duration' | 'count' | 'number' | 'fraction' | 'boolean' | 'string';

const KIND_TEXT: Record<Kind, string> = {
  duration: 'a duration in milliseconds (a finite number, at least 0)',
  count: 'a whole number',
  number: 'a finite number',
  fraction: 'a number between 0 and 1',
  boolean: 'a boolean',
  string: 'a string',
};

// Every worker option; retention and the queue order take more than one type (the addon reads each
// shape). A worker's options are a napi object, whose types napi would refuse in its own words.
const WORKER_OPTIONS: Record<string, Kind | null> = {
  concurrency: 'count', lease: 'duration', stalledInterval: 'duration', maxStalls: 'count', blockTimeout: 'duration',
  shutdownTimeout: 'duration', removeOnComplete: null, removeOnFail: null, strict: null, weights: null,
  handleSignals: null,
};

/** A value as the user gave it, for a refusal: `"soon"` (a string), `[object Object]`... */
export function given(v: unknown): string {
  if (typeof v === 'string') return `${JSON.stringify(v)} (a string)`;
  if (typeof v === 'bigint') return `${v}n (a BigInt)`;
  if (v === null || v === undefined) return String(v);
  if (typeof v === 'function') return 'a function';
  if (typeof v !== 'object') return `${String(v)} (a ${typeof v})`;
  return Array.isArray(v) ? 'an array' : `a ${kindOf(v)}`;
}

/** Refuses an option of the wrong type, naming it, what it takes and what it got. */
function checkKind(name: string, kind: Kind, v: unknown): void {
  const ok = kind === 'boolean' ? typeof v === 'boolean' : kind === 'string' ? typeof v === 'string' : typeof v === 'number';
  if (!ok) throw emqError('invalid_option', `${name} must be ${KIND_TEXT[kind]}, got ${given(v)}`);
}

/** Refuses unknown keys (and a non-object); undefined for no options. */
export function checkKeys<T extends object>(kind: string, opts: T | null | undefined, allowed: Iterable<string>): T | undefined {
  if (opts === undefined || opts === null) return undefined;
  if (typeof opts !== 'object' || Array.isArray(opts)) {
    throw emqError('invalid_option', `${kind} options must be an object`);
  }
  const known = new Set(allowed);
  for (const k of Object.keys(opts)) {
    if (!known.has(k)) {
      throw emqError('invalid_option', `unknown ${kind} option '${k}'; one of ${[...known].join(', ')}`);
    }
  }
  return opts;
}

/** Numbers must be finite: JSON (how batches cross) would turn NaN and Infinity into null. */
export function checkFinite(what: string, v: unknown): void {
  if (typeof v === 'number' && !Number.isFinite(v)) {
    throw emqError('invalid_option', `${what} must be a finite number, got ${v}`);
  }
}

/** Keys known, types of the single-typed options checked; null and undefined values left out. */
function checkOptions(kind: string, opts: object | null | undefined, table: Record<string, Kind | null>): Record<string, unknown> | undefined {
  const o = checkKeys(kind, opts, Object.keys(table)) as Record<string, unknown> | undefined;
  if (o === undefined) return undefined;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) {
    if (v === undefined || v === null) continue;
    const want = table[k];
    if (want) checkKind(k, want, v);
    out[k] = v;
  }
  return out;
}

/**
 * A job's options as the core reads them: its `JobSpec` as JSON, for one `add` as for a batch.
 * Only what JSON would change is checked here: an object, null and undefined values left out,
 * numbers finite (JSON writes NaN and Infinity as null), JS names camelCase; and backoff's
 * shorthand (a number of ms) written out. The core knows the names and checks every type and
 * value, naming the option.
 */
export function jobOpts(opts: JobOptions | null | undefined): Record<string, unknown> | undefined {
  if (opts === undefined || opts === null) return undefined;
  if (typeof opts !== 'object' || Array.isArray(opts)) throw emqError('invalid_option', 'job options must be an object');
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(opts)) {
    if (v === undefined || v === null) continue;
    if (k.includes('_')) {
      throw emqError('invalid_option', `unknown job option '${k}': option names are camelCase in JavaScript`);
    }
    checkFinite(k, v);
    out[k] = v;
  }
  if (typeof out.backoff === 'number') out.backoff = { type: 'fixed', delay: out.backoff };
  if (out.backoff && typeof out.backoff === 'object') {
    const b = out.backoff as Record<string, unknown>;
    checkFinite('backoff.delay', b.delay);
    checkFinite('backoff.max', b.max);
  }
  return out;
}

/** One job's options as the JSON text `add` passes to the addon (undefined: none). */
export function jobOptsJson(opts: JobOptions | null | undefined): string | undefined {
  const o = jobOpts(opts);
  return o === undefined ? undefined : batchJson('job options', o, () => []);
}

/** A worker's options for the addon; `handleSignals` is the JS worker's own. */
export function workerOpts(opts: object | null | undefined): { native: Record<string, unknown> | undefined; handleSignals: boolean } {
  const out = checkOptions('worker', opts, WORKER_OPTIONS);
  if (out === undefined) return { native: undefined, handleSignals: false };
  const { handleSignals, ...native } = out;
  return { native, handleSignals: Boolean(handleSignals) };
}

/**
 * `data` for a JSON batch, refused when it would not read back exactly (see `notJson`); with
 * `optional`, an absent (undefined) `data` is null.
 */
export function batchData(what: string, data: unknown, optional = false): unknown {
  if (data === undefined && optional) return null;
  checkPayload(what, data);
  return data;
}

/** JSON text of a batch; on failure, names the payload that could not be serialised. */
export function batchJson(what: string, batch: unknown, payloads: () => [string, unknown][]): string {
  try {
    return JSON.stringify(batch);
  } catch (e) {
    for (const [name, data] of payloads()) toJson(name, data);
    throw emqError('invalid_option', `the ${what} cannot be serialised as JSON: ${(e as Error).message}`, { cause: e });
  }
}

const FLOW_KEYS = ['queue', 'name', 'data', 'opts', 'children'];

/** A flow as the addon reads it. */
export interface FlowSpec {
  queue: string | undefined;
  name: unknown;
  data: unknown;
  opts: Record<string, unknown> | undefined;
  children: FlowSpec[];
}

/** A flow checked and shaped for JSON. */
export function flowSpec(flow: FlowJob, what: string): FlowSpec {
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

/** Every payload of a flow with its name, to say which one did not serialise. */
export function flowPayloads(flow: FlowJob, what: string, out: [string, unknown][] = []): [string, unknown][] {
  out.push([`payload of ${what}`, flow.data]);
  (flow.children || []).forEach((c, i) => flowPayloads(c, `${what}.children[${i}]`, out));
  return out;
}

const TLS_KEYS = ['caCert', 'clientCert', 'clientKey'] as const;

/** `Queue.connect`'s options: only the TLS files, each a string or a Buffer (checked by the core). */
export function connectTls(opts: ConnectOptions | null | undefined): NativeTls | undefined {
  if (opts === undefined || opts === null) return undefined;
  if (typeof opts !== 'object' || Array.isArray(opts)) {
    throw emqError('invalid_option', 'Queue.connect options must be an object ({ caCert, clientCert, clientKey, durable, partitions })');
  }
  const tls: NativeTls = {};
  for (const key of Object.keys(opts)) {
    if (key === 'durable' || key === 'partitions') continue;
    if (!(TLS_KEYS as readonly string[]).includes(key)) {
      throw emqError('invalid_option', `unknown Queue.connect option ${JSON.stringify(key)} (known: ${TLS_KEYS.join(', ')}, durable, partitions)`);
    }
    const k = key as (typeof TLS_KEYS)[number];
    const v: unknown = opts[k];
    if (v === undefined || v === null) continue;
    if (typeof v === 'string' || Buffer.isBuffer(v)) {
      tls[k] = v;
    } else if (v instanceof Uint8Array) {
      tls[k] = Buffer.from(v);
    } else {
      throw emqError('invalid_option', `${key} must be a path or PEM text (a string) or the PEM as a Buffer`);
    }
  }
  return tls;
}
