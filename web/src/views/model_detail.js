// Drill-down from the inference table: a model's latency, TTFT or TPOT percentiles (p50, p90,
// p99) over the dashboard's time range, in slices the server computes (/api/v1/percentiles with
// step=), its SLO as a line and the share of requests within it per slice and over the range.
// The URL keeps the model, the field and the SLO (?model=NAME&field=ttft_ms&slo=200).
/* global uPlot */
import { LiveChart, axis, timeAxis } from '../lib/live_chart.js';
import { fmtDuration } from '../lib/format.js';
import { fetchJson } from '../lib/api.js';
import { setSearchParams } from '../lib/url.js';

const QS = [50, 90, 99];
const COLORS = { 50: '#73bf69', 90: '#f2cc0c', 99: '#ff780a' };
const SLICES = 60;

export function createModelDetail({ state }) {
  const panel = document.getElementById('model-detail');
  const chartEl = document.getElementById('md-chart');
  const fieldEl = document.getElementById('md-field');
  const sloEl = document.getElementById('md-slo');
  const p = new URLSearchParams(window.location.search);
  const detail = { model: p.get('model'), version: p.get('version') || '' };
  if (['latency_ms', 'ttft_ms', 'tpot_ms'].includes(p.get('field'))) fieldEl.value = p.get('field');
  if (Number(p.get('slo')) > 0) sloEl.value = p.get('slo');
  let plot = null;
  state.modelDetail = { loads: 0, slices: [] };

  function draw(r, slo) {
    const xs = r.over_time.map((s) => (s.from_ns + s.to_ns) / 2e9);
    const cols = QS.map((q) => r.over_time.map((s) => s.percentiles['p' + q] ?? null));
    if (plot) plot.destroy();
    plot = new uPlot({
      width: Math.max(200, chartEl.clientWidth), height: 240,
      scales: { x: { time: true }, ms: { range: (u, min, max) => [0, Math.max(max, slo || 0, 1e-3) * 1.1] } },
      series: [{}, ...QS.map((q) => ({ label: 'p' + q, scale: 'ms', stroke: COLORS[q], width: 2, spanGaps: false,
        value: (u, v) => (v == null ? '–' : fmtDuration(v)) }))],
      axes: [timeAxis, axis(fmtDuration, { scale: 'ms' })],
      hooks: { draw: [(u) => {
        if (!(slo > 0)) return;
        const y = u.valToPos(slo, 'ms', true);
        const ctx = u.ctx;
        ctx.save();
        ctx.strokeStyle = '#f2495c';
        ctx.setLineDash([6, 4]);
        ctx.lineWidth = 1.5;
        ctx.beginPath();
        ctx.moveTo(u.bbox.left, y);
        ctx.lineTo(u.bbox.left + u.bbox.width, y);
        ctx.stroke();
        ctx.fillStyle = '#f2495c';
        ctx.fillText(`SLO ${fmtDuration(slo)}`, u.bbox.left + 4, y - 4);
        ctx.restore();
      }] },
    }, [xs, ...cols], chartEl);
  }

  async function load() {
    if (!detail.model) return;
    const field = fieldEl.value;
    const slo = Number(sloEl.value) || 0;
    const [from, to] = LiveChart.range.bounds();
    const step = Math.max(1, Math.ceil((to - from) / SLICES));
    let url = `/api/v1/percentiles?model=${encodeURIComponent(detail.model)}&field=${field}&q=${QS.join(',')}` +
      `&from=${Math.round(from * 1e9)}&to=${Math.round(to * 1e9)}&step=${step}s`;
    if (detail.version) url += `&version=${encodeURIComponent(detail.version)}`;
    if (slo > 0) url += `&sla_ms=${slo}`;
    try {
      const r = await fetchJson(url);
      if (panel.hidden) return;
      const within = r.sla ? ` · ${(r.sla.compliance_rate * 100).toFixed(1)}% within the SLO (${r.sla.violations} over)` : '';
      const pct = (q) => (r.percentiles['p' + q] == null ? '–' : fmtDuration(r.percentiles['p' + q]));
      document.getElementById('md-summary').textContent = r.count
        ? `${r.count} requests in the range · p50 ${pct(50)} · p90 ${pct(90)} · p99 ${pct(99)}${within}`
        : 'No requests of this model in the range.';
      state.modelDetail = { loads: state.modelDetail.loads + 1, slices: r.over_time, field, slo };
      draw(r, slo);
    } catch (e) {
      document.getElementById('md-summary').textContent = `Could not read the percentiles: ${e.message || e}`;
    }
  }

  function show(model, version) {
    detail.model = model;
    detail.version = version || '';
    setSearchParams({ model: model || null, version: model && version ? version : null,
                      field: model ? fieldEl.value : null, slo: model && Number(sloEl.value) > 0 ? sloEl.value : null });
    panel.hidden = !model;
    if (!model) return;
    document.getElementById('md-name').textContent = model + (version ? ' v' + version : '');
    load();
  }

  document.querySelector('#inference-table tbody').addEventListener('click', (e) => {
    const row = e.target.closest('tr[data-model]');
    if (row) show(row.dataset.model, row.dataset.version);
  });
  document.getElementById('md-close').addEventListener('click', () => show(null));
  for (const el of [fieldEl, sloEl]) el.addEventListener('change', () => show(detail.model, detail.version));
  LiveChart.range.onChange(() => { if (!panel.hidden) load(); });
  window.addEventListener('resize', () => { if (plot) plot.setSize({ width: Math.max(200, chartEl.clientWidth), height: 240 }); });
  if (detail.model) show(detail.model, detail.version);  // from the URL
  // Live: new slices as requests arrive.
  setInterval(() => { if (!panel.hidden && LiveChart.range.live) load(); }, 5000);
  return { show, load };
}
