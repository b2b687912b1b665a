// Timeline view: a canvas track view of the kernel executions of a time window or a run, per
// device and stream, with each device's launch calls (host) above its streams, lines from a
// launch call to its kernel, and the idle gaps coloured by cause (waiting for the host / other).
// Drag pans, Shift+drag zooms to the dragged span, the wheel (and +/−, W/S) zooms around the
// pointer down to microseconds, A/D pan, a double click returns to the dashboard's range. An
// overview strip above the tracks shows the whole range (or run) with the window shown framed;
// a click or drag there moves the window. The axis counts from t₀, the window's start, named
// by its clock time. Level of detail comes from the server (GET /api/v1/timeline): buckets
// of busy time when the window holds many executions, raw executions when few; the view asks
// again a moment after it moves, for three widths around what is shown, and draws what it has
// meanwhile, so panning never waits on the network. The window and the run are kept in the URL
// (?tl_from=&tl_to= in ns, ?tl_run=). A multi-GPU job's devices are its ranks' track groups
// ("rank 1 · GPU 1"), on the one clock of the host, and each collective instance is a line
// through its ranks' kernels in the order they arrived, as Perfetto draws NCCL's flows.
import { esc } from '../lib/format.js';
import { fetchJson } from '../lib/api.js';
import { onThemeChange } from '../lib/theme.js';
import { setSearchParams } from '../lib/url.js';
import { AXIS_H, LABEL_W, draw, epochNs } from './timeline_draw.js';
import { hover } from './timeline_hover.js';

const MIN_SPAN_NS = 1000;  // zoomed in to a microsecond across the view at most
const REFETCH_MS = 120;    // at most one question to the server this often

export function createTimelineView({ range }) {
  const canvas = document.getElementById('timeline-canvas');
  const ovCanvas = document.getElementById('timeline-overview');
  // Times are Number ns relative to `base` (a BigInt epoch ns), exact to the nanosecond.
  const st = {
    base: null, a: 0, b: 0, data: null, shift: 0, layout: [], hover: null, shown: false, seq: 0,
    loads: 0, frames: [], maxRaw: null, run: new URLSearchParams(window.location.search).get('tl_run') || '',
  };
  // The overview strip: busy share per column over the whole range (or run), from one bucketed
  // answer; origin is epoch ns (BigInt), span and bucket ns.
  const ov = { busy: null, origin: 0n, span: 0, seq: 0 };
  // The view's parts, handed to the functions below, to its drawing (timeline_draw.js) and to its
  // pointer (timeline_hover.js). `timer`, `inFlight`, `pending` and `lastStart` pace the questions
  // to the server (see scheduleLoad); `frame` is the frame asked for; `pointerAt` where the
  // pointer last was over the tracks, as a share of the plot's width (for + and −).
  const view = {
    range, st, ov, canvas, ctx: canvas.getContext('2d'), ovCanvas, ovCtx: ovCanvas.getContext('2d'),
    tip: document.getElementById('timeline-tip'), info: document.getElementById('timeline-info'),
    runPick: document.getElementById('timeline-run'), empty: document.getElementById('timeline-empty'),
    timer: null, frame: 0, inFlight: false, pending: false, lastStart: 0, pointerAt: null,
  };
  wireOverview(view);
  wirePointer(view);
  // A live range moves on: its strip is read again every 10 s while shown.
  setInterval(() => { if (st.shown && !st.run && range.live) loadOverview(view); }, 10000);
  wireButtonsAndKeys(view);
  wireRuns(view);
  onThemeChange(() => draw(view));  // its colours are the theme's, read when painting

  const fromUrl = initialWindow();
  if (fromUrl) setWindow(st, ...fromUrl); else toRange(view);

  return {
    state: st,
    overview: ov,
    // The view shown or left: it loads only while shown.
    show(on) {
      st.shown = on;
      if (!on) { view.tip.hidden = true; return; }
      loadRuns(view);
      loadOverview(view);
      if (!covered(view)) load(view); else draw(view);
    },
    setWindow(from, to) { setWindow(st, BigInt(from), BigInt(to)); st.data = null; moved(view); },
    // A run's own span (the Runs view's "its timeline"), drawn when the view is shown.
    openRun(name) {
      const { runPick } = view;
      st.run = name;
      st.data = null;
      if (![...runPick.options].some((o) => o.value === name)) runPick.add(new Option(name, name));
      runPick.value = name;
      keepInUrl(st);
    },
    pan(px) {
      const dt = (px * (st.b - st.a)) / Math.max(1, canvas.clientWidth - LABEL_W);
      st.a -= dt;
      st.b -= dt;
      moved(view);
    },
    zoom: (factor, at) => zoom(view, factor, at),
  };
}

// The window from the URL, else the dashboard's range.
function initialWindow() {
  const p = new URLSearchParams(window.location.search);
  if (/^\d+$/.test(p.get('tl_from') || '') && /^\d+$/.test(p.get('tl_to') || '')) {
    const from = BigInt(p.get('tl_from')), to = BigInt(p.get('tl_to'));
    if (to > from) return [from, to];
  }
  return null;
}
function toRange({ st, range }) {
  const [from, to] = range.bounds();
  st.base = BigInt(Math.round(from * 1e3)) * 1000000n;
  st.a = 0;
  st.b = Math.round((to - from) * 1e9);
}
function setWindow(st, from, to) {  // BigInt epoch ns
  st.base = from;
  st.a = 0;
  st.b = Number(to - from);
}

function keepInUrl(st) {
  setSearchParams({ tl_from: st.run ? null : epochNs(st, st.a).toString(), tl_to: st.run ? null : epochNs(st, st.b).toString(),
    tl_run: st.run || null });
}

// Asks for three widths around the view at about a bucket per pixel.
async function load(view) {
  const seq = ++view.st.seq;
  view.inFlight = true;
  view.lastStart = performance.now();
  try {
    await answer(view, seq);
  } finally {
    view.inFlight = false;
    if (view.pending) {  // the view moved on meanwhile
      view.pending = false;
      if (!covered(view)) scheduleLoad(view);
    }
  }
}
async function answer(view, seq) {
  const { st } = view;
  const w = st.b - st.a;
  const width = Math.max(100, view.canvas.clientWidth - LABEL_W);
  let q = `buckets=${Math.min(20000, width * 3)}` + (st.maxRaw != null ? `&max_raw=${st.maxRaw}` : '') +
    (st.run ? `&run=${encodeURIComponent(st.run)}` : '');
  if (!st.run || st.data) q += `&from=${epochNs(st, st.a - w)}&to=${epochNs(st, st.b + w)}`;  // else the whole run
  let r;
  try {
    r = await fetchJson(`/api/v1/timeline?${q}`);
  } catch (e) {
    if (seq === st.seq) view.info.textContent = `Timeline unavailable: ${e.message}`;
    return;
  }
  if (seq !== st.seq) return;  // a newer answer is on its way
  st.loads++;
  if (st.run && !st.data) {  // a whole run: its own span
    setWindow(st, BigInt(r.origin), BigInt(r.origin) + BigInt(r.span_ns));
  }
  st.data = prepare(r);
  st.shift = Number(BigInt(r.origin) - st.base);
  draw(view);
}
// The whole range (or the run) in as many buckets as the strip has columns, never raw; then,
// as Perfetto frames a trace by its events, again over the stretch that holds executions when
// that is under half of it (a few seconds of kernels in a week are more than one column).
async function loadOverview(view) {
  const { st, ov } = view;
  const seq = ++ov.seq;
  const columns = Math.max(50, Math.min(2000, view.ovCanvas.clientWidth - LABEL_W));
  let scope;
  if (st.run) {
    scope = `run=${encodeURIComponent(st.run)}`;
  } else {
    const [from, to] = view.range.bounds();
    scope = `from=${BigInt(Math.round(from * 1e3)) * 1000000n}&to=${BigInt(Math.round(to * 1e3)) * 1000000n}`;
  }
  const ask = async (where) => {
    try {
      return await fetchJson(`/api/v1/timeline?buckets=${columns}&max_raw=0&${where}`);
    } catch (e) {
      return null;  // the strip stays as it was; the tracks say what failed
    }
  };
  let r = await ask(scope);
  if (!r || seq !== ov.seq) return;
  let busy = busyShare(r);
  let framed = false;
  const first = busy.findIndex((v) => v > 0);
  let last = busy.length - 1;
  while (last >= 0 && !(busy[last] > 0)) last--;
  if (first >= 0 && (last - first + 1) * 2 < busy.length) {
    const origin = BigInt(r.origin), bucket = BigInt(Math.round(r.bucket_ns));
    const from = origin + BigInt(first) * bucket, to = origin + BigInt(last + 1) * bucket;
    const margin = (to - from) / 20n;
    const refined = await ask(`${st.run ? scope + '&' : ''}from=${from - margin}&to=${to + margin}`);
    if (seq !== ov.seq) return;
    if (refined) { r = refined; busy = busyShare(r); framed = true; }
  }
  // `framed`: the strip holds the stretch with executions, not the whole range (it says so).
  Object.assign(ov, { busy, origin: BigInt(r.origin), span: r.span_ns, framed });
  draw(view);
}
// Per bucket, the share of the tracks' time busy (0–1).
function busyShare(r) {
  if (r.mode === 'raw') return new Float64Array(0);
  const n = Math.max(0, ...r.tracks.map((t) => t.busy.length));
  const busy = new Float64Array(n);
  for (const t of r.tracks) for (let i = 0; i < t.busy.length; i++) busy[i] += t.busy[i];
  const tracks = Math.max(1, r.tracks.length);
  for (let i = 0; i < n; i++) busy[i] = Math.min(1, busy[i] / (r.bucket_ns * tracks));
  return busy;
}

// At most one question in flight and one every REFETCH_MS, so a long drag keeps asking as it
// goes (a pause alone would leave it blank past what was loaded).
function scheduleLoad(view) {
  if (view.inFlight) { view.pending = true; return; }
  clearTimeout(view.timer);
  view.timer = setTimeout(() => load(view), Math.max(0, REFETCH_MS - (performance.now() - view.lastStart)));
}
// Whether the data in hand covers the view at its detail.
function covered({ st, canvas }) {
  const d = st.data;
  if (!d) return false;
  if (st.a < st.shift || st.b > st.shift + d.span) return false;  // the answer spans [shift, shift + span]
  if (d.raw) return true;
  const perPx = (st.b - st.a) / Math.max(1, canvas.clientWidth - LABEL_W);
  return d.bucket <= perPx * 1.5;
}

// The answer laid out: per device a launch row, then its streams.
function prepare(r) {
  const devices = new Map();
  for (const t of r.tracks) {
    if (!devices.has(t.device)) devices.set(t.device, []);
    devices.get(t.device).push(t);
  }
  if (r.mode === 'raw') for (const t of r.tracks) t.names = t.name.map((i) => r.names[i]);
  const ranks = new Map((r.ranks || []).map((k) => [k.device, k.rank]));
  // Each collective by its ranks' kernels (device and start), for the tooltip.
  const byKernel = new Map();
  for (const c of r.collectives || []) for (const [device, t] of c.at) byKernel.set(`${device}|${t}`, c);
  return { byKernel, raw: r.mode === 'raw', span: r.span_ns, bucket: r.bucket_ns, names: r.names, devices, events: r.events,
    causes: r.gap_causes, ops: r.operators || null, ranks, collectives: r.collectives || [] };
}

function moved(view) {
  draw(view);
  keepInUrl(view.st);
  if (!covered(view)) scheduleLoad(view);
}
function zoom(view, factor, at = 0.5) {
  const { st } = view;
  const span = st.b - st.a;
  const next = Math.max(MIN_SPAN_NS, span * factor);
  const pivot = st.a + span * at;
  st.a = pivot - (pivot - st.a) * (next / span);
  st.b = st.a + next;
  moved(view);
}

// The window shown, keeping its width, centred where the strip was clicked.
function centreFromOverview(view, clientX) {
  const { st, ov } = view;
  if (!ov.busy || ov.span <= 0) return;
  const r = view.ovCanvas.getBoundingClientRect();
  const share = Math.min(1, Math.max(0, (clientX - r.left - LABEL_W) / Math.max(1, r.width - LABEL_W)));
  const centre = Number(ov.origin - st.base) + share * ov.span;
  const half = (st.b - st.a) / 2;
  st.a = centre - half;
  st.b = centre + half;
  moved(view);
}
function wireOverview(view) {
  let ovDrag = false;
  view.ovCanvas.addEventListener('mousedown', (e) => { ovDrag = true; centreFromOverview(view, e.clientX); e.preventDefault(); });
  window.addEventListener('mousemove', (e) => { if (ovDrag) centreFromOverview(view, e.clientX); });
  window.addEventListener('mouseup', () => { ovDrag = false; });
}

// Pointer: drag pans, wheel zooms around the pointer, double click goes back to the range.
function wirePointer(view) {
  const { st, canvas, ctx, tip } = view;
  let drag = null;
  canvas.addEventListener('mousedown', (e) => {
    drag = { x: e.clientX, a: st.a, b: st.b, select: e.shiftKey };
    e.preventDefault();
  });
  window.addEventListener('mousemove', (e) => {
    const r = canvas.getBoundingClientRect();
    if (drag && drag.select) {  // Shift+drag: the span to zoom to, shaded
      draw(view);
      requestAnimationFrame(() => {
        const x0 = Math.max(LABEL_W, Math.min(drag.x, e.clientX) - r.left), x1 = Math.min(r.width, Math.max(drag.x, e.clientX) - r.left);
        ctx.fillStyle = 'rgba(87, 148, 242, 0.25)';
        ctx.fillRect(x0, AXIS_H, Math.max(0, x1 - x0), r.height - AXIS_H);
      });
      return;
    }
    if (drag) {
      const perPx = (drag.b - drag.a) / Math.max(1, r.width - LABEL_W);
      const dt = (e.clientX - drag.x) * perPx;
      st.a = drag.a - dt;
      st.b = drag.b - dt;
      moved(view);
      return;
    }
    if (!st.shown || e.clientY < r.top || e.clientY > r.bottom || e.clientX < r.left || e.clientX > r.right) {
      if (st.hover) { st.hover = null; tip.hidden = true; draw(view); }
      return;
    }
    hover(view, e, r);
    draw(view);
  });
  // A click (no drag) on an execution opens its kernel in the Kernels view.
  window.addEventListener('mouseup', (e) => {
    const click = drag && Math.abs(e.clientX - drag.x) < 3;
    if (drag && drag.select && !click) {
      const r = canvas.getBoundingClientRect();
      const plotW = Math.max(1, r.width - LABEL_W);
      const at = (cx) => st.a + (Math.min(1, Math.max(0, (cx - r.left - LABEL_W) / plotW))) * (st.b - st.a);
      const a = at(Math.min(drag.x, e.clientX)), b = at(Math.max(drag.x, e.clientX));
      drag = null;
      if (b - a >= MIN_SPAN_NS) { st.a = a; st.b = b; }
      moved(view);
      return;
    }
    drag = null;
    if (click && st.hover && st.hover.raw && !st.hover.op) {
      window.dispatchEvent(new CustomEvent('perfscope:open-kernel', { detail: st.hover.track.names[st.hover.i] }));
    }
  });
  canvas.addEventListener('wheel', (e) => {
    e.preventDefault();
    const r = canvas.getBoundingClientRect();
    const f = Math.min(1, Math.max(0, (e.clientX - r.left - LABEL_W) / (r.width - LABEL_W)));
    zoom(view, Math.pow(1.0015, e.deltaY), f);
  }, { passive: false });
  canvas.addEventListener('dblclick', () => {
    st.run = '';
    view.runPick.value = '';
    toRange(view);
    st.data = null;
    moved(view);
    loadOverview(view);
  });
}

function wireButtonsAndKeys(view) {
  const { st } = view;
  // The buttons zoom around where the pointer last was over the tracks (the middle before that).
  document.getElementById('timeline-zoom-in').addEventListener('click', () => zoom(view, 0.5, view.pointerAt ?? 0.5));
  document.getElementById('timeline-zoom-out').addEventListener('click', () => zoom(view, 2, view.pointerAt ?? 0.5));
  // Perfetto's keys: W/S zoom around the pointer, A/D pan by a tenth of the window.
  window.addEventListener('keydown', (e) => {
    if (!st.shown || e.ctrlKey || e.metaKey || e.altKey || /^(INPUT|SELECT|TEXTAREA)$/.test(document.activeElement?.tagName)) return;
    const k = e.key.toLowerCase();
    if (k === 'w') zoom(view, 0.8, view.pointerAt ?? 0.5);
    else if (k === 's') zoom(view, 1.25, view.pointerAt ?? 0.5);
    else if (k === 'a' || k === 'd') {
      const dt = (st.b - st.a) / 10 * (k === 'a' ? -1 : 1);
      st.a += dt;
      st.b += dt;
      moved(view);
    }
  });
}

// Runs: a run's executions over its own span.
async function loadRuns({ st, runPick }) {
  try {
    const runs = (await fetchJson('/api/v1/runs?limit=50')).runs || [];
    runPick.innerHTML = '<option value="">the time range</option>' +
      runs.map((r) => `<option value="${esc(r.name)}">run ${esc(r.name)}</option>`).join('');
    runPick.value = runs.some((r) => r.name === st.run) ? st.run : '';
  } catch (e) { /* the picker keeps the time range */ }
}
// The run picked, or the dashboard's range moved (followed unless a run is shown).
function wireRuns(view) {
  const { st, runPick } = view;
  runPick.addEventListener('change', () => {
    st.run = runPick.value;
    st.data = null;
    if (!st.run) toRange(view);
    keepInUrl(st);
    load(view);
    loadOverview(view);
  });
  view.range.onChange(() => {
    if (st.run) return;
    toRange(view);
    st.data = null;
    if (st.shown) { moved(view); loadOverview(view); }
  });
}
