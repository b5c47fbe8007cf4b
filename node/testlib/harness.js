'use strict';
// Starts real redis servers with the workspace's `emq-harness` binary and stops them again.
// `emq-harness up --standalone --cluster` prints one JSON line and runs until its stdin closes.

const { spawn } = require('child_process');
const path = require('path');
const fs = require('fs');

const ROOT = path.resolve(__dirname, '..', '..');

function harnessBinary() {
  const bin = process.env.EMQ_HARNESS || path.join(ROOT, 'target', 'debug', 'emq-harness');
  if (!fs.existsSync(bin)) {
    throw new Error(`${bin} not found: run \`cargo build -p emq-harness\` first (or set EMQ_HARNESS)`);
  }
  return bin;
}

/**
 * Starts the servers; resolves to { standalone, cluster, pids, stop() } (`flags`: others, e.g.
 * ['--tls', '--mtls'] for { tls, mtls }, each { url, ca, cert, key }).
 */
function startServers({ timeoutMs = 90_000, flags = ['--standalone', '--cluster'] } = {}) {
  const child = spawn(harnessBinary(), ['up', ...flags], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => {
      child.kill('SIGTERM');
      reject(new Error(`emq-harness did not print its URLs within ${timeoutMs} ms`));
    }, timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`emq-harness exited early with code ${code}`));
    });
    child.stdout.on('data', (chunk) => {
      buf += chunk;
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      clearTimeout(timer);
      child.removeAllListeners('exit');
      let info;
      try {
        info = JSON.parse(buf.slice(0, nl));
      } catch (e) {
        reject(new Error(`emq-harness printed something other than JSON: ${buf.slice(0, nl)}`));
        return;
      }
      info.stop = () => stop(child);
      resolve(info);
    });
  });
}

/** Closes the harness's stdin and waits (bounded) for it to stop its servers and exit. */
function stop(child, timeoutMs = 30_000) {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const timer = setTimeout(() => {
      child.kill('SIGTERM');
      resolve();
    }, timeoutMs);
    child.on('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.stdin.end();
  });
}

/** Polls `check` until it returns a truthy value, at most `timeoutMs`. */
async function waitFor(what, check, timeoutMs = 20_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

let n = 0;
/** A queue name unique to this run. */
function unique(prefix) {
  n += 1;
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${n}`;
}

/**
 * The servers of one test file, started before its first test and stopped after its last, with
 * what the file opened closed first (newest first: workers before their queues). Call it once at
 * the top of a file; `h.servers` is set once the file's tests run.
 */
function useServers(options) {
  const { before, after } = require('node:test');
  const opened = [];
  const h = {
    servers: null,
    /** The URL of `topology` ('standalone' or 'cluster'). */
    url(topology = 'standalone') {
      return h.servers[topology];
    },
    /** Closes these (queues, workers, anything with `close()`) after the file's tests. */
    track(...closables) {
      opened.push(...closables);
      return closables[0];
    },
    /** A queue with a fresh name (`unique(prefix)`) on `topology`, closed after the tests. */
    async connect(topology, prefix, options) {
      const { Queue } = require('..');
      return h.track(await Queue.connect(h.url(topology), unique(prefix), options));
    },
  };
  before(async () => {
    h.servers = await startServers(options);
  });
  after(async () => {
    for (const c of opened.reverse()) await c.close().catch(() => {});
    if (h.servers) await h.servers.stop();
  });
  return h;
}

module.exports = { startServers, useServers, waitFor, unique, ROOT };
