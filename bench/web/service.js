'use strict';
// The Node side of bench/web.sh (issue 30 item 1): a `node:http` service whose every request
// enqueues one job and answers with its id. The same code runs emq or BullMQ behind it.
//
// Usage: node bench/web/service.js emq|bullmq|none HTTP_PORT REDIS_PORT ("none": the same handler
// answering without enqueuing anything, the baseline of what the HTTP part alone costs)
// Env: EMQ_NODE_PKG (emq's Node package; default ../../node), ANCHORS_DIR (where bullmq and
// ioredis are installed; default /tmp/anchors), WEB_QUEUE (queue name; default "web").
// Prints "ready <pid>" on stdout once it listens; SIGTERM closes the queue and exits.
//
// Every job is `{"i": n}` with removeOnComplete: true; no worker runs (only the producer, the
// web process, is measured).
const http = require('node:http');
const path = require('node:path');

const [lib, httpPort, redisPort] = process.argv.slice(2);
if (!['emq', 'bullmq', 'none'].includes(lib) || !httpPort || !redisPort) {
  console.error('usage: node service.js emq|bullmq|none HTTP_PORT REDIS_PORT');
  process.exit(2);
}
const name = process.env.WEB_QUEUE || 'web';

async function openQueue() {
  if (lib === 'none') return { add: async () => '0', close: async () => {} };
  if (lib === 'emq') {
    const { Queue } = require(process.env.EMQ_NODE_PKG || path.join(__dirname, '..', '..', 'node'));
    const q = await Queue.connect(`redis://127.0.0.1:${redisPort}`, name);
    return { add: (data) => q.add('j', data, { removeOnComplete: true }), close: () => q.close() };
  }
  const anchors = process.env.ANCHORS_DIR || '/tmp/anchors';
  const { Queue } = require(path.join(anchors, 'node_modules', 'bullmq'));
  const q = new Queue(name, { connection: { host: '127.0.0.1', port: Number(redisPort) } });
  await q.waitUntilReady();
  return { add: async (data) => (await q.add('j', data, { removeOnComplete: true })).id, close: () => q.close() };
}

async function main() {
  const q = await openQueue();
  let n = 0;
  const server = http.createServer((req, res) => {
    // The request has no body; drain it anyway so the connection stays reusable.
    req.resume();
    q.add({ i: n++ }).then(
      (id) => {
        const body = String(id);
        res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': Buffer.byteLength(body) });
        res.end(body);
      },
      (err) => {
        const body = String(err && err.message);
        res.writeHead(500, { 'Content-Type': 'text/plain', 'Content-Length': Buffer.byteLength(body) });
        res.end(body);
      },
    );
  });
  // The generator keeps its connections open for the whole run; never time them out.
  server.keepAliveTimeout = 0;
  server.headersTimeout = 0;
  server.requestTimeout = 0;
  server.listen(Number(httpPort), '127.0.0.1', () => {
    process.stdout.write(`ready ${process.pid}\n`);
  });
  const stop = async () => {
    server.close();
    server.closeAllConnections?.();
    await q.close();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
