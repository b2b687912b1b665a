// GPU view: a picker, an overview row per GPU, the picked GPU's throttle reasons as a strip,
// and its charts (utilization, memory, power, temperature and clock).
import { LiveChart, axis, bytesAxis, timeAxis } from '../lib/live_chart.js';
import { esc, fmtBytes, fmtC, fmtMHz, fmtPct, fmtW } from '../lib/format.js';
import { fetchJson } from '../lib/api.js';

// Families the overview needs beyond those the charts draw.
const OVERVIEW_FAMILIES = ['gpu_throttle_active', 'gpu_power_watts', 'gpu_temperature_celsius', 'gpu_memory_used_bytes',
  'gpu_utilization_ratio', 'gpu_dram_bandwidth_utilization_ratio'];

// A chart of the picked GPU's series: `series` says how each family is drawn (its key order is
// the legend's).
function pickedChart(onPicked, id, series, scales, axes) {
  return new LiveChart(document.getElementById(id), {
    families: Object.keys(series),
    seriesFor: (key, name, labels) => (onPicked(labels) && series[name] ? { ...series[name] } : null),
    scales,
    axes,
  });
}

// `refill` reloads the charts' history (called when another GPU is picked).
export function createGpuView({ refill }) {
  const view = { picked: null, devices: [], latest: {} };
  const onPicked = (labels) => view.picked !== null && labels.gpu === view.picked;

  const charts = {
    gpuUtil: pickedChart(onPicked, 'chart-gpu-util', {
      gpu_utilization_ratio: { label: 'busy', scale: 'ratio', fmt: fmtPct, width: 2, color: '#73bf69' },
      gpu_sm_utilization_ratio: { label: 'SM', scale: 'ratio', fmt: fmtPct, color: '#5794f2' },
      gpu_dram_bandwidth_utilization_ratio: { label: 'DRAM bandwidth', scale: 'ratio', fmt: fmtPct, color: '#ff780a' },
      gpu_tensor_activity_ratio: { label: 'tensor', scale: 'ratio', fmt: fmtPct, color: '#b877d9' },
    }, { ratio: { range: [0, 1] } }, [timeAxis, axis(fmtPct, { scale: 'ratio' })]),
    gpuMem: pickedChart(onPicked, 'chart-gpu-mem', {
      gpu_memory_used_bytes: { label: 'used', scale: 'bytes', fmt: fmtBytes, width: 2 },
      gpu_memory_total_bytes: { label: 'total', scale: 'bytes', fmt: fmtBytes, color: '#8e8e8e' },
      gpu_memory_reserved_bytes: { label: 'reserved', scale: 'bytes', fmt: fmtBytes, color: '#f2cc0c' },
    }, { bytes: { range: (u, min, max) => [0, Math.max(max, 1)] } }, [timeAxis, bytesAxis({ scale: 'bytes' })]),
    gpuPower: pickedChart(onPicked, 'chart-gpu-power', {
      gpu_power_watts: { label: 'power (1 s avg)', scale: 'w', fmt: fmtW, width: 2 },
      gpu_power_instant_watts: { label: 'instant', scale: 'w', fmt: fmtW, color: '#5794f2' },
      gpu_power_limit_watts: { label: 'limit', scale: 'w', fmt: fmtW, color: '#f2495c' },
    }, { w: { range: (u, min, max) => [0, Math.max(max, 1) * 1.05] } }, [timeAxis, axis(fmtW, { scale: 'w' })]),
    gpuTemp: new LiveChart(document.getElementById('chart-gpu-temp'), {
      families: ['gpu_temperature_celsius', 'gpu_memory_temperature_celsius', 'gpu_clock_hertz'],
      seriesFor: (key, name, labels) => {
        if (!onPicked(labels)) return null;
        if (name === 'gpu_clock_hertz') return labels.clock === 'sm' ? { label: 'SM clock', scale: 'hz', fmt: fmtMHz, color: '#5794f2' } : null;
        return name === 'gpu_temperature_celsius' ? { label: 'GPU', scale: 'c', fmt: fmtC, width: 2, color: '#ff780a' }
          : { label: 'memory', scale: 'c', fmt: fmtC, color: '#f2cc0c' };
      },
      scales: { c: { range: (u, min, max) => [0, Math.max(max, 1) * 1.1] }, hz: { range: (u, min, max) => [0, Math.max(max, 1) * 1.1] } },
      axes: [timeAxis, axis(fmtC, { scale: 'c' }), axis(fmtMHz, { scale: 'hz', side: 1, grid: { show: false } })],
    }),
  };

  let renderTimer = null;
  function render() {
    renderTimer = null;
    const body = document.querySelector('#gpu-overview tbody');
    body.innerHTML = view.devices.map((d) => {
      const g = view.latest[d.gpu] || { throttle: {} };
      const reasons = Object.entries(g.throttle).filter(([r, v]) => v > 0 && r !== 'gpu_idle').map(([r]) => r);
      return `<tr data-gpu="${esc(d.gpu)}"><td>${esc(d.gpu)}${d.lost ? ' (lost)' : ''}</td><td>${esc(d.name)}</td>` +
        `<td class="num">${fmtPct(g.gpu_utilization_ratio)}</td><td class="num">${fmtPct(g.gpu_dram_bandwidth_utilization_ratio)}</td>` +
        `<td class="num">${fmtBytes(g.gpu_memory_used_bytes)} / ${fmtBytes(d.memory_total_bytes)}</td>` +
        `<td class="num">${fmtW(g.gpu_power_watts)}</td><td class="num">${fmtC(g.gpu_temperature_celsius)}</td>` +
        `<td>${esc(reasons.join(', ') || '–')}</td></tr>`;
    }).join('');
    const picked = view.latest[view.picked] || { throttle: {} };
    document.getElementById('gpu-throttle').innerHTML = Object.keys(picked.throttle).sort().map((r) =>
      `<span class="${picked.throttle[r] > 0 ? 'on' : ''}" data-reason="${esc(r)}">${esc(r.replace(/_/g, ' '))}</span>`).join('');
  }

  // One live GPU sample, for the overview (rendered at most four times a second).
  function note(s) {
    const g = (view.latest[s.labels.gpu] = view.latest[s.labels.gpu] || { throttle: {} });
    if (s.name === 'gpu_throttle_active') g.throttle[s.labels.reason] = s.value;
    else g[s.name] = s.value;
    if (renderTimer === null) renderTimer = setTimeout(render, 250);
  }

  function pick(index) {
    view.picked = index;
    const d = view.devices.find((x) => x.gpu === index);
    document.getElementById('gpu-identity').textContent = d
      ? `${d.name} · ${d.uuid} · ${d.pci_bus_id}` + (d.peak_dram_bandwidth_bytes_per_second
        ? ` · peak DRAM ${(d.peak_dram_bandwidth_bytes_per_second / 1e9).toFixed(0)} GB/s` : '') +
        (d.peak ? ` · ${d.peak.model}: ${d.peak.tflops.bf16} TFLOP/s BF16 dense (datasheet)` : '') : '';
    for (const c of Object.values(charts)) c.reset();  // series are per GPU: start over for the new one
    refill();
    render();
  }
  document.getElementById('gpu-pick').addEventListener('change', (ev) => pick(ev.target.value));

  async function load() {
    try {
      const d = await fetchJson('/api/v1/devices');
      view.devices = d.gpus;
      if (d.gpus.length === 0) {  // say why, and how to get the view
        document.getElementById('gpu-absent-reason').textContent = d.nvml.detail || 'NVML found no GPU';
        document.getElementById('gpu-absent').hidden = false;
        return;
      }
      document.getElementById('gpus').hidden = false;
      const picker = document.getElementById('gpu-pick');
      picker.innerHTML = d.gpus.map((g) => `<option value="${esc(g.gpu)}">${esc(g.gpu)}: ${esc(g.name)}</option>`).join('');
      pick(d.gpus[0].gpu);
    } catch (e) { /* no GPU view without the devices list */ }
  }

  return { view, charts, families: OVERVIEW_FAMILIES, note, load };
}
