// The self-contained HTML report: reads the report document inlined in #report-data and
// draws its tables and charts (uPlot, inlined too). Works offline from a file:// URL.
// A classic script, not a module: the server inlines it after the dashboard's format module
// (web/src/lib/format.js, its `export`s dropped) in one script element, so that module's names are
// globals of the page. This script's own names stay in the block below, each a `const` (a
// function declared in a block would be a global too).
{
  const report = JSON.parse(document.getElementById('report-data').textContent);
  const root = document.getElementById('report');
  const state = { charts: 0, ready: false };
  window.perfscopeReport = state;

  const el = (tag, attrs, ...children) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return e;
  };
  // Figures are written as the dashboard writes them: its format module (web/src/lib/format.js)
  // is inlined ahead of this script.
  const isNum = (v) => typeof v === 'number' && Number.isFinite(v);
  const pct = fmtPct;
  const count = fmtCount;
  const bytes = fmtBytes;
  const bandwidth = fmtBandwidth;
  const ms = fmtDuration;
  const byUnit = { ratio: pct, bytes, bytes_per_second: bandwidth, watts: fmtW, celsius: fmtC };
  const fmtUnit = (unit) => byUnit[unit] || fmtSI;

  // rows: arrays of cells; numeric columns right-aligned.
  const table = (header, rows, numeric, testid) => {
    const t = el('table', testid ? { 'data-testid': testid } : {});
    t.append(el('tr', {}, ...header.map((h, i) => el('th', numeric[i] ? { class: 'num' } : {}, h))));
    for (const r of rows) t.append(el('tr', {}, ...r.map((c, i) => el('td', numeric[i] ? { class: 'num' } : {}, c))));
    return t;
  };
  const section = (title) => { root.append(el('h2', {}, title)); };

  // The title, and what the report covers: its host, perfscope's version and the window.
  const heading = () => {
    const w = report.window;
    const windowText = typeof w === 'string' ? 'all data'
      : new Date(w.from_ns / 1e6).toISOString().replace('T', ' ').slice(0, 19) + ' to ' +
        new Date(w.to_ns / 1e6).toISOString().replace('T', ' ').slice(0, 19) + ' UTC';
    root.append(el('h1', {}, 'perfscope report'));
    root.append(el('div', { class: 'muted' }, `Host ${report.report.host} · perfscope ${report.report.version} · ${windowText}`));
  };

  const summary = (s) => {
    section('Summary');
    const summaryRows = [['GPU utilization', s.gpu_utilization, pct], ['Memory bandwidth', s.memory_bandwidth, bandwidth],
                         ['GPU memory used', s.gpu_memory_used, bytes], ['GPU power', s.gpu_power, byUnit.watts],
                         ['GPU temperature', s.gpu_temperature, byUnit.celsius], ['Host CPU utilization', s.host_cpu_utilization, pct]]
      .filter(([, v]) => v).map(([label, v, f]) => [label, f(v.avg), f(v.peak)]);
    root.append(table(['Metric', 'Average', 'Peak'], summaryRows, [false, true, true], 'summary'));
    const kt = s.kernel_time;
    root.append(el('p', {}, `Kernel time ${ms(kt.total_ms)} in ${count(kt.executions)} executions` +
                             (isNum(kt.avg_ms) ? ` (average ${ms(kt.avg_ms)})` : '') + '.'));
  };

  const charts = (list) => {
    if (!list.length) return;
    section('Charts');
    const grid = el('div', { class: 'charts' });
    root.append(grid);
    const groups = new Map();
    for (const c of list) {
      if (!groups.has(c.name)) groups.set(c.name, []);
      groups.get(c.name).push(c);
    }
    for (const [name, group] of groups) chart(grid, name, group);
  };
  const palette = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf'];
  // One chart per name, a series per labelled chart of that name.
  const chart = (grid, name, list) => {
    // One x axis for every series of the group: the union of their times.
    const xs = [...new Set(list.flatMap((c) => c.points.map((p) => p[0])))].sort((a, b) => a - b);
    const index = new Map(xs.map((x, i) => [x, i]));
    const data = [xs.map((x) => x / 1000)];
    for (const c of list) {
      const ys = new Array(xs.length).fill(null);
      for (const [t, v] of c.points) ys[index.get(t)] = v;
      data.push(ys);
    }
    const f = fmtUnit(list[0].unit);
    const box = el('div', { class: 'chart', 'data-testid': 'chart-' + name });
    box.append(el('h3', {}, name));
    grid.append(box);
    new uPlot({
      width: 520, height: 220,
      series: [{}, ...list.map((c, i) => ({
        label: Object.values(c.labels).join(' ') || name, stroke: palette[i % palette.length], width: 1.5,
        value: (u, v) => f(v), spanGaps: true,
      }))],
      axes: [{}, { values: (u, vals) => vals.map(f), size: 80 }],
    }, data, box);
    state.charts++;
  };

  const topKernels = (kernels) => {
    section('Top kernels');
    // Where any kernel reported its work: its rates and its place on the roofline.
    const worked = kernels.some((k) => 'achieved_tflops' in k);
    const num = (v, digits) => (v == null ? '–' : Number(v).toPrecision(digits));
    const roofline = (k) => {
      const p = (k.roofline || []).find((r) => r.bound);
      return p ? `${p.bound}-bound, ${(p.fraction_of_attainable * 100).toFixed(0)}% of attainable` : '–';
    };
    root.append(kernels.length
      ? table(['Kernel', 'Count', 'Total', 'Average', 'Min', 'Max', 'Share', ...(worked ? ['TFLOP/s', 'GB/s', 'Roofline'] : [])],
              kernels.map((k) => [el('code', {}, k.name), count(k.count), ms(k.total_ms), ms(k.avg_ms), ms(k.min_ms), ms(k.max_ms), pct(k.share),
                                  ...(worked ? [num(k.achieved_tflops, 3), num(k.achieved_gb_per_second, 4), roofline(k)] : [])]),
              [false, true, true, true, true, true, true, ...(worked ? [true, true, false] : [])], 'kernels')
      : el('p', { class: 'muted' }, 'No kernels in this window.'));
  };

  // GPUs against their --device-target.
  const deviceTargets = (devices) => {
    const checks = (devices || []).flatMap((d) => d.checks.map((c) => ({ gpu: d.gpu, ...c })));
    if (!checks.length) return;
    section('Device targets');
    const unit = { tflops: ' TFLOP/s', gb_per_second: ' GB/s', memory_bytes: '', power_watts: ' W' };
    // Four significant digits without trailing zeros: 100 TFLOP/s, 0.8 TFLOP/s.
    const val = (c, v) => (v == null ? '–' : c.figure === 'memory_bytes' ? bytes(v) : `${Number(Number(v).toPrecision(4))}${unit[c.figure]}`);
    root.append(table(['GPU', 'Figure', 'Achieved', 'Goal', 'Ratio', 'Status'],
      checks.map((c) => [c.gpu, c.figure, c.achieved ? `${val(c, c.achieved.value)} (${c.achieved.source})` : 'not measured',
        c.budget != null ? `budget ${val(c, c.budget)}`
          : [c.minimum != null ? `min ${val(c, c.minimum)}` : '', c.target != null ? `target ${val(c, c.target)}` : ''].filter(Boolean).join(' · '),
        c.of_budget != null ? `${pct(c.of_budget)} of budget` : c.efficiency != null ? `${pct(c.efficiency)} of target`
          : c.of_minimum != null ? `${pct(c.of_minimum)} of minimum` : '–',
        c.status.replace(/_/g, ' ')]),
      [false, false, true, false, true, false], 'targets'));
    const recs = checks.filter((c) => c.recommendation);
    if (recs.length) {
      const list = el('ul', {});
      for (const c of recs) list.append(el('li', {}, `GPU ${c.gpu}: ${c.recommendation}`));
      root.append(list);
    }
  };

  // Energy per model, where a GPU energy counter and requests shared the window.
  const energyPerModel = (e) => {
    const energy = e ? e.models : [];
    if (!energy.length) return;
    section('Energy');
    const j = (v, digits) => (v == null ? '–' : `${Number(v).toPrecision(digits)} J`);
    root.append(table(['Model', 'Energy', 'Per inference', 'Per output token', 'Inferences/s per W', 'Attribution'],
      energy.map((m) => [el('code', {}, m.model), j(m.joules, 4), j(m.joules_per_inference, 3), j(m.joules_per_output_token, 3),
                         m.inferences_per_second_per_watt == null ? '–' : Number(m.inferences_per_second_per_watt).toPrecision(3),
                         m.attribution]),
      [false, true, true, true, true, false], 'energy'));
    root.append(el('p', { class: 'muted' }, e.method));
  };

  // Operators (ONNX Runtime nodes and the like), when any were reported.
  const operators = (reported) => {
    const ops = reported ? reported.op_types : [];
    if (!ops.length) return;
    section('Operators');
    root.append(table(['Model', 'Op type', 'Count', 'Total', 'Mean', 'p50', 'p99', 'Share of model', 'Providers'],
      ops.map((o) => [o.model, el('code', {}, o.op_type), count(o.count), ms(o.total_ms), ms(o.mean_ms),
                      ms(o.percentiles_ms.p50), ms(o.percentiles_ms.p99), pct(o.share_of_model_time),
                      Object.keys(o.providers).join(', ')]),
      [false, false, true, true, true, true, true, true, false], 'operators'));
    for (const m of reported.models) {
      if (m.cpu_fallback_share != null) {
        root.append(el('p', {}, `CPU fallback of ${m.model}: ${pct(m.cpu_fallback_share)} of its operator time on CPU providers.`));
      }
    }
  };

  const kernelTimeline = (timeline) => {
    if (!timeline.length) return;
    section('Kernel timeline');
    // Several runs: a row per run and device, each over its own span.
    const runs = timeline.some((q) => q.run);
    if (runs) root.append(el('p', { class: 'muted' }, 'Each run over its own span: the time between runs is no run\'s idle time.'));
    root.append(table([...(runs ? ['Run'] : []), 'Device', 'Stream', 'Kernels', 'Busy', 'Idle', 'Avg gap', 'Launch efficiency'],
                      timeline.map((q) => [...(runs ? [q.run || '(none)'] : []), q.device,
                                           q.stream === null ? '(all)' : q.stream, count(q.kernel_count),
                                           pct(q.busy_ratio), ms(q.idle_ms), ms(q.avg_gap_ms), pct(q.launch_efficiency)]),
                      [...(runs ? [false] : []), false, false, true, true, true, true, true], 'timeline'));
  };

  // Multi-GPU jobs: each rank's median step (the whole run where no step repeats), the straggler.
  const multiGpuJob = (job) => {
    section(`Multi-GPU job ${job.run ?? '(no run)'}`);
    const perStep = job.steps > 0;
    const s = job.straggler;
    root.append(el('p', {}, s
      ? `Straggler: rank ${s.rank} — last in ${pct(s.last_share)} of the collectives, ${ms(s.extra_per_step_ms)} more compute per ` +
        `${ms(s.step_median_ms)} step; the others wait ${ms(s.exposed_wait_caused_ms)} for it per collective.`
      : `No straggler: ${job.no_straggler || 'none found'}.`));
    root.append(el('p', { class: 'muted' }, `${job.ranks.length} ranks, ${count(job.matched)} collectives matched across them` +
      (perStep ? `, ${count(job.steps)} steps; each rank's median step.` : '; no repeating step: each rank over the run.')));
    root.append(table(['Rank', 'GPU', 'Compute', 'Comm. alone', 'Idle', 'Comm. hidden', 'Overlap', 'Waiting', 'Last in'],
      job.ranks.map((r) => {
        const b = (perStep && r.per_step) || r.breakdown;
        return [r.rank, r.device, ms(b.compute_ms), ms(b.exposed_ms), ms(b.idle_ms), ms(b.overlapped_ms), pct(b.overlap_ratio),
                pct(r.wait_share), count(r.last_arrivals)];
      }),
      [false, false, true, true, true, true, true, true, true], 'ranks'));
    root.append(table(['Collective', 'Count', 'p50', 'p99', 'Waiting'],
      job.ops.map((o) => [el('code', {}, o.op), count(o.instances), ms(o.duration_p50_ms), ms(o.duration_p99_ms), pct(o.wait_share)]),
      [false, true, true, true, true], 'collectives'));
    root.append(el('p', { class: 'muted' }, 'Compute + comm. alone + idle = the stretch (per step, each a median); comm. hidden ran ' +
      'during compute, so it is part of compute\'s time.'));
  };

  const memory = (m) => {
    section('Memory');
    root.append(table(['Statistic', 'Value'], [['Total allocated', bytes(m.total_allocated_bytes)],
                                               ['Current allocated', bytes(m.current_allocated_bytes)],
                                               ['Peak allocated', bytes(m.peak_allocated_bytes)]], [false, true], 'memory'));
  };

  const latency = (models, slo) => {
    if (!models.length) return;
    section('Latency percentiles');
    const sla = slo && isNum(slo.latency_ms);
    root.append(table(['Model', 'Requests', 'p50', 'p90', 'p95', 'p99', 'p99.9', ...(sla ? ['SLA compliance'] : [])],
                      models.map((l) => [l.model, count(l.count), ...['p50', 'p90', 'p95', 'p99', 'p99.9'].map((k) => ms(l.percentiles_ms[k])),
                                         ...(sla ? [l.sla ? pct(l.sla.compliance_rate) : '–'] : [])]),
                      [false, true, true, true, true, true, true, true], 'latency'));
  };

  const bottlenecks = (findings) => {
    section('Bottlenecks');
    const fired = findings.filter((f) => f.status === 'fired');
    if (!fired.length) root.append(el('p', {}, 'No bottleneck detected.'));
    for (const f of fired) {
      const d = el('div', { class: 'finding', 'data-testid': 'finding' });
      d.append(el('div', {}, el('span', { class: 'sev-' + f.severity }, f.severity + ' '), f.title));
      d.append(el('div', { class: 'muted' }, 'Evidence: ' + Object.entries(f.evidence).map(([k, v]) => `${evidenceLabel(k)} ${fmtEvidence(k, v)}`).join(', ')));
      d.append(el('ul', {}, ...f.recommendations.map((r) => el('li', {}, r))));
      root.append(d);
    }
  };

  const abTests = (tests) => {
    if (!tests.length) return;
    section('A/B tests');
    const rows = [];
    const side = (x) => Object.entries(x || {}).map(([k, v]) => `${k}=${v}`).join(' ');
    for (const t of tests) {
      if (t.not_evaluated) {
        const d = t.definition || {};
        rows.push([t.name, side(d.variants ? d.variants[0] : d.a), side(d.variants ? d.variants[1] : d.b), '–', '–', '–',
                   'not evaluated: ' + t.not_evaluated]);
        continue;
      }
      const comps = t.comparisons
        ? t.comparisons.map((c) => [side(t.definition.variants[c.control]), side(t.definition.variants[c.variant]), c])
        : [[side(t.definition.a), side(t.definition.b), t]];
      for (const [a, b, c] of comps) {
        rows.push([t.name, a, b, isNum(c.speedup) ? c.speedup.toFixed(3) + '×' : '–',
                   isNum(c.speedup_ci95[0]) ? `${c.speedup_ci95[0].toFixed(3)}–${c.speedup_ci95[1].toFixed(3)}` : '–',
                   c.p_value_used.toPrecision(3), c.verdict]);
      }
    }
    root.append(table(['Test', 'Control', 'Variant', 'Speedup', '95% CI', 'p', 'Verdict'], rows,
                      [false, false, false, true, true, true, false], 'abtests'));
  };

  // Run against run (GET /api/v1/runs/compare): totals, then the kernels that moved most.
  const runComparison = (c) => {
    if (!c) return;
    section(`Run comparison: ${c.a.name} → ${c.b.name}`);
    root.append(el('p', {}, el('strong', { 'data-testid': 'compare-verdict' }, c.verdict), '. ' + c.method + '.'));
    const change = (t) => (isNum(t.change) ? (t.change >= 0 ? '+' : '') + (t.change * 100).toFixed(1) + '%' : '–');
    const totals = [['Wall time', 'wall_s', (v) => ms(v * 1000)], ['GPU busy', 'gpu_busy_ms', ms],
                    ['Kernel time', 'kernel_ms', ms], ['Kernels', 'kernel_count', count],
                    ['Launch efficiency', 'launch_efficiency', pct]];
    root.append(table(['Total', c.a.name, c.b.name, 'Change'],
                      totals.map(([label, key, f]) => [label, f(c.totals[key].a), f(c.totals[key].b), change(c.totals[key])]),
                      [false, true, true, true], 'compare-totals'));
    root.append(table(['Kernel', 'Executions', 'Mean a', 'Mean b', 'Change', 'Time moved', 'p (adjusted)', 'Verdict'],
                      c.kernels.slice(0, 20).map((k) => [el('code', {}, k.name), `${count(k.count_a)} / ${count(k.count_b)}`,
                                                         ms(k.mean_a_ms), ms(k.mean_b_ms),
                                                         change({ change: k.mean_change }), ms(k.moved_ms),
                                                         isNum(k.p_adjusted) ? k.p_adjusted.toPrecision(3) : '–', k.verdict]),
                      [false, true, true, true, true, true, true, false], 'compare-kernels'));
  };

  heading();
  summary(report.summary);
  charts(report.charts);
  topKernels(report.kernels.top);
  deviceTargets(report.devices);
  energyPerModel(report.energy);
  operators(report.operators);
  kernelTimeline(report.timeline);
  for (const job of report.collectives || []) multiGpuJob(job);
  memory(report.memory);
  latency(report.latency, report.slo);
  bottlenecks(report.bottlenecks);
  abTests(report.abtests);
  runComparison(report.compare);
  root.append(el('p', { class: 'muted' }, 'Percentiles: ' + report.methods.percentiles + '.'));
  state.ready = true;
}
