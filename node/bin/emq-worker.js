#!/usr/bin/env node
'use strict';
// emq-worker: runs a handler module as an emq worker until SIGINT or SIGTERM.
//   npx emq-worker ./handler.js --queue emails --concurrency 16
// See `emq-worker --help`. Logs go to stderr; stdout stays the handler's.

const path = require('path');
const fs = require('fs');
const { pathToFileURL } = require('url');
const { parseArgs } = require('util');

const DEFAULT_URL = 'redis://127.0.0.1:6379';

const USAGE = `Usage: emq-worker <module> --queue <name> [options]

Runs the handler exported by <module> (a path such as ./handler.js, or a package specifier) as an
emq worker on one queue until SIGINT or SIGTERM: the first signal closes gracefully (stops
fetching, lets running jobs finish for up to --shutdown-timeout ms, then gives the rest back to
waiting with their attempt not counted), a second one aborts at once. Logs go to stderr.

The module may be CommonJS or an ES module. The handler is, in this order: the export named by
--export; the default export (module.exports) when it is a function; a named export \`handler\`.
It is called as handler(job) with job = { id, name, data, attemptsMade, attempts, signal,
updateProgress(p), log(line) }; what it returns (or resolves to) is the job's result, a throw fails
the job.

Options (times in milliseconds; the defaults are the library's Worker defaults):
  -q, --queue <name>            the queue to work (required)
  -u, --url <url>               the datastore; repeat for cluster seeds
                                (default: $EMQ_URL, else ${DEFAULT_URL})
  -e, --export <name>           the export holding the handler
  -c, --concurrency <n>         jobs run at once (default 1)
      --lease <ms>              lease length, renewed while a handler runs (default 30000)
      --stalled-interval <ms>   how often the stalled-job sweep runs (default 15000)
      --max-stalls <n>          stalls allowed before a job fails (default 1)
      --block-timeout <ms>      longest single wait for work (default 5000)
      --shutdown-timeout <ms>   grace period for running jobs at shutdown (default 10000)
      --remove-on-complete <r>  retention of completed jobs, queue-wide: true, false, a count,
                                or JSON {"count":N,"age":MS} (default: newest 1000, 1 day)
      --remove-on-fail <r>      retention of failed jobs, same forms (default: newest 10000, 7 days)
  -v, --verbose                 log every job's outcome, not only failures
  -h, --help                    show this help

Exit status: 0 after a graceful stop, 1 when the worker failed, 2 on a usage error.`;

function log(line) {
  process.stderr.write(`emq-worker: ${line}\n`);
}

class UsageError extends Error {}

function wholeNumber(flag, text) {
  if (text === undefined) return undefined;
  if (!/^\s*\d+\s*$/.test(text)) throw new UsageError(`${flag} takes a whole number, got '${text}'`);
  return Number(text);
}

function retention(flag, text) {
  if (text === undefined) return undefined;
  const t = text.trim();
  if (t === 'true') return true;
  if (t === 'false') return false;
  if (/^\d+$/.test(t)) return Number(t);
  if (t.startsWith('{')) {
    try {
      return JSON.parse(t);
    } catch (e) {
      throw new UsageError(`${flag}: ${e.message}`);
    }
  }
  throw new UsageError(`${flag} takes true, false, a count or {"count":N,"age":MS}, got '${text}'`);
}

function parse(argv) {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      queue: { type: 'string', short: 'q' },
      url: { type: 'string', short: 'u', multiple: true },
      export: { type: 'string', short: 'e' },
      concurrency: { type: 'string', short: 'c' },
      lease: { type: 'string' },
      'stalled-interval': { type: 'string' },
      'max-stalls': { type: 'string' },
      'block-timeout': { type: 'string' },
      'shutdown-timeout': { type: 'string' },
      'remove-on-complete': { type: 'string' },
      'remove-on-fail': { type: 'string' },
      verbose: { type: 'boolean', short: 'v' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return { help: true };
  if (positionals.length !== 1) {
    throw new UsageError(positionals.length === 0 ? 'name the handler module' : `one module only, got ${positionals.join(' ')}`);
  }
  if (!values.queue) throw new UsageError('--queue is required');
  const opts = {
    concurrency: wholeNumber('--concurrency', values.concurrency),
    lease: wholeNumber('--lease', values.lease),
    stalledInterval: wholeNumber('--stalled-interval', values['stalled-interval']),
    maxStalls: wholeNumber('--max-stalls', values['max-stalls']),
    blockTimeout: wholeNumber('--block-timeout', values['block-timeout']),
    shutdownTimeout: wholeNumber('--shutdown-timeout', values['shutdown-timeout']),
    removeOnComplete: retention('--remove-on-complete', values['remove-on-complete']),
    removeOnFail: retention('--remove-on-fail', values['remove-on-fail']),
  };
  for (const k of Object.keys(opts)) if (opts[k] === undefined) delete opts[k];
  const urls = values.url && values.url.length ? values.url : [process.env.EMQ_URL || DEFAULT_URL];
  return {
    module: positionals[0],
    queue: values.queue,
    urls,
    exportName: values.export,
    verbose: Boolean(values.verbose),
    opts,
  };
}

/** The module's URL: a file relative to the current directory, else a specifier resolved from it. */
function moduleUrl(spec) {
  const file = path.resolve(spec);
  if (fs.existsSync(file)) return pathToFileURL(file).href;
  try {
    const { createRequire } = require('module');
    return pathToFileURL(createRequire(path.join(process.cwd(), 'noop.js')).resolve(spec)).href;
  } catch (_) {
    throw new UsageError(`cannot find the module '${spec}' (no file ${file}, and no package of that name from ${process.cwd()})`);
  }
}

async function loadHandler(spec, exportName) {
  const mod = await import(moduleUrl(spec));
  const def = mod.default;
  const pick = (name, v) => (typeof v === 'function' ? { name, fn: v } : null);
  let found;
  if (exportName !== undefined) {
    found = pick(exportName, mod[exportName]) || pick(exportName, def && def[exportName]);
    if (!found) throw new UsageError(`${spec} has no function export '${exportName}'`);
    return found;
  }
  found = pick('default', def) || pick('handler', mod.handler) || pick('handler', def && def.handler);
  if (!found) {
    throw new UsageError(
      `${spec} exports no handler: export a function as the default (module.exports = fn, export default fn) ` +
        `or as 'handler', or name it with --export`,
    );
  }
  return found;
}

async function main() {
  let args;
  try {
    args = parse(process.argv.slice(2));
  } catch (e) {
    log(`${e.message}\n(emq-worker --help for the options)`);
    process.exit(2);
  }
  if (args.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const emq = require('..');
  let handler;
  try {
    handler = await loadHandler(args.module, args.exportName);
  } catch (e) {
    if (e instanceof UsageError) {
      log(e.message);
      process.exit(2);
    }
    log(`loading ${args.module} failed: ${e && e.stack ? e.stack : e}`);
    process.exit(1);
  }

  let queue;
  let worker;
  try {
    queue = await emq.Queue.connect(args.urls, args.queue);
    worker = new emq.Worker(queue, handler.fn, args.opts);
  } catch (e) {
    log(`${e.code ? `[${e.code}] ` : ''}${e.message}`);
    if (queue) await queue.close().catch(() => {});
    process.exit(e.code === 'invalid_option' || e.code === 'invalid_queue_name' ? 2 : 1);
  }
  const tag = (job) => `job ${job.id} (${job.name})`;
  worker.on('failed', (job, err) => {
    const code = err && err.code ? ` [${err.code}]` : '';
    log(`${tag(job)} failed${code}: ${err && err.message ? err.message : err}`);
  });
  if (args.verbose) worker.on('completed', (job) => log(`${tag(job)} completed`));
  worker.on('error', (e) => log(`worker error: ${e && e.message ? e.message : e}`));

  let signals = 0;
  const onSignal = (sig) => {
    signals += 1;
    const running = worker.stats().running;
    if (signals === 1) {
      const grace = args.opts.shutdownTimeout ?? 10000;
      log(`${sig}: closing; ${running} running job(s) get up to ${grace} ms to finish (a second signal aborts them)`);
    } else {
      log(`${sig} again: aborting ${running} running job(s); their leases bring them back`);
    }
  };
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, onSignal);
  worker.closeOnSignals();
  worker.once('closed', async () => {
    const s = worker.stats();
    await queue.close().catch((e) => log(`closing the queue: ${e.message}`));
    log(`worker stopped: ${s.completed} completed, ${s.failed} failed, ${s.retried} retried`);
    process.exit(0);
  });
  const where = args.urls.map((u) => u.replace(/\/\/[^@/]*@/, '//***@')).join(', ');
  log(
    `worker started: queue ${args.queue} on ${where}, handler ${handler.name} of ${args.module}, ` +
      `concurrency ${args.opts.concurrency ?? 1} (pid ${process.pid}; SIGINT/SIGTERM to stop)`,
  );
}

main().catch((e) => {
  log(`${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
