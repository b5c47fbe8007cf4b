// Screenshots of the built site (target/site, from scripts/docs) with Chromium and playwright-core,
// as cli/ui-test does it: three pages into docs/site-screens/. By hand, after scripts/docs:
//   EMQ_PW_DIR=/tmp/emq-pw node docs/screens.js [target/site]
// (playwright-core in $EMQ_PW_DIR, default /tmp/emq-pw; Chromium at $CHROMIUM or /usr/bin/chromium.)
const path = require('path');
const fs = require('fs');

const PW_DIR = process.env.EMQ_PW_DIR || '/tmp/emq-pw';
const { chromium } = require(path.join(PW_DIR, 'node_modules', 'playwright-core'));
const site = path.resolve(process.argv[2] || path.join(__dirname, '..', 'target', 'site'));
const out = path.join(__dirname, 'site-screens');
const pages = [
  ['home.png', 'index.html'],
  ['start-python.png', 'start/python.html'],
  ['api-node.png', 'api/node/classes/Queue.html'],
];

(async () => {
  fs.mkdirSync(out, { recursive: true });
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    timeout: 30000,
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    for (const [file, rel] of pages) {
      const target = path.join(site, rel);
      if (!fs.existsSync(target)) throw new Error(`no ${target}: run scripts/docs first`);
      await page.goto('file://' + target, { waitUntil: 'load' });
      await page.screenshot({ path: path.join(out, file) });
      console.log(`screens: ${rel} -> ${path.relative(process.cwd(), path.join(out, file))} (${await page.title()})`);
    }
  } finally {
    await browser.close();
  }
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
