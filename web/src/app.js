// perfscope dashboard, the entry module: builds the views (views/), pre-fills their charts from
// the REST history, then feeds them the passes /api/v1/stream pushes. No build step and no
// CDN: the server embeds and serves these modules. `window.perfscope` exposes the charts and
// the shared state to the browser tests.
import { LiveChart, plots } from './lib/live_chart.js';
import { TimeRange } from './lib/time_range.js';
import { initViews } from './lib/views.js';
import { initTheme } from './lib/theme.js';
import { canonical } from './lib/format.js';
import { auth, fetchJson } from './lib/api.js';
import { connectStream } from './lib/stream.js';
import { hostCharts, markStaleStats, showStat } from './views/host.js';
import { createGpuView } from './views/gpus.js';
import { createEventsView } from './views/events.js';
import { createAnalysisView } from './views/analysis.js';
import { createRunsView } from './views/runs.js';
import { createProcessesView } from './views/processes.js';
import { createModelDetail } from './views/model_detail.js';
import { createTimelineView } from './views/timeline.js';
import { createAlertsView } from './views/alerts.js';
import { createSummary } from './views/summary.js';
import { wireExports } from './views/exports.js';

initTheme(document.getElementById('theme'));
const state = { connection: 'connecting', messages: 0, dropped: 0, attempts: 0, reconnects: 0, ws: null };
// The time range of every chart, from the URL (?range=1h, or ?from=&to= in ms for a picked span).
const range = new TimeRange();
LiveChart.range = range;
LiveChart.onZoom = (from, to) => range.setFixed(from, to);
const charts = hostCharts();
const gpus = createGpuView({ refill: () => prefill().catch(() => {}) });
Object.assign(charts, gpus.charts);
// Families the stream and the history fill (the allocation chart is fed by the events view).
const families = [...new Set(Object.values(charts).flatMap((c) => c.families).concat(gpus.families))];
// `runs` is made below; the summary opens a run's page through it once it exists.
const summary = createSummary({
  gpus: () => gpus.view.latest,
  openRun: (name) => { views.show('runs'); runs.showRun(name, { reveal: true }); },
});
const analysis = createAnalysisView({ state, charts, onAnalysis: (a) => summary.collectives(a.collectives) });
// The header's run picker: every run the server lists, the URL's kept even before it is.
const runPick = document.getElementById('run-pick');
function fillRunPicker(list) {
  const have = new Set([...runPick.options].map((o) => o.value));
  for (const r of list) {
    if (have.has(r.name)) continue;
    const o = new Option(r.name, r.name);
    if (r.start_ns) o.title = `${r.status}, started ${new Date(r.start_ns / 1e6).toLocaleString()}`;
    runPick.add(o);
  }
  runPick.value = range.run || '';
}
if (range.run) fillRunPicker([{ name: range.run, status: '', start_ns: 0 }]);
runPick.addEventListener('change', () => {
  const r = (state.runs || []).find((x) => x.name === runPick.value);
  range.setRun(r || null);
});
const runs = createRunsView({
  state, onRuns: fillRunPicker, showView: (view) => views.show(view),
  scopeTo: (run) => { fillRunPicker([run]); runPick.value = run.name; range.setRun(run); },
  openTimeline: (name) => timeline.openRun(name),
});
const processes = createProcessesView({ state, showView: (view) => views.show(view) });
const events = createEventsView({
  state,
  onData: (kernels, models) => { analysis.onEvents(kernels, models); summary.events(kernels, models); runs.refresh(); },
});
charts.alloc = events.charts.alloc;
const modelDetail = createModelDetail({ state });
state.gpu = gpus.view;
// The view in the URL (?view=gpu): its panels shown, the charts among them sized again.
const timeline = createTimelineView({ range });
const alerts = createAlertsView({ state, range });
const views = initViews({
  onShow: (view) => {
    requestAnimationFrame(() => Object.values(charts).forEach((c) => c.resize()));
    timeline.show(view === 'timeline');
    analysis.showView(view);
    alerts.show(view === 'alerts');
  },
});
window.perfscope = { charts, state, range, views, timeline, plots };
// Anomaly marks on the charts, shown or hidden; the choice kept for the next visit.
const marksButton = document.getElementById('marks');
function showMarks(on) {
  LiveChart.showMarks = on;
  marksButton.setAttribute('aria-pressed', String(on));
  marksButton.textContent = on ? '◆ anomalies' : '◇ anomalies';
  marksButton.title = `Anomalies ${on ? 'marked' : 'not marked'} on the charts (red dashed lines): click to ${on ? 'hide' : 'show'} them`;
  for (const c of Object.values(charts)) if (c.plot) c.plot.redraw(false);
}
showMarks(localStorage.getItem('perfscope-marks') !== 'hidden');
marksButton.addEventListener('click', () => {
  showMarks(!LiveChart.showMarks);
  localStorage.setItem('perfscope-marks', LiveChart.showMarks ? 'shown' : 'hidden');
});
// An execution clicked on the timeline: its kernel's page, at the top of the Kernels view.
window.addEventListener('perfscope:open-kernel', (e) => {
  views.show('kernels');
  events.showKernel(e.detail, true);
});
// Back and Forward: the range, the view and the open kernel or model of that entry.
window.addEventListener('popstate', () => {
  range.readUrl();
  views.readUrl();
  events.readUrl();
  modelDetail.readUrl();
  processes.readUrl();
  runs.readUrl();
  state.historyMoves = (state.historyMoves || 0) + 1;
});
window.perfscopeAuth = auth;

// The chart that draws a series, with the series added to it on first sight.
function route(key, name, labels) {
  for (const chart of Object.values(charts)) {
    if (chart.accepts(name)) { chart.ensureSeries(key, name, labels); return chart; }
  }
  return null;
}

async function loadInfo() {
  try {
    const info = await fetchJson('/api/v1/info');
    document.getElementById('host-info').textContent =
      `v${info.version} · sampling every ${info.sampler.interval_ms} ms`;
    const missing = info.collectors.flatMap((c) => c.sources.filter((s) => !s.available).map((s) => `${c.name}/${s.name}`));
    document.getElementById('sources').textContent = missing.length ? 'Not available on this machine: ' + missing.join(', ') : '';
  } catch (e) { /* the stream state shows connectivity; info is decoration */ }
}

// Fills every chart with the time range's history from the REST API (downsampled by the server
// to about 1200 points). Only the newest fill lands: one asked for an earlier range (a drag
// right after the page loaded, on a slow server) must not draw that range's points into the new.
let prefillGeneration = 0;
async function prefill() {
  const generation = ++prefillGeneration;
  const query = range.query({ run: false });
  const results = await Promise.all(families.map((name) =>
    fetchJson(`/api/v1/series/query?name=${encodeURIComponent(name)}&${query}&max_points=1200`)
      .catch(() => ({ series: [] }))));
  if (generation !== prefillGeneration) return;
  const perChart = new Map();
  for (const r of results) {
    for (const s of r.series) {
      const key = canonical(s.name, s.labels);
      const chart = route(key, s.name, s.labels);
      if (!chart) continue;
      const valueCol = s.downsampled ? s.columns.indexOf('avg') : 1;
      const points = s.points.map((p) => [p[0] / 1e9, p[valueCol]]);
      if (!perChart.has(chart)) perChart.set(chart, {});
      perChart.get(chart)[key] = points;
      if (points.length) showStat(key, points[points.length - 1][1], points[points.length - 1][0]);
    }
  }
  for (const [chart, byKey] of perChart) chart.fill(byKey);
  await analysis.markHistory(range.query({ run: false }));  // the range's anomalies on their series
  state.prefills = (state.prefills || 0) + 1;  // the browser tests wait on it
}

function onSamples(msg) {
  const t = msg.ts_ns / 1e9;
  const perChart = new Map();
  for (const s of msg.samples) {
    if (s.name.startsWith('gpu_') && s.labels.gpu !== undefined) gpus.note(s);
    const chart = route(s.series, s.name, s.labels);
    showStat(s.series, s.value, t);
    if (!chart) continue;
    if (!perChart.has(chart)) perChart.set(chart, {});
    perChart.get(chart)[s.series] = s.value;
  }
  for (const [chart, values] of perChart) chart.append(t, values);
  state.messages++;
  state.dropped = msg.dropped;
  document.getElementById('updated').textContent = 'updated ' + new Date(msg.ts_ns / 1e6).toLocaleTimeString();
}

// The range picker in the header, and what a change of range does: every chart refilled.
function showRange() {
  const pick = document.getElementById('range-pick');
  pick.value = range.live ? range.preset : 'fixed';
  runPick.value = range.run || '';
  document.getElementById('range-live').hidden = range.live;
  // Every panel that follows the range says which span it shows.
  for (const el of document.querySelectorAll('.scope-label')) el.textContent = range.label();
  // The report and trace links export that span too.
  for (const a of document.querySelectorAll('a[data-scoped]')) {
    const url = new URL(a.getAttribute('href'), window.location.origin);
    for (const k of ['window', 'from', 'to']) url.searchParams.delete(k);
    for (const [k, v] of new URLSearchParams(range.query())) url.searchParams.set(k, v);
    a.setAttribute('href', url.pathname + url.search);
  }
  state.rangeChanges = (state.rangeChanges || 0) + 1;
}
document.getElementById('range-pick').addEventListener('change', (e) => range.setPreset(e.target.value));
document.getElementById('range-live').addEventListener('click', () => range.goLive());
document.getElementById('range-back').addEventListener('click', () => range.shift(-0.5));
document.getElementById('range-forward').addEventListener('click', () => range.shift(0.5));
document.getElementById('range-out').addEventListener('click', () => range.zoomOut());
// Typed ends, in local time to the second (as the labels show them).
const absForm = document.getElementById('range-abs');
const localInput = (t) => {
  const d = new Date(t * 1000);
  return new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 19);
};
document.getElementById('range-edit').addEventListener('click', (e) => {
  absForm.hidden = !absForm.hidden;
  e.currentTarget.setAttribute('aria-expanded', String(!absForm.hidden));
  if (absForm.hidden) return;
  const [from, to] = range.bounds();
  document.getElementById('range-from').value = localInput(from);
  document.getElementById('range-to').value = localInput(to);
  document.getElementById('range-abs-error').textContent = '';
});
absForm.addEventListener('submit', (e) => {
  e.preventDefault();
  const from = new Date(document.getElementById('range-from').value).getTime() / 1000;
  const to = new Date(document.getElementById('range-to').value).getTime() / 1000;
  if (!(to > from)) {
    document.getElementById('range-abs-error').textContent = '"to" must be after "from"';
    return;
  }
  absForm.hidden = true;
  document.getElementById('range-edit').setAttribute('aria-expanded', 'false');
  range.setFixed(from, to);
});
range.onChange(() => {
  showRange();
  for (const c of Object.values(charts)) {
    if (c === charts.alloc) continue;  // alloc: the events view refills it
    c.clear();
    c.frame();  // a picked span shows at once, whether or not its history holds points
  }
  prefill().catch(() => {});
});
showRange();

window.addEventListener('resize', () => {
  Object.values(charts).forEach((c) => c.resize());
  if (views.view === 'timeline') timeline.show(true);
});
setInterval(analysis.refresh, 10000);
setInterval(() => markStaleStats(), 1000);
analysis.refresh();
gpus.load();
events.refresh();
loadInfo();
prefill().catch(() => {});  // history first, whether or not the stream connects
connectStream({
  state,
  families,
  handlers: {
    samples: onSamples,
    events: events.schedule,
    alert: analysis.onAlert,
    reconnected: () => prefill().catch(() => {}),
  },
});
wireExports();
