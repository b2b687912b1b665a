// Retention against the real server: raw rows older than the configured age roll up into
// histogram tiers in the background, percentiles over a window reaching back past the cutoff
// answer from the tiers (method "histogram", within 0.1 % of the exact values, counts and
// extremes exact), charts keep showing the rolled-up stretch, and a size limit shrinks the
// database file. Bad retention options stop the start with the option named.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { postEvents, startPerfscope } from '../support/perfscope_server.mjs';

const SECOND = 1_000_000_000n;

// Deterministic log-normal-ish latencies (a small LCG; no Math.random in tests).
function* latencies(seed) {
  let x = seed;
  for (;;) {
    x = (x * 1103515245 + 12345) % 2147483648;
    const u = (x + 1) / 2147483649;
    x = (x * 1103515245 + 12345) % 2147483648;
    const v = (x + 1) / 2147483649;
    yield Math.exp(Math.log(2) + 0.5 * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v));
  }
}

function nearestRank(sorted, q) {
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((q / 100) * sorted.length - 1e-9)));
  return sorted[rank - 1];
}

async function getJson(url) {
  const r = await fetch(url);
  const body = await r.json();
  assert.equal(r.status, 200, JSON.stringify(body));
  return body;
}

async function until(what, fn, ms = 30000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error('timed out waiting for ' + what);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// Three hours of history ending now: a kernel every 2 s, an LLM request every 4 s, a custom
// gauge every 10 s. Returns what was sent, to compare with.
async function ingestHistory(url) {
  const now = BigInt(Date.now()) * 1_000_000n;
  const start = now - 3n * 3600n * SECOND;
  const gen = latencies(12345);
  const kernelMs = [], ttftMs = [];
  let events = [];
  const flush = async () => { if (events.length) await postEvents(url, events); events = []; };
  for (let s = 0; s < 3 * 3600; s += 2) {
    const end = start + BigInt(s) * SECOND;
    const ms = Number(gen.next().value.toFixed(6));
    kernelMs.push(ms);
    events.push({ type: 'kernel', name: 'retained_gemm', end_ns: Number(end), duration_ms: ms });
    if (s % 4 === 0) {
      const ttft = 20 + (s % 400) / 10;
      ttftMs.push(ttft);
      events.push({ type: 'inference', model: 'llm', version: '1', latency_ms: 300 + ttft, ttft_ms: ttft,
                    output_tokens: 41, ts_ns: Number(end) });
    }
    if (s % 10 === 0) events.push({ type: 'sample', metric: 'queue_depth', value: (s / 10) % 7, ts_ns: Number(end) });
    if (events.length >= 500) await flush();
  }
  await flush();
  return { now, kernelMs, ttftMs };
}

test('old raw data rolls up; percentiles and charts still cover it', async () => {
  const server = await startPerfscope({
    label: 'retention',
    args: ['--enable-host-collector', 'false', '--retention-raw-max-age', '1h', '--retention-interval-ms', '200',
           '--db-commit-interval-ms', '50'],
  });
  try {
    const { now, kernelMs, ttftMs } = await ingestHistory(server.url);
    const info = await until('retention to catch up', async () => {
      const i = await getJson(server.url + '/api/v1/info');
      const r = i.runtime.retention;
      return r.raw_before_ns >= Number(now - 3600n * SECOND - 120n * SECOND) ? i : null;
    });
    assert.equal(info.runtime.retention.enabled, true);
    assert.equal(info.runtime.retention.raw_max_age_s, 3600);
    assert.equal(info.runtime.retention.errors, 0);

    // The whole window: from the tiers plus the raw hour still kept.
    const whole = await getJson(server.url + '/api/v1/percentiles?kernel=retained_gemm&window=4h&sla_ms=3');
    assert.equal(whole.method, 'histogram');
    assert.equal(whole.max_relative_error, 0.001);
    assert.equal(whole.count, kernelMs.length);
    assert.ok(whole.histogram.rolled_up_count > 0 && whole.histogram.raw_count > 0, JSON.stringify(whole.histogram));
    assert.equal(whole.histogram.rolled_up_count + whole.histogram.raw_count, kernelMs.length);
    const sorted = [...kernelMs].sort((a, b) => a - b);
    for (const [key, q] of [['p50', 50], ['p90', 90], ['p99', 99], ['p99.9', 99.9]]) {
      const exact = nearestRank(sorted, q);
      assert.ok(Math.abs(whole.percentiles[key] - exact) / exact <= 0.001, `${key}: ${whole.percentiles[key]} vs ${exact}`);
    }
    assert.equal(whole.min, sorted[0]);
    assert.equal(whole.max, sorted[sorted.length - 1]);
    const mean = kernelMs.reduce((a, b) => a + b, 0) / kernelMs.length;
    assert.ok(Math.abs(whole.mean - mean) / mean < 1e-9);
    const over = kernelMs.filter((v) => v > 3).length;
    assert.ok(Math.abs(whole.sla.violations - over) <= 2, `${whole.sla.violations} vs ${over}`);
    assert.ok(whole.warnings.some((w) => /histogram tiers/.test(w)));

    // Linear interpolation from the tiers too.
    const linear = await getJson(server.url + '/api/v1/percentiles?kernel=retained_gemm&window=4h&method=linear&q=50');
    assert.equal(linear.convention, 'linear');
    const h = (sorted.length - 1) * 0.5, lo = Math.floor(h);
    const exactLinear = sorted[lo] + (h - lo) * (sorted[lo + 1] - sorted[lo]);
    assert.ok(Math.abs(linear.percentiles.p50 - exactLinear) / exactLinear <= 0.001);

    // A recent window never touches the tiers: exact.
    // (The last 30 minutes of the history as from/to: a relative window's edge would move with
    // the clock while a loaded machine runs the test.)
    const recent = await getJson(server.url +
      `/api/v1/percentiles?kernel=retained_gemm&from=${now - 1800n * SECOND}&to=${now}`);
    assert.equal(recent.method, 'exact');
    assert.ok(Math.abs(recent.count - 30 * 60 / 2) <= 1, `${recent.count}`);

    // LLM latencies and custom gauges the same way.
    const ttft = await getJson(server.url + '/api/v1/percentiles?model=llm&field=ttft_ms&window=4h&q=50,99');
    assert.equal(ttft.method, 'histogram');
    assert.equal(ttft.count, ttftMs.length);
    const ttftSorted = [...ttftMs].sort((a, b) => a - b);
    assert.ok(Math.abs(ttft.percentiles.p99 - nearestRank(ttftSorted, 99)) / nearestRank(ttftSorted, 99) <= 0.001);
    const gauge = await getJson(server.url + '/api/v1/percentiles?series=queue_depth&window=4h&q=50');
    assert.equal(gauge.method, 'histogram');
    assert.equal(gauge.count, 3 * 3600 / 10);
    assert.equal(gauge.min, 0);
    assert.equal(gauge.max, 6);

    // Raw rows before the cutoff are gone from the store; charts still show the stretch as
    // buckets (from the tiers), with every sample counted once.
    const chart = await getJson(server.url + '/api/v1/series/query?name=queue_depth&from=now-190m&max_points=200');
    const series = chart.series[0];
    assert.equal(series.downsampled, true);
    const cutoff = info.runtime.retention.raw_before_ns;
    const early = series.points.filter((p) => p[0] < cutoff);
    assert.ok(early.length > 50, `${early.length} buckets before the cutoff`);
    assert.equal(series.points.reduce((n, p) => n + p[4], 0), 3 * 3600 / 10);
  } finally {
    await server.stop();
  }
});

test('a size limit shrinks the database file, oldest data first', async () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'perfscope-retention-size-'));
  const server = await startPerfscope({
    label: 'retention-size', dataDir,
    args: ['--enable-host-collector', 'false', '--retention-interval-ms', '300', '--db-commit-interval-ms', '50'],
  });
  try {
    // Distinct tags make rows that take room: ~2 MB of requests, all older than 10 minutes.
    const now = Date.now();
    for (let b = 0; b < 20; b++) {
      const events = [];
      for (let i = 0; i < 500; i++) {
        const t = now - 3 * 3600_000 + (b * 500 + i) * 1000;
        events.push({ type: 'inference', model: 'big', latency_ms: 1 + (i % 13), ts_ns: t * 1e6,
                      tags: { request: `r${b}-${i}`, pad: 'x'.repeat(150) } });
      }
      await postEvents(server.url, events);
    }
    await server.stop();
  } catch (e) {
    await server.stop();
    throw e;
  }
  // Restart the same data directory with a limit of 400 kB.
  const dbFile = path.join(dataDir, 'perfscope.db');
  const before = statSync(dbFile).size;
  assert.ok(before > 1_500_000, `database of ${before} bytes`);
  const limited = await startPerfscope({
    label: 'retention-size', dataDir,
    args: ['--enable-host-collector', 'false', '--retention-max-size', '400kB', '--retention-interval-ms', '200'],
  });
  try {
    const info = await until('the size limit', async () => {
      const i = await getJson(limited.url + '/api/v1/info');
      const r = i.runtime.retention;
      return r.steps > 0 && r.bytes_used > 0 && r.bytes_used <= 400_000 ? i : null;
    });
    assert.equal(info.runtime.retention.max_bytes, 400_000);
    assert.equal(info.runtime.retention.over_size, false);
    const pct = await getJson(limited.url + '/api/v1/percentiles?model=big&window=all&q=50');
    assert.equal(pct.count, 10_000);  // every request, raw or rolled up
  } finally {
    await limited.stop();
  }
  // Freed pages went back to the filesystem (incremental vacuum), once the WAL is folded in.
  const after = statSync(dbFile).size;
  assert.ok(after < before / 2, `${before} → ${after} bytes`);
  rmSync(dataDir, { recursive: true, force: true });
});

test('bad retention options stop the start and name the option', () => {
  for (const [args, name] of [[['--retention-max-size', '12XB'], '--retention-max-size'],
                              [['--retention-raw-max-age', '30s'], '--retention-raw-max-age'],
                              [['--retention-rollup-max-age', 'soon'], '--retention-rollup-max-age']]) {
    const r = spawnSync(process.env.PERFSCOPE_BIN, ['serve', '--listen', '127.0.0.1:0', ...args], { encoding: 'utf8' });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, new RegExp(name));
  }
});
