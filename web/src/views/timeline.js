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
import { esc, fmtBytes, fmtDuration, fmtSI, shortKernelName } from '../lib/format.js';
import { fetchJson } from '../lib/api.js';
import { setSearchParams } from '../lib/url.js';

const LABEL_W = 132;       // px for track names
const AXIS_H = 22;
const LAUNCH_H = 14;       // a device's launch-call row
const STREAM_H = 30;       // a stream's row: kernels above, idle gaps in the band below
const GAP_BAND = 6;
const MIN_SPAN_NS = 1000;  // zoomed in to a microsecond across the view at most
const REFETCH_MS = 120;    // at most one question to the server this often
const LINK_LIMIT = 400;    // launch→kernel lines drawn for every execution when at most this many show
const COLLECTIVE_LINE = 'rgba(255, 152, 48, 0.75)';  // the run page's "communication" colour
const COPY_COLOR = '#5794f2', SET_COLOR = '#8ab8ff', HOST_WAIT = 'rgba(242, 73, 92, 0.85)', OTHER_IDLE = 'rgba(142, 142, 142, 0.35)';

// A stable colour per kernel name (hue from its hash); copies and memsets their own.
const colors = new Map();
function colorOf(name) {
  if (/^memcpy/i.test(name)) return COPY_COLOR;
  if (/^memset/i.test(name)) return SET_COLOR;
  let c = colors.get(name);
  if (!c) {
    let h = 2166136261;
    for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 16777619);
    c = `hsl(${(h >>> 0) % 360}, 55%, 55%)`;
    colors.set(name, c);
  }
  return c;
}

// The first index whose value is ≥ x in an ascending array.
function lowerBound(arr, x) {
  let lo = 0, hi = arr.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (arr[mid] < x) lo = mid + 1; else hi = mid;
  }
  return lo;
}

// "+1.25 ms" style tick text for an offset in ns.
const fmtNs = (ns) => fmtDuration(ns / 1e6);
// An offset with its sign: "+1.25 ms", "−125 µs".
const signedNs = (ns) => (ns < 0 ? '−' : '+') + fmtNs(Math.abs(ns));
// A CUDA device by its ordinal ("GPU 0"); other devices (a CPU stand-in) by their own name.
const deviceName = (d) => (/^\d+$/.test(d) ? `GPU ${d}` : d);

// Clock time to the millisecond of an epoch-ns BigInt: "14:03:27.125".
function clockOf(ns) {
  const d = new Date(Number(ns / 1000000n));
  const two = (n) => String(n).padStart(2, '0');
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}.${String(d.getMilliseconds()).padStart(3, '0')}`;
}

export function createTimelineView({ range }) {
  const canvas = document.getElementById('timeline-canvas');
  const ovCanvas = document.getElementById('timeline-overview');
  const ovCtx = ovCanvas.getContext('2d');
  const tip = document.getElementById('timeline-tip');
  const info = document.getElementById('timeline-info');
  const runPick = document.getElementById('timeline-run');
  const empty = document.getElementById('timeline-empty');
  const ctx = canvas.getContext('2d');
  // Times are Number ns relative to `base` (a BigInt epoch ns), exact to the nanosecond.
  const st = {
    base: null, a: 0, b: 0, data: null, shift: 0, layout: [], hover: null, shown: false, seq: 0,
    loads: 0, frames: [], maxRaw: null, run: new URLSearchParams(window.location.search).get('tl_run') || '',
  };
  let timer = null, frame = 0, inFlight = false, pending = false, lastStart = 0;
  // The overview strip: busy share per column over the whole range (or run), from one bucketed
  // answer; origin is epoch ns (BigInt), span and bucket ns.
  const ov = { busy: null, origin: 0n, span: 0, seq: 0 };
  // Where the pointer last was over the tracks, as a share of the plot's width (for + and −).
  let pointerAt = null;

  // The window from the URL, else the dashboard's range.
  function initialWindow() {
    const p = new URLSearchParams(window.location.search);
    if (/^\d+$/.test(p.get('tl_from') || '') && /^\d+$/.test(p.get('tl_to') || '')) {
      const from = BigInt(p.get('tl_from')), to = BigInt(p.get('tl_to'));
      if (to > from) return [from, to];
    }
    return null;
  }
  function toRange() {
    const [from, to] = range.bounds();
    st.base = BigInt(Math.round(from * 1e3)) * 1000000n;
    st.a = 0;
    st.b = Math.round((to - from) * 1e9);
  }
  function setWindow(from, to) {  // BigInt epoch ns
    st.base = from;
    st.a = 0;
    st.b = Number(to - from);
  }
  const abs = (rel) => st.base + BigInt(Math.round(rel));

  function keepInUrl() {
    setSearchParams({ tl_from: st.run ? null : abs(st.a).toString(), tl_to: st.run ? null : abs(st.b).toString(),
      tl_run: st.run || null });
  }

  // Asks for three widths around the view at about a bucket per pixel.
  async function load() {
    const seq = ++st.seq;
    inFlight = true;
    lastStart = performance.now();
    try {
      await answer(seq);
    } finally {
      inFlight = false;
      if (pending) {  // the view moved on meanwhile
        pending = false;
        if (!covered()) scheduleLoad();
      }
    }
  }
  async function answer(seq) {
    const w = st.b - st.a;
    const width = Math.max(100, canvas.clientWidth - LABEL_W);
    let q = `buckets=${Math.min(20000, width * 3)}` + (st.maxRaw != null ? `&max_raw=${st.maxRaw}` : '') +
      (st.run ? `&run=${encodeURIComponent(st.run)}` : '');
    if (!st.run || st.data) q += `&from=${abs(st.a - w)}&to=${abs(st.b + w)}`;  // else the whole run
    let r;
    try {
      r = await fetchJson(`/api/v1/timeline?${q}`);
    } catch (e) {
      if (seq === st.seq) info.textContent = `Timeline unavailable: ${e.message}`;
      return;
    }
    if (seq !== st.seq) return;  // a newer answer is on its way
    st.loads++;
    if (st.run && !st.data) {  // a whole run: its own span
      setWindow(BigInt(r.origin), BigInt(r.origin) + BigInt(r.span_ns));
    }
    st.data = prepare(r);
    st.shift = Number(BigInt(r.origin) - st.base);
    draw();
  }
  // The whole range (or the run) in as many buckets as the strip has columns, never raw; then,
  // as Perfetto frames a trace by its events, again over the stretch that holds executions when
  // that is under half of it (a few seconds of kernels in a week are more than one column).
  async function loadOverview() {
    const seq = ++ov.seq;
    const columns = Math.max(50, Math.min(2000, ovCanvas.clientWidth - LABEL_W));
    let scope;
    if (st.run) {
      scope = `run=${encodeURIComponent(st.run)}`;
    } else {
      const [from, to] = range.bounds();
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
    draw();
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
  function scheduleLoad() {
    if (inFlight) { pending = true; return; }
    clearTimeout(timer);
    timer = setTimeout(load, Math.max(0, REFETCH_MS - (performance.now() - lastStart)));
  }
  // Whether the data in hand covers the view at its detail.
  function covered() {
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

  function resize() {
    const dpr = window.devicePixelRatio || 1;
    let rows = 0;
    if (st.data) for (const tracks of st.data.devices.values()) rows += LAUNCH_H + tracks.length * STREAM_H;
    if (st.data && st.data.ops) rows += STREAM_H;
    const h = AXIS_H + Math.max(rows, 60) + 4;
    const w = canvas.clientWidth;
    if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
      canvas.width = Math.round(w * dpr);
      canvas.height = Math.round(h * dpr);
      canvas.style.height = h + 'px';
    }
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    return [w, h];
  }

  function draw() {
    cancelAnimationFrame(frame);
    frame = requestAnimationFrame(paint);
  }

  // Each frame's start and the time its painting took (kept for the bench, at most 2000).
  function paint(now) {
    if (!st.shown) return;
    const t0 = performance.now();
    paintTracks();
    paintOverview();
    if (st.frames.length < 2000) st.frames.push({ at: now, ms: performance.now() - t0 });
  }

  function paintTracks() {
    const [w, h] = resize();
    const css = getComputedStyle(document.documentElement);
    const text = css.getPropertyValue('--text').trim() || '#ddd';
    const muted = css.getPropertyValue('--muted').trim() || '#888';
    const border = css.getPropertyValue('--border').trim() || '#333';
    ctx.clearRect(0, 0, w, h);
    ctx.font = '11px system-ui, sans-serif';
    const plotW = w - LABEL_W;
    const span = st.b - st.a;
    const x = (t) => LABEL_W + ((t - st.a) / span) * plotW;
    drawAxis(w, plotW, span, text, muted, border);
    const d = st.data;
    st.layout = [];
    empty.hidden = !d || d.events > 0 || !!d.ops;
    if (!d) return;
    ctx.save();
    ctx.beginPath();
    ctx.rect(LABEL_W, AXIS_H, plotW, h - AXIS_H);
    ctx.clip();
    let y = AXIS_H;
    let visible = 0;
    if (d.ops) {  // the host's operators (an imported trace's CPU ops) above the devices
      st.layout.push({ kind: 'ops', y, h: STREAM_H });
      if (d.ops.mode === 'raw') drawOps(d.ops, y, x); else drawOpBuckets(d.ops, y, x);
      y += STREAM_H;
    }
    for (const [device, tracks] of d.devices) {
      const launchY = y;
      st.layout.push({ kind: 'launch', device, y, h: LAUNCH_H, tracks });
      y += LAUNCH_H;
      for (const t of tracks) {
        st.layout.push({ kind: 'stream', device, track: t, y, h: STREAM_H });
        visible += d.raw ? drawRaw(t, y, x, launchY) : drawBuckets(t, y, x, launchY);
        y += STREAM_H;
      }
    }
    if (d.raw && visible <= LINK_LIMIT) drawLinks(x, 'rgba(140,140,140,0.5)');
    st.collectivesHidden = false;
    st.collectivesDrawn = d.raw ? drawCollectives(x) : 0;
    if (st.hover && st.hover.raw && !st.hover.op) drawLink(st.hover.track, st.hover.i, st.hover.launchY, st.hover.y, x, text);
    ctx.restore();
    // Track names.
    ctx.fillStyle = text;
    for (const row of st.layout) {
      ctx.fillStyle = row.kind === 'launch' ? muted : text;
      const rank = d.ranks.get(row.device);
      const label = row.kind === 'ops' ? 'host · operators'
        : rank != null ? (row.kind === 'launch' ? `rank ${rank} · ${deviceName(row.device)}` : `rank ${rank} · stream ${row.track.stream}`)
        : `${deviceName(row.device)} · ${row.kind === 'launch' ? 'launch calls' : 'stream ' + row.track.stream}`;
      ctx.fillText(label, 4, row.y + (row.kind === 'launch' ? 11 : 17), LABEL_W - 8);
      ctx.strokeStyle = border;
      ctx.beginPath();
      ctx.moveTo(0, row.y + row.h - 0.5);
      ctx.lineTo(w, row.y + row.h - 0.5);
      ctx.stroke();
    }
    // What was read spans more than the window shown (panning stays smooth): say both.
    info.textContent = `showing ${fmtNs(span)} · ${fmtSI(d.events)} executions read over ${fmtNs(d.span)} around it` +
      ` · ${d.raw ? 'each execution' : `buckets of ${fmtNs(d.bucket)}`}` +
      (d.raw && st.collectivesHidden ? ' · zoom in to see each collective linked across its ranks' : '');
  }

  // The strip: busy share as columns, the window shown framed and the rest shaded.
  function paintOverview() {
    const dpr = window.devicePixelRatio || 1;
    const w = ovCanvas.clientWidth, h = ovCanvas.clientHeight || 30;
    if (ovCanvas.width !== Math.round(w * dpr) || ovCanvas.height !== Math.round(h * dpr)) {
      ovCanvas.width = Math.round(w * dpr);
      ovCanvas.height = Math.round(h * dpr);
    }
    ovCtx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ovCtx.clearRect(0, 0, w, h);
    const css = getComputedStyle(document.documentElement);
    const muted = css.getPropertyValue('--muted').trim() || '#888';
    const border = css.getPropertyValue('--border').trim() || '#333';
    const link = css.getPropertyValue('--link').trim() || '#5794f2';
    ovCtx.font = '11px system-ui, sans-serif';
    ovCtx.fillStyle = muted;
    ovCtx.fillText(ov.framed ? 'where kernels ran' : st.run ? `run ${st.run}` : 'whole range', 4, h / 2 + 4, LABEL_W - 8);
    const plotW = w - LABEL_W;
    ovCtx.strokeStyle = border;
    ovCtx.strokeRect(LABEL_W + 0.5, 0.5, plotW - 1, h - 1);
    if (!ov.busy || ov.span <= 0) return;
    const n = ov.busy.length;
    ovCtx.fillStyle = link;
    for (let i = 0; i < n; i++) {
      if (ov.busy[i] <= 0) continue;
      const bh = Math.max(1, ov.busy[i] * (h - 4));
      ovCtx.fillRect(LABEL_W + (i / n) * plotW, h - 2 - bh, Math.max(1, plotW / n), bh);
    }
    const x = (ns) => LABEL_W + (Number(ns - ov.origin) / ov.span) * plotW;
    const x0 = Math.max(LABEL_W, x(abs(st.a))), x1 = Math.min(w, Math.max(x0 + 2, x(abs(st.b))));
    ovCtx.fillStyle = 'rgba(128, 128, 128, 0.25)';
    ovCtx.fillRect(LABEL_W, 0, Math.max(0, x0 - LABEL_W), h);
    ovCtx.fillRect(x1, 0, Math.max(0, w - x1), h);
    ovCtx.strokeStyle = css.getPropertyValue('--text').trim() || '#ddd';
    ovCtx.lineWidth = 1.5;
    ovCtx.strokeRect(x0 + 0.75, 0.75, Math.max(1, x1 - x0 - 1.5), h - 1.5);
    ovCtx.lineWidth = 1;
  }
  // The window shown, keeping its width, centred where the strip was clicked.
  function centreFromOverview(clientX) {
    if (!ov.busy || ov.span <= 0) return;
    const r = ovCanvas.getBoundingClientRect();
    const share = Math.min(1, Math.max(0, (clientX - r.left - LABEL_W) / Math.max(1, r.width - LABEL_W)));
    const centre = Number(ov.origin - st.base) + share * ov.span;
    const half = (st.b - st.a) / 2;
    st.a = centre - half;
    st.b = centre + half;
    moved();
  }
  let ovDrag = false;
  ovCanvas.addEventListener('mousedown', (e) => { ovDrag = true; centreFromOverview(e.clientX); e.preventDefault(); });
  window.addEventListener('mousemove', (e) => { if (ovDrag) centreFromOverview(e.clientX); });
  window.addEventListener('mouseup', () => { ovDrag = false; });

  function drawAxis(w, plotW, span, text, muted, border) {
    ctx.fillStyle = muted;
    // Ticks at 1, 2 or 5 × 10^k ns, about every 110 px.
    const raw = (span / plotW) * 110;
    const pow = 10 ** Math.floor(Math.log10(raw));
    const step = [1, 2, 5, 10].map((m) => m * pow).find((s) => s >= raw);
    ctx.strokeStyle = border;
    for (let t = Math.ceil(st.a / step) * step; t <= st.b; t += step) {
      const px = LABEL_W + ((t - st.a) / span) * plotW;
      ctx.beginPath();
      ctx.moveTo(px + 0.5, AXIS_H - 6);
      ctx.lineTo(px + 0.5, AXIS_H);
      ctx.stroke();
      ctx.fillText(t === Math.ceil(st.a / step) * step && t - st.a < step / 100 ? 't₀' : '+' + fmtNs(t - st.a), px + 3, 12);
    }
    // The origin the offsets count from, by its clock time.
    ctx.fillStyle = text;
    st.origin = `t₀ ${clockOf(abs(st.a))}`;  // drawn, and kept: a canvas's text cannot be read back
    ctx.fillText(st.origin, 4, 12, LABEL_W - 8);
  }

  // Raw executions: sub-pixel ones merged into one-pixel columns; the gap before each in the
  // band below by cause; launch calls in the device's row.
  function drawRaw(t, y, x, launchY) {
    const s = st.shift;
    const first = Math.max(0, lowerBound(t.end, st.a - s));
    let last = first;
    let lastCol = -1;
    for (let i = first; i < t.start.length; i++) {
      const start = t.start[i] + s;
      if (start > st.b) break;
      last = i;
      const x0 = x(start), x1 = x(t.end[i] + s);
      if (t.gap[i] === 1 || t.gap[i] === 3) {
        const g0 = x(start - t.gap_ns[i]);
        ctx.fillStyle = t.gap[i] === 1 ? HOST_WAIT : OTHER_IDLE;
        ctx.fillRect(g0, y + STREAM_H - GAP_BAND - 1, Math.max(1, x0 - g0), GAP_BAND);
      }
      if (x1 - x0 < 1) {
        const col = Math.floor(x0);
        if (col === lastCol) continue;
        lastCol = col;
        ctx.fillStyle = colorOf(t.names[i]);
        ctx.fillRect(col, y + 3, 1, STREAM_H - GAP_BAND - 6);
      } else {
        ctx.fillStyle = colorOf(t.names[i]);
        ctx.fillRect(x0, y + 3, Math.max(1, x1 - x0 - (x1 - x0 > 3 ? 1 : 0)), STREAM_H - GAP_BAND - 6);
        if (x1 - x0 > 40) {
          ctx.fillStyle = '#111';
          ctx.fillText(shortKernelName(t.names[i]), Math.max(x0, LABEL_W) + 3, y + 15, x1 - Math.max(x0, LABEL_W) - 6);
        }
      }
      const ls = t.launch_start[i], le = t.launch_end[i];
      if (ls != null && le != null) {
        const l0 = x(ls + s), l1 = x(le + s);
        ctx.fillStyle = 'rgba(184, 119, 217, 0.8)';
        ctx.fillRect(l0, launchY + 3, Math.max(1, l1 - l0), LAUNCH_H - 6);
      }
    }
    return t.start.length ? last - first + 1 : 0;
  }

  // Operators one by one: sub-pixel ones merged into columns, names on the wide ones.
  function drawOps(o, y, x) {
    const s = st.shift;
    let lastCol = -1;
    for (let i = Math.max(0, lowerBound(o.start, st.a - s - (st.b - st.a))); i < o.start.length; i++) {
      const start = o.start[i] + s;
      if (start > st.b) break;
      if (o.end[i] + s < st.a) continue;
      const x0 = x(start), x1 = x(o.end[i] + s);
      ctx.fillStyle = colorOf(o.names[o.name[i]]);
      if (x1 - x0 < 1) {
        const col = Math.floor(x0);
        if (col === lastCol) continue;
        lastCol = col;
        ctx.fillRect(col, y + 3, 1, STREAM_H - 8);
        continue;
      }
      ctx.fillRect(x0, y + 3, Math.max(1, x1 - x0 - (x1 - x0 > 3 ? 1 : 0)), STREAM_H - 8);
      if (x1 - x0 > 40) {
        ctx.fillStyle = '#111';
        ctx.fillText(o.names[o.name[i]], Math.max(x0, LABEL_W) + 3, y + 17, x1 - Math.max(x0, LABEL_W) - 6);
      }
    }
  }
  function drawOpBuckets(o, y, x) {
    const barH = STREAM_H - 8;
    const first = Math.max(0, Math.floor((st.a - st.shift) / o.bucket_ns) - 1);
    const last = Math.min(o.busy.length - 1, Math.ceil((st.b - st.shift) / o.bucket_ns));
    ctx.fillStyle = 'rgba(184, 119, 217, 0.9)';
    for (let i = first; i <= last; i++) {
      const share = Math.min(1, o.busy[i] / o.bucket_ns);
      if (share <= 0) continue;
      const x0 = x(i * o.bucket_ns + st.shift), x1 = x((i + 1) * o.bucket_ns + st.shift);
      const bh = Math.max(1, share * barH);
      ctx.fillRect(x0, y + 3 + barH - bh, Math.max(1, x1 - x0), bh);
    }
  }

  function drawLink(t, i, launchY, y, x, color) {
    const le = t.launch_end[i];
    if (le == null) return;
    ctx.strokeStyle = color;
    ctx.lineWidth = 1;
    ctx.beginPath();
    ctx.moveTo(x(le + st.shift), launchY + LAUNCH_H - 3);
    ctx.lineTo(x(t.start[i] + st.shift), y + 3);
    ctx.stroke();
  }
  function drawLinks(x, color) {
    for (const row of st.layout) {
      if (row.kind !== 'stream') continue;
      const launch = st.layout.find((r) => r.kind === 'launch' && r.device === row.device);
      const t = row.track;
      const first = lowerBound(t.end, st.a - st.shift);
      for (let i = first; i < t.start.length && t.start[i] + st.shift <= st.b; i++) drawLink(t, i, launch.y, row.y, x, color);
    }
  }

  // Where a rank's collective kernel starting at `t` (relative to the answer's origin) is drawn:
  // its stream's row and its index there, or null.
  function kernelAt(device, t) {
    for (const row of st.layout) {
      if (row.kind !== 'stream' || row.device !== device) continue;
      const i = lowerBound(row.track.start, t);
      if (i < row.track.start.length && row.track.start[i] === t) return { row, i };
    }
    return null;
  }
  // Each collective instance in view: a line from each rank's kernel to the next to arrive's,
  // with a dot where each joined. The one hovered is drawn bold. Returns how many were drawn.
  function drawCollectives(x) {
    const d = st.data, s = st.shift;
    // At most one line per six pixels of the plot (and LINK_LIMIT): denser, they hide the kernels.
    const limit = Math.min(LINK_LIMIT, Math.floor((canvas.clientWidth - LABEL_W) / 6));
    let drawn = 0;
    for (const c of d.collectives) {
      const first = c.at[0][1] + s, last = c.at[c.at.length - 1][1] + s;
      if (last < st.a || first > st.b) continue;
      if (++drawn > limit) continue;  // counted, not resolved: too many to draw legibly
      const points = c.at.map(([device, t]) => kernelAt(device, t)).filter(Boolean);
      if (points.length < 2) { --drawn; continue; }
      const hovered = st.hover && st.hover.collective === c;
      ctx.strokeStyle = COLLECTIVE_LINE;
      ctx.fillStyle = COLLECTIVE_LINE;
      ctx.lineWidth = hovered ? 2.5 : 1;
      ctx.beginPath();
      points.forEach(({ row, i }, k) => {
        const px = x(row.track.start[i] + s), py = row.y + STREAM_H / 2 - 2;
        if (k === 0) ctx.moveTo(px, py); else ctx.lineTo(px, py);
      });
      ctx.stroke();
      for (const { row, i } of points) {
        ctx.beginPath();
        ctx.arc(x(row.track.start[i] + s), row.y + STREAM_H / 2 - 2, hovered ? 3 : 2, 0, 2 * Math.PI);
        ctx.fill();
      }
    }
    ctx.lineWidth = 1;
    st.collectivesHidden = drawn > limit;
    return drawn <= limit ? drawn : 0;
  }

  // Buckets: a column per bucket, its height the busy share, its colour the kernel that took
  // most of it; host wait and other idle in the band below; launch-call share in the device's row.
  function drawBuckets(t, y, x, launchY) {
    const d = st.data;
    const n = t.busy.length;
    const barH = STREAM_H - GAP_BAND - 6;
    const first = Math.max(0, Math.floor((st.a - st.shift) / d.bucket) - 1);
    const lastB = Math.min(n - 1, Math.ceil((st.b - st.shift) / d.bucket));
    let drawn = 0;
    for (let i = first; i <= lastB; i++) {
      const t0 = i * d.bucket + st.shift;
      const x0 = x(t0), x1 = x(t0 + d.bucket);
      const bw = Math.max(1, x1 - x0);
      const busy = t.busy[i] / d.bucket;
      if (busy > 0) {
        const bh = Math.max(1, busy * barH);
        ctx.fillStyle = t.top[i] >= 0 ? colorOf(d.names[t.top[i]]) : '#888';
        ctx.fillRect(x0, y + 3 + barH - bh, bw, bh);
        drawn += t.count[i];
      }
      const hw = t.host_wait[i] / d.bucket, oi = t.other_idle[i] / d.bucket;
      if (hw > 0) {
        ctx.fillStyle = HOST_WAIT;
        ctx.globalAlpha = Math.min(1, 0.25 + hw);
        ctx.fillRect(x0, y + STREAM_H - GAP_BAND - 1, bw, GAP_BAND);
        ctx.globalAlpha = 1;
      } else if (oi > 0) {
        ctx.fillStyle = OTHER_IDLE;
        ctx.fillRect(x0, y + STREAM_H - GAP_BAND - 1, bw, GAP_BAND);
      }
      if (t.launch[i] > 0) {
        const lh = Math.max(1, Math.min(1, t.launch[i] / d.bucket) * (LAUNCH_H - 4));
        ctx.fillStyle = 'rgba(184, 119, 217, 0.8)';
        ctx.fillRect(x0, launchY + LAUNCH_H - 2 - lh, bw, lh);
      }
    }
    return drawn;
  }

  // What is under the pointer: an execution (raw) or a bucket.
  function hit(px, py) {
    const d = st.data;
    if (!d || px < LABEL_W) return null;
    const opsRow = st.layout.find((r) => r.kind === 'ops' && py >= r.y && py < r.y + r.h);
    if (opsRow) return hitOp(d.ops, px, opsRow);
    const row = st.layout.find((r) => r.kind === 'stream' && py >= r.y && py < r.y + r.h);
    if (!row) return null;
    const t = row.track;
    const plotW = canvas.clientWidth - LABEL_W;
    const time = st.a + ((px - LABEL_W) / plotW) * (st.b - st.a) - st.shift;
    const launch = st.layout.find((r) => r.kind === 'launch' && r.device === row.device);
    if (d.raw) {
      const slack = ((st.b - st.a) / plotW) * 2;  // two pixels either side
      let i = lowerBound(t.end, time - slack);
      if (i >= t.start.length || t.start[i] > time + slack) return null;
      return { raw: true, track: t, i, y: row.y, launchY: launch.y, collective: d.byKernel.get(`${t.device}|${t.start[i]}`) };
    }
    const i = Math.floor(time / d.bucket);
    if (i < 0 || i >= t.busy.length) return null;
    return { raw: false, track: t, i, y: row.y, launchY: launch.y };
  }

  // The operator under the pointer (the innermost where they nest), or its bucket.
  function hitOp(o, px, row) {
    const plotW = canvas.clientWidth - LABEL_W;
    const time = st.a + ((px - LABEL_W) / plotW) * (st.b - st.a) - st.shift;
    if (o.mode !== 'raw') {
      const i = Math.floor(time / o.bucket_ns);
      return i >= 0 && i < o.busy.length ? { op: true, raw: false, i, y: row.y } : null;
    }
    const slack = ((st.b - st.a) / plotW) * 2;
    let found = -1;
    for (let i = 0; i < o.start.length && o.start[i] <= time + slack; i++) {
      if (o.end[i] >= time - slack) found = i;  // later starts nest inside earlier ones
    }
    return found < 0 ? null : { op: true, raw: true, i: found, y: row.y };
  }

  function describe(hv) {
    if (hv.op) {
      const o = st.data.ops, i = hv.i;
      if (!hv.raw) {
        return [`<b>${fmtNs(o.bucket_ns)} at +${fmtNs(i * o.bucket_ns + st.shift - st.a)}</b>`, 'host · operators',
          `busy ${((Math.min(1, o.busy[i] / o.bucket_ns)) * 100).toFixed(1)}% · ${fmtSI(o.started[i])} started`].join('<br>');
      }
      return [`<b>${esc(o.names[o.name[i]])}</b>`, `host · operators · ${esc(o.providers[o.provider[i]] || '')}`,
        `duration ${fmtNs(o.end[i] - o.start[i])}`, `starts at ${signedNs(o.start[i] + st.shift - st.a)} from the view's left edge`].join('<br>');
    }
    const d = st.data, t = hv.track, i = hv.i;
    const rank = d.ranks.get(t.device);
    const where = `${rank != null ? `rank ${esc(rank)} · ` : ''}${esc(deviceName(t.device))} · stream ${esc(t.stream)}`;
    if (hv.raw) {
      const dur = t.end[i] - t.start[i];
      const short = shortKernelName(t.names[i]);
      const rows = [`<b>${esc(short)}</b>` + (short === t.names[i] ? '' : `<div class="signature">${esc(t.names[i])}</div>`), where, `duration ${fmtNs(dur)}`, `starts at ${signedNs(t.start[i] + st.shift - st.a)} from the view's left edge`];
      if (t.launch_start[i] != null && t.launch_end[i] != null) {
        rows.push(`launch call ${fmtNs(t.launch_end[i] - t.launch_start[i])}, launch delay ${fmtNs(Math.max(0, t.start[i] - t.launch_end[i]))}`);
      }
      if (t.gap_ns[i] > 0) rows.push(`idle ${fmtNs(t.gap_ns[i])} before it: ${d.causes[t.gap[i]].replace('_', ' ')}`);
      const c = hv.collective;
      if (c) {
        rows.push(`<b>${esc(c.op)}</b>${c.bytes != null ? ' of ' + fmtBytes(c.bytes) : ''} across ${c.at.length} ranks: ` +
          `rank ${esc(c.last_rank)} arrived last, ${fmtDuration(c.skew_ms)} after the first` +
          (c.busbw_gb_per_second != null ? ` · bus bandwidth ${c.busbw_gb_per_second.toFixed(0)} GB/s` : ''));
      }
      return rows.join('<br>');
    }
    const pct = (v) => ((v / d.bucket) * 100).toFixed(1) + '%';
    return [`<b>${fmtNs(d.bucket)} at +${fmtNs(i * d.bucket + st.shift - st.a)}</b>`, where,
      `busy ${pct(t.busy[i])} · ${fmtSI(t.count[i])} started`,
      t.top[i] >= 0 ? `mostly ${esc(shortKernelName(d.names[t.top[i]]))}` : 'no kernel',
      `waiting for the host ${pct(t.host_wait[i])} · other idle ${pct(t.other_idle[i])}`].join('<br>');
  }

  // Pointer: drag pans, wheel zooms around the pointer, double click goes back to the range.
  let drag = null;
  canvas.addEventListener('mousedown', (e) => {
    drag = { x: e.clientX, a: st.a, b: st.b, select: e.shiftKey };
    e.preventDefault();
  });
  window.addEventListener('mousemove', (e) => {
    const r = canvas.getBoundingClientRect();
    if (drag && drag.select) {  // Shift+drag: the span to zoom to, shaded
      draw();
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
      moved();
      return;
    }
    if (!st.shown || e.clientY < r.top || e.clientY > r.bottom || e.clientX < r.left || e.clientX > r.right) {
      if (st.hover) { st.hover = null; tip.hidden = true; draw(); }
      return;
    }
    pointerAt = Math.min(1, Math.max(0, (e.clientX - r.left - LABEL_W) / Math.max(1, r.width - LABEL_W)));
    st.hover = hit(e.clientX - r.left, e.clientY - r.top);
    tip.hidden = !st.hover;
    if (st.hover) {
      tip.innerHTML = describe(st.hover) + (st.hover.raw && !st.hover.op ? '<div class="muted">click: open this kernel</div>' : '');
      // Inside the track area: left of the pointer near the right edge, above it near the bottom.
      const x = e.clientX - r.left, y = e.clientY - r.top;
      tip.style.left = Math.max(0, Math.min(x + 12, r.width - tip.offsetWidth - 4)) + 'px';
      tip.style.top = (y + 14 + tip.offsetHeight <= r.height ? y + 14 : Math.max(0, y - tip.offsetHeight - 8)) + 'px';
    }
    draw();
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
      moved();
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
    zoom(Math.pow(1.0015, e.deltaY), f);
  }, { passive: false });
  canvas.addEventListener('dblclick', () => { st.run = ''; runPick.value = ''; toRange(); st.data = null; moved(); loadOverview(); });
  // A live range moves on: its strip is read again every 10 s while shown.
  setInterval(() => { if (st.shown && !st.run && range.live) loadOverview(); }, 10000);
  function zoom(factor, at = 0.5) {
    const span = st.b - st.a;
    const next = Math.max(MIN_SPAN_NS, span * factor);
    const pivot = st.a + span * at;
    st.a = pivot - (pivot - st.a) * (next / span);
    st.b = st.a + next;
    moved();
  }
  // The buttons zoom around where the pointer last was over the tracks (the middle before that).
  document.getElementById('timeline-zoom-in').addEventListener('click', () => zoom(0.5, pointerAt ?? 0.5));
  document.getElementById('timeline-zoom-out').addEventListener('click', () => zoom(2, pointerAt ?? 0.5));
  // Perfetto's keys: W/S zoom around the pointer, A/D pan by a tenth of the window.
  window.addEventListener('keydown', (e) => {
    if (!st.shown || e.ctrlKey || e.metaKey || e.altKey || /^(INPUT|SELECT|TEXTAREA)$/.test(document.activeElement?.tagName)) return;
    const k = e.key.toLowerCase();
    if (k === 'w') zoom(0.8, pointerAt ?? 0.5);
    else if (k === 's') zoom(1.25, pointerAt ?? 0.5);
    else if (k === 'a' || k === 'd') {
      const dt = (st.b - st.a) / 10 * (k === 'a' ? -1 : 1);
      st.a += dt;
      st.b += dt;
      moved();
    }
  });
  function moved() {
    draw();
    keepInUrl();
    if (!covered()) scheduleLoad();
  }

  // Runs: a run's executions over its own span.
  async function loadRuns() {
    try {
      const runs = (await fetchJson('/api/v1/runs?limit=50')).runs || [];
      runPick.innerHTML = '<option value="">the time range</option>' +
        runs.map((r) => `<option value="${esc(r.name)}">run ${esc(r.name)}</option>`).join('');
      runPick.value = runs.some((r) => r.name === st.run) ? st.run : '';
    } catch (e) { /* the picker keeps the time range */ }
  }
  runPick.addEventListener('change', () => {
    st.run = runPick.value;
    st.data = null;
    if (!st.run) toRange();
    keepInUrl();
    load();
    loadOverview();
  });
  range.onChange(() => {
    if (st.run) return;
    toRange();
    st.data = null;
    if (st.shown) { moved(); loadOverview(); }
  });

  const fromUrl = initialWindow();
  if (fromUrl) setWindow(...fromUrl); else toRange();

  return {
    state: st,
    overview: ov,
    // The view shown or left: it loads only while shown.
    show(on) {
      st.shown = on;
      if (!on) { tip.hidden = true; return; }
      loadRuns();
      loadOverview();
      if (!covered()) load(); else draw();
    },
    setWindow(from, to) { setWindow(BigInt(from), BigInt(to)); st.data = null; moved(); },
    // A run's own span (the Runs view's "its timeline"), drawn when the view is shown.
    openRun(name) {
      st.run = name;
      st.data = null;
      if (![...runPick.options].some((o) => o.value === name)) runPick.add(new Option(name, name));
      runPick.value = name;
      keepInUrl();
    },
    pan(px) {
      const dt = (px * (st.b - st.a)) / Math.max(1, canvas.clientWidth - LABEL_W);
      st.a -= dt;
      st.b -= dt;
      moved();
    },
    zoom,
  };
}
