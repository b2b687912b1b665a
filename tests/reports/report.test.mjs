// Reports against their consumers: the JSON report validated against its published JSON
// Schema (server/report.schema.json, by Ajv), the HTML report opened from a file:// URL in
// headless Chromium with the network off (charts must draw from what is inlined), the trace
// parsed and checked for well-formed Chrome trace events and tracks, and `perfscope report
// --db` reading the database file of the running server.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startPerfscope, postEvents, runPerfscope } from '../support/perfscope_server.mjs';

const require = createRequire(path.join(process.env.PERFSCOPE_WEB_DIR, 'package.json'));
const { chromium } = require('playwright-core');
const Ajv2020 = require('ajv/dist/2020').default;
const schema = JSON.parse(readFileSync(process.env.PERFSCOPE_REPORT_SCHEMA, 'utf8'));
const artifacts = process.env.PERFSCOPE_ARTIFACTS;

const nvmlScript = ['count 1', '0.name NVIDIA H100 80GB HBM3', '0.uuid GPU-aaaa', '0.util_gpu 87',
                    '0.mem_total 85520809984', '0.mem_used 40000000000', '0.power_mw 512000', '0.limit_mw 700000',
                    '0.temp 64', '0.max_clock_mem 2619', '0.bus_width 5120', '0.gpm 1', '0.gpm.2 80'].join('\n') + '\n';

let perfscope;
let t0;

function workload() {
  t0 = Date.now() * 1e6 - 2e9;
  const events = [];
  for (let i = 0; i < 200; i++) {
    const launch = t0 + i * 1e6;
    for (const [stream, variant, dur] of [['7', 'naive', 600000], ['8', 'tiled', 400000]]) {
      events.push({ type: 'kernel', name: 'gemm<float, 128>', variant, stream, launch_start_ns: launch,
                    launch_end_ns: launch + 5000, start_ns: launch + 20000, end_ns: launch + 20000 + dur,
                    grid: [64, 1, 1], block: [256, 1, 1], flops: 4e8, bytes: 4e6, dtype: 'fp32' });
    }
  }
  for (let i = 0; i < 30; i++) {
    const at = t0 + i * 1e7;
    events.push({ type: 'command_buffer', id: 'cb' + i, queue: 'q0', enqueue_ns: at, submit_ns: at + 1000,
                  start_ns: at + 5000, end_ns: at + 900000 });
    events.push({ type: 'memory', op: 'alloc', address: '0x' + (i + 1).toString(16), size_bytes: 1 << 20, kind: 'device',
                  tag: 'kv-cache', ts_ns: at });
  }
  for (let i = 0; i < 100; i++) {
    events.push({ type: 'inference', model: 'llama, "8b"', latency_ms: 100 + i, ttft_ms: 20, output_tokens: 33,
                  ts_ns: t0 + i * 1e7 });
  }
  // ONNX Runtime nodes, one op type falling back to the CPU.
  for (let i = 0; i < 20; i++) {
    events.push({ type: 'operator', op_type: i % 4 ? 'MatMul' : 'NonZero', name: `node${i % 5}`,
                  provider: i % 4 ? 'CUDAExecutionProvider' : 'CPUExecutionProvider', duration_ms: 0.1 * (i + 1),
                  model: 'encoder', input_shapes: [[1, 128, 768]], ts_ns: t0 + i * 1e7 });
  }
  return events;
}

before(async () => {
  perfscope = await startPerfscope({ args: ['--sampling-interval-ms', '100', '--device-target', 'H100,min_tflops=100,target_tflops=200'],
                                     nvmlScript, label: 'reports' });
  await postEvents(perfscope.url, workload());
  const r = await fetch(perfscope.url + '/api/v1/abtests', {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: 'tiling', a: { kernel: 'gemm<float, 128>', variant: 'naive' },
                           b: { kernel: 'gemm<float, 128>', variant: 'tiled' }, seed: 7 }),
  });
  assert.equal(r.status, 201);
  await new Promise((res) => setTimeout(res, 1500));  // GPU samples for the summary and charts
});

after(async () => {
  if (perfscope) await perfscope.stop();
});

function validate(doc, what) {
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  const ok = ajv.validate(schema, doc);
  assert.ok(ok, `${what} does not match the schema: ${ajv.errorsText(ajv.errors, { separator: '\n' })}`);
}

test('the JSON report matches its schema and carries the summary', async () => {
  const doc = await (await fetch(perfscope.url + '/api/v1/report?format=json&sla_ms=150')).json();
  validate(doc, 'GET /api/v1/report');
  assert.equal(doc.summary.kernel_time.executions, 400);
  assert.ok(Math.abs(doc.summary.gpu_utilization.avg - 0.87) < 1e-9);
  assert.equal(doc.latency[0].model, 'llama, "8b"');
  assert.equal(doc.latency[0].sla.violations, 49);  // latencies 151..199 ms
  assert.equal(doc.abtests[0].verdict, 'b_faster');

  // A schema that cannot fail is no test: a broken document must be refused.
  const broken = structuredClone(doc);
  delete broken.summary;
  assert.throws(() => validate(broken, 'broken'));
});

test('perfscope report --db reads the database file of the running server', async () => {
  const out = await runPerfscope(['report', '--db', path.join(perfscope.dataDir, 'perfscope.db'), '--format', 'json', '--window', 'all']);
  assert.equal(out.status, 0, out.stderr);
  const doc = JSON.parse(out.stdout);
  validate(doc, 'perfscope report --db');
  assert.equal(doc.summary.kernel_time.executions, 400);
  assert.equal(doc.memory.current_allocated_bytes, 30 * (1 << 20));
  const bad = await runPerfscope(['report', '--db', path.join(perfscope.dataDir, 'missing.db')]);
  assert.equal(bad.status, 1);
  assert.match(bad.stderr, /no database file .*missing\.db/);
});

test('the HTML report opens offline from a file and draws its charts', async () => {
  const html = await (await fetch(perfscope.url + '/api/v1/report?format=html')).text();
  mkdirSync(artifacts, { recursive: true });
  const file = path.join(artifacts, 'report.html');
  writeFileSync(file, html);
  const browser = await chromium.launch({ executablePath: process.env.PERFSCOPE_CHROMIUM || '/usr/bin/chromium', headless: true,
                                          args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  try {
    const context = await browser.newContext({ offline: true, viewport: { width: 1200, height: 1600 } });
    const requests = [];
    await context.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith('file://')) return route.continue();
      requests.push(url);
      return route.abort();
    });
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto('file://' + file);
    await page.waitForFunction(() => window.perfscopeReport && window.perfscopeReport.ready, null, { timeout: 15000 });
    assert.ok(await page.evaluate(() => window.perfscopeReport.charts) >= 3, 'GPU and host charts');
    const drawn = await page.$eval('[data-testid="chart-gpu_utilization_ratio"] canvas', (canvas) => {
      const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
      let n = 0;
      for (let i = 3; i < data.length; i += 4) n += data[i] > 0;
      return n;
    });
    assert.ok(drawn > 200, `chart pixels drawn: ${drawn}`);
    assert.match(await page.textContent('[data-testid=kernels]'), /gemm<float, 128>/);
    // 4e8 FLOPs over 4e6 bytes in fp32 (100 FLOP/B, above the H100's fp32 ridge of 67 TFLOP/s ÷
    // 3.35 TB/s = 20): compute-bound at 0.8 TFLOP/s (400 executions, 200 of 600 µs, 200 of 400 µs).
    assert.match(await page.textContent('[data-testid=kernels]'), /0\.800\s*8\.000\s*compute-bound, 1% of attainable/);
    assert.match(await page.textContent('[data-testid=targets]'), /tflops\s*0\.8 TFLOP\/s \(kernels\)\s*min 100 TFLOP\/s · target 200 TFLOP\/s\s*0\.4% of target\s*below minimum/);
    assert.match(await page.textContent('[data-testid=operators]'), /NonZero[\s\S]*CPUExecutionProvider/);
    assert.match(await page.textContent('[data-testid=abtests]'), /b_faster/);
    await page.screenshot({ path: path.join(artifacts, 'report.png'), fullPage: true });
    assert.deepEqual(errors, []);
    assert.deepEqual(requests, [], 'the report fetches nothing');
  } finally {
    await browser.close();
  }
});

test('the trace is well-formed Chrome trace JSON with one track per device and stream', async () => {
  const r = await fetch(perfscope.url + '/api/v1/trace?window=1h');
  assert.equal(r.status, 200);
  const trace = await r.json();
  assert.ok(Array.isArray(trace.traceEvents));
  const kinds = new Set(['X', 'M', 'C', 'i', 's', 'f']);
  for (const e of trace.traceEvents) {
    assert.ok(kinds.has(e.ph), `phase ${e.ph}`);
    assert.equal(typeof e.pid, 'number');
    if (e.ph !== 'M') assert.ok(Number.isFinite(e.ts) && e.ts >= 0, `ts of ${JSON.stringify(e)}`);
    if (e.ph === 'X') assert.ok(Number.isFinite(e.dur) && e.dur >= 0);
    if (e.ph !== 'C' && e.ph !== 'M') assert.equal(typeof e.tid, 'number');
  }
  const names = (what) => trace.traceEvents.filter((e) => e.ph === 'M' && e.name === what).map((e) => e.args.name);
  assert.ok(names('process_name').includes('GPU 0'));
  for (const t of ['stream 7', 'stream 8', 'queue q0', 'memory', 'launch calls (host)']) assert.ok(names('thread_name').includes(t), t);
  const kernels = trace.traceEvents.filter((e) => e.ph === 'X' && e.cat === 'kernel');
  assert.equal(kernels.length, 400);
  // 600 µs; the test's own timestamps are JS doubles (256 ns apart at today's epoch), hence the slack.
  assert.ok(Math.abs(kernels.find((k) => k.args.variant === 'naive').dur - 600) <= 0.3, 'microseconds');
  // Flows pair up: every start has its finish.
  const starts = trace.traceEvents.filter((e) => e.ph === 's').map((e) => e.id).sort();
  const ends = trace.traceEvents.filter((e) => e.ph === 'f').map((e) => e.id).sort();
  assert.equal(starts.length, 400);
  assert.deepEqual(starts, ends);
  assert.ok(trace.traceEvents.some((e) => e.ph === 'C' && e.name === 'allocated bytes' && e.args.bytes === 30 * (1 << 20)));
  assert.ok(trace.traceEvents.some((e) => e.ph === 'C' && e.name === 'GPU utilization'));
  assert.equal(trace.metadata.truncated, false);
  const origin = trace.metadata.origin_ns;
  assert.ok(origin <= t0);

  const limited = await (await fetch(perfscope.url + '/api/v1/trace?window=1h&max_events=10')).json();
  assert.equal(limited.metadata.truncated, true);
  const bad = await fetch(perfscope.url + '/api/v1/trace?max_events=0');
  assert.equal(bad.status, 400);
  assert.equal((await bad.json()).error.field, 'max_events');
});
