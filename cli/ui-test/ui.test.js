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
const FLOW_QUEUE = env('FLOW_QUEUE'), PARTS_QUEUE = env('PARTS_QUEUE'), FLOW_PARENT = env('FLOW_PARENT'), FLOW_CHILD = env('FLOW_CHILD');
const BULK_QUEUE = env('BULK_QUEUE'), REFUND_ID = env('REFUND_ID');
const MISC_QUEUE = env('MISC_QUEUE'), CANCEL_ID = env('CANCEL_ID'), PRIO_ID = env('PRIO_ID');
const SCHED_QUEUE = env('SCHED_QUEUE');
const HAY_QUEUE = env('HAY_QUEUE'), NEEDLE_ID = env('NEEDLE_ID');
const GROUPS_QUEUE = env('GROUPS_QUEUE');
const BATCH_QUEUE = env('BATCH_QUEUE'), NIGHTLY_ID = env('NIGHTLY_ID'), BACKFILL_ID = env('BACKFILL_ID');
const ORIGIN_QUEUE = env('ORIGIN_QUEUE'), DLQ_QUEUE = env('DLQ_QUEUE');
const queueUrl = (q, rest) => BASE + '/#/q/' + encodeURIComponent(q) + (rest || '');
const T = 15000;

let failures = 0;
let current = null; // the page a failed check's screenshot is taken of
async function check(name, fn) {
  const t0 = Date.now();
  try { await fn(); console.log('ok   ' + name + ' (' + (Date.now() - t0) + ' ms)'); }
  catch (e) {
    failures += 1; console.log('FAIL ' + name + ': ' + (e && e.stack || e));
    if (current) await current.screenshot({ path: path.join(SCREENS, 'FAILED-' + name.replace(/[^a-z0-9]+/gi, '-').slice(0, 60) + '.png'), fullPage: true }).catch(() => {});
  }
}
function assert(cond, msg) { if (!cond) throw new Error('assertion failed: ' + msg); }
const jobUrl = (base, q, id) => base + '/#/q/' + encodeURIComponent(q) + '/j/' + id;
// Opens a job's page and waits until it shows that job (a hash change keeps the old view a moment).
async function openJob(page, base, q, id) {
  await page.goto(jobUrl(base, q, id));
  await page.waitForFunction((i) => document.getElementById('job-id') && document.getElementById('job-id').textContent === i, id);
}
// A screenshot of the page as it stands, without the last checks' flash messages.
const shot = async (page, name) => {
  await page.evaluate(() => { const f = document.getElementById('flash'); if (f) f.replaceChildren(); });
  return page.screenshot({ path: path.join(SCREENS, name + '.png'), fullPage: true });
};

(async () => {
  fs.mkdirSync(SCREENS, { recursive: true });
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    timeout: 30000,
  });
  const page = await browser.newPage({ viewport: { width: 1360, height: 820 } });
  page.setDefaultTimeout(T);
  current = page;
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
    await openJob(page, BASE, QUEUE, FLAKY);
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
    await openJob(page, BASE, HTML_QUEUE, HTML_ID);
    await page.waitForSelector('#data');
    const text = await page.textContent('#data');
    assert(text.includes('<script>window.__pwned = 1</script>'), text);
    assert(text.includes('<img src=x onerror=window.__pwned=2>'), text);
    const children = await page.evaluate(() => document.getElementById('data').children.length);
    assert(children === 0, 'markup became elements: ' + children);
    assert(await page.evaluate(() => window.__pwned === undefined), 'the data ran');
    const name = await page.textContent('[data-field="Name"]');
    assert(name === '<b>html-name</b>', 'name as text: ' + name);
    const about = await page.textContent('#job-description');
    assert(about === 'notes for <i>ops</i> — ünïcode', 'the description, as text: ' + about);
    assert(await page.evaluate(() => document.getElementById('job-description').children.length === 0), 'the description became markup');
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

  await check("the job page's timeline lists its events at server times", async () => {
    await openJob(page, BASE, QUEUE, FLAKY);
    await page.waitForSelector('#timeline tr[data-event="completed"]');
    const kinds = await page.$$eval('#timeline tbody tr', (rows) => rows.map(r => r.dataset.event));
    for (const k of ['created', 'added', 'active', 'failed', 'completed']) assert(kinds.includes(k), 'timeline has ' + k + ': ' + kinds);
    assert(kinds.indexOf('failed') < kinds.lastIndexOf('completed'), 'failed before completed: ' + kinds);
    const first = await page.textContent('#timeline tbody tr td');
    assert(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/.test(first), 'a UTC instant: ' + first);
    const failedRow = await page.textContent('#timeline tr[data-event="failed"]');
    assert(failedRow.includes('code=payment_failed'), failedRow);
    await page.$eval('#timeline', (el) => el.scrollIntoView());
    await shot(page, 'job-timeline');
  });

  await check('the flow links parent and child across queues', async () => {
    await openJob(page, BASE, FLOW_QUEUE, FLOW_PARENT);
    await page.waitForSelector('#flow-children');
    const child = `#flow-children li[data-flow-job="${PARTS_QUEUE}:${FLOW_CHILD}"]`;
    assert((await page.textContent(child)).includes('waiting'), 'child state');
    await shot(page, 'job-flow');
    await page.click(child + ' a');
    await page.waitForFunction((id) => document.getElementById('job-id') && document.getElementById('job-id').textContent === id, FLOW_CHILD);
    const parent = `#flow-parent li[data-flow-job="${FLOW_QUEUE}:${FLOW_PARENT}"]`;
    await page.waitForSelector(parent);
    assert((await page.textContent(parent)).includes('waiting-children'), 'parent state');
    await page.click(parent + ' a');
    await page.waitForFunction((id) => document.getElementById('job-id') && document.getElementById('job-id').textContent === id, FLOW_PARENT);
  });

  await check('change priority and cancel on the job page', async () => {
    await openJob(page, BASE, MISC_QUEUE, PRIO_ID);
    await page.fill('#priority-input', '3');
    await page.click('button[data-action="priority"]');
    await page.waitForFunction(() => document.getElementById('job-state').textContent === 'prioritized'
      && document.querySelector('[data-field="Priority"]').textContent === '3');
    await openJob(page, BASE, MISC_QUEUE, CANCEL_ID);
    await page.fill('#cancel-reason', 'ordered by mistake');
    await page.click('button[data-action="cancel"]');
    await page.waitForSelector('#failure-reason');
    const reason = await page.textContent('#failure-reason');
    assert(reason.includes('[cancelled]') && reason.includes('ordered by mistake'), reason);
    assert(!(await page.$('button[data-action="cancel"]')), 'no Cancel on a failed job');
    await shot(page, 'job-cancelled');
  });

  await check('find by name and by dedup key on the queue page', async () => {
    await page.goto(queueUrl(BULK_QUEUE, '?state=delayed'));
    await page.waitForSelector('#jobs tr[data-job]');
    await page.selectOption('#search-by', 'name');
    await page.fill('#search-text', 'refund');
    await page.click('#search button[type="submit"]');
    await page.waitForSelector('#search-status');
    const rows = await page.$$eval('#jobs tr[data-job]', (r) => r.map(x => x.dataset.job));
    assert(rows.length === 1 && rows[0] === REFUND_ID, 'one refund: ' + rows);
    const said = await page.textContent('#search-window');
    assert(said.includes('searched 5 of 5 delayed jobs (1–5'), said);
    const bound = await page.textContent('#search-bound');
    assert(bound.includes('a bounded search: at most 5,000 jobs per step') && bound.includes('delayed read to its end'), bound);
    assert(!(await page.$('#search-further')), 'no further window after the end');
    await shot(page, 'queue-search');
    await page.selectOption('#search-by', 'dedup');
    await page.fill('#search-text', 'refund-key-7');
    await page.click('#search button[type="submit"]');
    await page.waitForFunction(() => (document.getElementById('search-status') || {}).textContent
      && document.getElementById('search-status').textContent.includes('holding dedup key'));
    const byKey = await page.$$eval('#jobs tr[data-job]', (r) => r.map(x => x.dataset.job));
    assert(byKey.length === 1 && byKey[0] === REFUND_ID, 'by key: ' + byKey);
    await page.click('#search-clear');
    await page.waitForFunction(() => !document.getElementById('search-status'));
  });

  await check('bulk: select all on the page, Promote', async () => {
    await page.goto(queueUrl(BULK_QUEUE, '?state=delayed'));
    await page.waitForSelector('#jobs tr[data-job]');
    await page.check('#select-all');
    assert((await page.textContent('#bulk-count')) === '5 selected', await page.textContent('#bulk-count'));
    await shot(page, 'queue-bulk');
    await page.click('button[data-bulk="promote"]');
    await page.waitForFunction(() => !document.querySelector('#jobs tr[data-job]'));
    await page.goto(queueUrl(BULK_QUEUE, '?state=waiting'));
    await page.waitForFunction(() => document.querySelectorAll('#jobs tr[data-job]').length === 5);
  });

  await check("bulk: Set priority on the selected jobs, each job's outcome shown, read back", async () => {
    await page.goto(queueUrl(BULK_QUEUE, '?state=waiting'));
    await page.waitForFunction(() => document.querySelectorAll('#jobs tr[data-job]').length === 5);
    const ids = await page.$$eval('#jobs tr[data-job]', (r) => r.map(x => x.dataset.job));
    assert(ids.includes(REFUND_ID), 'the refund is listed: ' + ids);
    await page.check('#select-all');
    // One of the selected jobs is removed meanwhile (another operator, say): it is reported, the
    // others still move.
    const gone = await page.evaluate(async (u) => (await fetch(u, { method: 'POST', headers: { 'X-EMQ-UI': '1', 'Content-Type': 'application/json' }, body: '{}' })).status,
      '/api/queues/' + encodeURIComponent(BULK_QUEUE) + '/jobs/' + REFUND_ID + '/remove');
    assert(gone === 200, 'remove: ' + gone);
    await page.fill('#bulk-priority', '4');
    await page.click('button[data-bulk="priority"]');
    await page.waitForSelector('#bulk-report');
    const head = await page.textContent('#bulk-report-head');
    assert(head.includes('Priority 4 for 5: 4 done, 1 refused'), head);
    const refused = await page.textContent(`#bulk-report li[data-result="${REFUND_ID}"]`);
    assert(refused.includes('not found'), refused);
    assert((await page.$$('#bulk-report li')).length === 1, 'one line: the refused job');
    // Read back through the API: the four others are prioritized with priority 4.
    const back = await page.evaluate(async (u) => (await fetch(u)).json(),
      '/api/queues/' + encodeURIComponent(BULK_QUEUE) + '/jobs?state=prioritized&limit=50');
    const got = back.jobs.map(j => j.id + '=' + j.priority).sort();
    const want = ids.filter(i => i !== REFUND_ID).map(i => i + '=4').sort();
    assert(JSON.stringify(got) === JSON.stringify(want), 'read back ' + got + ' want ' + want);
    await page.waitForFunction(() => !document.querySelector('#jobs tr[data-job]'));
    await shot(page, 'queue-bulk-priority');
    await page.click('#bulk-report-close');
    await page.waitForFunction(() => !document.getElementById('bulk-report'));
  });

  await check('find by name is bounded: it says how many it searched and offers the next window', async () => {
    await page.goto(queueUrl(HAY_QUEUE, '?state=waiting'));
    await page.waitForSelector('#jobs tr[data-job]');
    await page.selectOption('#search-by', 'name');
    await page.fill('#search-text', 'needle');
    await page.click('#search button[type="submit"]');
    await page.waitForSelector('#search-window');
    const first = await page.textContent('#search-status');
    assert(first.includes('0 matches for “needle”'), first);
    assert(first.includes('searched 5,000 of 5,010 waiting jobs (1–5,000, oldest first)'), first);
    assert(first.includes('a bounded search: at most 5,000 jobs per step, no name index'), first);
    assert(!(await page.$('#jobs tr[data-job]')), 'no match in the first window');
    const further = await page.textContent('#search-further');
    assert(further.includes('search further: jobs 5,001–5,010'), further);
    await shot(page, 'queue-search-bounded');
    await page.click('#search-further');
    await page.waitForFunction(() => (document.getElementById('search-window') || {}).textContent
      && document.getElementById('search-window').textContent.includes('5,001–5,010'));
    const second = await page.textContent('#search-status');
    assert(second.includes('1 match for “needle”') && second.includes('searched 10 of 5,010 waiting jobs'), second);
    assert(second.includes('waiting read to its end'), second);
    assert(!(await page.$('#search-further')), 'no window after the end');
    const rows = await page.$$eval('#jobs tr[data-job]', (r) => r.map(x => x.dataset.job));
    assert(rows.length === 1 && rows[0] === NEEDLE_ID, 'the needle: ' + rows);
    await shot(page, 'queue-search-further');
  });

  await check('schedulers: create, see next runs in its zone and UTC, edit, remove', async () => {
    await page.goto(BASE + '/#/schedulers');
    await page.waitForSelector('#scheduler-form');
    await page.fill('#sched-queue', SCHED_QUEUE);
    await page.fill('#sched-id', 'morning-report');
    await page.fill('#sched-name', 'report');
    await page.fill('#sched-cron', '0 9 * * MON-FRI');
    await page.fill('#sched-tz', 'America/New_York');
    await page.fill('#sched-limit', '10');
    await page.fill('#sched-data', '{"to": "<b>ops</b>"}');
    await page.click('#sched-save');
    const row = `tr[data-scheduler="${SCHED_QUEUE}/morning-report"]`;
    await page.waitForSelector(row);
    const runs = await page.$$eval(row + ' td.runs li', (li) => li.map(x => x.textContent));
    assert(runs.length === 5, 'five next runs: ' + runs);
    for (const r of runs) assert(/09:00:00/.test(r) && /(EST|EDT|GMT-[45])/.test(r) && /= \d{4}-\d\d-\d\dT1[34]:00:00Z/.test(r), 'zone and UTC: ' + r);
    assert(/\d+ of 10/.test(await page.textContent(row)), 'limit');
    await shot(page, 'schedulers');
    await page.click(`button[data-edit="${SCHED_QUEUE}/morning-report"]`);
    await page.waitForFunction(() => document.getElementById('sched-cron').value === '0 9 * * MON-FRI'
      && document.getElementById('sched-data').value.includes('<b>ops</b>'));
    await page.fill('#sched-cron', '');
    await page.fill('#sched-every_ms', '600000');
    await page.fill('#sched-end_after_s', '3600');
    await page.click('#sched-save');
    await page.waitForFunction((r) => document.querySelector(r) && document.querySelector(r).textContent.includes('every 10m'), row);
    assert(!(await page.textContent(row)).includes('never'), 'an end');
    await page.click(`button[data-remove="${SCHED_QUEUE}/morning-report"]`);
    await page.waitForFunction((r) => !document.querySelector(r), row);
  });

  await check('the Groups page: rows by backlog, sort by name and back, Pause, weight', async () => {
    await page.goto(queueUrl(GROUPS_QUEUE, '?state=waiting'));
    await page.waitForSelector('#jobs tr[data-job]');
    await page.click('#queue-views a[data-view="groups"]');
    await page.waitForSelector('#groups tbody tr[data-group]');
    const order = () => page.$$eval('#groups tbody tr[data-group]', (r) => r.map(x => x.dataset.group).join(','));
    const byBacklog = 'tenant-big,tenant-mid,a-tenant,tenant-small', byName = 'a-tenant,tenant-big,tenant-mid,tenant-small';
    assert((await order()) === byBacklog, 'by backlog: ' + await order());
    const waiting = await page.$$eval('#groups tbody td[data-col="waiting"]', (c) => c.map(x => x.textContent).join(','));
    assert(waiting === '6,3,2,1', 'waiting: ' + waiting);
    assert((await page.getAttribute('#groups th[data-sort="waiting"]', 'aria-sort')) === 'descending', 'the sorted column');
    assert((await page.textContent('#groups-note')).includes('4 groups, sorted by backlog'), await page.textContent('#groups-note'));
    const cell = (g, c) => page.textContent(`#groups tr[data-group="${g}"] td[data-col="${c}"]`);
    assert((await cell('tenant-big', 'concurrency')) === '2' && (await cell('tenant-big', 'max_waiting')) === 'none', 'tenant-big caps');
    assert((await cell('tenant-mid', 'max_waiting')) === '10000' && (await cell('tenant-small', 'concurrency')) === 'none', 'the other caps');
    assert((await cell('tenant-big', 'state')) === 'serving', 'state: ' + await cell('tenant-big', 'state'));
    assert((await page.getAttribute('#queue-views a.current', 'data-view')) === 'groups', 'the Groups view is current');
    await page.click('#groups th[data-sort="name"] a');
    await page.waitForFunction((w) => [...document.querySelectorAll('#groups tbody tr[data-group]')].map(x => x.dataset.group).join(',') === w, byName);
    assert((await page.evaluate(() => location.hash)).endsWith('/groups?sort=name'), await page.evaluate(() => location.hash));
    await page.click('#groups th[data-sort="waiting"] a');
    await page.waitForFunction((w) => [...document.querySelectorAll('#groups tbody tr[data-group]')].map(x => x.dataset.group).join(',') === w, byBacklog);
    // Pause one group: its row says so and offers Resume.
    const mid = '#groups tr[data-group="tenant-mid"]';
    await page.click(mid + ' button[data-group-action="pause"]');
    await page.waitForSelector(mid + '[data-paused="yes"]');
    assert((await page.textContent(mid + ' td[data-col="state"]')) === 'paused', 'paused badge');
    assert(await page.$(mid + ' button[data-group-action="resume"]'), 'a Resume button');
    assert((await page.textContent(mid + ' td[data-col="waiting"]')) === '3', 'its jobs keep waiting');
    // A new weight, typed and set.
    const big = '#groups tr[data-group="tenant-big"]';
    await page.fill(big + ' input.weight', '5');
    await page.click(big + ' button[data-group-action="weight"]');
    await page.waitForFunction((s) => document.querySelector(s + ' td[data-col="weight"]').textContent === '5', big);
    await page.waitForFunction(() => !document.querySelector('#flash div'));
    await shot(page, 'groups');
    // A weight the core refuses is said so, and nothing changes.
    await page.fill('#groups tr[data-group="a-tenant"] input.weight', '5000');
    await page.click('#groups tr[data-group="a-tenant"] button[data-group-action="weight"]');
    await page.waitForFunction(() => [...document.querySelectorAll('#flash div.error')].some(d => d.textContent.includes('refused: [invalid_option]') && d.textContent.includes('1 to 1000')));
    const back = await page.evaluate(async (u) => (await fetch(u)).json(), '/api/queues/' + encodeURIComponent(GROUPS_QUEUE) + '/groups?sort=name');
    const got = back.groups.map(g => g.name + ':' + g.weight + ':' + (g.paused ? 'p' : '-')).join(',');
    assert(got === 'a-tenant:1:-,tenant-big:5:-,tenant-mid:1:p,tenant-small:1:-', 'read back: ' + got);
    // Read-only: the same page, every action disabled.
    const ro = await browser.newPage({ viewport: { width: 1360, height: 820 } });
    ro.setDefaultTimeout(T);
    await ro.goto(RO_BASE + '/#/q/' + encodeURIComponent(GROUPS_QUEUE) + '/groups');
    await ro.waitForSelector('#groups tbody tr[data-group]');
    assert(await ro.isDisabled('#groups tr[data-group="tenant-big"] button[data-group-action="pause"]'), 'Pause is not disabled');
    assert(await ro.isDisabled('#groups tr[data-group="tenant-big"] button[data-group-action="weight"]'), 'Set is not disabled');
    await ro.close();
  });

  await check('the Batches page shows each batch\'s progress, opens one and cancels another', async () => {
    await page.goto(queueUrl(BATCH_QUEUE, '?state=waiting'));
    await page.waitForSelector('#queue-views a[data-view="batches"]');
    await page.click('#queue-views a[data-view="batches"]');
    await page.waitForSelector('#batches tbody tr[data-batch]');
    const order = await page.$$eval('#batches tbody tr[data-batch]', (r) => r.map(x => x.dataset.batch).join(','));
    assert(order === BACKFILL_ID + ',' + NIGHTLY_ID, 'newest first: ' + order);
    const nightly = `#batches tr[data-batch="${NIGHTLY_ID}"]`, backfill = `#batches tr[data-batch="${BACKFILL_ID}"]`;
    assert((await page.getAttribute(nightly, 'data-state')) === 'done', 'nightly is done');
    assert((await page.getAttribute(nightly + ' .progress', 'aria-label')) === '5 of 5 done, 1 failed', await page.getAttribute(nightly + ' .progress', 'aria-label'));
    assert((await page.getAttribute(backfill + ' .progress', 'data-done')) === '2', 'backfill 2 done');
    assert((await page.textContent(backfill + ' .count')).includes('2/5 done (40%)'), await page.textContent(backfill + ' .count'));
    // The bar's segments have their widths (set through the CSSOM: the CSP refuses style attributes).
    const widths = await page.$$eval(nightly + ' .seg', (e) => e.map(x => Math.round(x.getBoundingClientRect().width)));
    assert(widths.length === 2 && widths[0] > 3 * widths[1] && widths[1] > 0, 'segment widths ' + widths);
    assert(!(await page.$(nightly + ' button[data-batch-action="cancel"]')), 'a done batch has no Cancel');
    assert((await page.textContent('#batches-note')).includes('2 batches'), await page.textContent('#batches-note'));
    await shot(page, 'batches');
    await page.click(nightly + ' td a');
    await page.waitForSelector('#batch-failed tbody tr[data-failed]');
    assert((await page.textContent('#batch-id')) === NIGHTLY_ID, 'the batch page');
    assert((await page.textContent('#batch-fields dd[data-field="description"]')) === 'nightly import', 'description');
    assert((await page.$$('#batch-failed tbody tr[data-failed]')).length === 1, 'one failed job listed');
    await shot(page, 'batch');
    const failedLink = await page.getAttribute('#batch-failed tbody tr[data-failed] td:nth-child(2) a', 'href');
    assert(failedLink.includes('/j/'), 'a link to the failed job: ' + failedLink);
    await page.goto(queueUrl(BATCH_QUEUE, '/batches'));
    await page.waitForSelector(backfill + ' button[data-batch-action="cancel"]');
    await page.click(backfill + ' button[data-batch-action="cancel"]');
    await page.waitForFunction((sel) => { const r = document.querySelector(sel); return r && r.dataset.state === 'cancelled'; }, backfill);
  });

  await check('the Metrics page charts the last hour and the last day: outcomes, backlog, run and wait quantiles', async () => {
    await page.goto(queueUrl(BATCH_QUEUE, '/batches'));
    await page.waitForSelector('#queue-views a[data-view="metrics"]');
    await page.click('#queue-views a[data-view="metrics"]');
    await page.waitForSelector('#chart-run');
    assert((await page.$$('#chart-outcomes rect[data-minute]')).length >= 1, 'a minute of completed jobs');
    for (const q of ['p50', 'p95', 'p99']) {
      assert((await page.$$(`#chart-run circle[data-q="${q}"]`)).length >= 1, 'run ' + q);
      assert((await page.$$(`#chart-wait circle[data-q="${q}"]`)).length >= 1, 'wait ' + q);
    }
    const runs = await page.textContent('#latency tr[data-latency="run"] td:nth-child(2)');
    assert(Number(runs) === 6, 'runs counted (4 of nightly, 2 of backfill): ' + runs);
    assert((await page.textContent('#latency tr[data-latency="run"] td:nth-child(3)')).startsWith('≤ '), 'a p50');
    assert((await page.$$('#chart-backlog circle[data-minute]')).length >= 1, 'a backlog sample');
    assert((await page.getAttribute('#metrics-range a.current', 'data-range')) === 'hour', 'the hour view first');
    await shot(page, 'metrics');
    await page.click('#metrics-range a[data-range="day"]');
    await page.waitForSelector('#chart-outcomes rect[data-hour]');
    const perHour = await page.$$eval('#chart-outcomes rect[data-hour]', (r) => r.map(x => Number(x.dataset.n)));
    assert(perHour.reduce((a, b) => a + b, 0) === 6, 'the day view counts the 6 completed runs per hour: ' + perHour);
    assert((await page.$$('#chart-backlog circle[data-hour]')).length >= 1, 'the hour\'s largest backlog');
    for (const q of ['p50', 'p95', 'p99']) assert((await page.$$(`#chart-run circle[data-q="${q}"]`)).length >= 1, 'day run ' + q);
    assert((await page.textContent('#metrics-note')).includes('per hour'), await page.textContent('#metrics-note'));
    await shot(page, 'metrics-day');
  });

  await check('the Dead letters page lists where each came from and replays them', async () => {
    await page.goto(queueUrl(ORIGIN_QUEUE, '/dead-letters'));
    await page.waitForSelector('#letters-note a');
    assert((await page.textContent('#letters-note a')) === DLQ_QUEUE, 'the origin names its dead-letter queue');
    await page.click('#letters-note a');
    await page.waitForSelector('#letters tbody tr[data-letter]');
    const rows = await page.$$('#letters tbody tr[data-letter]');
    assert(rows.length === 2, rows.length + ' rows');
    const text = await page.textContent('#letters tbody');
    assert(text.includes(ORIGIN_QUEUE) && text.includes('[payment_failed] card declined'), text);
    assert((await page.getAttribute('#queue-views a.current', 'data-view')) === 'letters', 'the Dead letters view is current');
    await shot(page, 'dead-letters');
    const first = await page.getAttribute('#letters tbody tr[data-letter]', 'data-letter');
    await page.check(`input[data-letter-select="${first}"]`);
    await page.click('#replay-selected');
    await page.waitForFunction((id) => document.querySelectorAll('#letters tbody tr[data-letter]').length === 1
      && !document.querySelector(`#letters tr[data-letter="${id}"]`), first);
    await page.click('#replay-all');
    await page.waitForFunction(() => document.querySelectorAll('#letters tbody tr[data-letter]').length === 0);
    assert((await page.textContent('#letters tbody')).includes('No dead letters here.'), 'empty');
    const ro = await browser.newPage({ viewport: { width: 1360, height: 820 } });
    ro.setDefaultTimeout(T);
    await ro.goto(RO_BASE + '/#/q/' + encodeURIComponent(DLQ_QUEUE) + '/dead-letters');
    await ro.waitForSelector('#replay-selected');
    assert(await ro.isDisabled('#replay-selected') && await ro.isDisabled('#replay-all'), 'read-only disables replay');
    await ro.close();
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
