// The dashboard's one time range, shared by every chart and kept in the URL so that a reload or
// a shared link shows the same: live (the last 5 m … 7 d, charts following the stream) or a
// fixed span (from a drag-to-zoom on any chart, the arrows that shift it, zoom out, or typed
// ends; the stream no longer moves it). Each change is a browser history entry. Listeners are
// told of every change.
import { setSearchParams } from './url.js';

export const PRESETS = { '5m': 300, '15m': 900, '1h': 3600, '6h': 21600, '24h': 86400, '7d': 604800 };
const DEFAULT_PRESET = '5m';

export class TimeRange {
  constructor(search = window.location.search) {
    this.listeners = [];
    const p = new URLSearchParams(search);
    const from = Number(p.get('from')), to = Number(p.get('to'));
    this.preset = PRESETS[p.get('range')] ? p.get('range') : DEFAULT_PRESET;
    // A fixed span: from and to in milliseconds since the epoch, as the URL holds them.
    this.fixed = Number.isFinite(from) && Number.isFinite(to) && p.has('from') && to > from ? { from: from / 1000, to: to / 1000 } : null;
    // One run's events only (every endpoint takes run=), or every event.
    this.run = p.get('run') || null;
  }

  get live() { return this.fixed === null; }

  // Seconds shown: the preset's, or the fixed span's.
  get seconds() { return this.fixed ? this.fixed.to - this.fixed.from : PRESETS[this.preset]; }

  // [from, to] in seconds since the epoch, now.
  bounds(now = Date.now() / 1000) {
    return this.fixed ? [this.fixed.from, this.fixed.to] : [now - PRESETS[this.preset], now];
  }

  // The history query's time parameters for this range.
  // `run: false`: the span alone, for the machine's own series (host, GPU), which belong to no run.
  query({ run: withRun = true } = {}) {
    const run = this.run && withRun ? `&run=${encodeURIComponent(this.run)}` : '';
    if (!this.fixed) return `from=now-${PRESETS[this.preset]}s${run}`;
    return `from=${Math.round(this.fixed.from * 1e9)}&to=${Math.round(this.fixed.to * 1e9)}${run}`;
  }

  // What a panel says of its span: "last 5 min", or the fixed span's ends to the second.
  label() {
    return (this.run ? `run ${this.run}, ` : '') + this.spanLabel();
  }

  spanLabel() {
    if (!this.fixed) return 'last ' + ({ '5m': '5 min', '15m': '15 min', '1h': 'hour', '6h': '6 h', '24h': '24 h', '7d': '7 days' })[this.preset];
    const f = (t) => new Date(t * 1000).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
    const day = (t) => new Date(t * 1000).toLocaleDateString();
    const [a, b] = [this.fixed.from, this.fixed.to];
    return day(a) === day(b) ? `${day(a)} ${f(a)}–${f(b)}` : `${day(a)} ${f(a)} – ${day(b)} ${f(b)}`;
  }

  onChange(fn) { this.listeners.push(fn); }

  setPreset(name) {
    if (!PRESETS[name]) return;
    this.preset = name;
    this.fixed = null;
    this.changed();
  }

  // A span picked on a chart (seconds since the epoch): the range stops following the stream.
  setFixed(from, to) {
    if (!(to > from)) return;
    this.fixed = { from, to };
    this.changed();
  }

  goLive() {
    this.fixed = null;
    this.changed();
  }

  // Moves the span by `fraction` of its length (−0.5: half a span earlier). A span moved up to
  // now (within 5 % of its length: time passed since it was picked) follows the stream again
  // when its length is a preset's, else ends at now.
  shift(fraction, now = Date.now() / 1000) {
    const [from, to] = this.bounds(now);
    const d = (to - from) * fraction;
    if (to + d < now - 0.05 * (to - from)) { this.setFixed(from + d, to + d); return; }
    this.endAtNow(to - from, now);
  }

  // Twice the span about its middle; a live range takes the next preset at least twice as long.
  zoomOut(now = Date.now() / 1000) {
    if (this.live) {
      const next = Object.keys(PRESETS).find((k) => PRESETS[k] >= 2 * PRESETS[this.preset]);
      if (next) this.setPreset(next);
      return;
    }
    const [from, to] = this.bounds(now);
    const mid = (from + to) / 2, span = 2 * (to - from);
    if (mid + span / 2 < now) this.setFixed(mid - span / 2, mid + span / 2);
    else this.endAtNow(span, now);
  }

  endAtNow(span, now) {
    const preset = Object.keys(PRESETS).find((k) => Math.abs(PRESETS[k] - span) < 1);
    if (preset) { this.setPreset(preset); return; }
    this.setFixed(now - span, now);
  }

  // One run (`run`: its name, start and end in ns, end null while it runs): its events only,
  // over its own span — a run that ended as a fixed span with a margin of 2 % either side, one
  // still running as the shortest live preset that reaches back to its start. Null: every event.
  setRun(run, now = Date.now() / 1000) {
    this.run = run ? run.name : null;
    if (!run) { this.changed(); return; }
    const start = run.start_ns / 1e9;
    if (run.end_ns == null) {
      this.fixed = null;
      this.preset = Object.keys(PRESETS).find((k) => PRESETS[k] >= now - start) || '7d';
    } else {
      const end = run.end_ns / 1e9, pad = Math.max(1, (end - start) * 0.02);
      this.fixed = { from: start - pad, to: end + pad };
    }
    this.changed();
  }

  // The URL's range (Back and Forward): applied without a new history entry.
  readUrl(search = window.location.search) {
    const other = new TimeRange(search);
    if (other.preset === this.preset && JSON.stringify(other.fixed) === JSON.stringify(this.fixed) && other.run === this.run) return;
    this.preset = other.preset;
    this.fixed = other.fixed;
    this.run = other.run;
    this.changed(false);
  }

  // `record`: a browser history entry for the change (Back returns to the range before).
  changed(record = true) {
    if (record) {
      setSearchParams(Object.assign(this.fixed
        ? { range: null, from: Math.round(this.fixed.from * 1000), to: Math.round(this.fixed.to * 1000) }
        : { range: this.preset, from: null, to: null }, { run: this.run }), { push: true });
    }
    for (const fn of this.listeners) fn(this);
  }
}
