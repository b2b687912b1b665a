// Analysis view: anomaly markers on the charts, percentiles of a kernel or model against an
// SLA, the bottleneck rules of the last five minutes, and A/B tests of kernel variants.
/* global uPlot */
import { LiveChart, PALETTE, axis, logSplits, makePlot, timeAxis } from '../lib/live_chart.js';
import { setSearchParams } from '../lib/url.js';
import { esc, evidenceLabel, fmtBytes, fmtDuration, fmtEvidence, fmtSI, ms, shortKernelName } from '../lib/format.js';
import { apiFetch, fetchJson } from '../lib/api.js';
import { fillRows } from '../lib/rows.js';
import { withProgress } from '../lib/progress.js';

// The distribution as a CDF — the share of samples at or under each latency — from the
// server's exact percentiles at these points, on a logarithmic latency axis (tails span
// decades); the SLA as a vertical line, p50/p99/p99.9 marked with their labels stacked.
const CDF_QS = [0, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70, 75, 80, 85, 90, 95, 97.5, 99, 99.5, 99.9, 100];
const MARKED = [50, 99, 99.9];

// `charts`: every chart on the page, so an alert marks the one that draws its series.
// `onAnalysis(a)`: after each read of the analysis document (the summary's collectives).
export function createAnalysisView({ state, charts, onAnalysis = () => {} }) {
  state.alerts = [];
  state.percentiles = null;
  state.findingEvidence = { loads: 0, series: [] };
  // The view's state, handed to the functions below. `pct`: the latency panel — its chart's
  // element and plot, `seq` the newest request (an older answer, another subject's or a slower
  // read, is dropped) and `subjectKind` the subjects its view shows ('kernel', 'model', or null
  // for either). `variants`: for the A/B pickers, the variants seen of each kernel. `evidence`:
  // the finding whose evidence is drawn (the URL keeps it, ?finding=ID) and its plot.
  const view = {
    state, charts, onAnalysis,
    pct: { el: document.getElementById('chart-pct'), plot: null, seq: 0, subjectKind: null },
    variants: { byKernel: {} },
    evidence: { id: new URLSearchParams(window.location.search).get('finding'), plot: null },
  };

  const refreshLatency = () => refreshPercentiles(view);
  ['pct-subject', 'pct-sla', 'pct-method'].forEach((id) => document.getElementById(id).addEventListener('change', refreshLatency));
  document.getElementById('ab-kernel').addEventListener('change', () => fillVariants(view.variants));
  document.getElementById('ab-form').addEventListener('submit', (ev) => runAbTest(view, ev));
  document.getElementById('bottlenecks').addEventListener('click', (e) => {
    const b = e.target.closest('button[data-evidence]');
    if (b) showEvidence(view, b.dataset.evidence);
  });
  document.getElementById('fe-close').addEventListener('click', () => showEvidence(view, null));

  LiveChart.range.onChange(() => { refreshAnalysis(view); refreshPercentiles(view); });
  return {
    onAlert: (msg) => onAlert(view, msg),
    markHistory: (query) => markHistory(view, query),
    onEvents: (kernels, models) => onEvents(view, kernels, models),
    refresh: () => refreshAnalysis(view),
    showView: (name) => showView(view, name),
  };
}

// An anomaly marked on the chart that draws its series (once: history and stream may both tell).
function markAnomaly(charts, a) {
  const t = a.ts_ns / 1e9;
  for (const chart of Object.values(charts)) {
    if (chart.keys.includes(a.series) && !chart.marks.includes(t)) chart.mark(t);
  }
}
function onAlert({ state, charts }, msg) {
  state.alerts.push(msg);
  if (state.alerts.length > 500) state.alerts.shift();
  markAnomaly(charts, msg);
}
// The anomalies of the time range, after the charts were filled from its history.
async function markHistory({ state, charts }, query) {
  try {
    const r = await fetchJson(`/api/v1/anomalies?${query}`);
    r.anomalies.forEach((a) => markAnomaly(charts, a));
    state.anomalyMarks = (state.anomalyMarks || 0) + r.anomalies.length;
  } catch (e) { /* marks are decoration; the alerts view says what failed */ }
}

// After each refresh of the events views: new subjects for the pickers, fresh percentiles.
function onEvents(view, kernels, models) {
  if (!updatePickers(view, kernels, models)) refreshPercentiles(view);  // once, not again after a new pick
}

// The latency panel's curve (see CDF_QS) for the answer `r`, in the panel `pct`.
function drawPercentiles(pct, r, sla) {
  const xs = [], ys = [];
  for (const q of CDF_QS) {
    const v = r.percentiles['p' + q];
    if (v == null || !(v > 0)) continue;  // a log axis has no zero
    xs.push(v);
    ys.push(q / 100);
  }
  dropPercentilePlot(pct);
  if (xs.length === 0) return;
  let xMin = Math.min(xs[0], sla > 0 ? sla : Infinity) / 1.3;
  let xMax = Math.max(xs[xs.length - 1], sla || 0) * 1.3;
  if (xMax / xMin < 10) {  // at least a decade, about the middle: room for round ticks
    const mid = Math.sqrt(xMin * xMax);
    [xMin, xMax] = [mid / Math.sqrt(10), mid * Math.sqrt(10)];
  }
  pct.plot = makePlot({
    width: Math.max(300, pct.el.clientWidth), height: 220,
    scales: { x: { time: false, distr: 3, log: 10, range: () => [xMin, xMax] }, share: { range: [0, 1] } },
    series: [{ label: 'latency', value: (u, v) => (v == null ? '–' : fmtDuration(v)) },
      { label: 'share at or under', scale: 'share', stroke: '#5794f2', width: 2, paths: uPlot.paths.stepped({ align: 1 }),
        points: { show: true, size: 4 }, value: (u, v) => (v == null ? '–' : (v * 100).toFixed(1) + '%') }],
    axes: [axis(fmtDuration, { splits: logSplits, filter: (u, splits) => splits }), axis((v) => (v * 100).toFixed(0) + '%', { scale: 'share' })],
    hooks: { draw: [(u) => drawMarks(u, r, sla)] },
  }, [xs, ys], pct.el);
}
// p50, p99 and p99.9 of the answer `r`, and the SLA, as vertical lines over the plot `u`.
function drawMarks(u, r, sla) {
  const ctx = u.ctx;
  ctx.save();
  MARKED.forEach((q, i) => {
    const v = r.percentiles['p' + q];
    if (v > 0) vline(u, v, '#8e8e8e', [2, 3], 'p' + q, i);
  });
  if (sla > 0) vline(u, sla, '#f2495c', [6, 4], `SLA ${fmtDuration(sla)}`, MARKED.length);
  ctx.restore();
}
function vline(u, x, color, dash, text, row = 0) {
  const ctx = u.ctx;
  const px = u.valToPos(x, 'x', true);
  ctx.strokeStyle = color;
  ctx.setLineDash(dash);
  ctx.lineWidth = 1.5;
  ctx.beginPath();
  ctx.moveTo(px, u.bbox.top);
  ctx.lineTo(px, u.bbox.top + u.bbox.height);
  ctx.stroke();
  ctx.fillStyle = color;
  // Labels on rows of their own (p99 and p99.9 are often a few pixels apart), right of
  // the line, or left of it where they would leave the plot.
  ctx.font = `${11 * devicePixelRatio}px sans-serif`;
  ctx.textBaseline = 'alphabetic';
  const pad = 4 * devicePixelRatio;
  const right = px + pad + ctx.measureText(text).width <= u.bbox.left + u.bbox.width;
  ctx.textAlign = right ? 'left' : 'right';
  ctx.fillText(text, right ? px + pad : px - pad, u.bbox.top + (12 + 13 * row) * devicePixelRatio);
}
function dropPercentilePlot(pct) {
  if (pct.plot) { pct.plot.destroy(); pct.plot = null; }
}

async function refreshPercentiles({ state, pct }) {
  const subject = document.getElementById('pct-subject').value;
  if (!subject) return;
  const seq = ++pct.seq;
  const [kind, name] = [subject.slice(0, subject.indexOf(':')), subject.slice(subject.indexOf(':') + 1)];
  const sla = Number(document.getElementById('pct-sla').value) || 0;
  const method = document.getElementById('pct-method').value;
  let url = `/api/v1/percentiles?${kind}=${encodeURIComponent(name)}&${LiveChart.range.query()}&method=${method}` +
    `&q=${CDF_QS.join(',')}`;
  if (sla > 0) url += `&sla_ms=${sla}`;
  try {
    const r = await fetchJson(url);
    if (seq !== pct.seq) return;
    state.percentiles = r;
    document.getElementById('pct-summary').textContent = percentileSummary(r);
    // One line: the first warning (they repeat per percentile), the rest on hover.
    const warn = document.getElementById('pct-warnings');
    warn.textContent = r.warnings.length > 1 ? `${r.warnings[0]} (and ${r.warnings.length - 1} more like it)` : r.warnings.join('');
    warn.title = r.warnings.join('\n');
    // Nothing to draw: no curve at all, never the last subject's under this one's name.
    if (r.count) drawPercentiles(pct, r, sla);
    else dropPercentilePlot(pct);
  } catch (e) { /* shown as stale until the next refresh */ }
}
// The panel's figures for the answer `r`. A scraped server's answer says where it came from,
// and an SLA share read from buckets its bounds.
function percentileSummary(r) {
  const pct = (v) => (v * 100).toFixed(2) + '%';
  const from = r.source ? ` · from ${r.source.metric} (${r.method === 'prometheus_histogram' ? 'histogram buckets' : "the server's summary"})` : '';
  const slaText = !r.sla ? '' : ` · SLA met by ${pct(r.sla.compliance_rate)}` +
    (r.sla.compliance_bounds ? ` (${pct(r.sla.compliance_bounds[0])}–${pct(r.sla.compliance_bounds[1])})` : '');
  const marks = MARKED.map((q) => `p${q} ${r.percentiles['p' + q] == null ? '–' : ms(r.percentiles['p' + q])} ms`).join(' · ');
  return r.count
    ? `${r.count} samples · mean ${r.mean == null ? '–' : ms(r.mean)} ms · ${marks}${slaText}${from}`
    : 'no samples in this time range';
}

// The latency panel shows requests on the Serving view and kernels on the Kernels view
// (elsewhere either, a model first): the other kind's subjects are hidden from the picker.
// Returns whether it picked a subject anew (and asked for its percentiles).
function filterSubjects(view) {
  const { state, pct } = view;
  const { subjectKind } = pct;
  const subject = document.getElementById('pct-subject');
  for (const o of subject.options) if (o.value) o.hidden = subjectKind != null && !o.value.startsWith(subjectKind + ':');
  subject.options[0].textContent = { kernel: 'pick a kernel', model: 'pick a model' }[subjectKind] || 'pick a kernel or model';
  const current = subject.selectedOptions[0];
  if (subject.value && current && !current.hidden) return false;
  const first = [...subject.options].find((o) => o.value && !o.hidden);
  subject.value = first ? first.value : '';
  if (first) { refreshPercentiles(view); return true; }
  dropPercentilePlot(pct);
  state.percentiles = null;
  document.getElementById('pct-summary').textContent = subjectKind === 'model'
    ? 'no inference requests in this time range' : subjectKind === 'kernel' ? 'no kernels in this time range' : '';
  document.getElementById('pct-warnings').textContent = '';
  return false;
}
// `name`: the dashboard's view now shown.
function showView(view, name) {
  view.pct.subjectKind = name === 'kernels' ? 'kernel' : name === 'serving' ? 'model' : null;
  filterSubjects(view);
}

// Subjects for the percentile and A/B pickers, from the kernels and inference views; whether the
// percentiles were asked for (a subject picked anew).
function updatePickers(view, kernels, models) {
  const subject = document.getElementById('pct-subject');
  const want = models.map((m) => 'model:' + m.model).concat(kernels.map((k) => 'kernel:' + k.name));
  const have = [...subject.options].map((o) => o.value).filter(Boolean);
  for (const v of want) {
    if (have.includes(v)) continue;
    const option = new Option(v.startsWith('kernel:') ? 'kernel: ' + shortKernelName(v.slice(7)) : v.replace(':', ': '), v);
    option.title = v.slice(v.indexOf(':') + 1);
    subject.add(option);
  }
  const refreshed = filterSubjects(view);
  const abKernel = document.getElementById('ab-kernel');
  const abHave = [...abKernel.options].map((o) => o.value);
  for (const k of kernels.filter((k) => k.variants.length >= 2)) {
    if (!abHave.includes(k.name)) abKernel.add(new Option(shortKernelName(k.name), k.name));
  }
  view.variants.byKernel = Object.fromEntries(kernels.map((k) => [k.name, k.variants]));
  if (!abKernel.value && abKernel.options.length > 1) { abKernel.selectedIndex = 1; fillVariants(view.variants); }
  return refreshed;
}
// `variants`: the variants seen of each kernel.
function fillVariants(variants) {
  const list = (variants.byKernel || {})[document.getElementById('ab-kernel').value] || [];
  for (const [id, pick] of [['ab-a', 0], ['ab-b', 1]]) {
    const sel = document.getElementById(id);
    sel.innerHTML = list.map((v) => `<option>${esc(v)}</option>`).join('');
    sel.selectedIndex = Math.min(pick, list.length - 1);
  }
  // Before the first comparison, the hint follows the pick.
  const result = document.getElementById('ab-result');
  if (!result.dataset.shown) {
    result.textContent = list.length >= 2 ? 'Pick variants A and B of the kernel and compare them.' : 'Pick a kernel with two or more variants.';
  }
}

// The A/B form's submit: the test created on the server, then its answer read and shown.
async function runAbTest({ state }, ev) {
  ev.preventDefault();
  const kernel = document.getElementById('ab-kernel').value;
  const a = document.getElementById('ab-a').value, b = document.getElementById('ab-b').value;
  if (!kernel || !a || !b) return;
  try {
    const r = await withProgress(ev.target, document.getElementById('ab-result'), `Comparing ${a} and ${b} of ${kernel}`,
      async () => {
        const created = await apiFetch('/api/v1/abtests', {
          method: 'POST', headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ name: `${kernel}: ${a} vs ${b}`, a: { kernel, variant: a }, b: { kernel, variant: b } }),
        });
        const body = await created.json();
        if (!created.ok) throw new Error(body.error ? body.error.message : 'HTTP ' + created.status);
        return fetchJson(body.url);
      });
    state.abResult = r;
    renderAb(r);
  } catch (e) {
    document.getElementById('ab-result').textContent = 'A/B test failed: ' + e.message;
  }
}
function renderAb(r) {
  const side = (label, s) => `<tr><td>${label}</td><td class="num">${s.n}</td><td class="num">${ms(s.mean_ms)}</td>` +
    `<td class="num">${ms(s.median_ms)}</td><td class="num">${ms(s.std_ms)}</td><td class="num">${ms(s.p99_ms)}</td></tr>`;
  const fmtP = (p) => (p < 1e-4 ? p.toExponential(1) : p.toFixed(4));
  const ci = r.speedup_ci95;
  document.getElementById('ab-result').dataset.shown = 'true';
  document.getElementById('ab-result').innerHTML =
    `<p><span class="verdict verdict-${r.verdict}" data-testid="ab-verdict">${r.verdict.replace(/_/g, ' ')}</span> ` +
    `${esc(r.recommendation)}</p>` +
    `<table class="grid"><thead><tr><th>Side</th><th class="num">n</th><th class="num">Mean ms</th><th class="num">Median ms</th>` +
    `<th class="num">Std ms</th><th class="num">p99 ms</th></tr></thead><tbody>` +
    side('A ' + esc(r.definition.a.variant || r.definition.a.kernel), r.a) + side('B ' + esc(r.definition.b.variant || r.definition.b.kernel), r.b) +
    `</tbody></table><p>${r.speedup == null ? '' : r.speedup >= 1 ? `B is ${r.speedup.toFixed(2)}× as fast as A` : `B takes ${(1 / r.speedup).toFixed(2)}× as long as A`} · ` +
    `speedup (mean A ÷ mean B) ${r.speedup == null ? '–' : r.speedup.toFixed(3)} ` +
    `(95% CI ${ci[0] == null ? '–' : ci[0].toFixed(3)}–${ci[1] == null ? '–' : ci[1].toFixed(3)}) · ` +
    `Mann–Whitney U ${r.mann_whitney.u} p ${fmtP(r.mann_whitney.p_value)} (${r.mann_whitney.method}) · ` +
    `Welch t ${r.welch.t.toFixed(2)} p ${fmtP(r.welch.p_value)} · Hodges–Lehmann shift ${ms(r.hodges_lehmann_shift_ms)} ms</p>`;
}

// Fired and ok rules as rows; the rules this range cannot evaluate once, grouped by why.
function renderBottlenecks(findings) {
  const el = document.getElementById('bottlenecks');
  const rows = findings.filter((f) => f.status !== 'not_evaluated').map(findingRow);
  const skipped = findings.filter((f) => f.status === 'not_evaluated');
  if (skipped.length) rows.push(notEvaluatedRow(skipped));
  el.innerHTML = rows.join('');
}
// A fired or ok rule: its severity, title, subject, evidence (with its drill-down) and advice.
function findingRow(f) {
  const sev = f.status === 'fired' ? f.severity : 'ok';
  const evidence = Object.entries(f.evidence)
    .map(([k, v]) => `<span title="${esc(k)}">${esc(evidenceLabel(k))} ${esc(fmtEvidence(k, v))}</span>`).join(', ');
  // A kernel named in full (a C++ signature) reads by its short name; the whole on hover.
  const short = f.subject ? shortKernelName(f.subject) : '';
  const named = (text) => (f.subject && short !== f.subject ? text.split(f.subject).join(short) : text);
  const subject = f.subject && f.status === 'fired'
    ? ` <span class="subject" title="${esc(f.subject)}${f.subject_device ? ' on device ' + esc(f.subject_device) : ''}">` +
      `${esc(f.subject === f.subject_device ? 'device ' + short : short)}</span>` : '';
  const recs = f.status === 'fired' ? `<ul>${f.recommendations.map((r) => `<li>${esc(named(r))}</li>`).join('')}</ul>` : '';
  return `<li data-rule="${esc(f.id)}" data-status="${f.status}">` +
    `<span class="sev sev-${sev}">${esc(sev)}</span>${esc(f.title)}${subject}` +
    (evidence ? ` <span class="muted">${evidence}</span>` : '') +
    (Object.keys(f.evidence_series || {}).length
      ? ` <button type="button" class="link" data-evidence="${esc(f.id)}" data-testid="evidence-${esc(f.id)}">evidence ▸</button>` : '') +
    `${recs}</li>`;
}
// The rules not evaluated, as one row.
function notEvaluatedRow(skipped) {
  // The reason's words before its list of inputs group the rules ("no kernels in this range").
  const groups = new Map();
  for (const f of skipped) {
    const why = String(f.reason || '').split(';')[0];
    if (!groups.has(why)) groups.set(why, []);
    groups.get(why).push(f);
  }
  const items = [...groups].map(([why, fs]) => `<li>${esc(why)}: ` +
    fs.map((f) => `<span data-rule="${esc(f.id)}" data-status="not_evaluated" title="${esc(f.reason)}">${esc(f.title)}</span>`)
      .join(', ') + '</li>').join('');
  return `<li class="not-evaluated" data-testid="not-evaluated"><span class="sev">not evaluated</span>` +
    `${skipped.length} rule${skipped.length > 1 ? 's' : ''} this range cannot decide:<ul>${items}</ul></li>`;
}

// Drill-down: a finding's evidence as the series it was read from, over the analysed window.
// The URL keeps it (?finding=ID).
async function showEvidence({ state, evidence }, id) {
  evidence.id = id;
  setSearchParams({ finding: id || null });
  const panel = document.getElementById('finding-evidence');
  const f = (state.analysis ? state.analysis.bottlenecks : []).find((x) => x.id === id);
  if (!id || !f) { panel.hidden = true; return; }
  panel.hidden = false;
  document.getElementById('fe-title').textContent = f.title;
  const selectors = [...new Set(Object.values(f.evidence_series))];
  const answers = await Promise.all(selectors.map(readSelector));
  if (evidence.id !== id) return;
  const series = answers.flatMap((a) => a.series);
  const data = evidenceColumns(series);
  document.getElementById('fe-summary').textContent = Object.entries(f.evidence)
    .map(([k, v]) => `${evidenceLabel(k)} ${fmtEvidence(k, v)}`).join(' · ') + ` — from ${selectors.join(', ')}`;
  const el = document.getElementById('fe-chart');
  if (evidence.plot) evidence.plot.destroy();
  evidence.plot = evidencePlot(series, data, el);
  state.findingEvidence = { loads: state.findingEvidence.loads + 1, series: series.map((s) => ({ name: s.name, points: s.points.length })) };
}
// One evidence selector (`name{label="value",…}`) over the analysed window; none where it fails.
function readSelector(sel) {
  const brace = sel.indexOf('{');
  let q = `name=${encodeURIComponent(brace < 0 ? sel : sel.slice(0, brace))}`;
  for (const [, k, v] of sel.matchAll(/(\w+)="([^"]*)"/g)) q += `&${k}=${encodeURIComponent(v)}`;
  return fetchJson(`/api/v1/series/query?${q}&${LiveChart.range.query({ run: false })}&max_points=300`).catch(() => ({ series: [] }));
}
// The evidence series on one time axis, each at its average where downsampled: uPlot's data.
function evidenceColumns(series) {
  const times = [...new Set(series.flatMap((s) => s.points.map((p) => p[0] / 1e9)))].sort((a, b) => a - b);
  const index = new Map(times.map((t, i) => [t, i]));
  const cols = series.map((s) => {
    const col = new Array(times.length).fill(null);
    const v = s.downsampled ? s.columns.indexOf('avg') : 1;
    for (const p of s.points) col[index.get(p[0] / 1e9)] = p[v];
    return col;
  });
  return [times, ...cols];
}
// The series of `data` (see evidenceColumns), a scale and an axis per metric, drawn in `el`.
function evidencePlot(series, data, el) {
  const label = (s) => s.name + (Object.keys(s.labels).length
    ? '{' + Object.entries(s.labels).filter(([k]) => k !== 'uuid').map(([k, v]) => `${k}=${v}`).join(',') + '}' : '');
  return makePlot({
    width: Math.max(200, el.clientWidth), height: 240,
    series: [{}, ...series.map((s, i) => ({ label: label(s), stroke: PALETTE[i % PALETTE.length], width: 2, spanGaps: true,
      scale: s.name, value: (u, x) => (x == null ? '–' : fmtEvidence(s.name, x)) }))],
    axes: [timeAxis, ...[...new Set(series.map((s) => s.name))].map((name, i) =>
      axis((x) => fmtEvidence(name, x), { scale: name, side: i ? 1 : 3, grid: { show: i === 0 } }))],
  }, data, el);
}

// Energy per model (the analysis document's `energy`): what serving cost in joules.
function renderEnergy(e) {
  if (!e) return;
  const num = (v, digits) => (v == null ? '–' : Number(v).toPrecision(digits));
  // Joules the server could not know say so in words, with its reason on hover.
  const joules = (g) => (g.joules == null
    ? `<span class="muted" title="${esc(g.unknown && g.unknown.joules ? g.unknown.joules : 'no energy readings in the range')}">energy unknown</span>`
    : `${num(g.joules, 4)} J`);
  document.getElementById('energy-gpus').innerHTML = e.gpus.map((g) =>
    `GPU ${esc(g.gpu)}: ${joules(g)}, ${num(g.avg_watts, 3)} W average, ${num(g.peak_watts, 3)} W peak` +
    (g.avg_watts_during_requests == null ? '' :
      `; during requests ${num(g.avg_watts_during_requests, 3)} W average, ${num(g.peak_watts_during_requests, 3)} W peak`))
    .join('<br>');
  fillRows(document.querySelector('#energy-table tbody'), e.models.map((m) =>
    `<tr data-model="${esc(m.model)}"><td>${esc(m.model)}${m.version ? ' v' + esc(m.version) : ''}</td>` +
    `<td class="num">${num(m.joules, 4)}</td><td class="num">${num(m.joules_per_inference, 3)}</td>` +
    `<td class="num">${num(m.joules_per_output_token, 3)}</td><td class="num">${num(m.inferences_per_second_per_watt, 3)}</td>` +
    `<td>${esc(m.attribution)}</td></tr>`).join(''));
}
// Each GPU against its --device-target (the analysis document's `devices`).
function renderTargets(devices) {
  const rows = [];
  const recs = [];
  const units = { tflops: ['TFLOP/s', 1], gb_per_second: ['GB/s', 1], memory_bytes: ['', 0], power_watts: ['W', 1] };
  for (const d of devices || []) {
    for (const c of d.checks) {
      const [unit, si] = units[c.figure];
      const val = (v) => (v == null ? '–' : si ? `${fmtSI(v)} ${unit}` : fmtBytes(v));
      const goal = c.budget != null ? `budget ${val(c.budget)}` :
        [c.minimum != null ? `min ${val(c.minimum)}` : '', c.target != null ? `target ${val(c.target)}` : ''].filter(Boolean).join(' · ');
      const ratio = c.of_budget != null ? `${(c.of_budget * 100).toFixed(0)}% of budget` :
        c.efficiency != null ? `${(c.efficiency * 100).toFixed(0)}% of target` :
        c.of_minimum != null ? `${(c.of_minimum * 100).toFixed(0)}% of minimum` : '–';
      const achieved = c.achieved ? `${val(c.achieved.value)} <span class="muted" title="${esc(c.achieved.basis)}">${esc(c.achieved.source)}</span>` : 'not measured';
      const bad = c.status === 'below_minimum' || c.status === 'over_budget';
      rows.push(`<tr data-gpu="${esc(d.gpu)}" data-figure="${c.figure}" data-status="${c.status}"><td>${esc(d.gpu)}</td>` +
        `<td>${esc(c.figure)}</td><td class="num">${achieved}</td><td>${goal}</td><td class="num">${ratio}</td>` +
        `<td><span class="sev sev-${bad ? 'warning' : 'ok'}">${esc(c.status.replace(/_/g, ' '))}</span></td></tr>`);
      if (c.recommendation) recs.push(`<li>GPU ${esc(d.gpu)}: ${esc(c.recommendation)}</li>`);
    }
  }
  fillRows(document.querySelector('#targets-table tbody'), rows.join(''));
  document.getElementById('targets-recommendations').innerHTML = recs.join('');
}
async function refreshAnalysis(view) {
  const { state, evidence, onAnalysis } = view;
  try {
    const a = await fetchJson(`/api/v1/analysis?${LiveChart.range.query()}`);
    state.analysis = a;
    renderBottlenecks(a.bottlenecks);
    if (evidence.id && document.getElementById('finding-evidence').hidden) showEvidence(view, evidence.id);  // from the URL
    renderEnergy(a.energy);
    renderTargets(a.devices);
    onAnalysis(a);
  } catch (e) { /* retried on the next tick */ }
}
