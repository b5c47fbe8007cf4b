// emq ui: a queue's pages beyond its jobs — its fair groups, its batches (one batch with its
// failed jobs) and the dead letters it holds, with their actions. Loaded after app.js, whose
// helpers (h, api, act, keep, dur, ago, iso, …) and VIEWS it uses; every datastore value goes on
// the page as text.
'use strict';

const BATCH_PAGE = 25;

function batchesHref(q, offset) { return '#/q/' + enc(q) + '/batches' + (offset ? '?offset=' + offset : ''); }
function batchHref(q, id, offset) { return '#/q/' + enc(q) + '/batches/' + enc(id) + (offset ? '?offset=' + offset : ''); }
function lettersHref(q) { return '#/q/' + enc(q) + '/dead-letters'; }

// The heading every queue page shares: its name, paused or not, its oldest waiting job and workers.
function queueHeading(q, s) {
  return [h('h1', {}, 'Queue ', h('span', { id: 'queue-name' }, q), ' ', s && s.paused ? h('span', { class: 'badge paused' }, 'paused') : null),
    s ? h('p', { class: 'muted' }, 'oldest waiting: ' + dur(s.oldest_waiting_age_ms) + ' · workers: ' + s.workers) : null];
}

// A batch's progress: completed (green), failed (red) and pending (grey) as shares of one bar.
function progressBar(b) {
  const total = Math.max(1, b.total);
  // A width through the CSSOM (the page's CSP refuses style attributes).
  const part = (n, cls) => {
    if (!n) return null;
    const seg = h('span', { class: 'seg ' + cls });
    seg.style.width = (100 * n / total).toFixed(2) + '%';
    return seg;
  };
  const doneShare = b.total ? Math.floor(100 * (b.completed + b.failed) / b.total) : 0;
  return h('div', { class: 'progress', role: 'img', 'data-done': b.completed + b.failed, 'data-total': b.total,
    'aria-label': (b.completed + b.failed) + ' of ' + b.total + ' done, ' + b.failed + ' failed' },
    h('div', { class: 'bar' }, part(b.completed, 'c'), part(b.failed, 'f'), part(b.pending, 'p')),
    h('span', { class: 'count' }, (b.completed + b.failed) + '/' + b.total + ' done' + (b.failed ? ' · ' + b.failed + ' failed' : '') + ' (' + doneShare + '%)'));
}
function batchBadge(state) {
  const cls = { done: 'ok', cancelled: 'bad', running: 'active', open: '' }[state] || '';
  return h('span', { class: 'badge ' + cls, 'data-state': state }, state);
}
function cancelBatch(q, b, ro) {
  if (b.done || b.cancelled) return null;
  return h('button', { class: 'danger', 'data-batch-action': 'cancel', disabled: ro,
    onclick: () => { if (confirm('Cancel batch ' + b.id + '? Its jobs without an outcome are cancelled.')) act('/api/queues/' + enc(q) + '/batches/' + enc(b.id) + '/cancel', {}, 'Cancel batch ' + b.id); } }, 'Cancel');
}

// A queue's fair groups: the backlog, running jobs, weight and caps of each, sorted on the server
// (by backlog unless a column header says otherwise); Pause/Resume and a weight per group.
VIEWS.groups = async function groups(r) {
  const base = '/api/queues/' + enc(r.queue);
  const d = await api(base + '/groups?sort=' + enc(r.sort) + '&offset=' + r.offset + '&limit=' + GROUP_PAGE);
  setDatastore(d);
  const s = d.summary, ro = d.read_only ? 'disabled' : null;
  const col = (key, label, num) => h('th', { class: num ? 'num sortable' : 'sortable', 'data-sort': key, 'aria-sort': d.sort === key ? (key === 'name' ? 'ascending' : 'descending') : null },
    h('a', { href: groupsHref(r.queue, key), class: d.sort === key ? 'sorted' : '' }, label + (d.sort === key ? (key === 'name' ? ' ▲' : ' ▼') : '')));
  const cap = (v) => v === null || v === undefined ? h('span', { class: 'muted' }, 'none') : String(v);
  const rows = d.groups.map(g => {
    const key = 'gweight:' + r.queue + ':' + g.name;
    const weight = keep(key, h('input', { id: 'group-weight:' + g.name, class: 'weight', type: 'number', min: 1, max: 1000, step: 1,
      'aria-label': 'new weight of ' + g.name, value: g.weight }));
    const setWeight = () => {
      const w = Number(weight.value);
      // Its bounds (1 to 1000) are the core's to check and say.
      if (weight.value.trim() === '' || !Number.isInteger(w)) { flash('a weight is a whole number', true); return; }
      act(base + '/groups/weight', { group: g.name, weight: w }, 'Weight ' + w + ' for ' + g.name).then(o => { if (o) delete typed[key]; });
    };
    return h('tr', { 'data-group': g.name, 'data-paused': g.paused ? 'yes' : 'no' },
      h('td', {}, g.name),
      h('td', { class: 'num', 'data-col': 'waiting' }, String(g.waiting)),
      h('td', { class: 'num', 'data-col': 'running' }, String(g.running)),
      h('td', { class: 'num', 'data-col': 'weight' }, String(g.weight)),
      h('td', { class: 'num', 'data-col': 'concurrency' }, cap(g.concurrency)),
      h('td', { class: 'num', 'data-col': 'max_waiting' }, cap(g.max_waiting)),
      h('td', { 'data-col': 'state' }, h('span', { class: 'badge ' + (g.paused ? 'paused' : 'ok') }, g.paused ? 'paused' : 'serving')),
      h('td', { class: 'group-actions' },
        g.paused
          ? h('button', { 'data-group-action': 'resume', disabled: ro, onclick: () => act(base + '/groups/resume', { group: g.name }, 'Resume ' + g.name) }, 'Resume')
          : h('button', { 'data-group-action': 'pause', disabled: ro, onclick: () => act(base + '/groups/pause', { group: g.name }, 'Pause ' + g.name) }, 'Pause'),
        h('span', { class: 'group' }, 'weight ', weight, h('button', { 'data-group-action': 'weight', disabled: ro, onclick: setWeight }, 'Set'))));
  });
  const total = d.total === null || d.total === undefined ? null : d.total;
  const shown = d.groups.length;
  const more = total === null ? shown === d.limit : r.offset + shown < total;
  const pager = h('div', { class: 'pager', id: 'groups-pager' },
    h('a', { href: r.offset > 0 ? groupsHref(r.queue, d.sort, Math.max(0, r.offset - GROUP_PAGE)) : null }, '← previous'),
    h('span', { class: 'muted' }, shown ? (r.offset + 1) + '–' + (r.offset + shown) + (total !== null ? ' of ' + total : '') : 'none'),
    h('a', { href: more ? groupsHref(r.queue, d.sort, r.offset + GROUP_PAGE) : null }, 'next →'));
  const order = { waiting: 'by backlog, most waiting first', running: 'by running jobs, most first', name: 'by name' }[d.sort];
  return h('section', {},
    h('h1', {}, 'Queue ', h('span', { id: 'queue-name' }, r.queue), ' ', s.paused ? h('span', { class: 'badge paused' }, 'paused') : null),
    h('p', { class: 'muted' }, 'oldest waiting: ' + dur(s.oldest_waiting_age_ms) + ' · workers: ' + s.workers),
    queueViews(r.queue, 'groups'),
    h('p', { class: 'muted', id: 'groups-note' }, (total !== null ? total + ' group' + (total === 1 ? '' : 's') : 'groups') + ', sorted ' + order
      + (d.truncated ? ' (only the first groups by name were read)' : '')
      + '. Each claim serves the groups in turn by weight; concurrency and max waiting are the group\'s own cap, else the queue\'s default.'),
    h('table', { id: 'groups' },
      h('thead', {}, h('tr', {}, col('name', 'Group'), col('waiting', 'Waiting', true), col('running', 'Running', true),
        h('th', { class: 'num' }, 'Weight'), h('th', { class: 'num' }, 'Concurrency'), h('th', { class: 'num' }, 'Max waiting'),
        h('th', {}, 'State'), h('th', {}, ''))),
      h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: 8, class: 'muted' },
        r.offset ? 'No groups past ' + r.offset + '.' : 'No groups: a job joins one with the group option (emq add ' + r.queue + ' NAME --group G).')))),
    pager);
};

// A queue's batches, newest first: when each was made, its description, its progress and state.
VIEWS.batches = async function batches(r) {
  const d = await api('/api/queues/' + enc(r.queue) + '/batches?offset=' + r.offset + '&limit=' + BATCH_PAGE);
  setDatastore(d);
  const ro = d.read_only ? 'disabled' : null;
  const rows = d.batches.map(b => h('tr', { 'data-batch': b.id, 'data-state': b.state },
    h('td', {}, h('a', { href: batchHref(r.queue, b.id) }, b.id)),
    h('td', { title: iso(b.created_ms) }, ago(b.created_ms, d.now_ms)),
    h('td', {}, b.description || h('span', { class: 'muted' }, '-')),
    h('td', { class: 'progress-cell' }, progressBar(b)),
    h('td', {}, batchBadge(b.state)),
    h('td', {}, cancelBatch(r.queue, b, ro))));
  const shown = d.batches.length;
  const pager = h('div', { class: 'pager', id: 'batches-pager' },
    h('a', { href: r.offset > 0 ? batchesHref(r.queue, Math.max(0, r.offset - BATCH_PAGE)) : null }, '← previous'),
    h('span', { class: 'muted' }, shown ? (r.offset + 1) + '–' + (r.offset + shown) + ' of ' + d.total : 'none'),
    h('a', { href: r.offset + shown < d.total ? batchesHref(r.queue, r.offset + BATCH_PAGE) : null }, 'next →'));
  return h('section', {}, queueHeading(r.queue, d.summary), queueViews(r.queue, 'batches'),
    h('p', { class: 'muted', id: 'batches-note' }, d.total + ' batch' + (d.total === 1 ? '' : 'es') + ' made on this queue, newest first. '
      + 'A batch is open until its creator seals it, then running until every job has its outcome; its callbacks run once then.'),
    h('table', { id: 'batches' },
      h('thead', {}, h('tr', {}, ['Id', 'Created', 'Description', 'Progress', 'State', ''].map(t => h('th', {}, t)))),
      h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: 6, class: 'muted' },
        r.offset ? 'No batches past ' + r.offset + '.' : 'No batches: one is made with queue.batch(…) in any language.')))),
    pager);
};

// One batch: its counts and flags, its progress, and a page of its failed jobs (links to each).
VIEWS.batch = async function batch(r) {
  const d = await api('/api/queues/' + enc(r.queue) + '/batches/' + enc(r.id) + '?offset=' + r.offset);
  setDatastore(d);
  const ro = d.read_only ? 'disabled' : null;
  const field = (k, v) => [h('dt', {}, k), h('dd', { 'data-field': k }, v)];
  const rows = d.failed_jobs.map(j => h('tr', { 'data-failed': j.id },
    h('td', {}, h('a', { href: queueHref(j.queue, 'failed') }, j.queue)), h('td', {}, h('a', { href: jobHref(j.queue, j.id) }, j.id))));
  const page = 50, shown = d.failed_jobs.length;
  return h('section', {},
    h('h1', {}, 'Batch ', h('span', { id: 'batch-id' }, d.id), ' ', batchBadge(d.state)),
    h('p', {}, h('a', { href: batchesHref(r.queue) }, '← the batches of ' + r.queue)),
    h('div', { class: 'actions' }, cancelBatch(r.queue, d, ro)),
    h('dl', { class: 'fields', id: 'batch-fields' },
      field('description', d.description || '-'), field('jobs', String(d.total)), field('pending', String(d.pending)),
      field('completed', String(d.completed)), field('failed', String(d.failed)),
      field('sealed', d.sealed ? 'yes' : 'no (its creator may still add jobs)'), field('progress', progressBar(d))),
    h('h2', {}, 'Failed jobs (' + d.failed + ')'),
    rows.length ? h('table', { id: 'batch-failed' }, h('thead', {}, h('tr', {}, h('th', {}, 'Queue'), h('th', {}, 'Job'))), h('tbody', {}, rows))
      : h('p', { class: 'muted' }, r.offset ? 'No failed jobs past ' + r.offset + '.' : 'No job of this batch failed.'),
    d.failed > page ? h('div', { class: 'pager' },
      h('a', { href: r.offset > 0 ? batchHref(r.queue, r.id, Math.max(0, r.offset - page)) : null }, '← previous'),
      h('span', { class: 'muted' }, (r.offset + 1) + '–' + (r.offset + shown) + ' of ' + d.failed),
      h('a', { href: r.offset + shown < d.failed ? batchHref(r.queue, r.id, r.offset + page) : null }, 'next →')) : null);
};

// The dead letters a queue holds (jobs that failed for good elsewhere), with where they came from
// and why; replay some (selected) or all back to their queues, attempts reset.
const lettersSelected = new Set();
VIEWS.letters = async function letters(r) {
  const base = '/api/queues/' + enc(r.queue) + '/dead-letters';
  const d = await api(base);
  setDatastore(d);
  const ro = d.read_only ? 'disabled' : null;
  const ids = new Set(d.jobs.map(j => j.id));
  for (const k of [...lettersSelected]) if (k.startsWith(r.queue + '/') && !ids.has(k.slice(r.queue.length + 1))) lettersSelected.delete(k);
  const key = (id) => r.queue + '/' + id;
  const rows = d.jobs.map(j => {
    const o = j.origin || {};
    const f = o.failure || {};
    const box = h('input', { type: 'checkbox', 'aria-label': 'select ' + j.id, 'data-letter-select': j.id });
    box.checked = lettersSelected.has(key(j.id));
    box.addEventListener('change', () => { if (box.checked) lettersSelected.add(key(j.id)); else lettersSelected.delete(key(j.id)); });
    return h('tr', { 'data-letter': j.id },
      h('td', {}, box),
      h('td', {}, h('a', { href: jobHref(r.queue, j.id) }, j.id)),
      h('td', {}, j.name),
      h('td', {}, o.queue ? h('a', { href: queueHref(o.queue, 'waiting') }, o.queue) : '-', o.id ? h('div', { class: 'muted' }, o.id) : null),
      h('td', { class: 'num' }, String(o.attempts_made === undefined ? '-' : o.attempts_made)),
      h('td', { title: iso(o.failed_ms) }, o.failed_ms ? ago(o.failed_ms, d.now_ms) : '-'),
      h('td', { class: 'reason' }, f.code ? '[' + f.code + '] ' + (f.message || '') : '-'),
      h('td', {}, h('span', { class: 'badge ' + (j.state || '') }, j.state || '-')));
  });
  const mine = () => [...lettersSelected].filter(k => k.startsWith(r.queue + '/')).map(k => k.slice(r.queue.length + 1));
  const replay = (body, what) => act(base + '/replay', body, what).then(o => {
    if (o) { for (const k of [...lettersSelected]) if (k.startsWith(r.queue + '/')) lettersSelected.delete(k); flash('replayed ' + o.replayed.length); }
  });
  return h('section', {}, queueHeading(r.queue, null), queueViews(r.queue, 'letters'),
    h('p', { class: 'muted', id: 'letters-note' },
      d.dead_letter ? ['Jobs of this queue that fail for good move to ', h('a', { href: lettersHref(d.dead_letter) }, d.dead_letter), '. ']
        : 'This queue has no dead-letter queue of its own (emq dlq set ' + r.queue + ' DLQ). ',
      d.jobs.length + ' dead-lettered job' + (d.jobs.length === 1 ? '' : 's') + ' held here' + (d.jobs.length >= d.limit ? ' (the first ' + d.limit + ')' : '')
        + '. A replay adds each back to its queue under its own id, attempts from zero.'),
    h('div', { class: 'actions' },
      h('button', { id: 'replay-selected', disabled: ro, onclick: () => { const s = mine(); if (!s.length) { flash('select the jobs to replay first', true); return; } replay({ ids: s }, 'Replay ' + s.length); } }, 'Replay selected'),
      h('button', { id: 'replay-all', disabled: ro || !d.jobs.length ? 'disabled' : null, onclick: () => { if (confirm('Replay every dead letter of ' + r.queue + ' that is not running?')) replay({ all: true }, 'Replay all'); } }, 'Replay all')),
    h('table', { id: 'letters' },
      h('thead', {}, h('tr', {}, ['', 'Id', 'Name', 'From', 'Attempts', 'Failed', 'Failure', 'State'].map(t => h('th', { class: t === 'Attempts' ? 'num' : null }, t)))),
      h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: 8, class: 'muted' }, 'No dead letters here.')))));
};

// ---- Metrics: a queue's last hour and last day -------------------------------------------
function metricsHref(q, range) { return '#/q/' + enc(q) + '/metrics' + (range === 'day' ? '?range=day' : ''); }

const CHART_W = 640, CHART_H = 150, CHART_PAD = 44;

// An SVG frame of `n` columns (minutes or hours: `unit`) ending at the current one, with y ticks
// from `ticks` ([value, label]) placed by `y(value)`.
function frame(n, unit, ticks, y, id, what) {
  const svg = s('svg', { class: 'chart big', id, width: CHART_W, height: CHART_H + 18, viewBox: '0 0 ' + CHART_W + ' ' + (CHART_H + 18), role: 'img', 'aria-label': what });
  for (const [v, label] of ticks) {
    const yy = y(v);
    svg.appendChild(s('line', { x1: CHART_PAD, x2: CHART_W, y1: yy, y2: yy, stroke: '#e1e5ec' }));
    const t = s('text', { x: CHART_PAD - 4, y: yy + 4, 'text-anchor': 'end', 'font-size': 10, fill: '#6b7385' });
    t.textContent = label;
    svg.appendChild(t);
  }
  for (const [i, label] of [[0, '-' + n + ' ' + unit], [n / 2, '-' + n / 2 + ' ' + unit], [n, 'now']]) {
    const t = s('text', { x: CHART_PAD + (CHART_W - CHART_PAD) * i / n, y: CHART_H + 14, 'text-anchor': i === 0 ? 'start' : i === n ? 'end' : 'middle', 'font-size': 10, fill: '#6b7385' });
    t.textContent = label;
    svg.appendChild(t);
  }
  return svg;
}

// A chart's columns: `n` slots (minutes or hours since the epoch) ending at `now`.
function slots(now, n, unit, attr) { return { now, n, unit, attr, first: now - n + 1, bw: (CHART_W - CHART_PAD) / n }; }

// Completed (green) and failed (red) jobs per slot, stacked bars.
function outcomesChart(completed, failed, sl, id, what) {
  const c = new Map(completed), f = new Map(failed);
  let max = 1;
  for (let i = 0; i < sl.n; i++) { const m = sl.first + i; max = Math.max(max, (c.get(m) || 0) + (f.get(m) || 0)); }
  const y = (v) => CHART_H - (v / max) * (CHART_H - 6);
  const svg = frame(sl.n, sl.unit, [[0, '0'], [max / 2, String(Math.round(max / 2))], [max, String(max)]], y, id, what);
  for (let i = 0; i < sl.n; i++) {
    const m = sl.first + i, cv = c.get(m) || 0, fv = f.get(m) || 0, x = CHART_PAD + i * sl.bw;
    if (cv) svg.appendChild(s('rect', { x, y: y(cv), width: Math.max(sl.bw - 1, 1), height: CHART_H - y(cv), fill: '#1f9d55', [sl.attr]: m, 'data-n': cv }));
    if (fv) svg.appendChild(s('rect', { x, y: y(cv + fv), width: Math.max(sl.bw - 1, 1), height: y(cv) - y(cv + fv), fill: '#d64545', 'data-failed': m }));
  }
  return svg;
}

// p50 / p95 / p99 per slot on a log scale (1 ms to 5 min): a dot per slot with data, joined.
// `series`: [slot, {p50, p95, p99}].
function quantilesChart(series, sl, id, what) {
  const lo = Math.log10(1), hi = Math.log10(300000);
  const y = (ms) => CHART_H - ((Math.log10(Math.max(ms, 1)) - lo) / (hi - lo)) * (CHART_H - 6);
  const svg = frame(sl.n, sl.unit, [[1, '1 ms'], [10, '10 ms'], [100, '100 ms'], [1000, '1 s'], [10000, '10 s'], [100000, '100 s']], y, id, what);
  for (const [key, color] of [['p50', '#1f9d55'], ['p95', '#c77c02'], ['p99', '#d64545']]) {
    const pts = series.filter(([m, p]) => p[key] !== null && m >= sl.first)
      .map(([m, p]) => [CHART_PAD + (m - sl.first) * sl.bw + sl.bw / 2, y(p[key])]);
    if (pts.length > 1) svg.appendChild(s('polyline', { points: pts.map(p => p.join(',')).join(' '), fill: 'none', stroke: color, 'stroke-width': 1.5 }));
    for (const [x, yy] of pts) svg.appendChild(s('circle', { cx: x, cy: yy, r: 2.2, fill: color, 'data-q': key }));
  }
  return svg;
}

// Jobs waiting to run (waiting, paused, prioritized, ready in groups) per slot: a line through
// the samples the workers took (the largest of each hour in the day view).
function backlogChart(points, sl, id, what) {
  const pts = points.filter(([m, v]) => m >= sl.first && v !== null);
  const max = Math.max(1, ...pts.map(([, v]) => v));
  const y = (v) => CHART_H - (v / max) * (CHART_H - 6);
  const svg = frame(sl.n, sl.unit, [[0, '0'], [max / 2, String(Math.round(max / 2))], [max, String(max)]], y, id, what);
  const xy = pts.map(([m, v]) => [CHART_PAD + (m - sl.first) * sl.bw + sl.bw / 2, y(v)]);
  if (xy.length > 1) svg.appendChild(s('polyline', { points: xy.map(p => p.join(',')).join(' '), fill: 'none', stroke: '#3467c4', 'stroke-width': 1.5 }));
  pts.forEach(([m, v], i) => svg.appendChild(s('circle', { cx: xy[i][0], cy: xy[i][1], r: 2.2, fill: '#3467c4', [sl.attr]: m, 'data-backlog': v })));
  return svg;
}

function msText(ms) { return ms === null || ms === undefined ? '-' : ms < 1000 ? '≤ ' + ms + ' ms' : '≤ ' + dur(ms); }

// A queue's last hour (per minute) or last day (per hour): jobs completed and failed, its run and
// wait times (p50 / p95 / p99, each the upper bound of its histogram bucket) and its backlog.
VIEWS.metrics = async function metrics(r) {
  const d = await api('/api/queues/' + enc(r.queue) + '/metrics');
  setDatastore(d);
  const day = r.range === 'day';
  const nowMin = Math.floor(d.now_ms / 60000);
  const sl = day ? slots(Math.floor(nowMin / 60), d.day_hours - 1, 'h', 'data-hour') : slots(nowMin, d.window_minutes, 'min', 'data-minute');
  const per = day ? 'hour' : 'minute';
  const completed = day ? d.hours.map(x => [x.hour, x.completed]) : d.completed_per_minute;
  const failed = day ? d.hours.map(x => [x.hour, x.failed]) : d.failed_per_minute;
  const runs = day ? d.hours.filter(x => x.run.count).map(x => [x.hour, x.run]) : d.run_per_minute.map(x => [x.minute, x]);
  const waits = day ? d.hours.filter(x => x.wait.count).map(x => [x.hour, x.wait]) : d.wait_per_minute.map(x => [x.minute, x]);
  const backlog = day ? d.hours.map(x => [x.hour, x.backlog_max]) : d.backlog_per_minute;
  const legend = h('div', { class: 'legend' }, h('span', { class: 'c' }, '● p50'), ' ', h('span', { class: 'w' }, '● p95'), ' ', h('span', { class: 'f' }, '● p99'));
  const row = (label, x) => h('tr', { 'data-latency': label }, h('td', {}, label), h('td', { class: 'num' }, String(x.count)),
    h('td', { class: 'num' }, msText(x.p50)), h('td', { class: 'num' }, msText(x.p95)), h('td', { class: 'num' }, msText(x.p99)),
    h('td', { class: 'num' }, x.mean_ms === null ? '-' : x.mean_ms.toFixed(1) + ' ms'));
  const range = h('div', { class: 'tabs', id: 'metrics-range' },
    h('a', { href: metricsHref(r.queue), class: day ? '' : 'current', 'data-range': 'hour' }, 'Last hour'),
    h('a', { href: metricsHref(r.queue, 'day'), class: day ? 'current' : '', 'data-range': 'day' }, 'Last day'));
  return h('section', {}, queueHeading(r.queue, d.summary), queueViews(r.queue, 'metrics'), range,
    h('p', { class: 'muted', id: 'metrics-note' }, (day ? 'The last ' + (d.day_hours - 1) + ' hours, per hour,' : 'The last ' + d.window_minutes + ' minutes, per minute,')
      + ' on the datastore\'s clock. Times are histogram buckets ('
      + d.buckets_ms.length + ' bounds from 1 ms to 5 min, counted by the workers per completed run): a quantile reads as its bucket\'s upper bound. '
      + 'Wait: from the add (or the end of its delay) to the claim of its first run; run: the handler\'s run. '
      + 'Backlog: jobs waiting to run, sampled by the queue\'s workers every few seconds' + (day ? ' (the largest sample of each hour).' : ' (the last sample of each minute).')),
    h('h2', {}, 'Jobs per ' + per), outcomesChart(completed, failed, sl, 'chart-outcomes', 'jobs completed and failed per ' + per),
    h('h2', {}, 'Backlog'), backlogChart(backlog, sl, 'chart-backlog', 'jobs waiting to run per ' + per),
    h('h2', {}, 'Run time'), quantilesChart(runs, sl, 'chart-run', 'run time p50, p95, p99 per ' + per), legend,
    h('h2', {}, 'Wait time'), quantilesChart(waits, sl, 'chart-wait', 'wait time p50, p95, p99 per ' + per), legend.cloneNode(true),
    h('h2', {}, 'Since the queue began'),
    h('table', { id: 'latency' }, h('thead', {}, h('tr', {}, ['', 'Count', 'p50', 'p95', 'p99', 'Mean'].map(t => h('th', { class: t ? 'num' : null }, t)))),
      h('tbody', {}, row('run', d.run), row('wait', d.wait))));
};
