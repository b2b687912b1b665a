// Browser tests of the dashboard, time and connection: a finding's evidence, the kernel
// timeline (buckets to executions, pans, one run's span), alerts and anomalies over the range,
// and the connection state through a lost server and a restart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startPerfscope, postEvents } from '../support/perfscope_server.mjs';
import { artifacts, baseUrl, binary, browser, drawnPixels, nvmlScript, server, serverExit } from './dashboard_fixture.mjs';

test('a finding opens its evidence: the series it was read from, over the analysed window, kept in the URL', async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(baseUrl + '/?view=analysis');
  // The stand-in GPU 0 reads DRAM bandwidth at 61 %: the rule is evaluated, its evidence that series.
  const button = '[data-testid=evidence-memory_bandwidth_bound]';
  await page.waitForSelector(button, { timeout: 20000 });
  const finding = await page.evaluate(() => window.perfscope.state.analysis.bottlenecks.find((f) => f.id === 'memory_bandwidth_bound'));
  assert.deepEqual(finding.evidence_series, { gpu_dram_bandwidth_utilization_avg: 'gpu_dram_bandwidth_utilization_ratio' });
  await page.click(button);
  await page.waitForFunction(() => window.perfscope.state.findingEvidence.loads > 0, null, { timeout: 15000 });
  const series = await page.evaluate(() => window.perfscope.state.findingEvidence.series);
  assert.ok(series.length >= 1 && series.every((s) => s.name === 'gpu_dram_bandwidth_utilization_ratio' && s.points > 0),
            JSON.stringify(series));
  assert.match(await page.textContent('[data-testid=finding-evidence-summary]'), /average DRAM bandwidth 61\.0%/);
  assert.ok(await drawnPixels(page, '[data-testid=finding-evidence-chart]', undefined, 30) > 30, 'the series is drawn');
  assert.equal(new URL(page.url()).searchParams.get('finding'), 'memory_bandwidth_bound');
  await page.reload();
  await page.waitForFunction(() => window.perfscope.state.findingEvidence.loads > 0, null, { timeout: 20000 });
  assert.equal(await page.isHidden('[data-testid=finding-evidence]'), false);
  await page.click('[data-testid=finding-evidence-close]');
  assert.equal(new URL(page.url()).searchParams.get('finding'), null);
  assert.deepEqual(errors, []);
  await page.close();
});

// Launch-bound decoding as a tracer reports it: 3,000 kernels of 6 µs every 10 µs on stream 7,
// each launched 20 µs ahead, copies on stream 9, and one stretch where the GPU waited 200 µs for
// the host (the launch call began after the work before it ended). Times are BigInt epoch ns:
// a JavaScript number holds them only to 256 ns.
function decodeTrace(t0, { run } = {}) {
  const events = [];
  let at = t0;
  for (let i = 0; i < 3000; i++) {
    const wait = i === 1500;
    if (wait) at += 200000n;
    const call = wait ? at - 50000n : at - 20000n;
    events.push({ type: 'kernel', name: i % 3 === 0 ? 'attn_decode' : 'gemv_bf16', device: '0', stream: '7',
      start_ns: at, end_ns: at + 6000n, launch_start_ns: call, launch_end_ns: call + 4000n, ...(run ? { tags: { run } } : {}) });
    if (i % 100 === 0) {
      events.push({ type: 'kernel', name: 'Memcpy HtoD (Pageable → Device)', device: '0', stream: '9', start_ns: at,
        end_ns: at + 3000n, tags: { op: 'memcpy', ...(run ? { run } : {}) } });
    }
    at += 10000n;
  }
  return { events, end: at };
}

// Events with BigInt times, as NDJSON with the integers written out whole.
async function postExact(url, events) {
  for (let i = 0; i < events.length; i += 1000) {
    const body = events.slice(i, i + 1000)
      .map((e) => JSON.stringify(e, (k, v) => (typeof v === 'bigint' ? `#${v}#` : v)).replace(/"#(-?\d+)#"/g, '$1')).join('\n');
    const r = await fetch(url + '/api/v1/events', { method: 'POST', headers: { 'Content-Type': 'application/x-ndjson' }, body });
    if (r.status !== 200) throw new Error(`ingest answered ${r.status}: ${await r.text()}`);
  }
}
const epochNs = (msAgo) => BigInt(Math.round(Date.now() - msAgo)) * 1000000n;

test('the timeline draws kernels per stream, zooms from buckets to executions, pans, and keeps its window in the URL', async () => {
  const t0 = epochNs(3 * 3600e3);  // 3 hours ago: no other test's kernels
  const { events, end } = decodeTrace(t0);
  await postExact(baseUrl, events);
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  // The whole trace in view; few executions may be drawn one by one here, so buckets are forced.
  await page.goto(`${baseUrl}/?view=timeline&tl_from=${t0 - 1000n}&tl_to=${end}`);
  await page.waitForFunction(() => window.perfscope && window.perfscope.timeline.state.loads > 0, null, { timeout: 20000 });
  await page.evaluate(() => { const t = window.perfscope.timeline; t.state.maxRaw = 1000; t.state.data = null; t.zoom(1); });
  // An answer in hand and painted (the rows are laid out as they are drawn).
  await page.waitForFunction(() => { const s = window.perfscope.timeline.state; return s.data && !s.data.raw && s.layout.length > 1; },
                             null, { timeout: 10000 });
  const rows = await page.evaluate(() => window.perfscope.timeline.state.layout.map((r) => `${r.kind} ${r.device} ${r.track ? r.track.stream : ''}`.trim()));
  assert.deepEqual(rows, ['launch 0', 'stream 0 7', 'stream 0 9']);
  assert.equal(await page.evaluate(() => window.perfscope.timeline.state.data.events), 3030);
  assert.match(await page.textContent('[data-testid=timeline-info]'), /3\.03 k executions .* buckets of/);
  // Something drawn in stream 7's row (kernel colours, not the background).
  const painted = await page.$eval('[data-testid=timeline-canvas]', (c) => {
    const row = window.perfscope.timeline.state.layout[1];
    const dpr = window.devicePixelRatio || 1;
    const { data } = c.getContext('2d').getImageData(140 * dpr, row.y * dpr, c.width - 140 * dpr, row.h * dpr);
    let n = 0;
    for (let i = 3; i < data.length; i += 4) n += data[i] > 0;
    return n;
  });
  assert.ok(painted > 1000, `stream 7 drawn (${painted} pixels)`);
  mkdirSync(artifacts, { recursive: true });
  await page.screenshot({ path: path.join(artifacts, 'timeline-buckets.png') });

  // The wheel zooms in around the pointer until executions come one by one.
  const box = await page.locator('[data-testid=timeline-canvas]').boundingBox();
  const span0 = await page.evaluate(() => window.perfscope.timeline.state.b - window.perfscope.timeline.state.a);
  await page.mouse.move(box.x + 140 + (box.width - 140) / 2, box.y + 40);
  for (let i = 0; i < 8; i++) { await page.mouse.wheel(0, -400); await page.waitForTimeout(30); }
  await page.waitForFunction(() => { const s = window.perfscope.timeline.state; return s.data && s.data.raw && s.layout.length > 1; },
                             null, { timeout: 10000 });
  const span1 = await page.evaluate(() => window.perfscope.timeline.state.b - window.perfscope.timeline.state.a);
  assert.ok(span1 < span0 / 10, `zoomed in: ${span0} → ${span1} ns`);

  // To the host wait, and a hover over the kernel after it.
  const wait = events.filter((e) => e.stream === '7')[1500];
  await page.evaluate(([a, b]) => window.perfscope.timeline.setWindow(a, b), [String(wait.start_ns - 300000n), String(wait.start_ns + 100000n)]);
  await page.waitForFunction(() => { const s = window.perfscope.timeline.state; return s.data && s.data.raw && s.a === 0 && s.layout.length > 1; },
                             null, { timeout: 10000 });
  const at = await page.evaluate(() => { const s = window.perfscope.timeline.state; return (300000 + 3000) / (s.b - s.a); });
  const row7 = await page.evaluate(() => window.perfscope.timeline.state.layout[1].y);
  await page.mouse.move(box.x + 132 + at * (box.width - 132), box.y + row7 + 10);
  await page.waitForSelector('[data-testid=timeline-tip]', { state: 'visible', timeout: 5000 });
  const tip = await page.textContent('[data-testid=timeline-tip]');
  assert.match(tip, /attn_decode|gemv_bf16/);
  assert.match(tip, /duration 6\.00 µs/);
  assert.match(tip, /launch delay 46\.0 µs/);
  assert.match(tip, /idle 204 µs before it: host wait/);
  mkdirSync(artifacts, { recursive: true });
  await page.locator('[data-testid=timeline-canvas]').screenshot({ path: path.join(artifacts, 'timeline-host-wait.png') });

  // A drag pans; the window is in the URL and a reload keeps it.
  const before = await page.evaluate(() => window.perfscope.timeline.state.a);
  await page.mouse.move(box.x + 600, box.y + 40);
  await page.mouse.down();
  for (let x = 600; x >= 400; x -= 20) await page.mouse.move(box.x + x, box.y + 40);
  await page.mouse.up();
  const after = await page.evaluate(() => window.perfscope.timeline.state.a);
  assert.ok(after > before, 'dragging left moves the window later');
  const from = await page.evaluate(() => new URLSearchParams(window.location.search).get('tl_from'));
  assert.match(from, /^\d+$/);
  await page.reload();
  await page.waitForFunction(() => window.perfscope && window.perfscope.timeline.state.loads > 0, null, { timeout: 20000 });
  assert.equal(await page.evaluate(() => new URLSearchParams(window.location.search).get('tl_from')), from);
  assert.equal(await page.evaluate(() => window.perfscope.timeline.state.data.raw), true);
  assert.deepEqual(errors, []);
  await page.close();
});

test('the timeline shows one run over its own span, picked from the runs', async () => {
  const t0 = epochNs(4 * 3600e3);  // 4 hours ago: outside the live range
  const { events, end } = decodeTrace(t0, { run: 'tl_decode' });
  events.unshift({ type: 'run', name: 'tl_decode', command: ['python', 'decode.py'], start_ns: t0 - 1000000n,
    end_ns: end + 1000000n, exit_status: 0 });
  await postExact(baseUrl, events);
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.goto(`${baseUrl}/?view=timeline`);
  await page.waitForSelector('[data-testid=timeline-run] option[value="tl_decode"]', { state: 'attached', timeout: 20000 });
  await page.selectOption('[data-testid=timeline-run]', 'tl_decode');
  await page.waitForFunction(() => { const d = window.perfscope.timeline.state.data; return d && d.events === 3030; }, null, { timeout: 20000 });
  // The view is the run's executions' span, not the dashboard's range.
  const span = await page.evaluate(() => window.perfscope.timeline.state.b - window.perfscope.timeline.state.a);
  assert.equal(span, Number(end - 4000n - t0));
  assert.match(await page.evaluate(() => window.location.search), /tl_run=tl_decode/);
  // The overview strip: the run's busy time across it, the window (the whole run) framed.
  await page.waitForFunction(() => { const o = window.perfscope.timeline.overview; return o.busy && o.busy.some((v) => v > 0); },
                             null, { timeout: 10000 });
  // The axis names its origin by clock time: the run's first execution, to the millisecond.
  const origin = await page.evaluate(() => {
    const s = window.perfscope.timeline.state;
    const d = new Date(Number((s.base + BigInt(Math.round(s.a))) / 1000000n));
    const two = (n) => String(n).padStart(2, '0');
    return { drawn: s.origin, want: `t₀ ${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}.` +
      String(d.getMilliseconds()).padStart(3, '0') };
  });
  assert.equal(origin.drawn, origin.want);
  // Shift+drag over the middle fifth zooms to it.
  const box = await page.locator('[data-testid=timeline-canvas]').boundingBox();
  const plotW = box.width - 132;
  await page.keyboard.down('Shift');
  await page.mouse.move(box.x + 132 + plotW * 0.4, box.y + 40);
  await page.mouse.down();
  await page.mouse.move(box.x + 132 + plotW * 0.6, box.y + 40, { steps: 4 });
  await page.mouse.up();
  await page.keyboard.up('Shift');
  const zoomed = await page.evaluate(() => [window.perfscope.timeline.state.a, window.perfscope.timeline.state.b]);
  assert.ok(Math.abs((zoomed[1] - zoomed[0]) / span - 0.2) < 0.02, `the dragged fifth: ${zoomed} of ${span}`);
  assert.ok(Math.abs(zoomed[0] / span - 0.4) < 0.02, `from 40 %: ${zoomed[0] / span}`);
  // A click on the strip's first tenth centres the window there, keeping its width.
  const strip = await page.locator('[data-testid=timeline-overview]').boundingBox();
  await page.mouse.click(strip.x + 132 + (strip.width - 132) * 0.1, strip.y + strip.height / 2);
  const moved = await page.evaluate(() => {
    const s = window.perfscope.timeline.state, o = window.perfscope.timeline.overview;
    return { centre: Number(s.base - o.origin) + (s.a + s.b) / 2, width: s.b - s.a, span: o.span };
  });
  assert.ok(Math.abs(moved.width - (zoomed[1] - zoomed[0])) < 1, 'the width is kept');
  assert.ok(Math.abs(moved.centre / moved.span - 0.1) < 0.02, `centred at a tenth: ${moved.centre / moved.span}`);
  await page.close();
});

test('alerts & anomalies: GPU alerts, anomalies and change points over the range, each saying how to get some', async () => {
  // 60 ten-second intervals of 5 executions ending four minutes ago; from the 30th, 20 % slower.
  const t0 = Date.now() * 1e6 - 840e9;
  const events = [];
  for (let interval = 0; interval < 60; interval++) {
    for (let i = 0; i < 5; i++) {
      const ms = (interval < 30 ? 1.0 : 1.2) * (1 + ((interval * 5 + i) % 7 - 3) * 0.003);
      const start = t0 + interval * 10e9 + i * 1e9;
      events.push({ type: 'kernel', name: 'stepped_kernel', start_ns: start, end_ns: start + Math.round(ms * 1e6) });
    }
  }
  await postEvents(baseUrl, events);
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.goto(`${baseUrl}/?view=alerts&range=15m`);
  await page.waitForFunction(() => window.perfscope && window.perfscope.state.alertsView.loads > 0, null, { timeout: 20000 });
  const row = '[data-testid=regressions-table] tr[data-direction=regression]';
  assert.match(await page.textContent(row), /stepped_kernel\s*p50\s*1\.00 ms → 1\.20 ms\s*\+(19|20)\.\d%\s*regression/);
  assert.match(await page.textContent('[data-testid=gpu-alerts-table]'), /--power-target-watts|W/);
  assert.match(await page.textContent('[data-testid=anomalies-table]'), /robust z-scores|host_|process_|gpu_/);
  // The kernel opens its page.
  await page.click(`${row} a[data-kernel]`);
  await page.waitForSelector('[data-testid=kernel-detail]', { state: 'visible', timeout: 20000 });
  assert.equal(await page.textContent('#kd-name'), 'stepped_kernel');
  // Its percentiles over the range (kept from the alerts view) mark the change where it happened.
  assert.match(await page.evaluate(() => window.location.search), /range=15m/);
  await page.waitForFunction(() => (window.perfscope.state.kernelDetail.changes || []).some((c) => c.direction === 'regression'),
                             null, { timeout: 20000 });
  await page.close();
});

test('the connection state shows a lost server and reconnection', async () => {
  const page = await browser.newPage();
  await page.goto(baseUrl + '/');
  await page.waitForFunction(() => window.perfscope.state.connection === 'live', null, { timeout: 15000 });
  await page.waitForFunction(() => window.perfscope.state.messages > 2, null, { timeout: 15000 });
  assert.equal(await page.$('.stat.stale [data-testid=cpu-total-value]'), null, 'current while live');
  server.kill('SIGTERM');
  const { code } = await serverExit;
  assert.equal(code, 0, 'SIGTERM stops the server cleanly');
  await page.waitForFunction(() => ['reconnecting', 'offline'].includes(window.perfscope.state.connection), null,
                             { timeout: 10000 });
  assert.match(await page.textContent('[data-testid=connection]'), /reconnecting|offline/);
  // The headline figures stop moving: dimmed within a few seconds, saying when they were read.
  await page.waitForSelector('.stat.stale [data-testid=cpu-total-value]', { timeout: 15000 });
  assert.match(await page.getAttribute('.stat:has([data-testid=cpu-total-value])', 'title'), /^last updated \d/);
  await page.close();
});

test('after a server restart every view reconnects, fills the gap from history and goes on live', async () => {
  // A server of its own on a fixed address, so that its successor answers where the pages look.
  const dataDir = mkdtempSync(path.join(tmpdir(), 'perfscope-restart-'));
  // Eleven pages, each in a browser context of its own with its own pool of up to six
  // connections plus its stream, all from 127.0.0.1: past the default per-client cap (64), which
  // a real browser's tabs, sharing one pool, never reach. The cap is off for this server.
  // Sampling at 2 Hz: enough messages to see the stream flowing again, without eleven pages
  // redrawing at 10 Hz on a 2-core machine under sanitizers.
  const args = ['--sampling-interval-ms', '500', '--max-connections-per-client', '0'];
  const first = await startPerfscope({ args, nvmlScript, label: 'restart', dataDir });
  const address = new URL(first.url).host;
  let second = null;
  const pages = [];
  try {
    const views = ['overview', 'host', 'gpu', 'kernels', 'memory', 'serving', 'operators', 'energy', 'analysis',
                   'processes', 'runs'];
    for (const view of views) {
      const page = await browser.newPage({ viewport: { width: 1024, height: 700 } });
      await page.goto(`${first.url}/?view=${view}`);
      // Waits on the state, with a bound only against a hang: eleven pages load on a busy machine.
      await page.waitForFunction(() => window.perfscope && window.perfscope.state.connection === 'live', null, { timeout: 60000 });
      pages.push({ view, page });
    }
    await first.stop();
    for (const { page } of pages) {
      await page.waitForFunction(() => ['reconnecting', 'offline'].includes(window.perfscope.state.connection), null,
                                 { timeout: 10000 });
    }
    const before = await Promise.all(pages.map(({ page }) => page.evaluate(() => ({
      messages: window.perfscope.state.messages, prefills: window.perfscope.state.prefills || 0 }))));
    second = await startPerfscope({ args, nvmlScript, label: 'restart',
                                    dataDir, listen: address });
    // Back live (the backoff is at most 10 s), the missed stretch read from history, samples
    // flowing: all pages at once, each waited on together, the bound only against a hang (eleven
    // pages refill their views from one server at the same moment).
    await Promise.all(pages.map(({ page }, i) => page.waitForFunction((b) => window.perfscope.state.connection === 'live' &&
      (window.perfscope.state.prefills || 0) > b.prefills && window.perfscope.state.messages > b.messages + 3,
    before[i], { timeout: 120000 })));
    for (const { view, page } of pages) {
      assert.equal(await page.getAttribute(`[data-view-link=${view}]`, 'class'), 'current', view);
      assert.equal(await page.textContent('[data-testid=connection]'), 'live', view);
    }
  } finally {
    for (const { page } of pages) await page.close();
    if (second) await second.stop();
    else await first.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
