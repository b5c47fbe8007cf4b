// The native addon (bindings/node, napi-rs): where it is loaded from, and the shape of what it
// exports as this package's modules call it (values too rich for a napi object cross as JSON text).

import * as fs from 'fs';
import * as path from 'path';

/** A native batch (bindings/node/src/batch.rs). */
export interface NativeBatch {
  readonly id: string;
  readonly queue: string;
  add(queue: string, name: string, data: string, opts: string | undefined): Promise<string>;
  addBulkJson(queue: string, jobs: string): Promise<string>;
  seal(): Promise<void>;
  status(offset: number, limit: number): Promise<string>;
  cancel(): Promise<number>;
  batch(spec: string): Promise<NativeBatch>;
}

/** A native queue (bindings/node/src/queue.rs). */
export interface NativeQueue {
  readonly name: string;
  readonly partitions: number;
  mintId(): string;
  directEndpoint(): { host: string; port: number } | null;
  directAdd(name: string, data: string, opts: string | undefined): { id: string; frame: Buffer } | null;
  batch(spec: string): Promise<NativeBatch>;
  openBatch(id: string, queue: string | null): NativeBatch;
  listenAdds(taker: (settled: string) => void): void;
  addStart(seq: number, name: string, data: string, opts: string | undefined): void;
  addMany(names: string[], data: string[], opts: string[]): Promise<string[]>;
  addBulkJson(jobs: string): Promise<string>;
  addFlow(flow: string): Promise<string>;
  childrenResults(id: string): Promise<string>;
  addChild(parent: string, queue: string, name: string, data: string, opts: string | undefined): Promise<string>;
  get(id: string): Promise<string | null>;
  list(state: string, offset: number, limit: number): Promise<string>;
  counts(): Promise<unknown>;
  pause(): Promise<void>;
  resume(): Promise<void>;
  growPartitions(count: number): Promise<number>;
  isPaused(): Promise<boolean>;
  remove(id: string): Promise<boolean>;
  retry(id: string): Promise<boolean>;
  retryFailed(): Promise<number>;
  setDeadLetter(queue: string | null): Promise<void>;
  deadLetter(): Promise<string | null>;
  setJobDefaults(opts: string | undefined): Promise<void>;
  jobDefaults(): Promise<string>;
  deadLetters(limit: number): Promise<string>;
  replayDeadLetters(ids: string[] | null): Promise<string>;
  promote(id: string): Promise<boolean>;
  changePriority(id: string, priority: number): Promise<boolean>;
  drain(delayed: boolean): Promise<number>;
  clean(state: string, grace: number, limit: number): Promise<number>;
  obliterate(force: boolean): Promise<number>;
  updateProgress(id: string, progress: string): Promise<void>;
  log(id: string, line: string): Promise<number>;
  logs(id: string): Promise<string[]>;
  setGlobalConcurrency(max: number | null): Promise<void>;
  setRateLimit(max: number | null, window: number | null): Promise<void>;
  setGroupRateLimit(max: number | null, window: number | null): Promise<void>;
  setGroupWeight(group: string, weight: number): Promise<void>;
  setGroupConcurrency(limit: number | null, group: string | null): Promise<void>;
  setGroupMaxWaiting(limit: number | null, group: string | null): Promise<void>;
  pauseGroup(group: string): Promise<void>;
  resumeGroup(group: string): Promise<void>;
  groups(offset: number, limit: number): Promise<string>;
  upsertScheduler(id: string, spec: string): Promise<boolean>;
  removeScheduler(id: string): Promise<boolean>;
  schedulers(): Promise<string>;
  events(after: string | null): Promise<NativeEvents>;
  recentEvents(limit: number): Promise<string>;
  metrics(): Promise<string>;
  migrateFromBullmq(
    source: string, fromPrefix: string, dryRun: boolean, completed: boolean, deleteSource: boolean, batch: number,
  ): Promise<string>;
  cancel(id: string, reason: string): Promise<string>;
  wait(id: string, timeout: number): Promise<string>;
  workers(): Promise<string>;
  close(): Promise<void>;
  worker(dispatcher: (batch: string) => void, onEvents: (events: string) => void, opts: object | undefined): NativeWorker;
}

/** A native worker (bindings/node/src/worker.rs); only `progress`, `addChild` and `close` can fail. */
export interface NativeWorker {
  complete(seqs: number[], results: (string | null)[]): void;
  fail(seq: number, message: string, code: string | null, stack: string | null, unrecoverable: boolean): void;
  delay(seq: number, ms: number, countAttempt: boolean): void;
  progress(seq: number, id: string, progress: string, queue: string | undefined): Promise<void>;
  addChild(seq: number, queue: string, name: string, data: string, opts: string | undefined): Promise<string>;
  readonly queues: string[];
  statsByQueue(): import('./types').QueueStats[];
  listen(mask: number): void;
  takeEvents(): string;
  stats(): import('./types').WorkerStats;
  close(timeout: number | undefined): Promise<number>;
  abort(): void;
}

/** A native subscriber on a queue's events (bindings/node/src/events.rs). */
export interface NativeEvents {
  next(wait: number, count: number): Promise<string>;
  close(): void;
}

/** TLS files of `connect`, each a path or PEM text, or the PEM as a Buffer. */
export interface NativeTls {
  caCert?: string | Uint8Array;
  clientCert?: string | Uint8Array;
  clientKey?: string | Uint8Array;
}

/** What the addon exports (bindings/node/src/lib.rs). */
export interface Native {
  connect(urls: string[], name: string, durable: number[] | undefined, tls: NativeTls | undefined, partitions: number | undefined): Promise<NativeQueue>;
  errorCodes(): string[];
  directReplyLen(buf: Buffer): number | null;
  directSettle(reply: Buffer, id: string): string | null;
  startWorkerMany(
    queues: NativeQueue[],
    dispatcher: (batch: string) => void,
    onEvents: (events: string) => void,
    opts: object | undefined,
  ): NativeWorker;
}

function platformTriple(): string {
  const { platform, arch } = process;
  if (platform === 'linux') {
    let glibc = true;
    try {
      const report = process.report.getReport() as unknown as { header: { glibcVersionRuntime?: string } };
      glibc = Boolean(report.header.glibcVersionRuntime);
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
 * `emq.<triple>.node` in the package folder (a checkout after node/build.sh, for development);
 * else the platform package `@emq/<triple>` (an optional dependency of `emq`: npm installs the one
 * that matches the machine, with the prebuilt addon inside, so no Rust toolchain is needed).
 */
function loadNative(): Native {
  const triple = platformTriple();
  const tried: string[] = [];
  const attempt = (what: string): { addon?: Native; error: unknown } => {
    try {
      return { addon: require(what) as Native, error: null };
    } catch (e) {
      tried.push(`${what}: ${String((e as Error).message).split('\n')[0]}`);
      return { error: e };
    }
  };
  let r: { addon?: Native; error: unknown };
  if (process.env.EMQ_NATIVE_ADDON) {
    r = attempt(process.env.EMQ_NATIVE_ADDON);
  } else {
    // This file is dist/loader.js: the package folder is one up.
    const local = path.join(__dirname, '..', `emq.${triple}.node`);
    r = fs.existsSync(local) ? attempt(local) : { error: null };
    if (!r.addon) {
      const viaPackage = attempt(`@emq/${triple}`);
      if (viaPackage.addon || !r.error) r = viaPackage;
    }
  }
  if (r.addon) return r.addon;
  const lib =
    process.platform === 'darwin' ? 'libemq_node.dylib' : process.platform === 'win32' ? 'emq_node.dll' : 'libemq_node.so';
  const err = new Error(
    `emq: cannot load the native addon for ${triple}; tried:\n  ${tried.join('\n  ')}\n` +
      `npm installs the prebuilt addon as the optional dependency @emq/${triple} (check that ` +
      `optional dependencies were not omitted, e.g. by --no-optional or --omit=optional). ` +
      `For a platform without one, build it from a checkout of the emq repository:\n` +
      `  cargo build --release -p emq-node\n` +
      `  cp target/release/${lib} node/emq.${triple}.node\n` +
      `(or run node/build.sh), then install the package from that node/ folder.`,
    { cause: r.error },
  ) as Error & { code: string };
  err.code = 'EMQ_ADDON_NOT_FOUND';
  throw err;
}

export const native: Native = loadNative();

/** The native object behind a Queue, Worker or EventStream. */
export const kNative: unique symbol = Symbol('emq.native');
// (Properties keyed by these symbols are marked @internal: the declarations leave them out.)
/** Proof that a constructor was called by this package (Queue.connect, queue.events()). */
export const kToken: unique symbol = Symbol('emq.token');
