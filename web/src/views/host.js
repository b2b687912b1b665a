// Host view: CPU (total and per core), memory, load, and perfscope's own CPU and RSS, with the
// headline figures above the charts.
import { LiveChart, PALETTE, axis, bytesAxis, timeAxis } from '../lib/live_chart.js';
import { fmtBytes, fmtNum, fmtPct } from '../lib/format.js';

export function hostCharts() {
  return {
    cpu: new LiveChart(document.getElementById('chart-cpu'), {
      families: ['host_cpu_utilization_ratio'],
      seriesFor: (key, name, labels) => (labels.cpu === 'total'
        ? { label: 'total', scale: 'ratio', fmt: fmtPct, width: 2, color: '#73bf69' }
        : { label: 'cpu ' + labels.cpu, scale: 'ratio', fmt: fmtPct, color: PALETTE[(1 + Number(labels.cpu)) % PALETTE.length] }),
      scales: { ratio: { range: [0, 1] } },
      axes: [timeAxis, axis(fmtPct, { scale: 'ratio' })],
    }),
    mem: new LiveChart(document.getElementById('chart-mem'), {
      families: ['host_memory_used_bytes', 'host_memory_available_bytes', 'host_swap_used_bytes'],
      seriesFor: (key, name) => ({
        host_memory_used_bytes: { label: 'used', scale: 'bytes', fmt: fmtBytes, width: 2 },
        host_memory_available_bytes: { label: 'available', scale: 'bytes', fmt: fmtBytes },
        host_swap_used_bytes: { label: 'swap used', scale: 'bytes', fmt: fmtBytes },
      })[name] || null,
      scales: { bytes: { range: (u, min, max) => [0, Math.max(max, 1)] } },
      axes: [timeAxis, bytesAxis({ scale: 'bytes' })],
    }),
    load: new LiveChart(document.getElementById('chart-load'), {
      families: ['host_load1', 'host_load5', 'host_load15'],
      seriesFor: (key, name) => ({ label: name.replace('host_', ''), scale: 'load', fmt: fmtNum }),
      scales: { load: { range: (u, min, max) => [0, Math.max(max, 1)] } },
      axes: [timeAxis, axis(fmtNum, { scale: 'load' })],
    }),
    proc: new LiveChart(document.getElementById('chart-proc'), {
      families: ['process_cpu_utilization_ratio', 'process_resident_memory_bytes'],
      seriesFor: (key, name) => (name === 'process_cpu_utilization_ratio'
        ? { label: 'CPU (1 = one core)', scale: 'ratio', fmt: fmtPct, width: 2 }
        : { label: 'RSS', scale: 'bytes', fmt: fmtBytes, width: 2, color: '#5794f2' }),
      scales: { ratio: { range: (u, min, max) => [0, Math.max(max, 0.05)] },
                bytes: { range: (u, min, max) => [0, Math.max(max, 1)] } },
      axes: [timeAxis, axis(fmtPct, { scale: 'ratio' }), bytesAxis({ scale: 'bytes', side: 1, grid: { show: false } })],
    }),
  };
}

// The headline figures: series key → [element id, format].
const stats = {
  'host_cpu_utilization_ratio{cpu="total"}': ['v-cpu', fmtPct],
  host_memory_used_bytes: ['v-mem', fmtBytes],
  host_load1: ['v-load', fmtNum],
  process_cpu_utilization_ratio: ['v-pcpu', fmtPct],
  process_resident_memory_bytes: ['v-prss', fmtBytes],
};

// `t`: the reading's time (s). A tile whose figure has not moved on for three of its own
// update spacings (5 s at least) is dimmed and says when it was last updated: a stalled
// stream or a collector gone quiet does not leave a figure looking current.
const updates = {};  // element id → [previous, newest] update times (s)
export function showStat(key, value, t = Date.now() / 1000) {
  const s = stats[key];
  if (!s) return;
  document.getElementById(s[0]).textContent = s[1](value);
  const [, last] = updates[s[0]] || [t, t];
  if (t > last || !updates[s[0]]) updates[s[0]] = [last, t];
}
export function markStaleStats(now = Date.now() / 1000) {
  for (const [id, [prev, last]] of Object.entries(updates)) {
    const tile = document.getElementById(id).closest('.stat');
    const stale = now - last > Math.max(5, 3 * (last - prev));
    tile.classList.toggle('stale', stale);
    tile.title = stale ? `last updated ${new Date(last * 1000).toLocaleTimeString()}` : '';
  }
}
