// Producers' events: the kernels table (sortable), the allocated-memory timeline, the
// inference table and the operators table (op types with percentiles, each model's CPU fallback). Refreshed from the REST views whenever the stream says new events were
// committed ({"type":"events"}), at most once a second.
/* global uPlot */
import { LiveChart, axis, bytesAxis, timeAxis } from '../lib/live_chart.js';
import { esc, fmtBytes, fmtInstant, fmtPct, fmtSI, kernelNameHtml, ms, shortKernelName } from '../lib/format.js';
import { fetchJson } from '../lib/api.js';
import { setSearchParams } from '../lib/url.js';
import { PercentilesOverTime } from '../lib/percentiles_over_time.js';
import { fillRows } from '../lib/rows.js';

// Serving objectives of the inference table, kept in the URL as the API names them.
const SLO_INPUTS = { sla_ms: 'slo-latency', ttft_slo_ms: 'slo-ttft', tpot_slo_ms: 'slo-tpot' };

// The first device where the kernel has a place on the roofline: bound and share of the
// attainable, the figures behind it in the tooltip; else why not.
function rooflineCell(k) {
  const places = k.roofline || [];
  const p = places.find((r) => r.bound);
  if (!p) {
    const why = places.length ? places[0].unavailable : 'executions report no flops and bytes';
    return `<td class="num muted" data-col="roofline" title="${esc(why)}">–</td>`;
  }
  const title = `GPU ${p.device} (${p.model}), ${p.dtype}: ${fmtSI(p.arithmetic_intensity)} FLOP/B, ridge ` +
    `${fmtSI(p.ridge_flops_per_byte)} FLOP/B; ${fmtSI(p.achieved_tflops)} of ${fmtSI(p.attainable_tflops)} TFLOP/s attainable; ` +
    `${(p.fraction_of_peak_bandwidth * 100).toFixed(0)}% of peak bandwidth`;
  return `<td class="num" data-col="roofline" data-bound="${p.bound}" title="${esc(title)}">` +
    `${p.bound} · ${(p.fraction_of_attainable * 100).toFixed(0)}%</td>`;
}
// `kernels`: the table's rows and how they are sorted.
function renderKernels(kernels) {
  const { rows, sortKey, ascending } = kernels;
  const body = document.querySelector('#kernels-table tbody');
  document.querySelectorAll('#kernels-table th').forEach((th) => {
    th.classList.toggle('sorted', th.dataset.key === sortKey);
    th.classList.toggle('asc', th.dataset.key === sortKey && ascending);
  });
  if (rows.length === 0) { fillRows(body, ''); return; }
  const sorted = [...rows].sort((a, b) => {
    const x = a[sortKey], y = b[sortKey];
    const c = typeof x === 'string' || Array.isArray(x) ? String(x).localeCompare(String(y)) : x - y;
    return ascending ? c : -c;
  });
  fillRows(body, sorted.map((k) => `<tr data-kernel="${esc(k.name)}"><td>${kernelNameHtml(k.name)}</td>` +
    `<td data-col="devices">${esc(k.devices.join(', '))}</td><td class="num">${fmtSI(k.count)}</td><td class="num">${ms(k.total_ms)}</td><td class="num">${ms(k.avg_ms)}</td>` +
    `<td class="num">${ms(k.min_ms)}</td><td class="num">${ms(k.max_ms)}</td>` +
    `<td class="num" data-col="share"><span class="bar" style="width:${Math.round(k.device_share * 60)}px"></span>${(k.device_share * 100).toFixed(1)}%</td>` +
    `<td class="num" data-col="tflops">${k.achieved_tflops == null ? '–' : fmtSI(k.achieved_tflops)}</td>` +
    `<td class="num" data-col="gbps">${k.achieved_gb_per_second == null ? '–' : fmtSI(k.achieved_gb_per_second)}</td>` +
    rooflineCell(k) +
    `<td>${esc(k.variants.join(', '))}</td></tr>`).join(''));
}

// `onData(kernels, models)` runs after each refresh (the analysis view's pickers).
export function createEventsView({ state, onData }) {
  const allocChart = new LiveChart(document.getElementById('chart-alloc'), {
    families: [],
    // Allocated bytes change in steps at each allocation and free: draw them as steps.
    // Each point the most allocated in its interval (peaks are never thinned away), so the label says so.
    seriesFor: () => ({ label: 'allocated (peak of each interval)', scale: 'bytes', fmt: fmtBytes, width: 2, color: '#b877d9',
                        paths: uPlot.paths.stepped({ align: 1 }) }),
    scales: { bytes: { range: (u, min, max) => [0, Math.max(max, 1)] } },
    axes: [timeAxis, bytesAxis({ scale: 'bytes' })],
  });
  allocChart.ensureSeries('allocated', 'allocated', {});

  // The view's state, handed to the functions below. `kernels`: the table's rows and order.
  // `detail`: the kernel page's kernel (the URL keeps it, ?kernel=NAME). `models`: the inference
  // table's last answer. `operatorsPace`, `inferencePace`: ms between reads (see refresh);
  // `timer`: the refresh due.
  const view = {
    state, onData, allocChart,
    kernels: { rows: [], sortKey: 'total_ms', ascending: false },
    detail: { name: new URLSearchParams(window.location.search).get('kernel') },
    durations: new PercentilesOverTime(document.getElementById('kd-chart')),
    models: [], operatorsReadAt: 0, inferenceReadAt: 0, operatorsPace: 10000, inferencePace: 5000, timer: null,
  };
  const { kernels, detail } = view;
  state.kernelDetail = { loads: 0, slices: [] };
  // A new range: the page is read again for it once the kernels of that range are in.
  LiveChart.range.onChange(() => { detail.stale = true; });
  document.querySelector('#kernels-table tbody').addEventListener('click', (e) => {
    const row = e.target.closest('tr[data-kernel]');
    if (row) showKernel(view, row.dataset.kernel, true);
  });
  document.getElementById('kd-close').addEventListener('click', () => showKernel(view, null));

  document.querySelectorAll('#kernels-table th').forEach((th) => th.addEventListener('click', () => {
    const key = th.dataset.key;
    kernels.ascending = kernels.sortKey === key ? !kernels.ascending : key === 'name';
    kernels.sortKey = key;
    renderKernels(kernels);
  }));

  const startParams = new URLSearchParams(window.location.search);
  for (const [key, id] of Object.entries(SLO_INPUTS)) {
    if (Number(startParams.get(key)) > 0) document.getElementById(id).value = startParams.get(key);
  }

  state.eventRefreshes = 0;
  const refreshNow = () => refresh(view);
  function schedule() {
    if (view.timer === null) view.timer = setTimeout(refreshNow, 1000);
  }
  // A new range or objective: every table read again over it at once.
  LiveChart.range.onChange(() => { view.operatorsReadAt = 0; view.inferenceReadAt = 0; refresh(view); });
  document.getElementById('inference-slo').addEventListener('change', () => {
    setSearchParams(Object.fromEntries(Object.entries(SLO_INPUTS).map(([key, id]) => {
      const v = Number(document.getElementById(id).value);
      return [key, v > 0 ? v : null];
    })));
    view.inferenceReadAt = 0;
    refresh(view);
  });
  document.getElementById('inference-slo').addEventListener('submit', (e) => e.preventDefault());

  // Back and Forward: the URL's kernel, opened or closed.
  const readUrl = () => {
    const name = new URLSearchParams(window.location.search).get('kernel');
    if (name !== detail.name) showKernel(view, name, false, { push: false });
  };
  return { charts: { alloc: allocChart }, refresh: refreshNow, schedule, readUrl,
           showKernel: (...args) => showKernel(view, ...args) };
}

// Drill-down: a kernel row opens its page — summary, launch configurations, its place on the
// roofline, its newest executions — and its distribution in the latency panel. The URL keeps
// it (?kernel=NAME).
// Its durations' percentiles over the dashboard's range: a trend, a regression, a burst.
async function loadDurations({ state, detail, durations }, name) {
  try {
    const r = await durations.load(`kernel=${encodeURIComponent(name)}`);
    if (r && detail.name === name) {
      state.kernelDetail = { loads: state.kernelDetail.loads + 1, slices: r.over_time, changes: durations.changes };
    }
  } catch (e) { /* drawn on the next pick or range change */ }
}
// The page's figures from the kernel's row of the current range (every refresh, so a live
// page keeps up): its summary and launch configurations, or that it has none in the range.
function fillKernelSummary(kernels, name) {
  const k = kernels.rows.find((r) => r.name === name);
  if (!k) {
    document.getElementById('kd-summary').textContent = 'No executions of this kernel in the time range.';
    document.querySelector('#kd-configs tbody').innerHTML = '';
    return null;
  }
  const place = (k.roofline || []).find((p) => p.bound);
  document.getElementById('kd-summary').textContent = `${fmtSI(k.count)} executions · total ${ms(k.total_ms)} ms · ` +
    `avg ${ms(k.avg_ms)} ms (min ${ms(k.min_ms)}, max ${ms(k.max_ms)}) · ${(k.device_share * 100).toFixed(1)}% of ` +
    (k.devices.length === 1 ? `device ${k.devices[0]}'s kernel time` : 'all kernel time') +
    (k.variants.length ? ` · variants ${k.variants.join(', ')}` : '') +
    (k.achieved_tflops != null ? ` · ${fmtSI(k.achieved_tflops)} TFLOP/s` : '') +
    (place ? ` · ${place.bound}-bound on GPU ${place.device}, ${(place.fraction_of_attainable * 100).toFixed(0)}% of attainable` : '');
  const dims = (d) => d.join('×');
  document.querySelector('#kd-configs tbody').innerHTML = k.launch_configs.length
    ? k.launch_configs.map((c) => `<tr><td>${dims(c.grid)}</td><td>${dims(c.block)}</td>` +
      `<td class="num">${c.shared_mem_bytes == null ? '–' : fmtBytes(c.shared_mem_bytes)}</td>` +
      `<td class="num">${c.registers_per_thread == null ? '–' : c.registers_per_thread}</td><td class="num">${fmtSI(c.count)}</td></tr>`).join('')
    : '<tr class="empty"><td colspan="5">No launch configuration reported.</td></tr>';
  return k;
}
// `reveal`: scrolled to, when a click opened it (the view's top holds it).
async function showKernel(view, name, reveal = false, { push = true } = {}) {
  const { detail, durations } = view;
  detail.name = name;
  detail.stale = false;
  setSearchParams({ kernel: name || null }, { push });
  const panel = document.getElementById('kernel-detail');
  if (!name) { panel.hidden = true; return; }
  panel.hidden = false;
  // Nothing of the kernel shown before stays while this one's figures are read.
  durations.clear();
  document.querySelector('#kd-records tbody').innerHTML = '';
  document.getElementById('kd-timeline').hidden = true;
  if (reveal) panel.scrollIntoView({ block: 'start' });
  const short = shortKernelName(name);
  document.getElementById('kd-name').textContent = short;
  // The whole signature, selectable, where the short name leaves something out.
  const signature = document.getElementById('kd-signature');
  signature.hidden = short === name;
  signature.textContent = name;
  fillKernelSummary(view.kernels, name);
  loadDurations(view, name);
  // The latency panel follows: this kernel's distribution, never the previous one's.
  const subject = document.getElementById('pct-subject');
  if (![...subject.options].some((o) => o.value === 'kernel:' + name)) {
    const option = new Option('kernel: ' + short, 'kernel:' + name);
    option.title = name;
    subject.add(option);
  }
  subject.value = 'kernel:' + name;
  subject.dispatchEvent(new Event('change', { bubbles: true }));
  try {
    const r = await fetchJson(`/api/v1/kernels/${encodeURIComponent(name)}/records?limit=20&${LiveChart.range.query()}`);
    if (detail.name !== name) return;  // another kernel was picked meanwhile
    showRecords(r.records);
  } catch (e) { /* the summary stands; the records come on the next pick */ }
}
// The kernel's newest executions, and the link to them on the timeline.
function showRecords(records) {
  // Its newest executions on the timeline: their span, with a tenth either side.
  const link = document.getElementById('kd-timeline');
  if (records.length) {
    const from = Math.min(...records.map((e) => e.start_ns)), to = Math.max(...records.map((e) => e.end_ns));
    const pad = Math.max(1e6, (to - from) / 10);
    const q = new URLSearchParams(window.location.search);
    q.set('view', 'timeline');
    q.delete('kernel');
    q.set('tl_from', String(Math.round(from - pad)));
    q.set('tl_to', String(Math.round(to + pad)));
    link.href = '?' + q.toString();
    link.hidden = false;
  }
  document.querySelector('#kd-records tbody').innerHTML = records.map((e) =>
    `<tr><td>${fmtInstant(e.end_ns)}</td><td class="num">${ms(e.duration_ms)} ms</td>` +
    `<td>${esc(e.device)}${e.stream ? ' · ' + esc(e.stream) : ''}</td><td>${esc(e.variant || '')}</td>` +
    `<td class="num">${e.launch_end_ns == null ? '–' : ms((e.start_ns - e.launch_end_ns) / 1e6) + ' ms'}</td></tr>`).join('');
}

function sloQuery() {
  return Object.entries(SLO_INPUTS).map(([key, id]) => [key, Number(document.getElementById(id).value)])
    .filter(([, v]) => v > 0).map(([key, v]) => `&${key}=${v}`).join('');
}
// Within the SLO: requests that succeeded and met every objective set (from the requests
// themselves); for a scraped server, the share under the latency objective read from its
// histogram, which knows no errors, bounded by the bucket it falls in.
function withinSlo(m) {
  if (m.goodput_ratio != null) return { text: fmtPct(m.goodput_ratio), title: 'succeeded and met every objective set' };
  const c = m.slo_compliance && (m.slo_compliance.latency_ms || m.slo_compliance.ttft_ms || m.slo_compliance.tpot_ms);
  if (!c) return { text: '–', title: sloQuery() ? 'no figure this objective can be judged by' : 'set an objective above' };
  const [lo, hi] = c.bounds || [c.compliance_rate, c.compliance_rate];
  return { text: '≈' + fmtPct(c.compliance_rate), title: `under ${c.target_ms} ms by the server's histogram: between ${fmtPct(lo)} and ${fmtPct(hi)}; errors not known` };
}
function renderInference(models) {
  const body = document.querySelector('#inference-table tbody');
  // No objective set: no column to judge by (set one above the table and it appears).
  document.getElementById('inference-table').classList.toggle('no-slo', !sloQuery());
  if (models.length === 0) { fillRows(body, ''); return; }
  const rate = (v) => (v == null ? '–' : v.toFixed(2));
  const q = (d, key) => (d == null || d[key] == null ? '–' : ms(d[key]));
  const pair = (d) => (d == null ? '–' : `${q(d, 'p50')} · ${q(d, 'p99')}`);
  const errors = (m) => (m.errors == null ? '–' : m.errors === 0 ? '0' : `${m.errors} (${fmtPct(m.error_rate)})`);
  fillRows(body, models.map((m) => {
    const slo = withinSlo(m);
    return `<tr data-model="${esc(m.model)}" data-version="${esc(m.version || '')}" title="latencies from ${m.source === 'scrape' ? esc(m.server) + "'s histograms" : 'the reported requests'}">` +
      `<td>${esc(m.model)}${m.version ? ' v' + esc(m.version) : ''}</td>` +
      `<td class="num">${fmtSI(m.requests)}</td><td class="num">${rate(m.requests_per_second)}</td>` +
      `<td class="num" data-col="errors"${m.unknown?.errors ? ` title="${esc(m.unknown.errors)}"` : ''}>${errors(m)}</td>` +
      `<td class="num" data-col="p50">${q(m.latency_ms, 'p50')}</td><td class="num" data-col="p90">${q(m.latency_ms, 'p90')}</td>` +
      `<td class="num" data-col="p99">${q(m.latency_ms, 'p99')}</td>` +
      `<td class="num" data-col="ttft">${pair(m.ttft_ms)}</td><td class="num" data-col="tpot">${pair(m.tpot_ms)}</td>` +
      `<td class="num">${fmtSI(m.output_tokens_per_second)}</td>` +
      `<td class="num" data-col="slo" title="${esc(slo.title)}">${slo.text}</td></tr>`;
  }).join(''));
}

function renderOperators(o) {
  const body = document.querySelector('#operators-table tbody');
  if (o.op_types.length === 0) {
    fillRows(body, '');
    document.getElementById('operators-summary').textContent = '';
    return;
  }
  const pct = (r, key) => (r.percentiles_ms[key] == null ? '–' : ms(r.percentiles_ms[key]));
  fillRows(body, o.op_types.slice(0, 20).map((r) => `<tr data-op="${esc(r.op_type)}"><td>${esc(r.model)}</td>` +
    `<td>${esc(r.op_type)}</td><td class="num">${r.count}</td><td class="num">${ms(r.total_ms)}</td>` +
    `<td class="num">${ms(r.mean_ms)}</td><td class="num">${pct(r, 'p50')}</td><td class="num">${pct(r, 'p90')}</td>` +
    `<td class="num">${pct(r, 'p99')}</td><td class="num">${(r.share_of_model_time * 100).toFixed(1)}%</td>` +
    `<td>${esc(Object.keys(r.providers).join(', '))}</td></tr>`).join(''));
  // A model whose other operators ran elsewhere: how much of its operator time fell back to the CPU.
  document.getElementById('operators-summary').textContent = o.models.filter((m) => m.cpu_fallback_share != null)
    .map((m) => `${m.model}: ${(m.cpu_fallback_share * 100).toFixed(1)}% of operator time on CPU`).join(' · ');
}

// The kernels table's rows from GET /api/v1/kernels, with its summary.
function fillKernels(view, k) {
  // Share of its device's kernel time: a GPU's kernels are not measured against a CPU
  // producer's (a kernel on several devices: of all kernel time).
  const perDevice = new Map();
  for (const r of k.kernels) if (r.devices.length === 1) perDevice.set(r.devices[0], (perDevice.get(r.devices[0]) || 0) + r.total_ms);
  view.kernels.rows = k.kernels.map((r) => ({ ...r,
    device_share: r.devices.length === 1 && perDevice.get(r.devices[0]) > 0 ? r.total_ms / perDevice.get(r.devices[0]) : r.share,
    roofline_fraction: ((r.roofline || []).find((p) => p.bound) || { fraction_of_attainable: -1 }).fraction_of_attainable }));
  // Share is of each kernel's own device's kernel time: say so where devices differ.
  document.getElementById('kernels-summary').textContent = !k.kernels.length ? ''
    : `${k.kernels.length} kernels · ${ms(k.total_kernel_ms)} ms of kernel time` +
      (perDevice.size > 1 ? ` on ${perDevice.size} devices · Share: of its device's kernel time` : '');
  renderKernels(view.kernels);
  const { detail } = view;
  if (detail.name) {
    // From the URL (opened without a history entry), read again for a new range, else its
    // summary kept up with the table.
    if (document.getElementById('kernel-detail').hidden || detail.stale) showKernel(view, detail.name, false, { push: false });
    else fillKernelSummary(view.kernels, detail.name);
  }
}

async function refresh(view) {
  view.timer = null;
  try {
    // Every table over the dashboard's time range. Operators and the inference table's
    // percentiles summarize every execution and request in it: read at most every 10 s and
    // 5 s, not on every notification of new events — and no more often than 20 times the
    // last answer took, so a range of millions of requests costs the server a bounded share.
    const now = Date.now();
    const readOperators = now - view.operatorsReadAt >= view.operatorsPace;
    if (readOperators) view.operatorsReadAt = now;
    const readInference = now - view.inferenceReadAt >= view.inferencePace;
    if (readInference) view.inferenceReadAt = now;
    const scope = LiveChart.range.query();
    const paced = async (url, setPace, floor) => {
      const t0 = performance.now();
      const answer = await fetchJson(url);
      setPace(Math.max(floor, 20 * (performance.now() - t0)));
      return answer;
    };
    const [k, m, i, o] = await Promise.all([fetchJson(`/api/v1/kernels?${scope}`),
      fetchJson(`/api/v1/memory?${scope}&max_points=600`),
      readInference ? paced(`/api/v1/inference?${scope}&latency=true${sloQuery()}`, (v) => { view.inferencePace = v; }, 5000) : null,
      readOperators ? paced(`/api/v1/operators?${scope}`, (v) => { view.operatorsPace = v; }, 10000) : null]);
    fillKernels(view, k);
    view.allocChart.fill({ allocated: m.timeline.points.map((p) => [p[0] / 1e9, p[1]]) });
    document.getElementById('memory-summary').textContent = m.allocation_count
      ? `current ${fmtBytes(m.current_allocated_bytes)} · peak ${fmtBytes(m.peak_allocated_bytes)}` : '';
    if (i) { view.models = i.models; renderInference(view.models); }
    if (o) renderOperators(o);
    view.onData(view.kernels.rows, view.models);
    view.state.eventRefreshes++;
    // A table skipped by its pace is read when its time comes, even if no event follows.
    const due = [readInference ? null : view.inferenceReadAt + view.inferencePace,
                 readOperators ? null : view.operatorsReadAt + view.operatorsPace].filter((t) => t != null);
    if (due.length && view.timer === null) view.timer = setTimeout(() => refresh(view), Math.max(0, Math.min(...due) - Date.now()));
  } catch (e) { /* next notification retries */ }
}
