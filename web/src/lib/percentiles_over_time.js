// Percentiles over the dashboard's time range (p50, p90, p99 per slice, as /api/v1/percentiles
// answers with step=), drawn as lines, with an SLO line when one is given, and the subject's
// change points (GET /api/v1/regressions over the same range, one interval a slice) marked
// where they happened. Used by the model and the kernel drill-downs.
/* global uPlot */
import { LiveChart, axis, makePlot, timeAxis } from './live_chart.js';
import { fmtDuration } from './format.js';
import { fetchJson } from './api.js';

export const QS = [50, 90, 99];
const COLORS = { 50: '#73bf69', 90: '#f2cc0c', 99: '#ff780a' };
const SLICES = 60;

export class PercentilesOverTime {
  constructor(el) {
    this.el = el;
    this.plot = null;
    window.addEventListener('resize', () => { if (this.plot) this.plot.setSize({ width: this.width(), height: 240 }); });
  }

  width() { return Math.max(200, this.el.clientWidth); }

  // Nothing drawn (another subject is being read): no line of the previous one stays.
  clear() {
    this.seq = (this.seq || 0) + 1;
    if (this.plot) { this.plot.destroy(); this.plot = null; }
  }

  // selector: the query's subject (`model=…&field=…`, `kernel=…`); resolves to the answer, or
  // to null when a later load was asked for meanwhile (its answer is the one drawn).
  async load(selector, slo = 0) {
    const seq = this.seq = (this.seq || 0) + 1;
    const [from, to] = LiveChart.range.bounds();
    const step = Math.max(1, Math.ceil((to - from) / SLICES));
    let url = `/api/v1/percentiles?${selector}&q=${QS.join(',')}&from=${Math.round(from * 1e9)}&to=${Math.round(to * 1e9)}` +
      `&step=${step}s`;
    if (slo > 0) url += `&sla_ms=${slo}`;
    const [r, changes] = await Promise.all([fetchJson(url), this.changePoints(selector, from, to, step)]);
    if (seq !== this.seq) return null;
    this.changes = changes;
    this.draw(r, slo);
    return r;
  }

  // The change points of this kernel (or model's latency) in the range; none when unavailable.
  async changePoints(selector, from, to, step) {
    const p = new URLSearchParams(selector);
    const field = p.get('field') || 'latency_ms';
    if (p.has('model') && field !== 'latency_ms') return [];  // found for latency alone
    const subject = p.has('kernel') ? `kernel=${encodeURIComponent(p.get('kernel'))}` : `model=${encodeURIComponent(p.get('model'))}`;
    try {
      const r = await fetchJson(`/api/v1/regressions?${subject}&from=${Math.round(from * 1e9)}&to=${Math.round(to * 1e9)}` +
        `&interval=${step}s`);
      return r.regressions;
    } catch (e) {
      return [];
    }
  }

  draw(r, slo) {
    const xs = r.over_time.map((s) => (s.from_ns + s.to_ns) / 2e9);
    // Drawn p99 first and p50 last, so where the percentiles coincide (steady latency) the
    // median is the line on top, not hidden under the tail's.
    const order = [...QS].reverse();
    const cols = order.map((q) => r.over_time.map((s) => s.percentiles['p' + q] ?? null));
    if (this.plot) this.plot.destroy();
    this.plot = makePlot({
      width: this.width(), height: 240,
      scales: { x: { time: true }, ms: { range: (u, min, max) => [0, Math.max(max, slo || 0, 1e-3) * 1.1] } },
      series: [{}, ...order.map((q) => ({ label: 'p' + q, scale: 'ms', stroke: COLORS[q], width: 2,
        value: (u, v) => (v == null ? '–' : fmtDuration(v)) }))],
      axes: [timeAxis, axis(fmtDuration, { scale: 'ms' })],
      hooks: { draw: [(u) => {
        const ctx = u.ctx;
        for (const c of this.changes || []) {  // dashed at the change, its size beside
          const x = u.valToPos(c.at_ns / 1e9, 'x', true);
          ctx.save();
          ctx.strokeStyle = c.direction === 'regression' ? '#f2495c' : '#73bf69';
          ctx.setLineDash([2, 3]);
          ctx.beginPath();
          ctx.moveTo(x, u.bbox.top);
          ctx.lineTo(x, u.bbox.top + u.bbox.height);
          ctx.stroke();
          ctx.fillStyle = ctx.strokeStyle;
          ctx.fillText(`${c.statistic} ${c.change >= 0 ? '+' : ''}${(c.change * 100).toFixed(0)}%`, x + 3,
                       u.bbox.top + (c.statistic === 'p50' ? 12 : 26));
          ctx.restore();
        }
        if (!(slo > 0)) return;
        const y = u.valToPos(slo, 'ms', true);
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
    }, [xs, ...cols], this.el);
  }
}

// "p50 … · p90 … · p99 …" of a whole-range answer.
export function percentilesText(r) {
  return QS.map((q) => `p${q} ${r.percentiles['p' + q] == null ? '–' : fmtDuration(r.percentiles['p' + q])}`).join(' · ');
}
