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
export const ms = (v) => (v == null ? '–' : v < 0.1 ? v.toFixed(4) : v.toFixed(3));
// Text for innerHTML.
export const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);

// Same text form as the server's canonical series key: name{a="x",b="y"}, labels sorted.
export function canonical(name, labels) {
  const keys = Object.keys(labels || {}).sort();
  if (keys.length === 0) return name;
  const quote = (s) => s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
  return name + '{' + keys.map((k) => `${k}="${quote(labels[k])}"`).join(',') + '}';
}
