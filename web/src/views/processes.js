// Processes view: who is using the GPUs — a live table like nvitop's (GPU, pid, user, container,
// memory, SM share, CPU, RSS, age, command), sortable, with past processes of the last hour
// below the live ones (GET /api/v1/processes); a row opens that process's page at the top of the
// Processes view (memory and SM share over its lifetime, GET /api/v1/processes/{key}, and its
// lifetime figures), kept in the URL (?view=processes&process=KEY&process_gpu=0) so Back closes it.
/* global uPlot */
import { LiveChart, axis, bytesAxis, makePlot, timeAxis } from '../lib/live_chart.js';
import { esc, fmtBytes, fmtPct } from '../lib/format.js';
import { fetchJson } from '../lib/api.js';
import { fillRows } from '../lib/rows.js';
import { setSearchParams } from '../lib/url.js';

const age = (s) => (s < 60 ? s.toFixed(0) + ' s' : s < 3600 ? (s / 60).toFixed(0) + ' min' : (s / 3600).toFixed(1) + ' h');
const joules = (j) => (j == null ? '–' : j < 1000 ? j.toFixed(0) + ' J' : (j / 3.6e6 >= 0.1 ? (j / 3.6e6).toFixed(2) + ' kWh' : (j / 1000).toFixed(1) + ' kJ'));

// Who holds a process: its Kubernetes pod and container where the kubelet named them (as
// kubectl names them, namespace/pod), else the runtime and the short id `docker ps` shows.
const containerText = (c) => (c.pod ? `${c.namespace}/${c.pod} · ${c.name}` : `${c.runtime}:${c.id.slice(0, 12)}`);
// The value a column sorts by.
const columns = {
  gpu: (p) => p.gpu, pid: (p) => p.pid, user: (p) => p.user, container: (p) => (p.container ? containerText(p.container) : ''),
  memory: (p) => (p.now ? p.now.memory_bytes : p.peak_memory_bytes), sm: (p) => (p.now ? p.now.sm_ratio : p.mean_sm_ratio) ?? -1,
  cpu: (p) => p.cpu_ratio ?? -1, rss: (p) => (p.now ? p.now.rss_bytes : p.peak_rss_bytes) ?? -1,
  age: (p) => p.duration_s, energy: (p) => p.energy_joules, command: (p) => p.cmdline || p.command,
};

// `showView(view)`: the dashboard's view switch (a process opened from the GPU view moves to Processes).
export function createProcessesView({ state, showView }) {
  state.processes = [];
  const opened = { key: null, gpu: null, loads: 0 };
  // The view's state, handed to the functions below. `table`: how the table is sorted;
  // `cpuBefore`: key → [cpu seconds, time], for CPU % between two refreshes; `plot`: the process
  // page's chart; `opened`: the page's process.
  const view = {
    state, table: { sortKey: 'memory', ascending: false }, cpuBefore: new Map(), plot: null,
    page: document.getElementById('process-page'), opened,
  };
  const { table } = view;

  document.querySelectorAll('#processes-table th').forEach((th) => th.addEventListener('click', () => {
    const key = th.dataset.key;
    table.ascending = table.sortKey === key ? !table.ascending : ['pid', 'user', 'container', 'command', 'gpu'].includes(key);
    table.sortKey = key;
    render(state, table);
  }));

  state.processPage = opened;
  document.querySelector('#processes-table tbody').addEventListener('click', (ev) => {
    const row = ev.target.closest('tr[data-key]');
    if (!row) return;
    if (showView) showView('processes');
    showProcess(view, row.dataset.key, row.dataset.gpu, { reveal: true });
  });
  document.getElementById('pp-close').addEventListener('click', () => showProcess(view, null));
  const fromUrl = () => {
    const q = new URLSearchParams(window.location.search);
    if ((q.get('process') || null) !== opened.key || (q.get('process_gpu') || null) !== opened.gpu) {
      showProcess(view, q.get('process'), q.get('process_gpu'), { push: false });
    }
  };
  fromUrl();

  const refreshNow = () => refresh(view);
  refreshNow();
  setInterval(refreshNow, 2000);
  LiveChart.range.onChange(refreshNow);
  // Back and Forward: the URL's process, opened or closed.
  return { refresh: refreshNow, readUrl: fromUrl, showProcess: (...args) => showProcess(view, ...args) };
}

// `table`: the column it is sorted by and which way.
function render(state, table) {
  const rows = [...state.processes].sort((a, b) => {
    if ((a.state === 'running') !== (b.state === 'running')) return a.state === 'running' ? -1 : 1;  // live first
    const x = columns[table.sortKey](a), y = columns[table.sortKey](b);
    // Unknown figures (null) sort below every known one.
    const c = typeof x === 'string' ? x.localeCompare(y) : (x ?? -Infinity) - (y ?? -Infinity) || 0;
    return table.ascending ? c : -c;
  });
  document.querySelectorAll('#processes-table th').forEach((th) => {
    th.classList.toggle('sorted', th.dataset.key === table.sortKey);
    th.classList.toggle('asc', th.dataset.key === table.sortKey && table.ascending);
  });
  const live = rows.filter((p) => p.state === 'running').length;
  document.getElementById('processes-summary').textContent = rows.length ? `${live} running · ${rows.length - live} past` : '';
  const body = document.querySelector('#processes-table tbody');
  if (rows.length === 0) { fillRows(body, ''); return; }
  fillRows(body, rows.map((p) => {
    const mem = p.now ? fmtBytes(p.now.memory_bytes) : `peak ${fmtBytes(p.peak_memory_bytes)}`;
    const sm = p.now ? fmtPct(p.now.sm_ratio) : `mean ${fmtPct(p.mean_sm_ratio)}`;
    const container = p.container ? esc(containerText(p.container)) : (p.systemd_unit ? esc(p.systemd_unit) : '–');
    return `<tr data-key="${esc(p.key)}" data-gpu="${esc(p.gpu)}" data-state="${esc(p.state)}" class="${p.state === 'running' ? '' : 'past'}">` +
      `<td>${esc(p.gpu)}</td><td class="num">${p.pid}</td><td>${esc(p.user || '–')}</td><td>${container}</td>` +
      `<td class="num">${mem}</td><td class="num">${sm}</td><td class="num">${fmtPct(p.cpu_ratio)}</td>` +
      `<td class="num">${fmtBytes(p.now ? p.now.rss_bytes : p.peak_rss_bytes)}</td><td class="num">${age(p.duration_s)}</td>` +
      `<td class="num">${joules(p.energy_joules)}</td><td>${p.visible ? '' : '<span class="muted">(not visible) </span>'}` +
      `${p.cmdline || p.command ? `<code>${esc((p.cmdline || p.command).slice(0, 120))}</code>` : ''}</td></tr>`;
  }).join(''));
}

// One process's page replaces the last one's: its figures are cleared before they are read.
async function showProcess(view, key, gpu, { push = true, reveal = false } = {}) {
  const { state, opened, page } = view;
  opened.key = key || null;
  opened.gpu = key ? gpu || null : null;
  setSearchParams({ process: opened.key, process_gpu: opened.gpu }, { push });
  page.hidden = !key;
  if (view.plot) { view.plot.destroy(); view.plot = null; }
  const detail = document.getElementById('process-detail');
  detail.textContent = key ? 'Reading the process…' : '';
  if (!key) return;
  document.getElementById('pp-name').textContent = key;
  if (reveal) page.scrollIntoView({ block: 'start' });
  try {
    const gpuPart = gpu ? `?gpu=${encodeURIComponent(gpu)}` : '';
    const p = await fetchJson(`/api/v1/processes/${encodeURIComponent(key)}${gpuPart}`);
    if (opened.key !== key) return;  // another process was opened meanwhile
    state.process = p;
    document.getElementById('pp-name').textContent = `${p.command || '(not visible)'} · pid ${p.pid} · GPU ${p.gpu}`;
    view.plot = processChart(p, document.getElementById('process-chart'));
    detail.textContent =
      `${p.state} · peak ${fmtBytes(p.peak_memory_bytes)} · mean SM ${fmtPct(p.mean_sm_ratio)} · ` +
      `${p.gpu_seconds == null ? '–' : p.gpu_seconds.toFixed(1)} GPU-s · ${joules(p.energy_joules)} · ` +
      `${p.cpu_seconds == null ? '–' : p.cpu_seconds.toFixed(1)} CPU-s`;
    opened.loads++;
  } catch (e) {
    if (opened.key === key) detail.textContent = 'Cannot load the process: ' + e.message;
  }
}
// The process's device memory and SM share over its lifetime, drawn in `el`.
function processChart(p, el) {
  const memory = p.series.find((s) => s.name === 'gpu_process_memory_bytes');
  const sm = p.series.find((s) => s.name === 'gpu_process_utilization_ratio' && s.labels.engine === 'sm');
  const xs = (memory || sm || { points: [] }).points.map((q) => q[0] / 1e9);
  const smAt = new Map((sm ? sm.points : []).map((q) => [q[0] / 1e9, q[1]]));
  const data = [xs, (memory ? memory.points : []).map((q) => q[1]), xs.map((x) => smAt.get(x) ?? null)];
  return makePlot({
    width: Math.max(300, el.clientWidth), height: 220,
    scales: { bytes: { range: (u, min, max) => [0, Math.max(max, 1)] }, ratio: { range: [0, 1] } },
    series: [{}, { label: 'device memory', scale: 'bytes', stroke: '#b877d9', width: 2, value: (u, v) => fmtBytes(v) },
      { label: 'SM share', scale: 'ratio', stroke: '#73bf69', width: 1.5, value: (u, v) => fmtPct(v) }],
    axes: [timeAxis, bytesAxis({ scale: 'bytes' }), axis(fmtPct, { scale: 'ratio', side: 1, grid: { show: false } })],
  }, data, el);
}

async function refresh({ state, table, cpuBefore }) {
  try {
    const r = await fetchJson(`/api/v1/processes?${LiveChart.range.query()}`);
    const t = performance.now() / 1000;
    for (const p of r.processes) {
      if (p.state !== 'running') {
        p.cpu_ratio = p.duration_s > 0 ? p.cpu_seconds / p.duration_s : null;  // over its lifetime
        continue;
      }
      const before = cpuBefore.get(p.key), cpu = p.now && p.now.cpu_seconds_total;
      p.cpu_ratio = before && cpu != null && t > before[1] ? (cpu - before[0]) / (t - before[1]) : null;
      if (cpu != null && (!before || t - before[1] >= 1)) cpuBefore.set(p.key, [cpu, t]);
    }
    state.processes = r.processes;
    render(state, table);
  } catch (e) { /* the next tick retries */ }
}
