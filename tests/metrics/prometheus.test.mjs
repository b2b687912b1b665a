// /metrics against its real consumers: promtool lints the live text exposition, and a real
// Prometheus server scrapes perfscope on loopback (negotiating OpenMetrics, as it does by
// default); the values it stores must match perfscope's own API. Every PromQL expression of
// the Grafana dashboard is then run through that Prometheus, so a renamed metric or a typo
// in the dashboard fails here.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startPerfscope, postEvents } from '../support/perfscope_server.mjs';

const dashboardFile = process.env.PERFSCOPE_GRAFANA_DASHBOARD;
const nvmlScript = ['count 1', '0.name NVIDIA H100 80GB HBM3', '0.uuid GPU-aaaa', '0.util_gpu 87',
                    '0.mem_total 85520809984', '0.mem_used 40000000000', '0.power_mw 512000', '0.limit_mw 700000',
                    '0.temp 64', '0.mem_temp 70', '0.max_clock_mem 2619', '0.bus_width 5120', '0.gpm 1', '0.gpm.2 80', '0.gpm.3 55',
                    '0.gpm.10 61'].join('\n') + '\n';

let perfscope;
let prometheus;
let promDir;
let promUrl;

function freePort() {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

async function waitFor(what, fn, timeoutMs = 30000) {
  const end = Date.now() + timeoutMs;
  let last;
  while (Date.now() < end) {
    try { last = await fn(); if (last) return last; } catch (e) { last = e; }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`timed out waiting for ${what}: ${last}`);
}

async function promQuery(query) {
  const r = await fetch(promUrl + '/api/v1/query?query=' + encodeURIComponent(query));
  const body = await r.json();
  if (body.status !== 'success') throw new Error(`${query}: ${body.errorType} ${body.error}`);
  return body.data.result;
}

// Kernels with fixed durations: k_fast 0.4 ms × 300, k_slow 3 ms × 100 (variant b).
function workload() {
  const t0 = Date.now() * 1e6;
  const events = [];
  for (let i = 0; i < 300; i++) {
    const start = t0 + i * 1e6;
    events.push({ type: 'kernel', name: 'k_fast', start_ns: start, end_ns: start + 400000 });
  }
  for (let i = 0; i < 100; i++) {
    const start = t0 + 5e8 + i * 5e6;
    events.push({ type: 'kernel', name: 'k_slow', variant: 'b', start_ns: start, end_ns: start + 3000000 });
  }
  for (let i = 0; i < 50; i++) {
    events.push({ type: 'inference', model: 'llama', latency_ms: 200 + i, ttft_ms: 40, output_tokens: 17, status: i % 10 === 0 ? 'error' : 'ok' });
  }
  for (let i = 0; i < 20; i++) {
    const at = t0 + i * 1e7;
    events.push({ type: 'command_buffer', id: 'cb' + i, queue: 'stream7', enqueue_ns: at, submit_ns: at + 1000,
                  start_ns: at + 5000, end_ns: at + 2e6 });
  }
  events.push({ type: 'memory', op: 'alloc', address: '0x10', size_bytes: 1 << 20, kind: 'device', tag: 'weights' });
  return events;
}

before(async () => {
  perfscope = await startPerfscope({ args: ['--sampling-interval-ms', '200'],
                                     nvmlScript, label: 'metrics' });
  await postEvents(perfscope.url, workload());
  promDir = mkdtempSync(path.join(tmpdir(), 'perfscope-prometheus-'));
  const port = await freePort();
  promUrl = `http://127.0.0.1:${port}`;
  const target = new URL(perfscope.url).host;
  writeFileSync(path.join(promDir, 'prometheus.yml'),
                `global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: perfscope\n` +
                `    static_configs:\n      - targets: ["${target}"]\n`);
  prometheus = spawn('prometheus', [`--config.file=${path.join(promDir, 'prometheus.yml')}`,
                                    `--storage.tsdb.path=${path.join(promDir, 'tsdb')}`,
                                    `--web.listen-address=127.0.0.1:${port}`],
                     { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  prometheus.stderr.on('data', (c) => { log += c; });
  prometheus.on('exit', (code) => { if (code) console.error('prometheus exited ' + code + '\n' + log.slice(-4000)); });
  await waitFor('Prometheus to be ready', async () => (await fetch(promUrl + '/-/ready')).ok);
});

after(async () => {
  if (prometheus && prometheus.exitCode === null) {
    const gone = new Promise((r) => prometheus.on('exit', r));
    prometheus.kill('SIGTERM');
    await gone;
  }
  if (promDir) rmSync(promDir, { recursive: true, force: true });
  if (perfscope) await perfscope.stop();
});

test('promtool accepts the live text exposition', async () => {
  const r = await fetch(perfscope.url + '/metrics');
  assert.equal(r.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
  const text = await r.text();
  for (const name of ['perfscope_build_info', 'perfscope_kernel_duration_seconds_bucket', 'perfscope_gpu_utilization_ratio',
                      'perfscope_gpu_energy_joules_total', 'perfscope_inference_time_to_first_token_seconds_count',
                      'perfscope_host_cpu_utilization_ratio']) {
    assert.ok(text.includes('\n' + name), `${name} is exposed`);
  }
  const lint = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  assert.equal(lint.status, 0, `promtool check metrics: ${lint.stdout}${lint.stderr}`);
});

test('OpenMetrics when asked for it', async () => {
  const r = await fetch(perfscope.url + '/metrics', { headers: { Accept: 'application/openmetrics-text; version=1.0.0' } });
  assert.equal(r.headers.get('content-type'), 'application/openmetrics-text; version=1.0.0; charset=utf-8');
  const text = await r.text();
  assert.ok(text.endsWith('# EOF\n'));
  assert.match(text, /^# TYPE perfscope_kernel_executions counter$/m);
  assert.match(text, /^# UNIT perfscope_kernel_duration_seconds seconds$/m);
});

test('a real Prometheus scrapes perfscope and stores what perfscope reports', async () => {
  const targets = await waitFor('a successful scrape', async () => {
    const r = await (await fetch(promUrl + '/api/v1/targets')).json();
    const t = r.data.activeTargets[0];
    if (t && t.lastError) throw new Error(t.lastError);
    return t && t.health === 'up' ? t : null;
  });
  assert.equal(targets.lastError, '');

  // Kernel executions: Prometheus' stored counter equals perfscope's own kernel summary.
  const kernels = await (await fetch(perfscope.url + '/api/v1/kernels?window=all')).json();
  const count = (n) => (kernels.kernels || kernels).find((k) => k.name === n).count;
  const executions = await waitFor('kernel executions in Prometheus',
                                   async () => { const r = await promQuery('perfscope_kernel_executions_total'); return r.length === 2 ? r : null; });
  const byKernel = Object.fromEntries(executions.map((s) => [s.metric.kernel, Number(s.value[1])]));
  assert.equal(byKernel.k_fast, count('k_fast'));
  assert.equal(byKernel.k_slow, count('k_slow'));
  assert.equal(byKernel.k_fast, 300);
  assert.equal(executions.find((s) => s.metric.kernel === 'k_slow').metric.variant, 'b');

  // The histogram: p99 interpolated inside the bucket that holds perfscope's exact p99.
  const exact = await (await fetch(perfscope.url + '/api/v1/percentiles?kernel=k_fast&window=all&q=99')).json();
  const [p99] = await promQuery('histogram_quantile(0.99, perfscope_kernel_duration_seconds_bucket{kernel="k_fast"})');
  const estimate = Number(p99.value[1]);
  assert.ok(exact.percentiles.p99 / 1e3 > 0.00025 && exact.percentiles.p99 / 1e3 <= 0.0005);
  assert.ok(estimate > 0.00025 && estimate <= 0.0005, `p99 estimate ${estimate} in (0.25 ms, 0.5 ms]`);

  // Requests by outcome, and a GPU gauge with dcgm-exporter's labels.
  const [errors] = await promQuery('perfscope_inference_requests_total{model="llama",status="error"}');
  assert.equal(Number(errors.value[1]), 5);
  const [util] = await promQuery('perfscope_gpu_utilization_ratio{gpu="0"}');
  assert.equal(Number(util.value[1]), 0.87);
  assert.equal(util.metric.uuid, 'GPU-aaaa');
  const [allocated] = await promQuery('perfscope_memory_allocated_bytes{kind="device"}');
  assert.equal(Number(allocated.value[1]), 1 << 20);
  const [buffers] = await promQuery('perfscope_command_buffer_latency_seconds_count{queue="stream7"}');
  assert.equal(Number(buffers.value[1]), 20);
  const [build] = await promQuery('perfscope_build_info');
  const info = await (await fetch(perfscope.url + '/api/v1/info')).json();
  assert.equal(build.metric.version, info.version);
});

test('dcgm-exporter label mode adds UUID, modelName and Hostname to GPU series', async () => {
  const dcgm = await startPerfscope({ args: ['--sampling-interval-ms', '200', '--metrics-dcgm-labels', 'true'],
                                      nvmlScript, label: 'dcgm' });
  try {
    const text = await waitFor('a GPU sample', async () => {
      const t = await (await fetch(dcgm.url + '/metrics')).text();
      return t.includes('perfscope_gpu_utilization_ratio{') ? t : null;
    });
    const line = text.split('\n').find((l) => l.startsWith('perfscope_gpu_utilization_ratio{'));
    assert.match(line, /Hostname="[^"]+"/);
    assert.match(line, /UUID="GPU-aaaa"/);
    assert.match(line, /modelName="NVIDIA H100 80GB HBM3"/);
    assert.match(line, /gpu="0"/);
  } finally {
    await dcgm.stop();
  }
});

test('every query of the Grafana dashboard runs in Prometheus', async () => {
  const dashboard = JSON.parse(readFileSync(dashboardFile, 'utf8'));
  const exprs = dashboard.panels.flatMap((p) => (p.targets || []).map((t) => [p.title, t.expr]));
  assert.ok(exprs.length >= 15);
  const exposed = await (await fetch(perfscope.url + '/metrics')).text();
  for (const [title, expr] of exprs) {
    // Grafana's variables as Grafana would expand "All".
    const q = expr.replaceAll('$__rate_interval', '1m').replace(/\$(instance|gpu|kernel|model)/g, '.*');
    await promQuery(q);  // throws on a PromQL error
    for (const name of expr.match(/perfscope_[a-z0-9_]+/g)) {
      const family = name.replace(/_(bucket|count|sum)$/, '');
      assert.ok(exposed.includes('\n' + family), `panel "${title}": ${name} is not exposed by perfscope`);
    }
  }
  for (const v of dashboard.templating.list.filter((v) => v.type === 'query')) {
    const m = v.definition.match(/label_values\((\w+), (\w+)\)/);
    assert.ok(m && exposed.includes('\n' + m[1]), `variable ${v.name}: ${v.definition}`);
  }
});
