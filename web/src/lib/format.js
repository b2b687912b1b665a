// How numbers, bytes and names are written everywhere on the dashboard; and the series key.
export const fmtPct = (v) => (v == null || Number.isNaN(v) ? '–' : (v * 100).toFixed(1) + '%');
export const fmtNum = (v) => (v == null || Number.isNaN(v) ? '–' : v.toFixed(2));
export const fmtBytes = (v) => {
  if (v == null || Number.isNaN(v)) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return v.toFixed(Math.abs(v) < 10 ? 2 : 1) + ' ' + units[i];
};
export const fmtW = (v) => (v == null ? '–' : v.toFixed(1) + ' W');
export const fmtC = (v) => (v == null ? '–' : v.toFixed(0) + ' °C');
export const fmtMHz = (v) => (v == null ? '–' : (v / 1e6).toFixed(0) + ' MHz');
// Milliseconds: more digits for the short kernels a launch-bound program is made of.
// Milliseconds to three significant digits, as Grafana shows them (40.0, 4.50, 0.0460), and
// whole ones from 100 on (300, 1235):
// a table of latencies reads at a glance, and the API and exports keep every digit.
export const ms = (v) => {
  if (v == null || !Number.isFinite(v)) return '–';
  const r = Number(v.toPrecision(3));  // rounded first: 99.95 is 100, not 100.0
  const a = Math.abs(r);
  if (a === 0) return '0';
  if (a >= 100) return v.toFixed(0);  // whole milliseconds: 1235, not 1230
  if (a >= 10) return r.toFixed(1);
  if (a >= 1) return r.toFixed(2);
  return r.toPrecision(3);
};
// A count as it is, with thousands separated: 12,345 (a report's tables keep every unit).
export const fmtCount = (v) => (v == null || !Number.isFinite(Number(v)) ? '–' : Math.round(Number(v)).toLocaleString('en-US'));
// Bytes per second in decimal units, as bandwidths are quoted: 3.35 TB/s.
export const fmtBandwidth = (v) => (v == null || Number.isNaN(Number(v)) ? '–' : fmtSI(v) + 'B/s');
// Counts and other plain figures, humanized: 74.8 k, 1.20 M (never 7.48e+4).
export const fmtSI = (v) => {
  if (v == null || Number.isNaN(Number(v))) return '–';
  v = Number(v);
  const units = ['', ' k', ' M', ' G', ' T'];
  let i = 0;
  // 999.9996 rounds to 1000 at three digits: that is 1.00 k, not 1.00e+3.
  while (Math.abs(Number(v.toPrecision(3))) >= 1000 && i < units.length - 1) { v /= 1000; i++; }
  return (i === 0 && Number.isInteger(v) ? String(v) : v.toPrecision(3)) + units[i];
};
// A duration in milliseconds, in the unit that reads best: 850 µs, 12.3 ms, 2.40 s.
export const fmtDuration = (v) => {
  if (v == null || Number.isNaN(Number(v))) return '–';
  v = Number(v);
  if (v === 0) return '0 s';  // nothing: no unit reads better than another
  // A unit is used while its three digits stay under 1000 (0.99996 ms is 1.00 ms, not 1.00e+3 µs).
  const under = (x) => Math.abs(Number(x.toPrecision(3))) < 1000;
  if (under(v * 1000)) return (v * 1000).toPrecision(3) + ' µs';
  if (under(v)) return v.toPrecision(3) + ' ms';
  // Past 1000 s minutes, past 1000 min hours, past 1000 h days: never "1.08e+4 s".
  for (const [unit, per] of [[' s', 1e3], [' min', 6e4], [' h', 3.6e6]]) if (under(v / per)) return (v / per).toPrecision(3) + unit;
  return (v / 8.64e7).toPrecision(3) + ' d';
};
// A figure of an analysis' evidence, by the unit its name ends in (the server's naming:
// _ms, _ratio/_ratio_peak/_share, _bytes, _seconds; utilizations averaged end in utilization_avg;
// shares of something end in _share_of_X or _of_X_worst).
export const fmtEvidence = (name, v) => {
  if (name.endsWith('_ms')) return fmtDuration(v);
  if (/_ratio(_|$)|_share$|_share_of_[a-z]+$|_of_[a-z]+_worst$|utilization_avg$/.test(name)) return fmtPct(Number(v));
  if (name.endsWith('_bytes')) return fmtBytes(Number(v));
  if (name.endsWith('_seconds')) return fmtDuration(Number(v) * 1000);
  return fmtSI(v);
};
// What an analysis' evidence names, in words (the server's name stays the key of the JSON and
// the tooltip): "gpu_utilization_avg" → "average GPU utilization". No commas: a finding lists its
// figures separated by them.
export const EVIDENCE_WORDS = {
  gpu_utilization_avg: 'average GPU utilization',
  gpu_dram_bandwidth_utilization_avg: 'average DRAM bandwidth',
  gpu_memory_used_ratio_peak: 'peak GPU memory used',
  gpu_power_cap_throttle_seconds: 'clocks held back by the power cap for',
  gpu_thermal_throttle_seconds: 'clocks held back by heat for',
  host_cpu_utilization_avg: 'average host CPU',
  kernel_avg_gap_ms: 'mean gap between kernels',
  kernel_busy_ratio: 'GPU busy with kernels',
  kernel_count: 'kernels',
  kernel_host_wait_share: 'idle waiting for the host',
  kernel_max_ms: 'longest kernel',
  kernel_short_share: 'short kernels',
  latency_p99_ms: 'latency p99',
  sla_target_ms: 'SLA target',
  device_target_of_minimum_worst: "worst GPU's share of its minimum",
  collective_exposed_ms: 'exposed communication',
  collective_exposed_share: 'exposed communication share',
  collective_exposed_transfer_share: 'exposed transfer share',
  collective_large_busbw_gb_per_second: 'bus bandwidth of large messages (GB/s)',
  collective_large_busbw_share_of_peak: "large messages' bus bandwidth against link peak",
  collective_large_bytes: 'large messages',
  collective_large_link_peak_gb_per_second: 'link peak (GB/s)',
  collective_matched: 'collectives matched',
  collective_overlap_ratio: 'communication overlapped with compute',
  collective_straggler_extra_ms: "straggler's extra compute per step",
  collective_straggler_extra_share: "straggler's extra compute share",
  collective_straggler_last_share: 'straggler arrived last',
  collective_wait_share: 'waiting in collectives',
  operator_cpu_fallback_share: 'operator time on the CPU',
};
export const evidenceLabel = (name) => EVIDENCE_WORDS[name] ??
  String(name).replace(/^(.*)_(avg|peak)$/, (m, what, of) => `${of === 'avg' ? 'average' : 'peak'}_${what}`)
    .replace(/_/g, ' ').replace(/\bgpu\b/, 'GPU');

// A reading of a series in the unit its name ends in (Prometheus' naming, as the server
// publishes them): gpu_memory_used_bytes → 954 MiB, *_ratio → 60.0%, *_watts → 512.0 W.
export const fmtSeriesValue = (series, v) => {
  const name = String(series).split('{')[0];
  if (v == null || Number.isNaN(Number(v))) return '–';
  if (name.endsWith('_watts')) return fmtW(Number(v));
  if (name.endsWith('_celsius')) return fmtC(Number(v));
  if (name.endsWith('_hertz')) return fmtMHz(Number(v));
  if (name.endsWith('_joules') || name.endsWith('_joules_total')) return fmtSI(v) + ' J';
  if (name.endsWith('_bytes_per_second')) return fmtBandwidth(v);
  if (name.endsWith('_per_second')) return fmtSI(v) + '/s';
  return fmtEvidence(name, v);
};
// A moment to the millisecond with its date, local time: "2026-11-26 09:58:40.123".
export const fmtInstant = (ns) => {
  if (ns == null) return '–';
  const d = new Date(ns / 1e6);
  const two = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}:` +
    `${two(d.getSeconds())}.${String(d.getMilliseconds()).padStart(3, '0')}`;
};
// Text for innerHTML.
export const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);

// Same text form as the server's canonical series key: name{a="x",b="y"}, labels sorted.
export function canonical(name, labels) {
  const keys = Object.keys(labels || {}).sort();
  if (keys.length === 0) return name;
  const quote = (s) => s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
  return name + '{' + keys.map((k) => `${k}="${quote(labels[k])}"`).join(',') + '}';
}

// A kernel's short name, as profilers list it: the function's qualified name without its
// return type, template arguments and parameters ("void at::native::elementwise_kernel<128,
// 4, …>(int, …)" → "at::native::elementwise_kernel"), anonymous namespaces dropped. Where
// the function is a generic launcher (CUTLASS's Kernel, Kernel2, …) its first template
// argument names the work, so it is kept: "cutlass::Kernel2<…s1688gemm…>". A name that is
// not a C++ signature comes back as it is.
// Parsed once per name: the timeline labels every wide slice on every frame.
const shortNames = new Map();
export function shortKernelName(name) {
  const s = String(name ?? '');
  let short = shortNames.get(s);
  if (short === undefined) shortNames.set(s, (short = parseShortName(s)));
  return short;
}

function parseShortName(s) {
  const anon = '(anonymous namespace)';
  let depth = 0, start = 0, end = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (s.startsWith(anon, i)) { i += anon.length - 1; continue; }
    if (c === '<') depth++;
    else if (c === '>') depth = Math.max(0, depth - 1);
    else if (depth === 0 && c === ' ') start = i + 1;  // past a return type
    else if (depth === 0 && c === '(') { end = i; break; }
  }
  // A signature has its parameter list right after the name ("f(int)"); "Memcpy HtoD
  // (Pageable -> Device)" or "[CUDA memset]" is a name of its own.
  if (end === s.length || !/[\w>]/.test(s[end - 1] ?? '')) return s;
  const full = s.slice(start, end);
  let base = '', firstArg = null, argDepth = 0, arg = '';
  for (const c of full) {
    if (c === '<') { if (argDepth++ === 0) continue; }
    else if (c === '>') { if (--argDepth === 0) { if (firstArg == null) firstArg = arg.trim(); continue; } }
    else if (c === ',' && argDepth === 1 && firstArg == null) { firstArg = arg.trim(); }
    if (argDepth === 0) base += c;
    else if (firstArg == null) arg += c;
  }
  base = base.split(anon + '::').join('').trim();
  if (!base) return s;
  const last = base.slice(base.lastIndexOf(':') + 1);
  if (/^kernel\d*$/i.test(last) && firstArg) return `${base}<${firstArg}>`;
  return base;
}

// A kernel's name in a table cell: the short name, the whole signature on hover.
export const kernelNameHtml = (name) => {
  const short = shortKernelName(name);
  return `<span class="kname" title="${esc(name)}">${esc(short)}</span>`;
};
