// perfscope dashboard: live uPlot charts fed by the /api/v1/stream WebSocket and pre-filled
// from the REST history. No build step and no CDN: the server embeds and serves these files.
'use strict';

(() => {
  const WINDOW_S = 300;  // seconds of history kept on screen
  const PALETTE = ['#73bf69', '#f2cc0c', '#5794f2', '#ff780a', '#b877d9', '#37872d', '#fade2a', '#8ab8ff',
                   '#f2495c', '#1f60c4', '#ca95e5', '#c4162a'];

  const fmtPct = (v) => (v == null || Number.isNaN(v) ? '–' : (v * 100).toFixed(1) + '%');
  const fmtNum = (v) => (v == null || Number.isNaN(v) ? '–' : v.toFixed(2));
  const fmtBytes = (v) => {
    if (v == null || Number.isNaN(v)) return '–';
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    return v.toFixed(Math.abs(v) < 10 ? 2 : 1) + ' ' + units[i];
  };

  // Same text form as the server's canonical series key: name{a="x",b="y"}, labels sorted.
  function canonical(name, labels) {
    const keys = Object.keys(labels || {}).sort();
    if (keys.length === 0) return name;
    const esc = (s) => s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
    return name + '{' + keys.map((k) => `${k}="${esc(labels[k])}"`).join(',') + '}';
  }

  // One chart: a fixed set of series, rows aligned by timestamp (a sampling pass stamps all
  // its samples with one time, so live rows line up exactly).
  class LiveChart {
    constructor(el, { families, seriesFor, scales, axes }) {
      this.el = el;
      this.families = families;      // family names this chart shows
      this.seriesFor = seriesFor;    // (key, name, labels) -> {label, scale, fmt, width} | null
      this.scales = scales;
      this.axes = axes;
      this.keys = [];                // series keys, in column order
      this.defs = [];
      this.xs = [];
      this.cols = [];
      this.marks = [];               // anomaly times (s), drawn as vertical lines
      this.plot = null;
    }

    mark(t) {
      this.marks.push(t);
      if (this.marks.length > 200) this.marks.shift();
      if (this.plot) this.plot.redraw(false);
    }

    accepts(name) { return this.families.includes(name); }

    ensureSeries(key, name, labels) {
      if (this.keys.includes(key)) return true;
      const def = this.seriesFor(key, name, labels);
      if (!def) return false;
      this.keys.push(key);
      this.defs.push(def);
      this.cols.push(new Array(this.xs.length).fill(null));
      this.rebuild();  // a new series changes the layout: rare (start-up, hotplug)
      return true;
    }

    rebuild() {
      if (this.plot) { this.plot.destroy(); this.plot = null; }
      if (this.keys.length === 0) return;
      const order = this.keys.map((_, i) => i);
      const opts = {
        width: Math.max(300, this.el.clientWidth),
        height: 240,
        scales: Object.assign({ x: { time: true } }, this.scales),
        legend: { live: true },
        series: [{}].concat(order.map((i) => ({
          label: this.defs[i].label,
          scale: this.defs[i].scale,
          stroke: this.defs[i].color || PALETTE[i % PALETTE.length],
          width: this.defs[i].width || 1,
          value: (u, v) => this.defs[i].fmt(v),
          spanGaps: true,
          paths: this.defs[i].paths,
        }))),
        axes: this.axes,
        hooks: { draw: [(u) => {
          const ctx = u.ctx;
          ctx.save();
          ctx.strokeStyle = '#f2495c';
          ctx.setLineDash([4, 3]);
          for (const t of this.marks) {
            const x = u.valToPos(t, 'x', true);
            if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
            ctx.beginPath();
            ctx.moveTo(x, u.bbox.top);
            ctx.lineTo(x, u.bbox.top + u.bbox.height);
            ctx.stroke();
          }
          ctx.restore();
        }] },
      };
      this.plot = new uPlot(opts, this.data(), this.el);
    }

    data() { return [this.xs].concat(this.cols); }

    // Rows from the REST history: {key: [[t_s, value], ...]} merged on timestamps.
    fill(byKey) {
      const rows = new Map();
      for (const [key, points] of Object.entries(byKey)) {
        const col = this.keys.indexOf(key);
        if (col < 0) continue;
        for (const [t, v] of points) {
          if (!rows.has(t)) rows.set(t, new Array(this.keys.length).fill(null));
          rows.get(t)[col] = v;
        }
      }
      const times = [...rows.keys()].sort((a, b) => a - b);
      this.xs = times;
      this.cols = this.keys.map((_, c) => times.map((t) => rows.get(t)[c]));
      this.trim();
      if (this.plot) this.plot.setData(this.data());
    }

    // One live pass: {key: value}. Passes older than what is drawn are ignored.
    append(t, values) {
      if (this.xs.length && t <= this.xs[this.xs.length - 1]) return;
      let any = false;
      const row = this.keys.map((k) => {
        if (k in values) { any = true; return values[k]; }
        return null;
      });
      if (!any) return;
      this.xs.push(t);
      row.forEach((v, c) => this.cols[c].push(v));
      this.trim();
      if (this.plot) this.plot.setData(this.data());
    }

    trim() {
      const cutoff = Date.now() / 1000 - WINDOW_S;
      let n = 0;
      while (n < this.xs.length && this.xs[n] < cutoff) n++;
      if (n > 0) {
        this.xs.splice(0, n);
        this.cols.forEach((c) => c.splice(0, n));
      }
    }

    resize() { if (this.plot) this.plot.setSize({ width: Math.max(300, this.el.clientWidth), height: 240 }); }
  }

  const axis = (fmt, extra) => Object.assign({
    stroke: '#8e8e8e', grid: { stroke: '#2c3235', width: 1 }, ticks: { stroke: '#2c3235' }, size: 70,
    values: (u, vals) => vals.map(fmt),
  }, extra || {});
  const timeAxis = { stroke: '#8e8e8e', grid: { stroke: '#2c3235', width: 1 }, ticks: { stroke: '#2c3235' } };

  const charts = {
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
      axes: [timeAxis, axis(fmtBytes, { scale: 'bytes' })],
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
      axes: [timeAxis, axis(fmtPct, { scale: 'ratio' }), axis(fmtBytes, { scale: 'bytes', side: 1, grid: { show: false } })],
    }),
  };
  // GPU charts show the picked GPU only (labels.gpu); the overview table shows all of them.
  const gpuView = { picked: null, devices: [], latest: {} };
  const onPicked = (labels) => gpuView.picked !== null && labels.gpu === gpuView.picked;
  const fmtW = (v) => (v == null ? '–' : v.toFixed(1) + ' W');
  const fmtC = (v) => (v == null ? '–' : v.toFixed(0) + ' °C');
  const fmtMHz = (v) => (v == null ? '–' : (v / 1e6).toFixed(0) + ' MHz');
  Object.assign(charts, {
    gpuUtil: new LiveChart(document.getElementById('chart-gpu-util'), {
      families: ['gpu_utilization_ratio', 'gpu_sm_utilization_ratio', 'gpu_dram_bandwidth_utilization_ratio', 'gpu_tensor_activity_ratio'],
      seriesFor: (key, name, labels) => (onPicked(labels) ? {
        gpu_utilization_ratio: { label: 'busy', scale: 'ratio', fmt: fmtPct, width: 2, color: '#73bf69' },
        gpu_sm_utilization_ratio: { label: 'SM', scale: 'ratio', fmt: fmtPct, color: '#5794f2' },
        gpu_dram_bandwidth_utilization_ratio: { label: 'DRAM bandwidth', scale: 'ratio', fmt: fmtPct, color: '#ff780a' },
        gpu_tensor_activity_ratio: { label: 'tensor', scale: 'ratio', fmt: fmtPct, color: '#b877d9' },
      }[name] : null),
      scales: { ratio: { range: [0, 1] } },
      axes: [timeAxis, axis(fmtPct, { scale: 'ratio' })],
    }),
    gpuMem: new LiveChart(document.getElementById('chart-gpu-mem'), {
      families: ['gpu_memory_used_bytes', 'gpu_memory_total_bytes', 'gpu_memory_reserved_bytes'],
      seriesFor: (key, name, labels) => (onPicked(labels) ? {
        gpu_memory_used_bytes: { label: 'used', scale: 'bytes', fmt: fmtBytes, width: 2 },
        gpu_memory_total_bytes: { label: 'total', scale: 'bytes', fmt: fmtBytes, color: '#8e8e8e' },
        gpu_memory_reserved_bytes: { label: 'reserved', scale: 'bytes', fmt: fmtBytes, color: '#f2cc0c' },
      }[name] : null),
      scales: { bytes: { range: (u, min, max) => [0, Math.max(max, 1)] } },
      axes: [timeAxis, axis(fmtBytes, { scale: 'bytes' })],
    }),
    gpuPower: new LiveChart(document.getElementById('chart-gpu-power'), {
      families: ['gpu_power_watts', 'gpu_power_instant_watts', 'gpu_power_limit_watts'],
      seriesFor: (key, name, labels) => (onPicked(labels) ? {
        gpu_power_watts: { label: 'power (1 s avg)', scale: 'w', fmt: fmtW, width: 2 },
        gpu_power_instant_watts: { label: 'instant', scale: 'w', fmt: fmtW, color: '#5794f2' },
        gpu_power_limit_watts: { label: 'limit', scale: 'w', fmt: fmtW, color: '#f2495c' },
      }[name] : null),
      scales: { w: { range: (u, min, max) => [0, Math.max(max, 1) * 1.05] } },
      axes: [timeAxis, axis(fmtW, { scale: 'w' })],
    }),
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
  });
  const gpuFamilies = ['gpu_throttle_active', 'gpu_power_watts', 'gpu_temperature_celsius', 'gpu_memory_used_bytes',
    'gpu_utilization_ratio', 'gpu_dram_bandwidth_utilization_ratio'];
  const families = [...new Set(Object.values(charts).flatMap((c) => c.families).concat(gpuFamilies))];

  const stats = {
    'host_cpu_utilization_ratio{cpu="total"}': ['v-cpu', fmtPct],
    host_memory_used_bytes: ['v-mem', fmtBytes],
    host_load1: ['v-load', fmtNum],
    process_cpu_utilization_ratio: ['v-pcpu', fmtPct],
    process_resident_memory_bytes: ['v-prss', fmtBytes],
  };

  const state = { connection: 'connecting', messages: 0, dropped: 0, attempts: 0, reconnects: 0, ws: null };
  window.perfscope = { charts, state };

  function setConnection(s) {
    state.connection = s;
    const el = document.getElementById('connection');
    el.textContent = s;
    el.className = 'conn conn-' + s;
  }

  function showStat(key, value) {
    const s = stats[key];
    if (s) document.getElementById(s[0]).textContent = s[1](value);
  }

  function route(key, name, labels) {
    for (const chart of Object.values(charts)) {
      if (chart.accepts(name)) { chart.ensureSeries(key, name, labels); return chart; }
    }
    return null;
  }

  // Access tokens: when the server answers 401, ask once (every waiting request shares the
  // question) and keep the token for this tab only (sessionStorage).
  const auth = {
    token: sessionStorage.getItem('perfscope.token') || '',
    asking: null,
    headers(extra) { return this.token ? { ...extra, Authorization: 'Bearer ' + this.token } : { ...extra }; },
    ask(reason) {
      if (this.asking) return this.asking;
      const box = document.getElementById('auth');
      document.getElementById('auth-reason').textContent = reason;
      box.hidden = false;
      document.getElementById('auth-token').focus();
      this.asking = new Promise((resolve) => {
        document.getElementById('auth-form').onsubmit = (ev) => {
          ev.preventDefault();
          this.token = document.getElementById('auth-token').value.trim();
          sessionStorage.setItem('perfscope.token', this.token);
          box.hidden = true;
          this.asking = null;
          resolve();
        };
      });
      return this.asking;
    },
  };
  async function apiFetch(url, opts = {}) {
    for (;;) {
      const res = await fetch(url, { ...opts, headers: auth.headers(opts.headers || {}) });
      if (res.status !== 401) return res;
      await auth.ask(auth.token ? 'That token was not accepted. Token:' : 'This perfscope server needs an access token:');
    }
  }
  window.perfscopeAuth = auth;

  async function fetchJson(url) {
    const res = await apiFetch(url, { cache: 'no-store' });
    if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
    return res.json();
  }

  async function loadInfo() {
    try {
      const info = await fetchJson('/api/v1/info');
      document.getElementById('host-info').textContent =
        `v${info.version} · sampling every ${info.sampler.interval_ms} ms`;
      const missing = info.collectors.flatMap((c) => c.sources.filter((s) => !s.available).map((s) => `${c.name}/${s.name}`));
      document.getElementById('sources').textContent = missing.length ? 'Not available on this machine: ' + missing.join(', ') : '';
    } catch (e) { /* the stream state shows connectivity; info is decoration */ }
  }

  // Pre-fills every chart with the last WINDOW_S seconds from the REST history.
  async function prefill() {
    const results = await Promise.all(families.map((name) =>
      fetchJson(`/api/v1/series/query?name=${encodeURIComponent(name)}&from=now-${WINDOW_S}s&max_points=1200`)
        .catch(() => ({ series: [] }))));
    const perChart = new Map();
    for (const r of results) {
      for (const s of r.series) {
        const key = canonical(s.name, s.labels);
        const chart = route(key, s.name, s.labels);
        if (!chart) continue;
        const valueCol = s.downsampled ? s.columns.indexOf('avg') : 1;
        const points = s.points.map((p) => [p[0] / 1e9, p[valueCol]]);
        if (!perChart.has(chart)) perChart.set(chart, {});
        perChart.get(chart)[key] = points;
        if (points.length) showStat(key, points[points.length - 1][1]);
      }
    }
    for (const [chart, byKey] of perChart) chart.fill(byKey);
  }

  function onSamples(msg) {
    const t = msg.ts_ns / 1e9;
    const perChart = new Map();
    for (const s of msg.samples) {
      if (s.name.startsWith('gpu_') && s.labels.gpu !== undefined) noteGpu(s);
      const chart = route(s.series, s.name, s.labels);
      showStat(s.series, s.value);
      if (!chart) continue;
      if (!perChart.has(chart)) perChart.set(chart, {});
      perChart.get(chart)[s.series] = s.value;
    }
    for (const [chart, values] of perChart) chart.append(t, values);
    state.messages++;
    state.dropped = msg.dropped;
    document.getElementById('updated').textContent = 'updated ' + new Date(msg.ts_ns / 1e6).toLocaleTimeString();
  }

  function connect() {
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const tokenParam = auth.token ? '?access_token=' + encodeURIComponent(auth.token) : '';
    const ws = new WebSocket(`${proto}//${location.host}/api/v1/stream${tokenParam}`);
    state.ws = ws;
    ws.onopen = () => {
      state.attempts = 0;
      setConnection('live');
      ws.send(JSON.stringify({ subscribe: families }));
      // After an outage, fill the gap the stream missed from the history.
      if (state.reconnects++ > 0) prefill().catch(() => {});
    };
    ws.onmessage = (ev) => {
      const msg = JSON.parse(ev.data);
      if (msg.type === 'samples') onSamples(msg);
      else if (msg.type === 'events') scheduleEventsRefresh();
      else if (msg.type === 'alert') onAlert(msg);
    };
    ws.onclose = () => {
      state.ws = null;
      // Exponential backoff with jitter, capped at 10 s.
      const delay = Math.min(10000, 500 * 2 ** state.attempts) * (0.5 + Math.random() / 2);
      state.attempts++;
      setConnection(state.attempts > 5 ? 'offline' : 'reconnecting');
      setTimeout(connect, delay);
    };
  }

  // --- Producers' events: kernels table, allocated-memory timeline, inference panel. ---
  // Refreshed from the REST views whenever the stream says new events were committed
  // ({"type":"events"}), at most once a second.
  const allocChart = new LiveChart(document.getElementById('chart-alloc'), {
    families: [],
    // Allocated bytes change in steps at each allocation and free: draw them as steps.
    seriesFor: () => ({ label: 'allocated', scale: 'bytes', fmt: fmtBytes, width: 2, color: '#b877d9',
                        paths: uPlot.paths.stepped({ align: 1 }) }),
    scales: { bytes: { range: (u, min, max) => [0, Math.max(max, 1)] } },
    axes: [timeAxis, axis(fmtBytes, { scale: 'bytes' })],
  });
  allocChart.ensureSeries('allocated', 'allocated', {});
  charts.alloc = allocChart;

  const kernelsView = { rows: [], sortKey: 'total_ms', ascending: false };
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
  const ms = (v) => (v == null ? '–' : v < 0.1 ? v.toFixed(4) : v.toFixed(3));

  function renderKernels() {
    const { rows, sortKey, ascending } = kernelsView;
    const body = document.querySelector('#kernels-table tbody');
    document.querySelectorAll('#kernels-table th').forEach((th) => {
      th.classList.toggle('sorted', th.dataset.key === sortKey);
      th.classList.toggle('asc', th.dataset.key === sortKey && ascending);
    });
    if (rows.length === 0) return;
    const sorted = [...rows].sort((a, b) => {
      const x = a[sortKey], y = b[sortKey];
      const c = typeof x === 'string' || Array.isArray(x) ? String(x).localeCompare(String(y)) : x - y;
      return ascending ? c : -c;
    });
    body.innerHTML = sorted.map((k) => `<tr data-kernel="${esc(k.name)}"><td>${esc(k.name)}</td>` +
      `<td class="num">${k.count}</td><td class="num">${ms(k.total_ms)}</td><td class="num">${ms(k.avg_ms)}</td>` +
      `<td class="num">${ms(k.min_ms)}</td><td class="num">${ms(k.max_ms)}</td>` +
      `<td class="num"><span class="bar" style="width:${Math.round(k.share * 60)}px"></span>${(k.share * 100).toFixed(1)}%</td>` +
      `<td>${esc(k.variants.join(', '))}</td></tr>`).join('');
  }
  document.querySelectorAll('#kernels-table th').forEach((th) => th.addEventListener('click', () => {
    const key = th.dataset.key;
    kernelsView.ascending = kernelsView.sortKey === key ? !kernelsView.ascending : key === 'name';
    kernelsView.sortKey = key;
    renderKernels();
  }));

  function renderInference(models) {
    const body = document.querySelector('#inference-table tbody');
    if (models.length === 0) return;
    const rate = (v) => (v == null ? '–' : v.toFixed(2));
    body.innerHTML = models.map((m) => `<tr><td>${esc(m.model)}${m.version ? ' v' + esc(m.version) : ''}</td>` +
      `<td class="num">${m.requests}</td><td class="num">${m.errors}</td><td class="num">${rate(m.requests_per_second)}</td>` +
      `<td class="num">${rate(m.output_tokens_per_second)}</td><td class="num">${ms(m.mean_latency_ms)}</td></tr>`).join('');
  }

  let eventsRefresh = null;
  async function refreshEvents() {
    eventsRefresh = null;
    try {
      const [k, m, i] = await Promise.all([fetchJson('/api/v1/kernels'),
        fetchJson(`/api/v1/memory?window=${WINDOW_S}s&max_points=600`), fetchJson('/api/v1/inference?window=1m')]);
      kernelsView.rows = k.kernels;
      document.getElementById('kernels-summary').textContent =
        k.kernels.length ? `${k.kernels.length} kernels · ${k.total_kernel_ms.toFixed(1)} ms in all` : '';
      renderKernels();
      allocChart.fill({ allocated: m.timeline.points.map((p) => [p[0] / 1e9, p[1]]) });
      document.getElementById('memory-summary').textContent = m.allocation_count
        ? `current ${fmtBytes(m.current_allocated_bytes)} · peak ${fmtBytes(m.peak_allocated_bytes)}` : '';
      renderInference(i.models);
      updatePickers(k.kernels, i.models);
      refreshPercentiles();
      state.eventRefreshes++;
    } catch (e) { /* next notification retries */ }
  }
  function scheduleEventsRefresh() {
    if (eventsRefresh === null) eventsRefresh = setTimeout(refreshEvents, 1000);
  }
  state.eventRefreshes = 0;

  // --- GPUs: picker, overview of every GPU, throttle state strip, charts of the picked one. ---
  function noteGpu(s) {
    const g = (gpuView.latest[s.labels.gpu] = gpuView.latest[s.labels.gpu] || { throttle: {} });
    if (s.name === 'gpu_throttle_active') g.throttle[s.labels.reason] = s.value;
    else g[s.name] = s.value;
    scheduleGpuRender();
  }
  let gpuRender = null;
  function scheduleGpuRender() { if (gpuRender === null) gpuRender = setTimeout(renderGpus, 250); }
  function renderGpus() {
    gpuRender = null;
    const body = document.querySelector('#gpu-overview tbody');
    body.innerHTML = gpuView.devices.map((d) => {
      const g = gpuView.latest[d.gpu] || { throttle: {} };
      const reasons = Object.entries(g.throttle).filter(([r, v]) => v > 0 && r !== 'gpu_idle').map(([r]) => r);
      return `<tr data-gpu="${esc(d.gpu)}"><td>${esc(d.gpu)}${d.lost ? ' (lost)' : ''}</td><td>${esc(d.name)}</td>` +
        `<td class="num">${fmtPct(g.gpu_utilization_ratio)}</td><td class="num">${fmtPct(g.gpu_dram_bandwidth_utilization_ratio)}</td>` +
        `<td class="num">${fmtBytes(g.gpu_memory_used_bytes)} / ${fmtBytes(d.memory_total_bytes)}</td>` +
        `<td class="num">${fmtW(g.gpu_power_watts)}</td><td class="num">${fmtC(g.gpu_temperature_celsius)}</td>` +
        `<td>${esc(reasons.join(', ') || '–')}</td></tr>`;
    }).join('');
    const picked = gpuView.latest[gpuView.picked] || { throttle: {} };
    document.getElementById('gpu-throttle').innerHTML = Object.keys(picked.throttle).sort().map((r) =>
      `<span class="${picked.throttle[r] > 0 ? 'on' : ''}" data-reason="${esc(r)}">${esc(r.replace(/_/g, ' '))}</span>`).join('');
  }
  const gpuCharts = [charts.gpuUtil, charts.gpuMem, charts.gpuPower, charts.gpuTemp];
  function pickGpu(index) {
    gpuView.picked = index;
    const d = gpuView.devices.find((x) => x.gpu === index);
    document.getElementById('gpu-identity').textContent = d
      ? `${d.name} · ${d.uuid} · ${d.pci_bus_id}` + (d.peak_dram_bandwidth_bytes_per_second
        ? ` · peak DRAM ${(d.peak_dram_bandwidth_bytes_per_second / 1e9).toFixed(0)} GB/s` : '') : '';
    for (const c of gpuCharts) {  // series are per GPU: start the charts over for the new one
      c.keys = []; c.defs = []; c.cols = []; c.xs = []; c.marks = [];
      if (c.plot) { c.plot.destroy(); c.plot = null; }
    }
    prefill().catch(() => {});
    renderGpus();
  }
  document.getElementById('gpu-pick').addEventListener('change', (ev) => pickGpu(ev.target.value));
  async function loadDevices() {
    try {
      const d = await fetchJson('/api/v1/devices');
      gpuView.devices = d.gpus;
      if (d.gpus.length === 0) return;
      document.getElementById('gpus').hidden = false;
      const pick = document.getElementById('gpu-pick');
      pick.innerHTML = d.gpus.map((g) => `<option value="${esc(g.gpu)}">${esc(g.gpu)}: ${esc(g.name)}</option>`).join('');
      pickGpu(d.gpus[0].gpu);
    } catch (e) { /* no GPU view without the devices list */ }
  }
  state.gpu = gpuView;

  // --- Analysis: anomaly markers, percentiles with the SLA line, bottlenecks, A/B tests. ---
  state.alerts = [];
  function onAlert(msg) {
    state.alerts.push(msg);
    if (state.alerts.length > 500) state.alerts.shift();
    for (const chart of Object.values(charts)) {
      if (chart.keys.includes(msg.series)) chart.mark(msg.ts_ns / 1e9);
    }
  }

  const PCT_QS = ['p50', 'p90', 'p95', 'p99', 'p99.9'];
  const pctEl = document.getElementById('chart-pct');
  let pctPlot = null;
  state.percentiles = null;
  function drawPercentiles(r, sla) {
    const ys = PCT_QS.map((k) => r.percentiles[k]);
    const data = [PCT_QS.map((_, i) => i), ys, PCT_QS.map(() => (sla > 0 ? sla : null))];
    if (pctPlot) pctPlot.destroy();
    pctPlot = new uPlot({
      width: Math.max(300, pctEl.clientWidth), height: 220,
      scales: { x: { time: false, range: [-0.3, PCT_QS.length - 0.7] }, ms: { range: (u, min, max) => [0, Math.max(max, sla || 0) * 1.1 || 1] } },
      series: [{ value: (u, v) => PCT_QS[v] || '' },
        { label: r.unit || 'ms', scale: 'ms', stroke: '#5794f2', width: 2, points: { show: true, size: 7 }, value: (u, v) => ms(v) },
        { label: 'SLA', scale: 'ms', stroke: '#f2495c', dash: [6, 4], width: 1.5, value: (u, v) => ms(v) }],
      axes: [{ stroke: '#8e8e8e', grid: { show: false }, splits: () => PCT_QS.map((_, i) => i), values: (u, vals) => vals.map((v) => PCT_QS[v] || '') },
        axis(ms, { scale: 'ms' })],
    }, data, pctEl);
  }
  async function refreshPercentiles() {
    const subject = document.getElementById('pct-subject').value;
    if (!subject) return;
    const [kind, name] = [subject.slice(0, subject.indexOf(':')), subject.slice(subject.indexOf(':') + 1)];
    const sla = Number(document.getElementById('pct-sla').value) || 0;
    const method = document.getElementById('pct-method').value;
    let url = `/api/v1/percentiles?${kind}=${encodeURIComponent(name)}&window=${WINDOW_S}s&method=${method}`;
    if (sla > 0) url += `&sla_ms=${sla}`;
    try {
      const r = await fetchJson(url);
      state.percentiles = r;
      document.getElementById('pct-summary').textContent = r.count
        ? `${r.count} samples · mean ${ms(r.mean)} ms` + (r.sla ? ` · SLA met by ${(r.sla.compliance_rate * 100).toFixed(2)}%` : '')
        : 'no samples in the last 5 minutes';
      document.getElementById('pct-warnings').textContent = r.warnings.join(' · ');
      if (r.count) drawPercentiles(r, sla);
    } catch (e) { /* shown as stale until the next refresh */ }
  }
  ['pct-subject', 'pct-sla', 'pct-method'].forEach((id) => document.getElementById(id).addEventListener('change', refreshPercentiles));

  // Subjects for the percentile and A/B pickers, from the kernels and inference views.
  function updatePickers(kernels, models) {
    const subject = document.getElementById('pct-subject');
    const want = kernels.map((k) => 'kernel:' + k.name).concat(models.map((m) => 'model:' + m.model));
    const have = [...subject.options].map((o) => o.value).filter(Boolean);
    for (const v of want) {
      if (!have.includes(v)) subject.add(new Option(v.replace(':', ': '), v));
    }
    if (!subject.value && want.length) { subject.value = want[0]; refreshPercentiles(); }
    const abKernel = document.getElementById('ab-kernel');
    const abHave = [...abKernel.options].map((o) => o.value);
    for (const k of kernels.filter((k) => k.variants.length >= 2)) {
      if (!abHave.includes(k.name)) abKernel.add(new Option(k.name, k.name));
    }
    kernelsView.variants = Object.fromEntries(kernels.map((k) => [k.name, k.variants]));
    if (!abKernel.value && abKernel.options.length > 1) { abKernel.selectedIndex = 1; fillVariants(); }
  }
  function fillVariants() {
    const variants = (kernelsView.variants || {})[document.getElementById('ab-kernel').value] || [];
    for (const [id, pick] of [['ab-a', 0], ['ab-b', 1]]) {
      const sel = document.getElementById(id);
      sel.innerHTML = variants.map((v) => `<option>${esc(v)}</option>`).join('');
      sel.selectedIndex = Math.min(pick, variants.length - 1);
    }
  }
  document.getElementById('ab-kernel').addEventListener('change', fillVariants);

  function renderAb(r) {
    const side = (label, s) => `<tr><td>${label}</td><td class="num">${s.n}</td><td class="num">${ms(s.mean_ms)}</td>` +
      `<td class="num">${ms(s.median_ms)}</td><td class="num">${ms(s.std_ms)}</td><td class="num">${ms(s.p99_ms)}</td></tr>`;
    const fmtP = (p) => (p < 1e-4 ? p.toExponential(1) : p.toFixed(4));
    const ci = r.speedup_ci95;
    document.getElementById('ab-result').innerHTML =
      `<p><span class="verdict verdict-${r.verdict}" data-testid="ab-verdict">${r.verdict.replace(/_/g, ' ')}</span> ` +
      `${esc(r.recommendation)}</p>` +
      `<table class="grid"><thead><tr><th>Side</th><th class="num">n</th><th class="num">Mean ms</th><th class="num">Median ms</th>` +
      `<th class="num">Std ms</th><th class="num">p99 ms</th></tr></thead><tbody>` +
      side('A ' + esc(r.definition.a.variant || r.definition.a.kernel), r.a) + side('B ' + esc(r.definition.b.variant || r.definition.b.kernel), r.b) +
      `</tbody></table><p>speedup A/B ${r.speedup == null ? '–' : r.speedup.toFixed(3)} ` +
      `(95% CI ${ci[0] == null ? '–' : ci[0].toFixed(3)}–${ci[1] == null ? '–' : ci[1].toFixed(3)}) · ` +
      `Mann–Whitney U ${r.mann_whitney.u} p ${fmtP(r.mann_whitney.p_value)} (${r.mann_whitney.method}) · ` +
      `Welch t ${r.welch.t.toFixed(2)} p ${fmtP(r.welch.p_value)} · Hodges–Lehmann shift ${ms(r.hodges_lehmann_shift_ms)} ms</p>`;
  }
  document.getElementById('ab-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const kernel = document.getElementById('ab-kernel').value;
    const a = document.getElementById('ab-a').value, b = document.getElementById('ab-b').value;
    if (!kernel || !a || !b) return;
    try {
      const created = await apiFetch('/api/v1/abtests', {
        method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ name: `${kernel}: ${a} vs ${b}`, a: { kernel, variant: a }, b: { kernel, variant: b } }),
      });
      const body = await created.json();
      if (!created.ok) throw new Error(body.error ? body.error.message : 'HTTP ' + created.status);
      const r = await fetchJson(body.url);
      state.abResult = r;
      renderAb(r);
    } catch (e) {
      document.getElementById('ab-result').textContent = 'A/B test failed: ' + e.message;
    }
  });

  function renderBottlenecks(findings) {
    const el = document.getElementById('bottlenecks');
    el.innerHTML = findings.map((f) => {
      const sev = f.status === 'fired' ? f.severity : f.status === 'ok' ? 'ok' : '';
      const evidence = Object.entries(f.evidence).map(([k, v]) => `${k} ${Number(v).toPrecision(3)}`).join(', ');
      const recs = f.status === 'fired' ? `<ul>${f.recommendations.map((r) => `<li>${esc(r)}</li>`).join('')}</ul>` : '';
      return `<li class="${f.status === 'not_evaluated' ? 'not-evaluated' : ''}" data-rule="${esc(f.id)}" data-status="${f.status}">` +
        `<span class="sev sev-${sev}">${f.status === 'not_evaluated' ? 'n/a' : esc(sev)}</span>${esc(f.title)}` +
        (f.status === 'not_evaluated' ? ` <span class="muted">(${esc(f.reason)})</span>` : evidence ? ` <span class="muted">${esc(evidence)}</span>` : '') +
        `${recs}</li>`;
    }).join('');
  }
  async function refreshAnalysis() {
    try {
      const a = await fetchJson('/api/v1/analysis?window=5m');
      state.analysis = a;
      renderBottlenecks(a.bottlenecks);
    } catch (e) { /* retried on the next tick */ }
  }

  window.addEventListener('resize', () => Object.values(charts).forEach((c) => c.resize()));
  setInterval(refreshAnalysis, 10000);
  refreshAnalysis();
  loadDevices();
  refreshEvents();
  loadInfo();
  prefill().catch(() => {});  // history first, whether or not the stream connects
  connect();
  // Report and trace links: with a token they cannot be plain links (no header on a
  // navigation), so fetch them and hand the browser the result.
  document.querySelectorAll('[data-testid=exports] a').forEach((a) => {
    a.addEventListener('click', async (ev) => {
      if (!auth.token) return;
      ev.preventDefault();
      const res = await apiFetch(a.getAttribute('href'));
      const url = URL.createObjectURL(await res.blob());
      if (a.hasAttribute('download')) {
        const tmp = document.createElement('a');
        tmp.href = url;
        tmp.download = a.getAttribute('download');
        tmp.click();
      } else {
        window.open(url, '_blank', 'noopener');
      }
      setTimeout(() => URL.revokeObjectURL(url), 60000);
    });
  });
})();
