// Browser checks of `emq ui`, driven by cli/tests/ui_browser.rs (which starts the datastore, a
// worker, the jobs and two `emq ui` servers, and passes them in the environment). Debian's
// Chromium through playwright-core; every wait bounded. Exits 0 when every check passed.
'use strict';
const path = require('path');
const fs = require('fs');

const env = (k) => { const v = process.env[k]; if (!v) throw new Error('missing env ' + k); return v; };
const PW_DIR = process.env.EMQ_PW_DIR || '/tmp/emq-pw';
const { chromium } = require(path.join(PW_DIR, 'node_modules', 'playwright-core'));
const BASE = env('UI_BASE'), RO_BASE = env('UI_RO_BASE');
const QUEUE = env('QUEUE'), HTML_QUEUE = env('HTML_QUEUE'), DRAIN_QUEUE = env('DRAIN_QUEUE');
const FLAKY = env('FLAKY_ID'), DOOMED = env('DOOMED_ID'), HTML_ID = env('HTML_ID');
const SCREENS = env('SCREENS');
const T = 15000;

let failures = 0;
async function check(name, fn) {
  const t0 = Date.now();
  try { await fn(); console.log('ok   ' + name + ' (' + (Date.now() - t0) + ' ms)'); }
  catch (e) { failures += 1; console.log('FAIL ' + name + ': ' + (e && e.stack || e)); }
}
function assert(cond, msg) { if (!cond) throw new Error('assertion failed: ' + msg); }
const jobUrl = (base, q, id) => base + '/#/q/' + encodeURIComponent(q) + '/j/' + id;
const shot = (page, name) => page.screenshot({ path: path.join(SCREENS, name + '.png'), fullPage: true });

(async () => {
  fs.mkdirSync(SCREENS, { recursive: true });
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    timeout: 30000,
  });
  const page = await browser.newPage({ viewport: { width: 1360, height: 820 } });
  page.setDefaultTimeout(T);
  const consoleErrors = [];
  page.on('pageerror', (e) => consoleErrors.push(String(e)));
  page.on('dialog', (d) => d.accept());

  await check('the overview lists the queues the test created', async () => {
    await page.goto(BASE + '/#/');
    await page.waitForSelector(`tr[data-queue="${QUEUE}"]`);
    await page.waitForSelector(`tr[data-queue="${HTML_QUEUE}"]`);
    const failed = await page.textContent(`tr[data-queue="${QUEUE}"] [data-count="failed"]`);
    assert(Number(failed) >= 2, 'failed count ' + failed);
    assert(await page.$(`tr[data-queue="${QUEUE}"] svg.chart rect`), 'a chart with bars');
    const ds = await page.textContent('#datastore');
    assert(ds.startsWith('redis://'), 'datastore shown: ' + ds);
    await page.waitForSelector('#live.on');
    assert(!(await page.isVisible('#read-only')), 'a read-only badge on a dashboard that acts');
    await shot(page, 'overview');
  });

  await check('the queue page lists failed jobs with their reason', async () => {
    await page.goto(BASE + '/#/q/' + encodeURIComponent(QUEUE) + '?state=failed');
    await page.waitForSelector(`tr[data-job="${FLAKY}"]`);
    const row = await page.textContent(`tr[data-job="${FLAKY}"]`);
    assert(row.includes('card declined'), 'reason in row: ' + row);
    await shot(page, 'queue-failed');
  });

  await check("a failed job's page shows its reason and stack", async () => {
    await page.goto(jobUrl(BASE, QUEUE, FLAKY));
    await page.waitForSelector('#failure-reason');
    const reason = await page.textContent('#failure-reason');
    assert(reason.includes('[payment_failed]') && reason.includes('card declined: insufficient funds'), reason);
    const stack = await page.textContent('#failure-stack');
    assert(stack.includes('at charge (billing.rs:42)'), stack);
    assert((await page.textContent('#job-state')) === 'failed', 'state failed');
    await shot(page, 'job-failed');
  });

  await check('Retry brings it back and the page shows it completing without a reload', async () => {
    await page.evaluate(() => { window.__sameDocument = true; });
    const before = Number(await page.getAttribute('#main', 'data-renders'));
    await page.click('button[data-action="retry"]');
    // The re-read after the click shows it back (waiting or running) ...
    await page.waitForFunction(() => document.getElementById('main').dataset.cause === 'action'
      && ['waiting', 'active'].includes(document.getElementById('job-state').textContent), null, { timeout: T });
    // ... and the events stream, not a reload or a timer, brings the completion.
    await page.waitForFunction(() => document.getElementById('job-state')
      && document.getElementById('job-state').textContent === 'completed', null, { timeout: T });
    const cause = await page.getAttribute('#main', 'data-cause');
    assert(cause === 'live', 'the completion was shown by a ' + cause + ' re-read, not a live one');
    assert(await page.evaluate(() => window.__sameDocument === true), 'the page reloaded');
    const after = Number(await page.getAttribute('#main', 'data-renders'));
    assert(after > before, 're-rendered in place');
    const result = await page.textContent('#result');
    assert(result.includes('"charged": true'), result);
    await shot(page, 'job-completed');
  });

  await check('a job whose data holds HTML shows it as text', async () => {
    await page.goto(jobUrl(BASE, HTML_QUEUE, HTML_ID));
    await page.waitForSelector('#data');
    const text = await page.textContent('#data');
    assert(text.includes('<script>window.__pwned = 1</script>'), text);
    assert(text.includes('<img src=x onerror=window.__pwned=2>'), text);
    const children = await page.evaluate(() => document.getElementById('data').children.length);
    assert(children === 0, 'markup became elements: ' + children);
    assert(await page.evaluate(() => window.__pwned === undefined), 'the data ran');
    const name = await page.textContent('[data-field="Name"]');
    assert(name === '<b>html-name</b>', 'name as text: ' + name);
    await shot(page, 'job-html');
  });

  await check('the Find box opens a job by queue and id', async () => {
    await page.goto(BASE + '/#/workers');
    await page.fill('#find-queue', HTML_QUEUE);
    await page.fill('#find-id', HTML_ID);
    await page.click('#find button');
    await page.waitForFunction((id) => document.getElementById('job-id')
      && document.getElementById('job-id').textContent === id, HTML_ID);
  });

  await check('Pause and Resume from the queue page', async () => {
    await page.goto(BASE + '/#/q/' + encodeURIComponent(HTML_QUEUE) + '?state=waiting');
    await page.waitForSelector('#jobs');
    await page.click('button:text-is("Pause")');
    await page.waitForSelector('h1 .badge.paused');
    await page.click('button:text-is("Resume")');
    await page.waitForFunction(() => !document.querySelector('h1 .badge.paused'));
  });

  await check('Drain, after its confirmation, empties the waiting jobs', async () => {
    await page.goto(BASE + '/#/q/' + encodeURIComponent(DRAIN_QUEUE) + '?state=waiting');
    await page.waitForSelector('#jobs tr[data-job]');
    let asked = '';
    page.once('dialog', (d) => { asked = d.message(); });
    await page.click('button:text-is("Drain…")');
    await page.waitForFunction(() => !document.querySelector('#jobs tr[data-job]'));
    assert(asked.includes('Drain ' + DRAIN_QUEUE), 'confirmation: ' + asked);
    await shot(page, 'queue-drained');
  });

  await check('the workers page lists the test worker', async () => {
    await page.goto(BASE + '/#/workers');
    await page.waitForSelector('#workers tbody tr td');
    const body = await page.textContent('#workers');
    assert(body.includes(QUEUE) && body.includes('rust'), body);
    await shot(page, 'workers');
  });

  await check('--read-only refuses Retry', async () => {
    const ro = await browser.newPage({ viewport: { width: 1360, height: 820 } });
    ro.setDefaultTimeout(T);
    await ro.goto(jobUrl(RO_BASE, QUEUE, DOOMED));
    await ro.waitForSelector('#failure-reason');
    assert(await ro.isDisabled('button[data-action="retry"]'), 'Retry is not disabled');
    assert(await ro.isVisible('#read-only'), 'no read-only badge');
    const reply = await ro.evaluate(async (u) => {
      const r = await fetch(u, { method: 'POST', headers: { 'X-EMQ-UI': '1', 'Content-Type': 'application/json' }, body: '{}' });
      return { status: r.status, body: await r.json() };
    }, '/api/queues/' + encodeURIComponent(QUEUE) + '/jobs/' + DOOMED + '/retry');
    assert(reply.status === 403 && reply.body.error.code === 'read_only', JSON.stringify(reply));
    await ro.reload();
    await ro.waitForSelector('#job-state');
    assert((await ro.textContent('#job-state')) === 'failed', 'still failed');
    await shot(ro, 'read-only');
    await ro.close();
  });

  await check('no script errors on the pages', async () => {
    assert(consoleErrors.length === 0, consoleErrors.join('\n'));
  });

  await browser.close();
  console.log(failures ? failures + ' check(s) failed' : 'all browser checks passed');
  process.exit(failures ? 1 : 0);
})().catch((e) => { console.log('FAIL setup: ' + (e && e.stack || e)); process.exit(1); });
