// A Node worker child of the chaos storm (core/tests/chaos_faults.rs): reads
// EMQ_CHAOS_CHILD=url|queue|lease_ms|sleep_ms|tag|concurrency, prints `STARTED <id> <µs>` when a
// handler starts and `DONE <id> <µs>` when it returns (µs since the epoch) (the storm's ledger), results { by: tag }. Loads the
// package from EMQ_NODE_PACKAGE (default: the repository's node/). Lives at most 240 s (the test
// SIGKILLs it well before).
'use strict';
const path = require('path');
const emq = require(process.env.EMQ_NODE_PACKAGE || path.join(__dirname, '..', '..', 'node'));

const LIFETIME_MS = 240000;
// Microseconds since the epoch (the ledger compares the stamps of every language's children).
const { performance } = require('perf_hooks');
const nowUs = () => Math.round((performance.timeOrigin + performance.now()) * 1000);

async function main() {
  const [url, name, leaseMs, sleepMs, tag, conc] = process.env.EMQ_CHAOS_CHILD.split('|');
  const urls = url.split(',');
  // A child started while the storm has the datastore down (its restart) connects once it is back.
  let q;
  for (let tries = 0; ; tries += 1) {
    try {
      q = await emq.Queue.connect(urls.length > 1 ? urls : urls[0], name);
      break;
    } catch (e) {
      if (tries >= 200) throw e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const handler = async (job) => {
    process.stdout.write(`STARTED ${job.id} ${nowUs()}\n`);
    await new Promise((r) => setTimeout(r, Number(sleepMs)));
    process.stdout.write(`DONE ${job.id} ${nowUs()}\n`);
    return { by: tag };
  };
  const lease = Number(leaseMs);
  new emq.Worker(q, handler, { concurrency: Number(conc), lease, stalledInterval: lease / 2, maxStalls: 1000 });
  await new Promise((r) => setTimeout(r, LIFETIME_MS));
  process.exit(0);
}

main().catch((e) => {
  process.stderr.write(`worker.js: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
