// The timeline view's pointer over its tracks (views/timeline.js): what is under it — an
// execution, a bucket, an operator — found in the rows drawn last (`st.layout`), and the
// tooltip that describes it.
import { esc, fmtBytes, fmtDuration, fmtSI, shortKernelName } from '../lib/format.js';
import { LABEL_W, deviceName, fmtNs, lowerBound, signedNs } from './timeline_draw.js';

// The pointer at `e` over the tracks (`r`: the canvas's box): kept for + and −, and what is under
// it in the tooltip.
export function hover(view, e, r) {
  const { st, tip } = view;
  view.pointerAt = Math.min(1, Math.max(0, (e.clientX - r.left - LABEL_W) / Math.max(1, r.width - LABEL_W)));
  st.hover = hit(view, e.clientX - r.left, e.clientY - r.top);
  tip.hidden = !st.hover;
  if (st.hover) {
    tip.innerHTML = describe(st, st.hover) + (st.hover.raw && !st.hover.op ? '<div class="muted">click: open this kernel</div>' : '');
    // Inside the track area: left of the pointer near the right edge, above it near the bottom.
    const x = e.clientX - r.left, y = e.clientY - r.top;
    tip.style.left = Math.max(0, Math.min(x + 12, r.width - tip.offsetWidth - 4)) + 'px';
    tip.style.top = (y + 14 + tip.offsetHeight <= r.height ? y + 14 : Math.max(0, y - tip.offsetHeight - 8)) + 'px';
  }
}

// What is under the pointer: an execution (raw) or a bucket.
function hit(view, px, py) {
  const { st } = view;
  const d = st.data;
  if (!d || px < LABEL_W) return null;
  const opsRow = st.layout.find((r) => r.kind === 'ops' && py >= r.y && py < r.y + r.h);
  if (opsRow) return hitOp(view, d.ops, px, opsRow);
  const row = st.layout.find((r) => r.kind === 'stream' && py >= r.y && py < r.y + r.h);
  if (!row) return null;
  const t = row.track;
  const plotW = view.canvas.clientWidth - LABEL_W;
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
function hitOp(view, o, px, row) {
  const { st } = view;
  const plotW = view.canvas.clientWidth - LABEL_W;
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

function describe(st, hv) {
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
