// LiveChart: one uPlot chart over a fixed set of series, pre-filled from the REST history at the
// dashboard's time range and appended to by the stream while the range is live; dragging across
// any chart picks a fixed span for all of them (LiveChart.onZoom); plus the shared axes.
/* global uPlot */
import { fmtBytes } from './format.js';

// Every chart of the page is made here, so the page can list them (the browser tests compare
// their tick labels); destroyed ones leave the list as their element leaves the document.
const made = new Set();
export function makePlot(opts, data, el) {
  for (const u of made) if (!u.root.isConnected) made.delete(u);
  const u = new uPlot(opts, data, el);
  made.add(u);
  return u;
}
export const plots = () => [...made].filter((u) => u.root.isConnected);

export const WINDOW_S = 300;  // seconds the event panels summarize (their own "last 5 minutes")
export const CURSOR_SYNC_KEY = 'perfscope-time';
export const PALETTE = ['#73bf69', '#f2cc0c', '#5794f2', '#ff780a', '#b877d9', '#37872d', '#fade2a', '#8ab8ff',
  '#f2495c', '#1f60c4', '#ca95e5', '#c4162a'];

// One chart: a fixed set of series, rows aligned by timestamp (a sampling pass stamps all
// its samples with one time, so live rows line up exactly).
export class LiveChart {
  // Set by the dashboard: its TimeRange (lib/time_range.js), and what a drag across a chart does
  // with the span picked (seconds since the epoch).
  static range = null;
  static onZoom = null;
  // Whether anomalies are marked on the charts (the header's toggle).
  static showMarks = true;

  constructor(el, { families, seriesFor, scales, axes }) {
    this.el = el;
    this.families = families;      // family names this chart shows
    this.seriesFor = seriesFor;    // (key, name, labels) -> {label, scale, fmt, width} | null
    this.scales = scales;
    this.axes = axes;
    this.keys = [];                // series keys, in column order
    this.defs = [];
    this.xs = [];
    this.cols = [];
    this.marks = [];               // anomaly times (s), drawn as vertical lines
    this.plot = null;
  }

  mark(t) {
    this.marks.push(t);
    if (this.marks.length > 200) this.marks.shift();
    if (this.plot) this.plot.redraw(false);
  }

  accepts(name) { return this.families.includes(name); }

  ensureSeries(key, name, labels) {
    if (this.keys.includes(key)) return true;
    const def = this.seriesFor(key, name, labels);
    if (!def) return false;
    this.keys.push(key);
    this.defs.push(def);
    this.cols.push(new Array(this.xs.length).fill(null));
    this.rebuild();  // a new series changes the layout: rare (start-up, hotplug)
    return true;
  }

  // A series' colour: its own when its definition names one, else by the rank of its key among
  // the chart's keys in sorted order — the same series gets the same colour on every load,
  // whatever order its first samples arrived in.
  colorOf(key) {
    const i = this.keys.indexOf(key);
    if (i < 0) return null;
    if (this.defs[i].color) return this.defs[i].color;
    const rank = [...this.keys].sort().indexOf(key);
    return PALETTE[rank % PALETTE.length];
  }

  rebuild() {
    if (this.plot) { this.plot.destroy(); this.plot = null; }
    if (this.keys.length === 0) return;
    const order = this.keys.map((_, i) => i);
    const opts = {
      width: Math.max(300, this.el.clientWidth),
      height: 240,
      // The x axis spans the whole time range, live or fixed, however little of it has data
      // (a page opened a second ago shows a second of points at the right of five minutes).
      scales: Object.assign({ x: { time: true, range: (u, min, max) => (LiveChart.range ? LiveChart.range.bounds() : [min, max]) } },
        this.scales),
      legend: { live: true },
      // One cursor for every live chart: hovering a time on one shows the same time, and each
      // chart's values at it, on all of them. A drag picks a span for every chart (setSelect
      // below), not a zoom of this one.
      cursor: { sync: { key: CURSOR_SYNC_KEY }, drag: { x: true, y: false, setScale: false } },
      // The legend gives the values under the cursor, and the time to the second; with the
      // cursor elsewhere, each series' newest value (as Grafana's "last").
      series: [{ value: (u, v) => (v == null ? 'latest' : new Date(v * 1000).toLocaleTimeString()) }].concat(order.map((i) => ({
        label: this.defs[i].label,
        scale: this.defs[i].scale,
        stroke: this.colorOf(this.keys[i]),
        width: this.defs[i].width || 1,
        value: (u, v, sidx, idx) => this.defs[i].fmt(idx == null ? newest(u.data[sidx]) : v),
        // Rows hold every series of the chart, so a series has nulls wherever another was
        // sampled: those are joined; a silence much longer than its own spacing is a gap.
        spanGaps: false,
        gaps: silences,
        paths: this.defs[i].paths,
      }))),
      axes: this.axes,
      hooks: { setSelect: [(u) => {
        if (u.select.width < 4) return;
        const from = u.posToVal(u.select.left, 'x'), to = u.posToVal(u.select.left + u.select.width, 'x');
        u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
        if (LiveChart.onZoom) LiveChart.onZoom(from, to);
      }], draw: [(u) => {
        if (!LiveChart.showMarks) return;
        const ctx = u.ctx;
        ctx.save();
        ctx.strokeStyle = '#f2495c';
        ctx.setLineDash([4, 3]);
        for (const t of this.marks) {
          const x = u.valToPos(t, 'x', true);
          if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
          ctx.beginPath();
          ctx.moveTo(x, u.bbox.top);
          ctx.lineTo(x, u.bbox.top + u.bbox.height);
          ctx.stroke();
        }
        ctx.restore();
      }] },
    };
    this.plot = makePlot(opts, this.data(), this.el);
    this.frame();
  }

  // A fixed range shows exactly its span, whatever the data covers; a live one follows the data.
  frame() {
    const range = LiveChart.range;
    if (!this.plot || !range || range.live) return;
    const [from, to] = range.bounds();
    this.plot.setScale('x', { min: from, max: to });
  }

  data() { return [this.xs].concat(this.cols); }

  // Rows from the REST history: {key: [[t_s, value], ...]} merged on timestamps.
  fill(byKey) {
    const rows = new Map();
    for (const [key, points] of Object.entries(byKey)) {
      const col = this.keys.indexOf(key);
      if (col < 0) continue;
      for (const [t, v] of points) {
        if (!rows.has(t)) rows.set(t, new Array(this.keys.length).fill(null));
        rows.get(t)[col] = v;
      }
    }
    const times = [...rows.keys()].sort((a, b) => a - b);
    this.xs = times;
    this.cols = this.keys.map((_, c) => times.map((t) => rows.get(t)[c]));
    this.trim();
    if (this.plot) this.plot.setData(this.data());
    this.frame();
  }

  // One live pass: {key: value}. Passes older than what is drawn are ignored, and all of them
  // while the range is fixed. Over long ranges one pass a 1200th of the range is kept (the
  // history is downsampled to about as many points).
  append(t, values) {
    const range = LiveChart.range;
    if (range && !range.live) return;
    const spacing = range && range.seconds > 1200 ? range.seconds / 1200 : 0;
    if (this.xs.length && t <= this.xs[this.xs.length - 1] + spacing) return;
    let any = false;
    const row = this.keys.map((k) => {
      if (k in values) { any = true; return values[k]; }
      return null;
    });
    if (!any) return;
    this.xs.push(t);
    row.forEach((v, c) => this.cols[c].push(v));
    this.trim();
    if (this.plot) this.plot.setData(this.data());
  }

  trim() {
    const range = LiveChart.range;
    if (range && !range.live) return;
    const cutoff = Date.now() / 1000 - (range ? range.seconds : WINDOW_S);
    let n = 0;
    while (n < this.xs.length && this.xs[n] < cutoff) n++;
    if (n > 0) {
      this.xs.splice(0, n);
      this.cols.forEach((c) => c.splice(0, n));
    }
  }

  // Forgets the data, keeps the series (a new time range refills it).
  clear() {
    this.xs = [];
    this.cols = this.keys.map(() => []);
    this.marks = [];
    if (this.plot) this.plot.setData(this.data());
  }

  // Forgets every series (the GPU charts, when another GPU is picked).
  reset() {
    this.keys = []; this.defs = []; this.cols = []; this.xs = []; this.marks = [];
    if (this.plot) { this.plot.destroy(); this.plot = null; }
  }

  resize() { if (this.plot) this.plot.setSize({ width: Math.max(200, this.el.clientWidth), height: 240 }); }
}

// A column's newest value, or null.
function newest(col) {
  for (let i = col.length - 1; i >= 0; i--) if (col[i] != null) return col[i];
  return null;
}

// The gaps of a series (uPlot's series.gaps, in canvas pixels): where its consecutive points
// lie more than three of its typical spacings apart (the median step, from at most 256 of them),
// the collector or producer was silent; the line is not drawn across it.
export function silences(u, sidx, idx0, idx1) {
  const xs = u.data[0], ys = u.data[sidx];
  const ts = [];
  for (let i = idx0; i <= idx1; i++) if (ys[i] != null) ts.push(xs[i]);
  if (ts.length < 3) return [];
  const stride = Math.max(1, Math.floor((ts.length - 1) / 256));
  const steps = [];
  for (let i = stride; i < ts.length; i += stride) steps.push(ts[i] - ts[i - 1]);
  steps.sort((a, b) => a - b);
  const limit = 3 * steps[Math.floor(steps.length / 2)];
  const gaps = [];
  for (let i = 1; i < ts.length; i++) {
    if (ts[i] - ts[i - 1] > limit) gaps.push([Math.round(u.valToPos(ts[i - 1], 'x', true)), Math.round(u.valToPos(ts[i], 'x', true))]);
  }
  return gaps;
}

// Round values for a logarithmic axis between min and max (both > 0): 1, 2 and 5 of each
// decade, or only the decades when those would be more than `most`.
export function roundLogTicks(min, max, most) {
  const out = [];
  for (const steps of [[1, 2, 5], [1]]) {
    out.length = 0;
    for (let e = Math.floor(Math.log10(min)); e <= Math.ceil(Math.log10(max)); e++) {
      for (const m of steps) {
        const v = Number((m * 10 ** e).toPrecision(1));
        if (v >= min && v <= max) out.push(v);
      }
    }
    if (out.length <= most) break;
  }
  return out;
}
// As uPlot's axis.splits: about one label per 70 px of the plot's width.
export const logSplits = (u, axisIdx, min, max) => roundLogTicks(min, max, Math.max(2, u.bbox.width / devicePixelRatio / 70));

// Axis text and grid readable on the light and the dark theme alike (grey, the grid translucent).
const AXIS = '#8e8e8e', GRID = 'rgba(142, 142, 142, 0.25)';
// Each axis as wide as its longest label measured in the axis' font, plus its tick and gap
// (15 px) and a margin, so "572.2 MiB" or "2000 MHz" is not cut at the edge.
const measure = typeof document === 'undefined' ? null : document.createElement('canvas').getContext('2d');
export const axisSize = (u, values, axisIdx) => {
  if (!values || !values.length) return 50;
  const font = u.axes[axisIdx] && u.axes[axisIdx].font;
  if (!measure || !font) return Math.ceil(Math.max(...values.map((v) => String(v).length)) * 8 + 24);
  measure.font = font[0];  // uPlot scales it by the pixel ratio
  return Math.ceil(Math.max(...values.map((v) => measure.measureText(String(v)).width)) / devicePixelRatio) + 24;
};
export const axis = (fmt, extra) => Object.assign({
  stroke: AXIS, grid: { stroke: GRID, width: 1 }, ticks: { stroke: GRID }, size: axisSize,
  values: (u, vals) => vals.map((v) => (v == null ? '' : fmt(v))),
}, extra || {});

// Round byte values between min and max: multiples of a power of two of B, KiB, MiB, GiB or
// TiB (…, 256 MiB, 512 MiB, 1 GiB, 2 GiB, …), the smallest step giving at most `most` ticks.
export function roundByteTicks(min, max, most) {
  if (!(max > min)) return [min];
  for (let unit = 1; unit <= 1024 ** 4; unit *= 1024) {
    for (let m = 1; m < 1024; m *= 2) {
      const step = m * unit;
      if ((max - min) / step > most) continue;
      const out = [];
      for (let v = Math.ceil(min / step) * step; v <= max; v += step) out.push(v);
      return out;
    }
  }
  return [min, max];
}
// A byte tick as people write it: "4 GiB", "1.5 GiB", "512 MiB" (no trailing zeros).
export const fmtByteTick = (v) => fmtBytes(v).replace(/\.?0+ /, (m) => (m.startsWith('.') ? ' ' : m))
  .replace(/(\.\d*[1-9])0+ /, '$1 ');
// A bytes axis: binary-round ticks about every 40 px of height.
export const bytesAxis = (extra) => axis(fmtByteTick, Object.assign({
  splits: (u, axisIdx, min, max) => roundByteTicks(min, max, Math.max(2, u.bbox.height / devicePixelRatio / 40)),
}, extra || {}));
// Time ticks on one line in the 24-hour clock, as precise as their spacing (`incr`, seconds):
// 14:05:30 under a minute, 14:05 under a day, else the date; midnight as its date.
export function timeTick(t, incr) {
  const d = new Date(t * 1000);
  const two = (n) => String(n).padStart(2, '0');
  const date = `${two(d.getMonth() + 1)}-${two(d.getDate())}`;
  if (incr >= 86400) return date;
  if (incr >= 60 && d.getHours() === 0 && d.getMinutes() === 0) return date;
  const hm = `${two(d.getHours())}:${two(d.getMinutes())}`;
  if (incr < 1) {
    // Ticks closer than a second: minutes, seconds and as many decimals as the step has
    // ("12:36.5", "12:36.25"), else two ticks a second apart would read the same.
    const decimals = Math.min(3, (String(Number(incr.toPrecision(3))).split('.')[1] || '').length);
    const s = d.getSeconds() + (t * 1000 - Math.floor(t) * 1000) / 1000;
    return `${two(d.getMinutes())}:${s.toFixed(decimals).padStart(decimals ? 3 + decimals : 2, '0')}`;
  }
  return incr < 60 ? `${hm}:${two(d.getSeconds())}` : hm;
}
// At least 72 px between ticks: room for "14:05:30" and a gap.
export const timeAxis = { stroke: AXIS, grid: { stroke: GRID, width: 1 }, ticks: { stroke: GRID }, space: 72,
  values: (u, splits, axisIdx, space, incr) => splits.map((t) => timeTick(t, incr)) };
