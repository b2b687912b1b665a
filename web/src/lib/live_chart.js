// LiveChart: one uPlot chart over a fixed set of series, pre-filled from the REST history at the
// dashboard's time range and appended to by the stream while the range is live; dragging across
// any chart picks a fixed span for all of them (LiveChart.onZoom); plus the shared axes.
/* global uPlot */

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
      scales: Object.assign({ x: { time: true } }, this.scales),
      legend: { live: true },
      // One cursor for every live chart: hovering a time on one shows the same time, and each
      // chart's values at it, on all of them. A drag picks a span for every chart (setSelect
      // below), not a zoom of this one.
      cursor: { sync: { key: CURSOR_SYNC_KEY }, drag: { x: true, y: false, setScale: false } },
      series: [{}].concat(order.map((i) => ({
        label: this.defs[i].label,
        scale: this.defs[i].scale,
        stroke: this.colorOf(this.keys[i]),
        width: this.defs[i].width || 1,
        value: (u, v) => this.defs[i].fmt(v),
        spanGaps: true,
        paths: this.defs[i].paths,
      }))),
      axes: this.axes,
      hooks: { setSelect: [(u) => {
        if (u.select.width < 4) return;
        const from = u.posToVal(u.select.left, 'x'), to = u.posToVal(u.select.left + u.select.width, 'x');
        u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
        if (LiveChart.onZoom) LiveChart.onZoom(from, to);
      }], draw: [(u) => {
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
    this.plot = new uPlot(opts, this.data(), this.el);
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

// Axis text and grid readable on the light and the dark theme alike (grey, the grid translucent).
const AXIS = '#8e8e8e', GRID = 'rgba(142, 142, 142, 0.25)';
export const axis = (fmt, extra) => Object.assign({
  stroke: AXIS, grid: { stroke: GRID, width: 1 }, ticks: { stroke: GRID }, size: 70,
  values: (u, vals) => vals.map(fmt),
}, extra || {});
export const timeAxis = { stroke: AXIS, grid: { stroke: GRID, width: 1 }, ticks: { stroke: GRID } };
