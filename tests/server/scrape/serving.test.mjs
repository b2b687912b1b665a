// Scraped servers understood, not only stored: a real HTTP server in this process plays a vLLM
// server whose latency histogram, request and token counters grow with requests whose
// latencies this test knows one by one, then restarts (every count back near zero); a second
// endpoint plays Triton with its counters and a latency summary. perfscope scrapes both, and
// its percentiles (from the buckets' increase over the window, restart included), SLA share,
// serving rows, SLA rule, A/B answer and dashboard must agree with what was observed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { startPerfscope } from '../../support/perfscope_server.mjs';
import { launchChromium } from '../../support/browser.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const MODEL = 'meta-llama/Llama-3.1-8B-Instruct';
const BOUNDS = [0.05, 0.1, 0.25, 0.5, 1, 2.5];  // seconds; +Inf after

// Deterministic latencies (seconds): a log-normal-ish spread from a linear congruential generator.
function latencies(n, seed) {
  let x = seed;
  const out = [];
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    const u = x / 2147483648;
    out.push(0.02 + 0.3 * Math.exp(2.2 * (u - 0.5)) * (i % 17 === 0 ? 6 : 1));
  }
  return out;
}

// The server's cumulative state: every observation since its (re)start.
class VllmState {
  constructor() { this.obs = []; this.aborted = 0; this.tokens = 0; }
  observe(values, aborted) {
    this.obs.push(...values);
    this.aborted += aborted;
    this.tokens += values.length * 64;
  }
  exposition() {
    const l = `model_name="${MODEL}"`;
    const lines = ['# HELP vllm:e2e_request_latency_seconds Histogram of end to end request latency in seconds.',
                   '# TYPE vllm:e2e_request_latency_seconds histogram'];
    for (const b of BOUNDS) lines.push(`vllm:e2e_request_latency_seconds_bucket{le="${b}",${l}} ${this.obs.filter((v) => v <= b).length}.0`);
    lines.push(`vllm:e2e_request_latency_seconds_bucket{le="+Inf",${l}} ${this.obs.length}.0`);
    lines.push(`vllm:e2e_request_latency_seconds_count{${l}} ${this.obs.length}.0`);
    lines.push(`vllm:e2e_request_latency_seconds_sum{${l}} ${this.obs.reduce((a, b) => a + b, 0)}`);
    lines.push('# TYPE vllm:request_success_total counter');
    lines.push(`vllm:request_success_total{finished_reason="stop",${l}} ${this.obs.length - this.aborted}.0`);
    lines.push(`vllm:request_success_total{finished_reason="abort",${l}} ${this.aborted}.0`);
    lines.push('# TYPE vllm:generation_tokens_total counter');
    lines.push(`vllm:generation_tokens_total{${l}} ${this.tokens}.0`);
    lines.push('# TYPE vllm:num_requests_running gauge');
    lines.push(`vllm:num_requests_running{${l}} 4.0`);
    return lines.join('\n') + '\n';
  }
}

// Triton: 10 requests of 15 ms between any two scrapes.
let tritonRequests = 1200;
function triton() {
  tritonRequests += 10;
  const v = 'model="resnet50",version="1"';
  return [
    '# TYPE nv_inference_request_success counter', `nv_inference_request_success{${v}} ${tritonRequests}`,
    '# TYPE nv_inference_request_failure counter', `nv_inference_request_failure{model="resnet50",reason="BACKEND",version="1"} 3`,
    '# TYPE nv_inference_request_duration_us counter', `nv_inference_request_duration_us{${v}} ${tritonRequests * 15000}`,
    '# TYPE nv_inference_request_summary_us summary',
    `nv_inference_request_summary_us_count{${v}} ${tritonRequests}`,
    `nv_inference_request_summary_us_sum{${v}} ${tritonRequests * 15000}`,
    `nv_inference_request_summary_us{${v},quantile="0.5"} 14800`,
    `nv_inference_request_summary_us{${v},quantile="0.99"} 31200`,
  ].join('\n') + '\n';
}

let target, scraper, state;
const windowObs = [];  // every observation the window's increase should hold

async function stored(name) {
  const all = (await (await fetch(scraper.url + '/api/v1/series')).json()).series;
  return all.find((s) => s.name === name);
}
async function waitStored(count) {
  for (let i = 0; i < 100; i++) {
    const s = await stored('vllm:e2e_request_latency_seconds_count');
    if (s && s.latest.value === count) return;
    await sleep(100);
  }
  throw new Error(`the scrape with ${count} requests was never stored`);
}

before(async () => {
  state = new VllmState();
  state.observe(latencies(50, 7), 1);  // before perfscope's first scrape: not in the window
  target = http.createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4; charset=utf-8' });
    res.end(req.url === '/triton' ? triton() : state.exposition());
  });
  await new Promise((r) => target.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${target.address().port}`;
  scraper = await startPerfscope({
    label: 'serving',
    args: ['--enable-host-collector', 'false', '--enable-gpu-collector', 'false', '--sampling-interval-ms', '100',
           '--scrape', `${base}/metrics,job=vllm,interval=150ms`, '--scrape', `${base}/triton,job=triton,interval=150ms`],
  });
  await waitStored(50);
  const first = latencies(300, 11);
  state.observe(first, 6);
  windowObs.push(...first);
  await waitStored(350);
  // The server restarts: its counts start again from zero.
  state = new VllmState();
  const after = latencies(120, 23);
  state.observe(after, 2);
  windowObs.push(...after);
  await waitStored(120);
});

after(async () => {
  if (scraper) await scraper.stop();
  if (target) target.close();
});

// Prometheus' histogram_quantile over cumulative buckets (bounds ascending, +Inf last).
function histogramQuantile(q, bounds, counts) {
  const total = counts[counts.length - 1];
  const rank = q * total;
  let b = 0;
  while (b < counts.length - 1 && counts[b] < rank) b++;
  if (b === counts.length - 1) return bounds[bounds.length - 1];
  const start = b === 0 ? 0 : bounds[b - 1];
  const below = b === 0 ? 0 : counts[b - 1];
  return start + (bounds[b] - start) * ((rank - below) / (counts[b] - below));
}
const nearestRank = (sorted, p) => sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)];

test('percentiles of a scraped model come from its buckets over the window, restart included', async () => {
  const r = await (await fetch(`${scraper.url}/api/v1/percentiles?model=${encodeURIComponent(MODEL)}&window=all&q=50,90,99&sla_ms=400`)).json();
  assert.equal(r.method, 'prometheus_histogram', JSON.stringify(r));
  assert.equal(r.convention, 'histogram_quantile');
  assert.deepEqual(r.source.servers, ['vllm']);
  assert.equal(r.source.metric, 'vllm:e2e_request_latency_seconds');
  assert.equal(r.count, windowObs.length);  // 300 after the baseline, 120 after the restart
  const counts = BOUNDS.map((b) => windowObs.filter((v) => v <= b).length).concat([windowObs.length]);
  const ms = BOUNDS.map((b) => b * 1000);
  const sorted = [...windowObs].map((v) => v * 1000).sort((a, b) => a - b);
  for (const [key, q] of [['p50', 0.5], ['p90', 0.9], ['p99', 0.99]]) {
    assert.ok(Math.abs(r.percentiles[key] - histogramQuantile(q, ms, counts)) < 1e-6, `${key}: ${r.percentiles[key]}`);
    // The true percentile of the observations lies within the bucket given as the bound.
    const truth = nearestRank(sorted, q * 100);
    const [lo, hi] = r.bounds[key];
    assert.ok(truth >= lo && (hi === null || truth <= hi), `${key}: ${truth} not in [${lo}, ${hi}]`);
  }
  const mean = windowObs.reduce((a, b) => a + b, 0) / windowObs.length * 1000;
  assert.ok(Math.abs(r.mean - mean) < 1e-6);
  // SLA: 400 ms lies inside (250, 500]: interpolated, bounded by the whole buckets.
  const within = windowObs.filter((v) => v <= 0.4).length / windowObs.length;
  assert.ok(r.sla.compliance_bounds[0] <= within && within <= r.sla.compliance_bounds[1], JSON.stringify(r.sla));
  assert.ok(Math.abs(r.sla.compliance_rate - within) < 0.1);
});

test('the choice of source and fields is checked', async () => {
  const get = (q) => fetch(`${scraper.url}/api/v1/percentiles?model=${encodeURIComponent(MODEL)}&window=all&${q}`);
  const events = await (await get('source=events')).json();
  assert.equal(events.count, 0);  // no request was reported: the reported side is empty
  assert.equal(events.method, 'exact');
  let res = await get('source=both');
  assert.equal(res.status, 400);
  assert.equal((await res.json()).error.field, 'source');
  res = await get('field=ttft_ms&source=scrape');
  assert.equal(res.status, 404);  // this server exports no TTFT histogram
  assert.equal((await res.json()).error.field, 'model');
  res = await get('field=itl_ms&source=events');
  assert.equal(res.status, 400);
});

test('Triton\'s summary gives its own quantiles, said to be its own', async () => {
  const r = await (await fetch(`${scraper.url}/api/v1/percentiles?model=resnet50&version=1&window=all&q=50,90,99`)).json();
  assert.equal(r.method, 'prometheus_summary');
  assert.equal(r.percentiles.p50, 14.8);
  assert.equal(r.percentiles.p99, 31.2);
  assert.equal(r.percentiles.p90, null);  // not exported: no guess
  assert.ok(r.warnings.some((w) => w.includes('its own')), JSON.stringify(r.warnings));
});

test('the serving section, the SLA rule and /api/v1/inference read the scraped server', async () => {
  const a = await (await fetch(`${scraper.url}/api/v1/analysis?window=all&sla_ms=100`)).json();
  const row = a.inference.find((m) => m.model === MODEL);
  assert.ok(row, JSON.stringify(a.inference));
  assert.equal(row.source, 'scrape');
  assert.equal(row.server, 'vllm');
  assert.equal(row.requests, windowObs.length);
  assert.equal(row.errors, 6 + 2);  // aborted requests
  assert.equal(row.output_tokens, windowObs.length * 64);
  assert.equal(row.running, 4);
  assert.equal(row.latency_ms.method, 'prometheus_histogram');
  assert.ok(row.slo_compliance.latency_ms.compliance_rate < 1);
  // Gauges summarize gauges: the histogram's buckets are not among them, the running count is.
  assert.ok(!a.gauges.some((g) => 'le' in g.labels), 'no bucket series among the gauges');
  assert.ok(a.gauges.some((g) => g.name === 'vllm:num_requests_running'));
  const sla = a.bottlenecks.find((f) => f.id === 'sla_at_risk');
  assert.equal(sla.status, 'fired', JSON.stringify(sla));
  const tritonRow = a.inference.find((m) => m.model === 'resnet50');
  assert.equal(tritonRow.server, 'triton');
  assert.equal(tritonRow.latency_ms.p99, 31.2);
  assert.ok(Math.abs(tritonRow.latency_ms.mean - 15) < 1e-9);
  assert.ok(tritonRow.requests > 0 && tritonRow.errors === 0);

  const inf = await (await fetch(`${scraper.url}/api/v1/inference?window=all`)).json();
  const scraped = inf.models.find((m) => m.model === MODEL);
  assert.equal(scraped.source, 'scrape');
  assert.equal(scraped.requests, windowObs.length);
  assert.equal(scraped.latency_ms, undefined, 'percentiles only when asked for');
  // The dashboard's table: the same percentiles and SLO share as the analysis gives.
  const detailed = await (await fetch(`${scraper.url}/api/v1/inference?window=all&latency=true&sla_ms=100`)).json();
  const d = detailed.models.find((m) => m.model === MODEL);
  assert.deepEqual(d.latency_ms, row.latency_ms);
  assert.deepEqual(d.slo_compliance, row.slo_compliance);
  assert.deepEqual(detailed.slo, { latency_ms: 100 });
});

test('reports carry the scraped percentiles, valid against the report schema', async () => {
  const require = createRequire(path.join(process.env.PERFSCOPE_WEB_DIR, 'package.json'));
  const Ajv2020 = require('ajv/dist/2020').default;
  const schema = JSON.parse(readFileSync(process.env.PERFSCOPE_REPORT_SCHEMA, 'utf8'));
  const doc = await (await fetch(`${scraper.url}/api/v1/report?format=json&window=all&sla_ms=400`)).json();
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  assert.ok(ajv.validate(schema, doc), ajv.errorsText(ajv.errors, { separator: '\n' }));
  const row = doc.latency.find((l) => l.model === MODEL);
  assert.equal(row.method, 'prometheus_histogram');
  assert.equal(row.count, windowObs.length);
  assert.ok(row.sla.compliance_bounds[0] <= row.sla.compliance_rate && row.sla.compliance_rate <= row.sla.compliance_bounds[1]);
  const triton = doc.latency.find((l) => l.model === 'resnet50');
  assert.equal(triton.method, 'prometheus_summary');
  assert.equal(triton.sla, undefined);  // a summary cannot say what share lies under 400 ms
  for (const format of ['md', 'terminal', 'html']) {
    const res = await fetch(`${scraper.url}/api/v1/report?format=${format}&window=all&sla_ms=400`);
    assert.equal(res.status, 200, format);
    assert.ok((await res.text()).includes(MODEL), format);
  }
});

test('an A/B test of scraped models says which tests could not run and why', async () => {
  const created = await fetch(`${scraper.url}/api/v1/abtests`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: 'scraped', a: { model: MODEL }, b: { model: 'resnet50', version: '1' } }),
  });
  assert.equal(created.status, 201);
  const r = await (await fetch(scraper.url + (await created.json()).url)).json();
  assert.equal(r.verdict, 'insufficient_samples');
  assert.deepEqual(r.scraped.tests_not_run.map((t) => t.test), ['mann_whitney', 'welch', 'bootstrap_speedup_ci', 'hodges_lehmann']);
  assert.equal(r.scraped.sides.length, 2);
  assert.equal(r.scraped.sides[0].count, windowObs.length);
  assert.match(r.recommendation, /scraped/);
});

test('the dashboard\'s serving panel fills from the scraped server', async () => {
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    await page.goto(scraper.url + '/?view=serving');
    // The panel reads the last minute: the restarted server's requests are in it.
    await page.waitForSelector('[data-testid=inference-table] tbody tr:not(.empty)', { timeout: 20000 });
    const text = await page.textContent('[data-testid=inference-table] tbody');
    assert.ok(text.includes(MODEL), text);
    // The percentile panel offers the scraped models; picking vLLM's draws its histogram answer.
    await page.waitForSelector(`#pct-subject option[value="model:${MODEL}"]`, { state: 'attached', timeout: 20000 });
    await page.selectOption('#pct-subject', `model:${MODEL}`);
    await page.waitForFunction(() => window.perfscope.state.percentiles && window.perfscope.state.percentiles.method === 'prometheus_histogram',
                               null, { timeout: 20000 });
    assert.match(await page.textContent('#pct-summary'), /from vllm:e2e_request_latency_seconds \(histogram buckets\)/);
  } finally {
    await browser.close();
  }
});
