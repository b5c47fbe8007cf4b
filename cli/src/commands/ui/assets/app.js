// emq ui: a small single-page dashboard. Every value from the datastore is put on the page as
// text (textContent / createTextNode), never as HTML, so a job whose data holds markup stays text.
'use strict';

const STATES = ['waiting', 'paused', 'active', 'delayed', 'prioritized', 'completed', 'failed',
  'stalled', 'waiting-children'];
const PAGE = 25;
const GROUP_PAGE = 50;
const SVGNS = 'http://www.w3.org/2000/svg';

// ---- DOM helpers (text only) -------------------------------------------------------------
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'onclick') el.addEventListener('click', v);
    else if (k === 'class') el.className = v;
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}
function s(tag, attrs) {
  const el = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  return el;
}
function json(v) { return v === undefined ? '' : JSON.stringify(v, null, 2); }
function enc(x) { return encodeURIComponent(x); }

function flash(text, error) {
  const box = document.getElementById('flash');
  const d = h('div', { class: error ? 'error' : '' }, text);
  box.appendChild(d);
  setTimeout(() => d.remove(), error ? 6000 : 2500);
}

// ---- time, on the datastore's clock --------------------------------------------------------
function iso(ms) { return ms ? new Date(ms).toISOString().replace('.000Z', 'Z') : '-'; }
function dur(ms) {
  if (ms === null || ms === undefined) return '-';
  if (ms < 1000) return ms + ' ms';
  let t = Math.floor(ms / 1000);
  const d = Math.floor(t / 86400); t %= 86400;
  const hh = Math.floor(t / 3600); t %= 3600;
  const m = Math.floor(t / 60); const sec = t % 60;
  if (d) return d + 'd ' + hh + 'h';
  if (hh) return hh + 'h ' + m + 'm';
  if (m) return m + 'm ' + sec + 's';
  return sec + 's';
}
function ago(ms, now) {
  if (!ms) return '-';
  return ms <= now ? dur(now - ms) + ' ago' : 'in ' + dur(ms - now);
}
function stamp(ms, now) { return ms ? iso(ms) + ' (' + ago(ms, now) + ')' : '-'; }

// ---- API -------------------------------------------------------------------------------
async function api(path) {
  const r = await fetch(path, { credentials: 'same-origin', headers: { Accept: 'application/json' } });
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error((body.error && ('[' + body.error.code + '] ' + body.error.message)) || r.statusText);
  return body;
}
async function act(path, body, what) {
  try {
    const r = await fetch(path, {
      method: 'POST', credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json', 'X-EMQ-UI': '1' },
      body: JSON.stringify(body || {}),
    });
    const out = await r.json().catch(() => ({}));
    if (!r.ok) {
      const msg = out.error ? '[' + out.error.code + '] ' + out.error.message : r.statusText;
      flash(what + ' refused: ' + msg, true);
      return null;
    }
    flash(what + (out.count !== undefined && out.count ? ': ' + out.count : '') + ' done');
    refresh('action');
    return out;
  } catch (e) {
    flash(what + ' failed: ' + e.message, true);
    return null;
  }
}

// ---- routing -----------------------------------------------------------------------------
function route() {
  const raw = location.hash.replace(/^#/, '') || '/';
  const [path, qs] = raw.split('?');
  const params = new URLSearchParams(qs || '');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  if (parts[0] === 'q' && parts[1] && parts[2] === 'j' && parts[3]) return { view: 'job', queue: parts[1], id: parts[3] };
  if (parts[0] === 'q' && parts[1] && parts[2] === 'batches' && parts[3]) return { view: 'batch', queue: parts[1], id: parts[3], offset: +(params.get('offset') || 0) };
  if (parts[0] === 'q' && parts[1] && parts[2] === 'batches') return { view: 'batches', queue: parts[1], offset: +(params.get('offset') || 0) };
  if (parts[0] === 'q' && parts[1] && parts[2] === 'dead-letters') return { view: 'letters', queue: parts[1] };
  if (parts[0] === 'q' && parts[1] && parts[2] === 'metrics') return { view: 'metrics', queue: parts[1], range: params.get('range') === 'day' ? 'day' : 'hour' };
  if (parts[0] === 'q' && parts[1] && parts[2] === 'groups') {
    const sort = ['waiting', 'running', 'name'].includes(params.get('sort')) ? params.get('sort') : 'waiting';
    return { view: 'groups', queue: parts[1], sort, offset: +(params.get('offset') || 0) };
  }
  if (parts[0] === 'q' && parts[1]) {
    return {
      view: 'queue', queue: parts[1], state: params.get('state') || 'waiting', offset: +(params.get('offset') || 0),
      by: params.get('by') || '', text: params.get('text') || '', from: +(params.get('from') || 0),
    };
  }
  if (parts[0] === 'workers') return { view: 'workers' };
  if (parts[0] === 'schedulers') return { view: 'schedulers' };
  return { view: 'overview' };
}
function queueHref(q, state, offset) {
  return '#/q/' + enc(q) + '?state=' + enc(state || 'waiting') + (offset ? '&offset=' + offset : '');
}
function jobHref(q, id) { return '#/q/' + enc(q) + '/j/' + enc(id); }
function groupsHref(q, sort, offset) {
  return '#/q/' + enc(q) + '/groups' + (sort && sort !== 'waiting' ? '?sort=' + enc(sort) : '?sort=waiting') + (offset ? '&offset=' + offset : '');
}
// The queue's views: its jobs (by state), its fair groups, its batches and the dead letters it holds
// (the last three in queue_pages.js).
function queueViews(q, which) {
  const tab = (view, href, label) => h('a', { href, class: which === view ? 'current' : '', 'data-view': view }, label);
  return h('div', { class: 'views', id: 'queue-views' }, tab('jobs', queueHref(q, 'waiting'), 'Jobs'), tab('groups', groupsHref(q), 'Groups'),
    tab('batches', batchesHref(q), 'Batches'), tab('letters', lettersHref(q), 'Dead letters'), tab('metrics', metricsHref(q), 'Metrics'));
}
function findHref(q, state, by, text, from) {
  return '#/q/' + enc(q) + '?state=' + enc(state || 'waiting') + '&by=' + enc(by) + '&text=' + enc(text) + (from ? '&from=' + from : '');
}

// What the user typed or chose survives the re-renders live updates cause.
const selected = new Set();
let bulkReport = null; // the last bulk action's outcome per job: { scope, what, out }
let selectedScope = '';
const typed = {};
function keep(key, el) {
  if (typed[key] !== undefined) el.value = typed[key];
  el.addEventListener('input', () => { typed[key] = el.value; });
  return el;
}

let current = route();
let loading = false, again = false;
let renders = 0;

let cause = 'load';
async function refresh(why) {
  if (why) cause = why;
  if (loading) { again = true; return; }
  loading = true;
  const thisCause = cause;
  cause = 'poll';
  try {
    const r = current;
    const view = await VIEWS[r.view](r);
    if (r === current) {
      const main = document.getElementById('main');
      // Keep the focus (and caret) of a field being typed in across the re-render.
      const f = document.activeElement;
      const focusId = f && main.contains(f) && f.id ? f.id : null;
      let caret = null;
      try { caret = focusId ? f.selectionStart : null; } catch (e) { caret = null; }
      main.replaceChildren(view);
      if (focusId) {
        const back = document.getElementById(focusId);
        if (back) {
          back.focus();
          try { if (caret !== null) back.setSelectionRange(caret, caret); } catch (e) { /* number inputs */ }
        }
      }
      renders += 1;
      main.dataset.renders = String(renders);
      main.dataset.view = r.view;
      main.dataset.cause = thisCause;
    }
  } catch (e) {
    document.getElementById('main').replaceChildren(h('p', { class: 'failure' }, 'Could not load: ' + e.message));
  } finally {
    loading = false;
    if (again) { again = false; setTimeout(() => refresh(), 50); }
  }
  for (const a of document.querySelectorAll('[data-nav]')) {
    a.classList.toggle('active', a.dataset.nav === current.view);
  }
}

// ---- views -------------------------------------------------------------------------------
function chart(completed, failed, nowMs, minutes) {
  const W = 180, H = 36, n = minutes;
  const nowMin = Math.floor(nowMs / 60000);
  const c = new Map(completed), f = new Map(failed);
  let max = 1;
  for (let i = 0; i < n; i++) {
    const m = nowMin - n + 1 + i;
    max = Math.max(max, (c.get(m) || 0) + (f.get(m) || 0));
  }
  const svg = s('svg', { class: 'chart', width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, role: 'img' });
  const bw = W / n;
  let totalC = 0, totalF = 0;
  for (let i = 0; i < n; i++) {
    const m = nowMin - n + 1 + i;
    const cv = c.get(m) || 0, fv = f.get(m) || 0;
    totalC += cv; totalF += fv;
    const ch = (cv / max) * (H - 2), fh = (fv / max) * (H - 2);
    if (cv) svg.appendChild(s('rect', { x: i * bw, y: H - ch, width: Math.max(bw - 0.5, 0.5), height: ch, fill: '#1f9d55' }));
    if (fv) svg.appendChild(s('rect', { x: i * bw, y: H - ch - fh, width: Math.max(bw - 0.5, 0.5), height: fh, fill: '#d64545' }));
  }
  const title = s('title');
  title.textContent = 'last ' + n + ' min: ' + totalC + ' completed, ' + totalF + ' failed';
  svg.appendChild(title);
  return h('div', {}, svg, h('div', { class: 'legend' },
    h('span', { class: 'c' }, totalC + ' completed'), ' · ', h('span', { class: 'f' }, totalF + ' failed'), ' / ' + n + ' min'));
}

// The outcome of a bulk action, job by job: a count of what was done, and a line for each job
// refused (the state it was in, or not found) or failed (its error's code and message).
function bulkReportView(b) {
  const out = b.out;
  const bad = out.results.filter(x => !x.done);
  const head = b.what + ': ' + out.count + ' done' + (out.refused ? ', ' + (out.refused - (out.errors || 0)) + ' refused' : '')
    + (out.errors ? ', ' + out.errors + ' failed' : '');
  const line = (x) => h('li', { 'data-result': x.id, class: x.error ? 'error' : '' },
    h('a', { href: jobHref(current.queue, x.id) }, x.id), ' ',
    x.error ? '[' + x.error.code + '] ' + x.error.message
      : x.outcome === 'not_found' ? 'not found (removed meanwhile?)' : 'refused: it is ' + x.outcome);
  return h('div', { id: 'bulk-report', class: 'report' + (bad.length ? ' bad' : '') },
    h('div', {}, h('strong', { id: 'bulk-report-head' }, head), ' ',
      h('button', { id: 'bulk-report-close', 'aria-label': 'dismiss', onclick: () => { bulkReport = null; refresh(); } }, '×')),
    bad.length ? h('ul', {}, bad.slice(0, 50).map(line), bad.length > 50 ? h('li', { class: 'muted' }, (bad.length - 50) + ' more') : null) : null);
}

const VIEWS = {
  async overview() {
    const d = await api('/api/overview');
    setDatastore(d);
    const rows = d.queues.map(q => {
      const s = q.summary, c = s.counts;
      return h('tr', { 'data-queue': s.queue },
        h('td', {}, h('a', { href: queueHref(s.queue, 'waiting') }, s.queue), ' ',
          s.paused ? h('span', { class: 'badge paused' }, 'paused') : null),
        ...['waiting', 'active', 'delayed', 'prioritized', 'completed', 'failed'].map(st =>
          h('td', { class: 'num' }, h('a', { href: queueHref(s.queue, st), 'data-count': st },
            String(st === 'waiting' ? c.waiting + c.paused : c[st]))),
        ),
        h('td', {}, dur(s.oldest_waiting_age_ms)),
        h('td', {}, chart(q.completed_per_minute, q.failed_per_minute, d.now_ms, d.window_minutes)),
        h('td', {}, h('span', { class: 'badge' }, String(q.workers.length)), ' ',
          h('div', { class: 'workers-list' }, q.workers.slice(0, 4).map(w =>
            h('div', {}, w.host + ':' + w.pid + ' ' + w.language + ' ' + w.running + '/' + w.concurrency)))),
      );
    });
    return h('section', {},
      h('h1', {}, 'Queues'),
      d.queues.length === 0 ? h('p', { class: 'muted' }, 'No queues registered yet (emq queues --repair finds older ones).') :
        h('table', { id: 'queues' },
          h('thead', {}, h('tr', {}, h('th', {}, 'Queue'), ...['Waiting', 'Active', 'Delayed', 'Prioritized', 'Completed', 'Failed']
            .map(t => h('th', { class: 'num' }, t)), h('th', {}, 'Oldest waiting'), h('th', {}, 'Finished per minute'), h('th', {}, 'Workers'))),
          h('tbody', {}, rows)));
  },

  async queue(r) {
    const searching = !!(r.by && r.text);
    const d = await api('/api/queues/' + enc(r.queue) + '/jobs?state=' + enc(r.state) + '&offset=' + r.offset + '&limit=' + PAGE);
    const found = searching ? await api('/api/queues/' + enc(r.queue) + '/find?by=' + enc(r.by) + '&text=' + enc(r.text)
      + '&state=' + enc(r.state) + '&offset=' + r.from) : null;
    setDatastore(d);
    const s = d.summary, base = '/api/queues/' + enc(r.queue);
    const scope = r.queue + '|' + r.state + '|' + r.by + '|' + r.text;
    if (scope !== selectedScope) { selected.clear(); selectedScope = scope; }
    const tabs = h('div', { class: 'tabs' }, STATES.map(st =>
      h('a', { href: queueHref(r.queue, st), class: st === d.state ? 'current' : '' }, st + ' ' + s.counts[st.replace('-', '_')])));
    const ro = d.read_only ? 'disabled' : null;
    const actions = h('div', { class: 'actions' },
      s.paused ? h('button', { disabled: ro, onclick: () => act(base + '/resume', {}, 'Resume') }, 'Resume')
        : h('button', { disabled: ro, onclick: () => act(base + '/pause', {}, 'Pause') }, 'Pause'),
      h('button', { 'data-action': 'retry-failed', disabled: ro, onclick: () => confirm('Retry every failed job of ' + r.queue + '?') && act(base + '/retry-failed', {}, 'Retry all failed') }, 'Retry all failed'),
      h('button', { disabled: ro, onclick: () => confirm('Remove the completed jobs of ' + r.queue + '?') && act(base + '/clean', { state: 'completed' }, 'Clean completed') }, 'Clean completed'),
      h('button', { disabled: ro, onclick: () => confirm('Remove the failed jobs of ' + r.queue + '?') && act(base + '/clean', { state: 'failed' }, 'Clean failed') }, 'Clean failed'),
      h('button', { class: 'danger', disabled: ro, onclick: () => confirm('Drain ' + r.queue + ': remove every waiting job?') && act(base + '/drain', {}, 'Drain') }, 'Drain…'));

    // Find: by id, by dedup key (exact), by name (a bounded scan of this state).
    const by = keep('find-by:' + r.queue, h('select', { id: 'search-by', 'aria-label': 'find by' },
      h('option', { value: 'name' }, 'name contains'), h('option', { value: 'id' }, 'job id'), h('option', { value: 'dedup' }, 'dedup key')));
    if (typed['find-by:' + r.queue] === undefined && r.by) by.value = r.by;
    const text = keep('find-text:' + r.queue, h('input', { id: 'search-text', placeholder: 'find in ' + d.state, 'aria-label': 'find text', size: 24 }));
    if (typed['find-text:' + r.queue] === undefined && r.text) text.value = r.text;
    const search = h('form', { id: 'search', class: 'search', autocomplete: 'off' }, by, text, h('button', { type: 'submit' }, 'Find'),
      searching ? h('a', { href: queueHref(r.queue, r.state), id: 'search-clear' }, 'clear') : null);
    search.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const t = text.value.trim();
      if (!t) { location.hash = queueHref(r.queue, r.state); return; }
      if (by.value === 'id') { location.hash = jobHref(r.queue, t); return; }
      location.hash = findHref(r.queue, r.state, by.value, t, 0);
    });

    const jobs = searching ? found.jobs : d.jobs;
    const failed = d.state === 'failed';
    const now = searching ? found.now_ms : d.now_ms;
    const box = (id) => {
      const c = h('input', { type: 'checkbox', 'data-select': id, 'aria-label': 'select ' + id });
      c.checked = selected.has(id);
      c.addEventListener('change', () => { if (c.checked) selected.add(id); else selected.delete(id); bulkCount(); });
      return c;
    };
    const rows = jobs.map(j => h('tr', { 'data-job': j.id },
      h('td', {}, box(j.id)),
      h('td', {}, h('a', { href: jobHref(r.queue, j.id) }, j.id)),
      h('td', {}, j.name, j.unreadable ? h('span', { class: 'badge failed', 'data-unreadable': j.id, title: j.unreadable.message }, 'unreadable') : null),
      searching ? h('td', {}, h('span', { class: 'badge ' + (j.state || '') }, j.state || '-')) : null,
      h('td', { class: 'num' }, j.attempts_made + '/' + j.attempts),
      h('td', {}, stamp(j.created_ms, now)),
      failed ? h('td', {}, j.failure ? '[' + j.failure.code + '] ' + j.failure.message.split('\n')[0].slice(0, 100) : '-') : null,
      h('td', {}, jobButtons(r.queue, j, d.read_only))));
    const all = h('input', { type: 'checkbox', id: 'select-all', 'aria-label': 'select all on this page' });
    all.checked = jobs.length > 0 && jobs.every(j => selected.has(j.id));
    all.addEventListener('change', () => {
      for (const j of jobs) { if (all.checked) selected.add(j.id); else selected.delete(j.id); }
      for (const c of document.querySelectorAll('input[data-select]')) c.checked = all.checked;
      bulkCount();
    });
    const count = h('span', { id: 'bulk-count', class: 'muted' }, '');
    const bulkCount = () => { count.textContent = selected.size ? selected.size + ' selected' : 'select jobs for a bulk action'; };
    bulkCount();
    const prio = keep('bulk-prio:' + r.queue, h('input', { id: 'bulk-priority', type: 'number', min: 0, step: 1, size: 5, 'aria-label': 'new priority for the selected jobs', placeholder: 'priority' }));
    const bulk = (action, label, danger) => h('button', {
      'data-bulk': action, class: danger ? 'danger' : '', disabled: ro,
      onclick: async () => {
        const ids = [...selected];
        if (!ids.length) { flash('Select jobs first', true); return; }
        const body = { action, ids };
        let what = label + ' ' + ids.length;
        if (action === 'priority') {
          const p = prio.value.trim() === '' ? NaN : Number(prio.value);
          if (!Number.isInteger(p) || p < 0) { flash('a priority is a whole number, 0 or more', true); return; }
          body.priority = p;
          what = 'Priority ' + p + ' for ' + ids.length;
        }
        if (danger && !confirm(label + ' ' + ids.length + ' job(s) of ' + r.queue + '?')) return;
        const out = await act(base + '/bulk', body, what);
        if (out) {
          // What became of each job stays on the page (until the next bulk action or dismissed).
          bulkReport = { scope, what, out };
          selected.clear(); bulkCount();
          refresh('action');
        }
      },
    }, label);
    const bulkBar = h('div', { class: 'actions bulk', id: 'bulk' }, count,
      bulk('retry', 'Retry'), bulk('promote', 'Promote'), bulk('cancel', 'Cancel', true), bulk('remove', 'Remove', true),
      h('span', { class: 'group' }, 'priority ', prio, bulk('priority', 'Set priority')));
    const report = bulkReport && bulkReport.scope === scope ? bulkReportView(bulkReport) : null;

    let pager;
    if (searching) {
      const sc = found.scan;
      let said, further = null;
      if (r.by === 'dedup') {
        said = jobs.length ? 'the job holding dedup key “' + r.text + '”' + (found.note && found.note.held_until_ms ? ' (held until ' + iso(found.note.held_until_ms) + ')' : '')
          : 'no live job holds dedup key “' + r.text + '”';
      } else {
        // A name search keeps no index: it reads one bounded window of the state per request and
        // says so, with how far it read and where the next window starts.
        const n = (x) => Number(x).toLocaleString('en-US');
        const order = sc.state === 'completed' || sc.state === 'failed' ? 'newest first' : sc.state === 'stalled' ? 'in set order' : 'oldest first';
        const from = sc.offset + 1, to = sc.offset + sc.scanned;
        const stoppedAtMatches = sc.scanned < sc.window && sc.next_offset !== null && sc.next_offset !== undefined;
        const matched = sc.ids.length;
        said = [
          h('strong', { id: 'search-matches' }, matched + (matched === 1 ? ' match' : ' matches') + ' for “' + r.text + '”'),
          ' · ',
          h('span', { id: 'search-window' }, sc.scanned
            ? 'searched ' + n(sc.scanned) + ' of ' + n(sc.in_state) + ' ' + sc.state + ' jobs (' + n(from) + '–' + n(to) + ', ' + order + ')'
            : 'no ' + sc.state + ' jobs from ' + n(from) + ' on'),
          ' · ',
          h('span', { class: 'bound', id: 'search-bound' }, 'a bounded search: at most ' + n(sc.window) + ' jobs per step, no name index'
            + (stoppedAtMatches ? '; stopped at ' + matched + ' matches' : '')
            + (sc.next_offset === null || sc.next_offset === undefined ? '; ' + sc.state + ' read to its end' : '')),
        ];
        further = sc.next_offset !== null && sc.next_offset !== undefined
          ? h('a', { id: 'search-further', href: findHref(r.queue, r.state, r.by, r.text, sc.next_offset) },
            'search further: jobs ' + n(sc.next_offset + 1) + '–' + n(Math.min(sc.next_offset + sc.window, Math.max(sc.in_state, sc.next_offset + 1))) + ' →')
          : null;
      }
      pager = h('div', { class: 'pager search-status', id: 'search-status' }, h('span', {}, said), further);
    } else {
      pager = h('div', { class: 'pager' },
        h('a', { href: r.offset > 0 ? queueHref(r.queue, d.state, Math.max(0, r.offset - PAGE)) : null }, '← newer'),
        h('span', { class: 'muted' }, d.in_state ? (r.offset + 1) + '–' + Math.min(r.offset + PAGE, d.in_state) + ' of ' + d.in_state : 'none'),
        h('a', { href: r.offset + PAGE < d.in_state ? queueHref(r.queue, d.state, r.offset + PAGE) : null }, 'older →'));
    }
    return h('section', {},
      h('h1', {}, 'Queue ', h('span', { id: 'queue-name' }, r.queue), ' ', s.paused ? h('span', { class: 'badge paused' }, 'paused') : null),
      h('p', { class: 'muted' }, 'oldest waiting: ' + dur(s.oldest_waiting_age_ms) + ' · workers: ' + s.workers),
      queueViews(r.queue, 'jobs'), actions, tabs, search, searching ? pager : null, bulkBar, report,
      h('table', { id: 'jobs' }, h('thead', {}, h('tr', {}, h('th', {}, all), h('th', {}, 'Id'), h('th', {}, 'Name'),
        searching ? h('th', {}, 'State') : null, h('th', { class: 'num' }, 'Attempts'),
        h('th', {}, 'Created'), failed ? h('th', {}, 'Reason') : null, h('th', {}, ''))),
      h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: 8, class: 'muted' }, searching ? 'Nothing found in the jobs searched.' : 'No ' + d.state + ' jobs.')))),
      searching ? null : pager);
  },

  async job(r) {
    const d = await api('/api/queues/' + enc(r.queue) + '/jobs/' + enc(r.id));
    setDatastore(d);
    const j = d.job, now = d.now_ms;
    const field = (k, v) => [h('dt', {}, k), h('dd', { 'data-field': k }, v)];
    let parent = '-';
    if (j.parent) {
      const i = j.parent.lastIndexOf(':');
      parent = h('a', { href: jobHref(j.parent.slice(0, i), j.parent.slice(i + 1)) }, j.parent);
    }
    const finished = j.state === 'completed' || j.state === 'failed';
    const base = '/api/queues/' + enc(r.queue) + '/jobs/' + enc(j.id);
    const ro = d.read_only ? 'disabled' : null;
    const prio = keep('prio:' + r.queue + ':' + j.id, h('input', { id: 'priority-input', type: 'number', min: 0, step: 1, size: 6, 'aria-label': 'new priority', value: j.priority }));
    const reason = keep('reason:' + r.queue + ':' + j.id, h('input', { id: 'cancel-reason', placeholder: 'reason', size: 18, 'aria-label': 'cancel reason' }));
    const more = finished ? [] : [
      h('span', { class: 'group' }, reason, h('button', { class: 'danger', 'data-action': 'cancel', disabled: ro,
        onclick: () => confirm('Cancel job ' + j.id + '?') && act(base + '/cancel', { reason: reason.value }, 'Cancel ' + j.id) }, 'Cancel')),
      h('span', { class: 'group' }, 'priority ', prio, h('button', { 'data-action': 'priority', disabled: ro,
        onclick: () => {
          const p = Number(prio.value);
          if (!Number.isInteger(p) || p < 0) { flash('a priority is a whole number, 0 or more', true); return; }
          act(base + '/priority', { priority: p }, 'Priority ' + p).then(o => { if (o) delete typed['prio:' + r.queue + ':' + j.id]; });
        } }, 'Set')),
    ];
    const parts = [
      h('h1', {}, 'Job ', h('span', { id: 'job-id' }, j.id), ' ', h('span', { id: 'job-state', class: 'badge ' + (j.state || '') }, j.state || 'unknown')),
      h('p', {}, h('a', { href: queueHref(r.queue, j.state || 'waiting') }, '← ' + r.queue)),
      h('div', { class: 'actions' }, jobButtons(r.queue, j, d.read_only), more),
      j.options && j.options.description ? h('p', { class: 'description', id: 'job-description' }, j.options.description) : null,
      j.cancelled ? h('p', { class: 'failure', id: 'cancel-requested' }, 'cancel requested: ' + j.cancelled) : null,
      h('dl', { class: 'fields' },
        field('Name', j.name), field('State', j.state || '-'),
        field('Attempts', j.attempts_made + ' of ' + j.attempts), field('Stalls', String(j.stalls)),
        field('Priority', String(j.priority)), field('Dedup key', j.dedup || '-'), field('Parent', parent),
        field('Created', stamp(j.created_ms, now)), field('Last started', stamp(j.processed_ms, now)),
        field('Finished', stamp(j.finished_ms, now)),
        field('Progress', j.progress === null || j.progress === undefined ? '-' : JSON.stringify(j.progress))),
    ];
    if (j.failure) {
      parts.push(h('h2', {}, 'Failure'), h('div', { class: 'failure', id: 'failure' },
        h('div', { class: 'reason', id: 'failure-reason' }, '[' + j.failure.code + '] ' + j.failure.message),
        j.failure.stack ? h('pre', { id: 'failure-stack' }, j.failure.stack) : h('p', { class: 'muted' }, 'no stack')));
    }
    if (j.result !== null && j.result !== undefined) parts.push(h('h2', {}, 'Result'), h('pre', { id: 'result' }, json(j.result)));
    if (j.unreadable) parts.push(h('p', { class: 'error', id: 'unreadable' }, '[' + j.unreadable.code + '] ' + j.unreadable.message));
    parts.push(h('h2', {}, 'Data'), h('pre', { id: 'data' }, json(j.data)));
    parts.push(h('h2', {}, 'Options'), h('pre', { id: 'options' }, json(j.options)));
    parts.push(h('h2', {}, 'Logs (' + d.logs.length + ')'), d.logs.length ? h('pre', { id: 'logs' }, d.logs.join('\n')) : h('p', { class: 'muted' }, 'no log lines'));
    parts.push(flowView(d.flow, r));
    parts.push(timelineView(d.timeline, now));
    return h('section', {}, parts);
  },

  async schedulers() {
    const d = await api('/api/schedulers');
    setDatastore(d);
    const ro = d.read_only ? 'disabled' : null;
    const rows = d.schedulers.map(x => h('tr', { 'data-scheduler': x.queue + '/' + x.id },
      h('td', {}, h('a', { href: queueHref(x.queue, 'waiting') }, x.queue)),
      h('td', {}, x.id), h('td', {}, x.name),
      h('td', {}, x.cron ? h('span', {}, h('code', {}, x.cron), ' ', h('span', { class: 'muted' }, x.tz)) : 'every ' + dur(x.every_ms)),
      h('td', { class: 'num' }, x.count + (x.limit ? ' of ' + x.limit : '')),
      h('td', {}, x.end_ms ? iso(x.end_ms) : 'never'),
      h('td', { class: 'runs' }, x.next_runs_ms.length ? h('ol', {}, x.next_runs_ms.map(ms =>
        h('li', {}, x.tz && x.tz !== 'UTC' ? [h('span', { 'data-local': x.tz }, inZone(ms, x.tz)), h('span', { class: 'muted' }, ' = ' + iso(ms))] : iso(ms)))) : h('span', { class: 'muted' }, 'none due')),
      h('td', {}, h('button', { 'data-edit': x.queue + '/' + x.id, disabled: ro, onclick: () => editScheduler(x.queue, x.id) }, 'Edit'), ' ',
        h('button', { class: 'danger', 'data-remove': x.queue + '/' + x.id, disabled: ro,
          onclick: () => confirm('Remove scheduler ' + x.id + ' of ' + x.queue + '?') && act('/api/queues/' + enc(x.queue) + '/schedulers/' + enc(x.id) + '/remove', {}, 'Remove scheduler ' + x.id) }, 'Remove'))));
    return h('section', {}, h('h1', {}, 'Schedulers'),
      h('table', { id: 'schedulers' }, h('thead', {}, h('tr', {}, ['Queue', 'Id', 'Job name', 'Repeat', 'Runs', 'Ends', 'Next runs (its zone = UTC)', '']
        .map(t => h('th', {}, t)))), h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: 8, class: 'muted' }, 'No schedulers.')))),
      schedulerForm(ro, d.now_ms));
  },

  async workers() {
    const d = await api('/api/workers');
    setDatastore(d);
    const rows = d.workers.map(w => h('tr', {},
      h('td', {}, w.id), h('td', {}, h('a', { href: queueHref(w.queue, 'active') }, w.queue)), h('td', {}, w.host),
      h('td', { class: 'num' }, String(w.pid)), h('td', {}, w.language), h('td', { class: 'num' }, w.running + '/' + w.concurrency),
      h('td', {}, stamp(w.started_ms, d.now_ms)), h('td', {}, ago(w.beat_ms, d.now_ms)), h('td', {}, w.version)));
    return h('section', {}, h('h1', {}, 'Workers'),
      h('table', { id: 'workers' }, h('thead', {}, h('tr', {}, ['Id', 'Queue', 'Host', 'Pid', 'Language', 'Running', 'Started', 'Last heartbeat', 'Version']
        .map(t => h('th', {}, t)))), h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: 9, class: 'muted' }, 'No live workers.')))));
  },
};

function jobRef(queue, id, state, extra) {
  return h('li', { 'data-flow-job': queue + ':' + id }, h('a', { href: jobHref(queue, id) }, queue + ' / ' + id), ' ',
    h('span', { class: 'badge ' + (state || '') }, state || 'unknown'), extra || null);
}
function flowView(flow, r) {
  if (!flow || (!flow.parent && !flow.children.length)) return h('div', { id: 'flow' }, h('h2', {}, 'Flow'), h('p', { class: 'muted' }, 'not part of a flow'));
  const out = [h('h2', {}, 'Flow')];
  if (flow.parent) out.push(h('p', {}, 'parent:'), h('ul', { id: 'flow-parent' }, jobRef(flow.parent.queue, flow.parent.id, flow.parent.state)));
  if (flow.children.length) {
    out.push(h('p', {}, 'children (' + flow.children_total + (flow.children_total > flow.children.length ? ', first ' + flow.children.length + ' shown' : '') + '):'),
      h('ul', { id: 'flow-children' }, flow.children.map(c => jobRef(c.queue, c.id, c.state,
        h('span', { class: 'muted' }, ' · ' + c.status + (c.value !== null && c.value !== undefined ? ': ' + JSON.stringify(c.value).slice(0, 120) : ''))))));
  }
  return h('div', { id: 'flow' }, out);
}
function timelineView(t, now) {
  const rows = [];
  const point = (ms, kind, what) => rows.push({ ms, kind, what, record: true });
  if (t.created_ms) point(t.created_ms, 'created', 'record: created_ms');
  for (const e of t.events) rows.push({ ms: e.at_ms, kind: e.kind, what: Object.entries(e.fields).map(([k, v]) => k + '=' + v).join(' '), id: e.stream_id });
  rows.sort((a, b) => a.ms - b.ms || (a.record ? -1 : 1));
  const table = h('table', { id: 'timeline' }, h('thead', {}, h('tr', {}, h('th', {}, 'Server time (UTC)'), h('th', {}, 'Event'), h('th', {}, 'Details'))),
    h('tbody', {}, rows.map(x => h('tr', { 'data-event': x.kind },
      h('td', {}, iso(x.ms) + ' (' + ago(x.ms, now) + ')'), h('td', {}, h('span', { class: 'badge ' + x.kind }, x.kind)),
      h('td', { class: 'details' }, x.what)))));
  return h('div', {}, h('h2', {}, 'Timeline'),
    h('p', { class: 'muted' }, t.whole_stream ? 'from the events stream since its creation (as far as the stream\'s cap kept it), at the server\'s times'
      : 'from the newest ' + t.scanned + ' entries of the events stream since its creation (older ones were not read), at the server\'s times'),
    table);
}

function jobButtons(queue, j, readOnly) {
  const base = '/api/queues/' + enc(queue) + '/jobs/' + enc(j.id);
  const out = [];
  if (j.state === 'failed') out.push(h('button', { 'data-action': 'retry', disabled: readOnly ? 'disabled' : null, onclick: () => act(base + '/retry', {}, 'Retry ' + j.id) }, 'Retry'));
  if (j.state === 'delayed') out.push(h('button', { 'data-action': 'promote', disabled: readOnly ? 'disabled' : null, onclick: () => act(base + '/promote', {}, 'Promote ' + j.id) }, 'Promote'));
  if (j.state !== 'active') out.push(h('button', { class: 'danger', 'data-action': 'remove', disabled: readOnly ? 'disabled' : null, onclick: () => confirm('Remove job ' + j.id + '?') && act(base + '/remove', {}, 'Remove ' + j.id) }, 'Remove'));
  return out;
}

function inZone(ms, tz) {
  try {
    return new Intl.DateTimeFormat('en-CA', { timeZone: tz, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit',
      minute: '2-digit', second: '2-digit', hour12: false, timeZoneName: 'short' }).format(new Date(ms));
  } catch (e) { return iso(ms); }
}
const SCHED_FIELDS = ['queue', 'id', 'name', 'data', 'every_ms', 'cron', 'tz', 'limit', 'end_after_s', 'priority', 'attempts'];
function schedulerForm(ro, nowMs) {
  const f = (k, label, attrs) => h('label', {}, label, keep('sched:' + k, h(k === 'data' ? 'textarea' : 'input', Object.assign({ name: k, id: 'sched-' + k }, attrs || {}))));
  const form = h('form', { id: 'scheduler-form', class: 'form', autocomplete: 'off' },
    h('h2', {}, 'Create or edit a scheduler'),
    h('div', { class: 'grid' },
      f('queue', 'Queue'), f('id', 'Scheduler id'), f('name', 'Job name'),
      f('every_ms', 'Every (ms)', { type: 'number', min: 1 }), f('cron', 'or cron', { placeholder: '0 9 * * MON-FRI' }), f('tz', 'Time zone', { placeholder: 'UTC' }),
      f('limit', 'Limit (runs)', { type: 'number', min: 0 }), f('end_after_s', 'Ends after (s)', { type: 'number', min: 0 }),
      f('priority', 'Priority', { type: 'number', min: 0 }), f('attempts', 'Attempts', { type: 'number', min: 1 }),
      f('data', 'Data (JSON)', { rows: 3, placeholder: '{}' })),
    h('button', { type: 'submit', id: 'sched-save', disabled: ro }, 'Save'), ' ',
    h('button', { type: 'button', onclick: () => { for (const k of SCHED_FIELDS) delete typed['sched:' + k]; refresh('action'); } }, 'Clear'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const v = (k) => (typed['sched:' + k] || '').trim();
    const num = (k) => v(k) === '' ? undefined : Number(v(k));
    const options = {};
    if (num('priority')) options.priority = num('priority');
    if (num('attempts')) options.attempts = num('attempts');
    const body = {
      name: v('name'), data: v('data') || 'null', every_ms: v('cron') ? undefined : num('every_ms'), cron: v('cron') || undefined,
      tz: v('tz') || undefined, limit: num('limit'), end_after_ms: num('end_after_s') ? Math.round(num('end_after_s') * 1000) : undefined,
      options,
    };
    if (!v('queue') || !v('id')) { flash('a scheduler needs a queue and an id', true); return; }
    const out = await act('/api/queues/' + enc(v('queue')) + '/schedulers/' + enc(v('id')) + '/upsert', body, 'Save scheduler ' + v('id'));
    if (out) { for (const k of SCHED_FIELDS) delete typed['sched:' + k]; refresh('action'); }
  });
  return form;
}
async function editScheduler(queue, id) {
  try {
    const d = await api('/api/queues/' + enc(queue) + '/schedulers/' + enc(id));
    const sp = d.spec, o = sp.opts || {};
    const vals = {
      queue, id, name: sp.name || '', data: JSON.stringify(sp.data === undefined ? null : sp.data), every_ms: sp.cron ? '' : String(sp.every_ms || ''),
      cron: sp.cron || '', tz: sp.tz || '', limit: sp.limit ? String(sp.limit) : '', priority: o.priority ? String(o.priority) : '',
      attempts: o.attempts && o.attempts !== 1 ? String(o.attempts) : '',
      end_after_s: sp.end_ms ? String(Math.max(1, Math.round((sp.end_ms - Date.now()) / 1000))) : '',
    };
    for (const k of SCHED_FIELDS) typed['sched:' + k] = vals[k];
    await refresh('action');
    document.getElementById('sched-name').focus();
  } catch (e) { flash('Edit failed: ' + e.message, true); }
}

let readOnlyShown = null;
function setReadOnly(ro) {
  if (ro === readOnlyShown) return;
  readOnlyShown = ro;
  document.body.classList.toggle('read-only', !!ro);
}
function setDatastore(d) {
  document.getElementById('datastore').textContent = d.datastore || '';
  document.getElementById('read-only').hidden = !d.read_only;
  setReadOnly(d.read_only);
}

// ---- live updates ------------------------------------------------------------------------
let pending = null;
let live = false;
function soon() {
  if (pending) return;
  pending = setTimeout(() => { pending = null; refresh('live'); }, 250);
}
function concerns(ev) {
  const r = current;
  if (r.view === 'overview' || r.view === 'workers') return true;
  if (r.view === 'schedulers') return false;
  if (['queue', 'groups', 'batches', 'batch', 'letters', 'metrics'].includes(r.view)) return ev.queue === r.queue;
  if (r.view === 'job') return ev.queue === r.queue && (!ev.job_id || ev.job_id === r.id);
  return false;
}
function connectLive() {
  const badge = document.getElementById('live');
  const es = new EventSource('/api/events');
  es.onopen = () => { badge.className = 'live on'; live = true; };
  es.onerror = () => { badge.className = 'live off'; live = false; };
  es.onmessage = (m) => {
    let ev;
    try { ev = JSON.parse(m.data); } catch (e) { return; }
    if (concerns(ev)) soon();
  };
  es.addEventListener('lagged', soon);
}

window.addEventListener('hashchange', () => { current = route(); refresh('navigate'); });
document.addEventListener('DOMContentLoaded', () => {
  document.getElementById('find').addEventListener('submit', (e) => {
    e.preventDefault();
    const q = document.getElementById('find-queue').value.trim();
    const id = document.getElementById('find-id').value.trim();
    if (q && id) location.hash = jobHref(q, id);
    else if (q) location.hash = queueHref(q, 'waiting');
  });
  refresh('load');
  connectLive();
  // What moves without events (workers' heartbeats, ages): a slow re-read, faster while the
  // events stream is down.
  let last = Date.now();
  setInterval(() => {
    const every = live ? 15000 : 5000;
    if (Date.now() - last >= every) { last = Date.now(); refresh('poll'); }
  }, 1000);
});
