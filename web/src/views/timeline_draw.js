// The timeline view's drawing (views/timeline.js): the tracks canvas — the axis counting from
// t₀, per device its launch-call row and its streams (raw executions or buckets, idle gaps by
// cause in the band below), the host's operators, launch→kernel lines and each collective's line
// through its ranks — and the overview strip. Every function takes the view's parts (`view`:
// its canvases and their contexts, its elements, `st` the state and `ov` the strip's) and
// draws what `st` holds; none asks the server.
import { fmtDuration, fmtSI, shortKernelName } from '../lib/format.js';

export const LABEL_W = 132;  // px for track names
export const AXIS_H = 22;
export const LAUNCH_H = 14;  // a device's launch-call row
export const STREAM_H = 30;  // a stream's row: kernels above, idle gaps in the band below
const GAP_BAND = 6;
const LINK_LIMIT = 400;      // launch→kernel lines drawn for every execution when at most this many show
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
export function lowerBound(arr, x) {
  let lo = 0, hi = arr.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (arr[mid] < x) lo = mid + 1; else hi = mid;
  }
  return lo;
}

// "+1.25 ms" style tick text for an offset in ns.
export const fmtNs = (ns) => fmtDuration(ns / 1e6);
// An offset with its sign: "+1.25 ms", "−125 µs".
export const signedNs = (ns) => (ns < 0 ? '−' : '+') + fmtNs(Math.abs(ns));
// A CUDA device by its ordinal ("GPU 0"); other devices (a CPU stand-in) by their own name.
export const deviceName = (d) => (/^\d+$/.test(d) ? `GPU ${d}` : d);
// A time of the view (Number ns relative to `st.base`) as epoch ns, a BigInt.
export const epochNs = (st, rel) => st.base + BigInt(Math.round(rel));

// Clock time to the millisecond of an epoch-ns BigInt: "14:03:27.125".
function clockOf(ns) {
  const d = new Date(Number(ns / 1000000n));
  const two = (n) => String(n).padStart(2, '0');
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}.${String(d.getMilliseconds()).padStart(3, '0')}`;
}

// A frame asked for (the last one asked for replaces any not yet painted).
export function draw(view) {
  cancelAnimationFrame(view.frame);
  view.frame = requestAnimationFrame((now) => paint(view, now));
}

// Each frame's start and the time its painting took (kept for the bench, at most 2000).
function paint(view, now) {
  const { st } = view;
  if (!st.shown) return;
  const t0 = performance.now();
  paintTracks(view);
  paintOverview(view);
  if (st.frames.length < 2000) st.frames.push({ at: now, ms: performance.now() - t0 });
}

function resize(view) {
  const { st, canvas, ctx } = view;
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

function paintTracks(view) {
  const { st, ctx } = view;
  const [w, h] = resize(view);
  const css = getComputedStyle(document.documentElement);
  const text = css.getPropertyValue('--text').trim() || '#ddd';
  const muted = css.getPropertyValue('--muted').trim() || '#888';
  const border = css.getPropertyValue('--border').trim() || '#333';
  ctx.clearRect(0, 0, w, h);
  ctx.font = '11px system-ui, sans-serif';
  const plotW = w - LABEL_W;
  const span = st.b - st.a;
  const x = (t) => LABEL_W + ((t - st.a) / span) * plotW;
  drawAxis(view, w, plotW, span, text, muted, border);
  const d = st.data;
  st.layout = [];
  view.empty.hidden = !d || d.events > 0 || !!d.ops;
  if (!d) return;
  ctx.save();
  ctx.beginPath();
  ctx.rect(LABEL_W, AXIS_H, plotW, h - AXIS_H);
  ctx.clip();
  let y = AXIS_H;
  let visible = 0;
  if (d.ops) {  // the host's operators (an imported trace's CPU ops) above the devices
    st.layout.push({ kind: 'ops', y, h: STREAM_H });
    if (d.ops.mode === 'raw') drawOps(view, d.ops, y, x); else drawOpBuckets(view, d.ops, y, x);
    y += STREAM_H;
  }
  for (const [device, tracks] of d.devices) {
    const launchY = y;
    st.layout.push({ kind: 'launch', device, y, h: LAUNCH_H, tracks });
    y += LAUNCH_H;
    for (const t of tracks) {
      st.layout.push({ kind: 'stream', device, track: t, y, h: STREAM_H });
      visible += d.raw ? drawRaw(view, t, y, x, launchY) : drawBuckets(view, t, y, x, launchY);
      y += STREAM_H;
    }
  }
  if (d.raw && visible <= LINK_LIMIT) drawLinks(view, x, 'rgba(140,140,140,0.5)');
  st.collectivesHidden = false;
  st.collectivesDrawn = d.raw ? drawCollectives(view, x) : 0;
  if (st.hover && st.hover.raw && !st.hover.op) drawLink(view, st.hover.track, st.hover.i, st.hover.launchY, st.hover.y, x, text);
  ctx.restore();
  drawTrackNames(view, w, text, muted, border);
  // What was read spans more than the window shown (panning stays smooth): say both.
  view.info.textContent = `showing ${fmtNs(span)} · ${fmtSI(d.events)} executions read over ${fmtNs(d.span)} around it` +
    ` · ${d.raw ? 'each execution' : `buckets of ${fmtNs(d.bucket)}`}` +
    (d.raw && st.collectivesHidden ? ' · zoom in to see each collective linked across its ranks' : '');
}

// Track names, each row's with the line under it.
function drawTrackNames(view, w, text, muted, border) {
  const { st, ctx } = view;
  const d = st.data;
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
}

// The strip: busy share as columns, the window shown framed and the rest shaded.
function paintOverview(view) {
  const { st, ov, ovCanvas, ovCtx } = view;
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
  const x0 = Math.max(LABEL_W, x(epochNs(st, st.a))), x1 = Math.min(w, Math.max(x0 + 2, x(epochNs(st, st.b))));
  ovCtx.fillStyle = 'rgba(128, 128, 128, 0.25)';
  ovCtx.fillRect(LABEL_W, 0, Math.max(0, x0 - LABEL_W), h);
  ovCtx.fillRect(x1, 0, Math.max(0, w - x1), h);
  ovCtx.strokeStyle = css.getPropertyValue('--text').trim() || '#ddd';
  ovCtx.lineWidth = 1.5;
  ovCtx.strokeRect(x0 + 0.75, 0.75, Math.max(1, x1 - x0 - 1.5), h - 1.5);
  ovCtx.lineWidth = 1;
}

function drawAxis(view, w, plotW, span, text, muted, border) {
  const { st, ctx } = view;
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
  st.origin = `t₀ ${clockOf(epochNs(st, st.a))}`;  // drawn, and kept: a canvas's text cannot be read back
  ctx.fillText(st.origin, 4, 12, LABEL_W - 8);
}

// Raw executions: sub-pixel ones merged into one-pixel columns; the gap before each in the
// band below by cause; launch calls in the device's row.
function drawRaw(view, t, y, x, launchY) {
  const { st, ctx } = view;
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
function drawOps(view, o, y, x) {
  const { st, ctx } = view;
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
function drawOpBuckets(view, o, y, x) {
  const { st, ctx } = view;
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

function drawLink(view, t, i, launchY, y, x, color) {
  const { st, ctx } = view;
  const le = t.launch_end[i];
  if (le == null) return;
  ctx.strokeStyle = color;
  ctx.lineWidth = 1;
  ctx.beginPath();
  ctx.moveTo(x(le + st.shift), launchY + LAUNCH_H - 3);
  ctx.lineTo(x(t.start[i] + st.shift), y + 3);
  ctx.stroke();
}
function drawLinks(view, x, color) {
  const { st } = view;
  for (const row of st.layout) {
    if (row.kind !== 'stream') continue;
    const launch = st.layout.find((r) => r.kind === 'launch' && r.device === row.device);
    const t = row.track;
    const first = lowerBound(t.end, st.a - st.shift);
    for (let i = first; i < t.start.length && t.start[i] + st.shift <= st.b; i++) drawLink(view, t, i, launch.y, row.y, x, color);
  }
}

// Where a rank's collective kernel starting at `t` (relative to the answer's origin) is drawn:
// its stream's row and its index there, or null.
function kernelAt(st, device, t) {
  for (const row of st.layout) {
    if (row.kind !== 'stream' || row.device !== device) continue;
    const i = lowerBound(row.track.start, t);
    if (i < row.track.start.length && row.track.start[i] === t) return { row, i };
  }
  return null;
}
// Each collective instance in view: a line from each rank's kernel to the next to arrive's,
// with a dot where each joined. The one hovered is drawn bold. Returns how many were drawn.
function drawCollectives(view, x) {
  const { st, ctx } = view;
  const d = st.data, s = st.shift;
  // At most one line per six pixels of the plot (and LINK_LIMIT): denser, they hide the kernels.
  const limit = Math.min(LINK_LIMIT, Math.floor((view.canvas.clientWidth - LABEL_W) / 6));
  let drawn = 0;
  for (const c of d.collectives) {
    const first = c.at[0][1] + s, last = c.at[c.at.length - 1][1] + s;
    if (last < st.a || first > st.b) continue;
    if (++drawn > limit) continue;  // counted, not resolved: too many to draw legibly
    const points = c.at.map(([device, t]) => kernelAt(st, device, t)).filter(Boolean);
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
function drawBuckets(view, t, y, x, launchY) {
  const { st, ctx } = view;
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
