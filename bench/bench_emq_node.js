'use strict';
// emq's Node package, benchmarked like the anchors' bench_node.js runs BullMQ Node.
// Usage: node bench/bench_emq_node.js OUT.jsonl   (bench/run.sh drives it; needs `bash node/build.sh`)
//
// Same scenarios, counts and payload as shared/bench/anchors/bench_node.js: add_sequential,
// add_concurrent_1000, add_bulk_1000, process_c1/c10/c100, latency. FLUSHALL before every scenario
// run (point it at a throwaway Redis only). Jobs use removeOnComplete: true; the handler is an
// async no-op. Writes one JSON object per scenario run (one line each) with the field names
// emq-bench uses, "impl": "emq-node". Knobs: REDIS_PORT (6390), REPS (1), N_JOBS (20000),
// N_LATENCY (1000), SCENARIO_TIMEOUT_S (120), BENCH_COMMANDSTATS (1), EMQ_NODE_PKG (path of the
// package, default ../node next to this file), SCENARIOS (comma list; default all), BENCH_TRACE
// (1: register an OpenTelemetry SDK, spans batched to an exporter that counts them, as a traced
// service runs; needs NODE_PATH to find @opentelemetry/*, see bench/tracing.sh; the lines then say
// "impl": "emq-node-traced" and carry the spans exported per job).
//
// Processing ends when worker.stats().completed reaches N (polled every ~1 ms); in latency,
// add -> completed is stamped by the worker's in-process 'completed' event, as on BullMQ's side.
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { performance } = require('node:perf_hooks');
const { Queue, Worker, tracing } = require(process.env.EMQ_NODE_PKG || path.join(__dirname, '..', 'node'));

// BENCH_TRACE=1: spans on, exported in batches to an exporter that only counts them.
// BENCH_TRACE=context: only the context manager a traced service registers (AsyncLocalStorage),
// no tracer provider: what the process pays for context propagation alone, before any span.
const TRACED = process.env.BENCH_TRACE === '1';
let spansExported = 0;
if (TRACED || process.env.BENCH_TRACE === 'context') {
  const api = require('@opentelemetry/api');
  const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks');
  if (!tracing.enabled) throw new Error('BENCH_TRACE set but emq did not find @opentelemetry/api (NODE_PATH)');
  api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
}
if (TRACED) {
  const api = require('@opentelemetry/api');
  const { BasicTracerProvider, BatchSpanProcessor } = require('@opentelemetry/sdk-trace-base');
  const exporter = {
    export(spans, done) {
      spansExported += spans.length;
      done({ code: 0 });
    },
    shutdown: () => Promise.resolve(),
  };
  api.trace.setGlobalTracerProvider(
    new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(exporter, { maxQueueSize: 65536, maxExportBatchSize: 2048, scheduledDelayMillis: 200 })] }),
  );
}

const envInt = (name, dflt) => {
  const v = Number.parseInt(process.env[name] ?? '', 10);
  return Number.isFinite(v) && v > 0 ? v : dflt;
};

const CFG = {
  host: '127.0.0.1',
  port: envInt('REDIS_PORT', 6390),
  reps: envInt('REPS', 1),
  jobs: envInt('N_JOBS', 20000),
  batch: 1000,
  concurrencies: [1, 10, 100],
  latencyJobs: envInt('N_LATENCY', 1000),
  latencyGapMs: 2,
  scenarioTimeoutMs: envInt('SCENARIO_TIMEOUT_S', 120) * 1000,
  warmupJobs: 2000,
  commandstats: (process.env.BENCH_COMMANDSTATS ?? '1') === '1',
};
const URL = `redis://${CFG.host}:${CFG.port}`;
const RMC = { removeOnComplete: true };

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.now();

function deadlineFrom(ms) {
  const end = now() + ms;
  return (what) => {
    if (now() > end) throw new Error(`timeout after ${ms} ms in ${what}`);
  };
}

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, rej) => {
    timer = setTimeout(() => rej(new Error(`timeout after ${ms} ms in ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  const idx = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, idx)];
}

// A tiny RESP client for FLUSHALL / INFO / CONFIG RESETSTAT, independent of emq (one command at a time).
class Admin {
  constructor() {
    this.buf = Buffer.alloc(0);
    this.waiter = null;
  }
  connect() {
    return new Promise((resolve, reject) => {
      this.sock = net.createConnection({ host: CFG.host, port: CFG.port }, resolve);
      this.sock.setNoDelay(true);
      this.sock.once('error', reject);
      this.sock.on('data', (d) => {
        this.buf = Buffer.concat([this.buf, d]);
        this.tryParse();
      });
    });
  }
  tryParse() {
    if (!this.waiter) return;
    const nl = this.buf.indexOf('\r\n');
    if (nl < 0) return;
    const kind = String.fromCharCode(this.buf[0]);
    const head = this.buf.subarray(1, nl).toString();
    let value;
    let used;
    if (kind === '+' || kind === ':' || kind === '-') {
      value = head;
      used = nl + 2;
    } else if (kind === '$') {
      const n = Number(head);
      if (n < 0) {
        value = '';
        used = nl + 2;
      } else {
        if (this.buf.length < nl + 2 + n + 2) return;
        value = this.buf.subarray(nl + 2, nl + 2 + n).toString();
        used = nl + 2 + n + 2;
      }
    } else {
      value = `unsupported reply ${head}`;
      used = this.buf.length;
    }
    this.buf = this.buf.subarray(used);
    const w = this.waiter;
    this.waiter = null;
    if (kind === '-' || !'+:-$'.includes(kind)) w.reject(new Error(`redis: ${value}`));
    else w.resolve(value);
  }
  cmd(...args) {
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
      let s = `*${args.length}\r\n`;
      for (const a of args) s += `$${Buffer.byteLength(String(a))}\r\n${a}\r\n`;
      this.sock.write(s);
    });
  }
  async info(section) {
    const out = {};
    for (const ln of (await this.cmd('INFO', section)).split('\r\n')) {
      const i = ln.indexOf(':');
      if (i > 0 && !ln.startsWith('#')) out[ln.slice(0, i)] = ln.slice(i + 1);
    }
    return out;
  }
  async redisCpuS() {
    const i = await this.info('cpu');
    return Number(i.used_cpu_user_main_thread) + Number(i.used_cpu_sys_main_thread);
  }
  async commandstatsPerJob(n) {
    const out = {};
    for (const [k, fields] of Object.entries(await this.info('commandstats'))) {
      if (!k.startsWith('cmdstat_')) continue;
      const cmd = k.slice('cmdstat_'.length);
      if (cmd === 'info' || cmd.startsWith('config')) continue;
      const kv = Object.fromEntries(fields.split(',').map((x) => x.split('=')));
      out[cmd] = { calls_per_job: Number(kv.calls || 0) / n, usec_per_job: Number(kv.usec || 0) / n };
    }
    return out;
  }
  close() {
    this.sock.end();
  }
}
const admin = new Admin();

async function cpuMark() {
  if (CFG.commandstats) await admin.cmd('CONFIG', 'RESETSTAT');
  const redis0 = await admin.redisCpuS();
  const client0 = process.cpuUsage();
  return {
    async result(n, t0, t1) {
      const client = process.cpuUsage(client0);
      const redis1 = await admin.redisCpuS();
      const r = {
        jobs_per_s: (n * 1000) / (t1 - t0),
        elapsed_s: (t1 - t0) / 1000,
        redis_cpu_us_per_job: ((redis1 - redis0) * 1e6) / n,
        client_cpu_us_per_job: (client.user + client.system) / n,
      };
      if (CFG.commandstats) r.commandstats_per_job = await admin.commandstatsPerJob(n);
      return r;
    },
  };
}

// (a) queue.add awaited one at a time
async function addSequential(name, n) {
  const q = await Queue.connect(URL, name);
  try {
    const check = deadlineFrom(CFG.scenarioTimeoutMs);
    const cpu = await cpuMark();
    const t0 = now();
    for (let i = 0; i < n; i++) {
      await q.add('j', { i }, RMC);
      if ((i & 1023) === 0) check('add_sequential');
    }
    return await cpu.result(n, t0, now());
  } finally {
    await q.close();
  }
}

// (b) queue.add fired 1,000 at a time, awaited with Promise.all
async function addConcurrent(name, n) {
  const q = await Queue.connect(URL, name);
  try {
    const check = deadlineFrom(CFG.scenarioTimeoutMs);
    const cpu = await cpuMark();
    const t0 = now();
    for (let start = 0; start < n; start += CFG.batch) {
      const end = Math.min(n, start + CFG.batch);
      const pending = [];
      for (let i = start; i < end; i++) pending.push(q.add('j', { i }, RMC));
      await Promise.all(pending);
      check('add_concurrent');
    }
    return await cpu.result(n, t0, now());
  } finally {
    await q.close();
  }
}

async function addBulkChunks(q, n, what) {
  const check = deadlineFrom(CFG.scenarioTimeoutMs);
  for (let start = 0; start < n; start += CFG.batch) {
    const end = Math.min(n, start + CFG.batch);
    const jobs = [];
    for (let i = start; i < end; i++) jobs.push({ name: 'j', data: { i }, opts: RMC });
    await q.addBulk(jobs);
    check(what);
  }
}

// (c) addBulk in chunks of 1,000
async function addBulk(name, n) {
  const q = await Queue.connect(URL, name);
  try {
    const cpu = await cpuMark();
    const t0 = now();
    await addBulkChunks(q, n, 'add_bulk');
    return await cpu.result(n, t0, now());
  } finally {
    await q.close();
  }
}

// (d) drain n preloaded jobs with an async no-op handler; worker start -> last completion
async function processPreloaded(name, n, concurrency) {
  const q = await Queue.connect(URL, name);
  let worker;
  try {
    await addBulkChunks(q, n, 'preload');
    const waiting = (await q.counts()).waiting;
    if (waiting !== n) throw new Error(`preload: ${waiting} waiting, expected ${n}`);
    const check = deadlineFrom(CFG.scenarioTimeoutMs);
    const cpu = await cpuMark();
    const t0 = now();
    worker = new Worker(q, async () => null, { concurrency });
    let t1;
    for (;;) {
      const s = worker.stats();
      if (s.completed + s.failed >= n) {
        t1 = now();
        break;
      }
      check(`process_c${concurrency}`);
      await sleep(1);
    }
    const res = await cpu.result(n, t0, t1);
    const stats = worker.stats();
    await worker.close();
    worker = undefined;
    if (stats.failed) throw new Error(`${stats.failed} jobs failed`);
    const c = await q.counts();
    if (c.waiting + c.active + c.completed + c.failed) {
      throw new Error(`leftover jobs after drain: ${JSON.stringify(c)}`);
    }
    return res;
  } finally {
    if (worker) await worker.close();
    await q.close();
  }
}

// (e) end-to-end latency with an idle worker: one job at a time, closed loop
async function latency(name, n) {
  const q = await Queue.connect(URL, name);
  const starts = new Float64Array(n);
  let current = -1;
  let wake = null;
  const worker = new Worker(
    q,
    async (job) => {
      const i = job.data.i;
      starts[i] = now();
      if (i === current && wake) wake();
      return null;
    },
    { concurrency: 1 },
  );
  // Completion as an event, as BullMQ's side observes it: the worker's in-process 'completed'.
  const doneAt = new Float64Array(n);
  let doneWake = null;
  worker.on('completed', (job) => {
    const i = job.data.i;
    doneAt[i] = now();
    if (i === current && doneWake) doneWake();
  });
  try {
    await sleep(200); // let the worker reach its blocking wait
    const check = deadlineFrom(CFG.scenarioTimeoutMs);
    const addRtt = [];
    const toStart = [];
    const toDone = [];
    for (let i = 0; i < n; i++) {
      current = i;
      const started = new Promise((r) => (wake = r));
      const done = new Promise((r) => (doneWake = r));
      const t0 = now();
      await q.add('j', { i }, RMC);
      const tAdded = now();
      await withTimeout(started, 10000, `latency job ${i} start`);
      if (!doneAt[i]) await withTimeout(done, 10000, `latency job ${i} completed`);
      const tDone = doneAt[i];
      addRtt.push(tAdded - t0);
      toStart.push(starts[i] - t0);
      toDone.push(tDone - t0);
      check('latency');
      await sleep(CFG.latencyGapMs);
    }
    const stats = (xs) => {
      const s = [...xs].sort((a, b) => a - b);
      return { p50: percentile(s, 50), p99: percentile(s, 99) };
    };
    const a = stats(addRtt);
    const s = stats(toStart);
    const d = stats(toDone);
    // The queue's own latency histograms (counted by the worker, emq::latency): the bucket bound
    // holding each quantile, to set beside this measurement (issue 29: within a bucket).
    const m = await q.metrics();
    const bound = (h, p) => {
      const n = h.counts.reduce((x, y) => x + y, 0);
      let seen = 0;
      for (let b = 0; b < h.counts.length; b++) {
        seen += h.counts[b];
        if (n && seen >= Math.ceil((p / 100) * n)) return b < m.latencyBucketsMs.length ? m.latencyBucketsMs[b] : Infinity;
      }
      return null;
    };
    const hist = m.wait ? {
      hist_wait_p50_bound_ms: bound(m.wait, 50),
      hist_wait_p99_bound_ms: bound(m.wait, 99),
      hist_run_p50_bound_ms: bound(m.run, 50),
      hist_wait_count: m.wait.counts.reduce((x, y) => x + y, 0),
    } : {};
    return {
      ...hist,
      add_rtt_p50_ms: a.p50,
      add_rtt_p99_ms: a.p99,
      start_p50_ms: s.p50,
      start_p99_ms: s.p99,
      done_p50_ms: d.p50,
      done_p99_ms: d.p99,
      done_observed_by: "the worker's 'completed' event",
    };
  } finally {
    await worker.close();
    await q.close();
  }
}

function scenarioList(n) {
  const list = [
    ['add_sequential', (name) => addSequential(name, n)],
    ['add_concurrent_1000', (name) => addConcurrent(name, n)],
    ['add_bulk_1000', (name) => addBulk(name, n)],
  ];
  for (const c of CFG.concurrencies) list.push([`process_c${c}`, (name) => processPreloaded(name, n, c)]);
  list.push(['latency', (name) => latency(name, CFG.latencyJobs)]);
  return list;
}

async function main() {
  const outPath = process.argv[2];
  if (!outPath) throw new Error('usage: node bench_emq_node.js OUT.jsonl');
  await admin.connect();
  const out = fs.openSync(outPath, 'w');
  const tStart = now();
  let errors = 0;

  // warm-up (not recorded)
  await admin.cmd('FLUSHALL');
  await addSequential('warm', CFG.warmupJobs);
  await admin.cmd('FLUSHALL');
  await processPreloaded('warm', CFG.warmupJobs, 10);

  // SCENARIOS (comma list, as emq-bench's): only the scenarios it names.
  const only = (process.env.SCENARIOS ?? '').split(',').filter(Boolean);
  const list = scenarioList(CFG.jobs).filter(([id]) => only.length === 0 || only.includes(id));
  for (let rep = 0; rep < CFG.reps; rep++) {
    for (const [id, fn] of list) {
      await admin.cmd('FLUSHALL');
      const line = { impl: TRACED ? 'emq-node-traced' : 'emq-node', scenario: id, rep };
      const spans0 = spansExported;
      try {
        Object.assign(line, await withTimeout(fn(`bench-${id}`), CFG.scenarioTimeoutMs + 5000, id));
        if (TRACED) {
          await sleep(400); // the batch processor's last export
          line.spans_per_job = (spansExported - spans0) / CFG.jobs;
        }
      } catch (err) {
        errors += 1;
        line.error = err.message;
        console.error(`bench_emq_node: rep ${rep} ${id}: ${err.message}`);
      }
      if (rep === 0 && id === 'add_sequential') line.versions = { node: process.version };
      fs.writeSync(out, `${JSON.stringify(line)}\n`);
    }
    console.error(`bench_emq_node: rep ${rep + 1}/${CFG.reps} done (${((now() - tStart) / 1000).toFixed(0)}s)`);
  }
  await admin.cmd('FLUSHALL');
  fs.closeSync(out);
  return errors ? 1 : 0;
}

main()
  .then((code) => {
    admin.close();
    process.exitCode = code;
  })
  .catch((err) => {
    console.error('bench_emq_node: fatal:', err);
    try {
      admin.close();
    } catch {}
    process.exitCode = 2;
  });
