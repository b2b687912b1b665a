// Browser tests of the dashboard, live charts: drawn from the stream and pre-filled from history,
// the demo's kernels, memory and inference, operators, series colours, one cursor and one time
// range over every chart, the views in the header, and the overview on a phone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startPerfscope, postEvents } from '../support/perfscope_server.mjs';
import { artifacts, baseUrl, binary, browser, cpuLineDrawn, drawnPixels, nvmlScript, server, serverExit, showView } from './dashboard_fixture.mjs';

test('dashboard draws live CPU data and updates it', async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });

  await page.goto(baseUrl + '/');
  await page.waitForFunction(() => window.perfscope && window.perfscope.state.connection === 'live', null,
                             { timeout: 15000 });
  // At least a few live points in the CPU chart, then pixels on its canvas.
  await page.waitForFunction(() => {
    const c = window.perfscope.charts.cpu;
    return c.plot && c.xs.length >= 5 && c.cols[0].some((v) => v !== null);
  }, null, { timeout: 15000 });
  assert.ok(await cpuLineDrawn(page), 'CPU chart canvas has the total line drawn wherever it has data');

  const firstValue = await page.textContent('[data-testid=cpu-total-value]');
  assert.match(firstValue, /^\d+(\.\d)?%$/);
  const firstPoints = await page.evaluate(() => window.perfscope.charts.cpu.xs.length);
  // New samples keep arriving: the "updated" time moves (the CPU figure itself may sit at
  // 100.0% on a machine busy compiling, so its text is not what to wait for).
  const firstUpdated = await page.textContent('[data-testid=updated]');
  await page.waitForFunction((v) => document.querySelector('[data-testid=updated]').textContent !== v,
                             firstUpdated, { timeout: 20000 });
  // And the chart grows with live passes (a text change alone may come from a pass the
  // history pre-fill already drew).
  await page.waitForFunction((n) => window.perfscope.charts.cpu.xs.length > n, firstPoints, { timeout: 20000 });
  assert.match(await page.textContent('[data-testid=memory-used-value]'), /iB$/);

  mkdirSync(artifacts, { recursive: true });
  await page.screenshot({ path: path.join(artifacts, 'dashboard.png'), fullPage: true });
  assert.deepEqual(errors, []);
  await page.close();
});

test('charts are pre-filled from the REST history even when the stream is down', async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  // Refuse the WebSocket: whatever the charts show must come from /api/v1/series/query.
  await page.routeWebSocket(/\/api\/v1\/stream/, (ws) => ws.close({ code: 1011, reason: 'blocked by test' }));
  await page.goto(baseUrl + '/');
  await page.waitForFunction(() => window.perfscope && window.perfscope.charts.cpu.xs.length >= 5, null,
                             { timeout: 15000 });
  assert.notEqual(await page.evaluate(() => window.perfscope.state.connection), 'live');
  assert.equal(await page.evaluate(() => window.perfscope.state.messages), 0, 'no stream message arrived');
  assert.ok(await cpuLineDrawn(page), 'history is drawn');
  await page.close();
});

test('the kernels table, memory timeline and inference panel fill while the demo runs', async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1400 } });
  await page.goto(baseUrl + '/?view=kernels');
  await page.waitForFunction(() => window.perfscope.state.connection === 'live', null, { timeout: 15000 });
  const demo = spawn(binary, ['demo', '--server', baseUrl, '--duration', '8', '--rate', '30'], { stdio: 'ignore' });
  const demoExit = new Promise((resolve) => demo.on('exit', (code) => resolve(code)));
  try {
    // Rows arrive through the stream's {"type":"events"} notifications, no reload.
    await page.waitForSelector('[data-testid=kernels-table] tr[data-kernel="matmul"]', { timeout: 20000 });
    await showView(page, 'serving');
    await page.waitForSelector('[data-testid=inference-table] tbody tr:not(.empty)', { timeout: 20000 });
    await showView(page, 'kernels');
    await page.waitForFunction(() => window.perfscope.charts.alloc.xs.length > 3, null, { timeout: 20000 });
    const variants = await page.textContent('[data-testid=kernels-table] tr[data-kernel="matmul"] td:last-child');
    assert.equal(variants, 'blocked, naive, vectorized');
    // Sorting by name puts decode_step first.
    await page.click('[data-testid=kernels-table] th[data-key=name]');
    const first = await page.getAttribute('[data-testid=kernels-table] tbody tr:first-child', 'data-kernel');
    assert.equal(first, 'decode_step');
    assert.ok(await page.evaluate(() => window.perfscope.state.eventRefreshes) >= 2);

    // Percentile panel: the first subject is picked and drawn; an SLA adds its line and figure.
    await page.waitForFunction(() => window.perfscope.state.percentiles && window.perfscope.state.percentiles.count > 0,
                               null, { timeout: 20000 });
    assert.match(await page.textContent('[data-testid=percentile-summary]'), /\d+ samples/);
    await page.fill('#pct-sla', '5');
    await page.dispatchEvent('#pct-sla', 'change');
    await page.waitForFunction(() => /SLA met by/.test(document.getElementById('pct-summary').textContent), null,
                               { timeout: 10000 });
    // The percentile line is blue (#5794f2), the SLA line red (#f2495c).
    assert.ok(await drawnPixels(page, '[data-testid=chart-percentiles]', [0x57, 0x94, 0xf2], 50) > 50, 'percentiles are drawn');
    assert.ok(await drawnPixels(page, '[data-testid=chart-percentiles]', [0xf2, 0x49, 0x5c], 20) > 20, 'the SLA line is drawn');
    // The distribution as a CDF: latency rises with the share of samples at or under it.
    const cdf = await page.evaluate(() => {
      const p = window.perfscope.state.percentiles.percentiles;
      return [p.p0, p.p50, p.p90, p.p100];
    });
    assert.ok(cdf.every((v, i) => v != null && (i === 0 || v >= cdf[i - 1])), JSON.stringify(cdf));
    mkdirSync(artifacts, { recursive: true });
    await page.locator('[data-testid=chart-percentiles]').screenshot({ path: path.join(artifacts, 'dashboard-percentiles.png') });

    // A/B: matmul's variants, compared on the server.
    await page.waitForSelector('[data-testid=ab-kernel] option[value="matmul"]', { state: 'attached', timeout: 20000 });
    await page.selectOption('[data-testid=ab-kernel]', 'matmul');
    await page.selectOption('[data-testid=ab-a]', 'naive');
    await page.selectOption('[data-testid=ab-b]', 'vectorized');
    await page.click('[data-testid=ab-run]');
    await page.waitForSelector('[data-testid=ab-verdict]', { timeout: 20000 });
    const ab = await page.evaluate(() => window.perfscope.state.abResult);
    assert.ok(ab.a.n > 0 && ab.b.n > 0, 'both variants have samples');
    assert.ok(['b_faster', 'a_faster', 'no_significant_difference', 'insufficient_samples'].includes(ab.verdict));
    assert.ok(ab.recommendation.length > 0);

    await showView(page, 'analysis');
    // Bottlenecks from the analysis document: the stand-in GPU 1 is held at its power cap; the
    // demo reports no launch calls, so the host-wait rule says what it lacks.
    await page.waitForSelector('[data-testid=bottlenecks] li[data-rule="power_capping"][data-status="fired"]',
                               { timeout: 20000 });
    // Rules the range cannot decide are one row, grouped by why, each rule named once.
    await page.waitForSelector('[data-testid=bottlenecks] [data-rule="host_bound_input_pipeline"][data-status="not_evaluated"]',
                               { timeout: 20000 });
    assert.match(await page.textContent('[data-testid=bottlenecks] [data-testid=not-evaluated]'),
                 /no kernel launch times[^:]*: [^\n]*Host \(CPU\) bound input pipeline/);
    assert.equal(await page.locator('[data-testid=bottlenecks] > li[data-status="not_evaluated"]').count(), 0,
                 'no row per rule that was not evaluated');
    // The demo's kernels run on a CPU producer: no GPU advice, and the long kernel is named.
    const advice = await page.textContent('[data-testid=bottlenecks]');
    assert.doesNotMatch(advice, /CUDA graph|across blocks/);
    if (await page.locator('[data-testid=bottlenecks] li[data-rule="long_kernel_execution"][data-status="fired"]').count()) {
      assert.match(await page.textContent('[data-testid=bottlenecks] li[data-rule="long_kernel_execution"] .subject'), /\S/);
    }
    // Evidence reads in words and units, never in exponent notation: seconds of power capping as
    // a duration, the server's name of the figure on hover.
    const capping = await page.textContent('[data-testid=bottlenecks] li[data-rule="power_capping"]');
    assert.match(capping, /clocks held back by the power cap for [\d.]+ (µs|ms|s)(?=[^a-z]|$)/);
    assert.equal(await page.locator('[data-testid=bottlenecks] li[data-rule="power_capping"] [title=gpu_power_cap_throttle_seconds]').count(), 1);
    assert.doesNotMatch(await page.textContent('[data-testid=bottlenecks]'), /\de[+-]\d/);
    mkdirSync(artifacts, { recursive: true });
    await page.screenshot({ path: path.join(artifacts, 'dashboard-demo.png'), fullPage: true });
  } finally {
    assert.equal(await demoExit, 0, 'the demo delivered every event');
  }
  await page.close();
});

test('the operators table lists op types with their percentiles and a model\'s CPU fallback', async () => {
  const now = Date.now() * 1e6;
  const events = [];
  for (let i = 0; i < 10; i++) {
    events.push({ type: 'operator', op_type: 'Conv', name: `conv${i % 2}`, provider: 'CUDAExecutionProvider',
                  duration_ms: i + 1, model: 'resnet', input_shapes: [[1, 3, 224, 224]], ts_ns: now - (10 - i) * 1e6 });
  }
  events.push({ type: 'operator', op_type: 'NonZero', name: 'nz', provider: 'CPUExecutionProvider', duration_ms: 55,
                model: 'resnet', ts_ns: now });
  await postEvents(baseUrl, events);
  const page = await browser.newPage({ viewport: { width: 1280, height: 1400 } });
  await page.goto(baseUrl + '/?view=operators');
  await page.waitForSelector('[data-testid=operators-table] tr[data-op="Conv"]', { timeout: 20000 });
  const cells = await page.$$eval('[data-testid=operators-table] tr[data-op="Conv"] td', (tds) => tds.map((td) => td.textContent));
  // 1..10 ms: count 10, total 55, nearest-rank p50 5 and p90 9; half the model's operator time.
  assert.equal(cells[0], 'resnet');
  assert.equal(cells[2], '10');
  assert.match(cells[3], /^55(\.0+)?/);
  assert.match(cells[5], /^5(\.0+)?/);
  assert.match(cells[6], /^9(\.0+)?/);
  assert.equal(cells[8], '50.0%');
  assert.equal(cells[9], 'CUDAExecutionProvider');
  assert.equal(await page.textContent('[data-testid=operators-summary]'), 'resnet: 50.0% of operator time on CPU');
  await page.close();
});

test('a series keeps its colour whatever order its samples arrive in', async () => {
  const page = await browser.newPage();
  await page.goto(baseUrl + '/');
  const colours = await page.evaluate(async () => {
    const { LiveChart, PALETTE } = await import('/lib/live_chart.js');
    const make = (order) => {
      const el = document.createElement('div');
      document.body.appendChild(el);
      const chart = new LiveChart(el, { families: ['m'], seriesFor: (key) => ({ label: key, fmt: String }), scales: {}, axes: [] });
      for (const k of order) chart.ensureSeries(k, 'm', {});
      return Object.fromEntries(order.map((k) => [k, chart.colorOf(k)]));
    };
    return { a: make(['m{cpu="total"}', 'm{cpu="0"}', 'm{cpu="1"}']), b: make(['m{cpu="1"}', 'm{cpu="total"}', 'm{cpu="0"}']),
             palette: PALETTE };
  });
  assert.deepEqual(colours.a, colours.b);
  assert.equal(new Set(Object.values(colours.a)).size, 3, 'three series, three colours');
  await page.close();
});

test('one cursor moves over every live chart', async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1400 } });
  await page.goto(baseUrl + '/');
  await page.waitForFunction(() => window.perfscope.charts.cpu.plot && window.perfscope.charts.mem.plot &&
                             window.perfscope.charts.cpu.xs.length >= 3, null, { timeout: 20000 });
  // Hover the middle of the CPU chart: the memory chart's cursor goes to the same time.
  const over = await page.locator('#chart-cpu .u-over').boundingBox();
  await page.mouse.move(over.x + over.width / 2, over.y + over.height / 2);
  await page.waitForFunction(() => window.perfscope.charts.mem.plot.cursor.idx != null, null, { timeout: 5000 });
  const [cpu, mem] = await page.evaluate(() => [window.perfscope.charts.cpu.plot, window.perfscope.charts.mem.plot]
    .map((u) => u.posToVal(u.cursor.left, 'x')));
  assert.ok(Math.abs(cpu - mem) < 1, `the same time on both: ${cpu} vs ${mem}`);
  await page.close();
});

test('one time range for every chart: picked, zoomed by a drag, kept in the URL and restored', async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1400 } });
  const queries = [];
  page.on('request', (r) => { if (r.url().includes('/api/v1/series/query')) queries.push(decodeURIComponent(r.url())); });
  await page.goto(baseUrl + '/?view=host&range=15m');
  await page.waitForFunction(() => window.perfscope.charts.cpu.plot && window.perfscope.charts.cpu.xs.length >= 3, null,
                             { timeout: 20000 });
  assert.equal(await page.evaluate(() => window.perfscope.range.seconds), 900);
  assert.equal(await page.inputValue('[data-testid=range-pick]'), '15m');
  assert.ok(queries.some((q) => q.includes('from=now-900s')), 'history asked for the last 15 minutes');
  // Another preset: the URL says so, the history is asked again.
  queries.length = 0;
  await page.selectOption('[data-testid=range-pick]', '1h');
  await page.waitForFunction(() => window.location.search.includes('range=1h'));
  await page.waitForFunction(() => window.perfscope.charts.cpu.xs.length >= 3, null, { timeout: 10000 });
  assert.ok(queries.some((q) => q.includes('from=now-3600s')), 'history asked for the last hour');
  // Drag across the CPU chart: every chart shows that span, the range stops following the stream.
  const prefills = await page.evaluate(() => window.perfscope.state.prefills || 0);
  const over = await page.locator('#chart-cpu .u-over').boundingBox();
  await page.mouse.move(over.x + over.width * 0.5, over.y + over.height / 2);
  await page.mouse.down();
  await page.mouse.move(over.x + over.width * 0.9, over.y + over.height / 2, { steps: 5 });
  await page.mouse.up();
  await page.waitForFunction(() => !window.perfscope.range.live, null, { timeout: 5000 });
  // The span's history has arrived (the refill after the change).
  await page.waitForFunction((n) => (window.perfscope.state.prefills || 0) > n, prefills, { timeout: 10000 });
  await page.waitForFunction(() => window.perfscope.charts.mem.plot && window.perfscope.charts.mem.plot.scales.x.min != null);
  // Every chart takes the span (on the animation frame after the change; later on a busy machine).
  await page.waitForFunction(() => {
    const { range, charts } = window.perfscope;
    return ['cpu', 'mem', 'load', 'proc'].every((k) => Math.abs(charts[k].plot.scales.x.min - range.fixed.from) < 1e-3 &&
                                                        Math.abs(charts[k].plot.scales.x.max - range.fixed.to) < 1e-3);
  }, null, { timeout: 10000 }).catch(() => {});  // the assertion below says which chart did not
  const picked = await page.evaluate(() => {
    const { range, charts } = window.perfscope;
    return { from: range.fixed.from, to: range.fixed.to, search: window.location.search,
             scales: ['cpu', 'mem', 'load', 'proc'].map((k) => [charts[k].plot.scales.x.min, charts[k].plot.scales.x.max]) };
  });
  assert.ok(picked.to > picked.from, JSON.stringify(picked));
  for (const [min, max] of picked.scales) {
    assert.ok(Math.abs(min - picked.from) < 1e-3 && Math.abs(max - picked.to) < 1e-3, `every chart on the span: ${JSON.stringify(picked)}`);
  }
  assert.match(picked.search, /from=\d+&to=\d+/);
  assert.equal(await page.isVisible('[data-testid=range-live]'), true);
  // A fixed span ignores the stream: no point past its end appears, however long the stream
  // goes on (a history fill still landing may add points inside the span; none lie past it).
  const newestAfter = async () => {
    await page.waitForFunction((n) => window.perfscope.state.messages > n + 2,
                               await page.evaluate(() => window.perfscope.state.messages || 0), { timeout: 10000 })
      .catch(() => {});
    return page.evaluate(() => Math.max(...window.perfscope.charts.cpu.xs));
  };
  assert.ok(await newestAfter() <= picked.to + 1e-3, 'no streamed point past the span');
  // The link restores the span in a new page.
  const link = page.url();
  const again = await browser.newPage({ viewport: { width: 1280, height: 1400 } });
  await again.goto(link);
  await again.waitForFunction(() => window.perfscope.charts.cpu.plot && window.perfscope.charts.cpu.plot.scales.x.min != null,
                              null, { timeout: 20000 });
  const restored = await again.evaluate(() => [window.perfscope.range.live, window.perfscope.charts.cpu.plot.scales.x.min,
                                               window.perfscope.charts.cpu.plot.scales.x.max]);
  assert.equal(restored[0], false);
  assert.ok(Math.abs(restored[1] - picked.from) < 0.01 && Math.abs(restored[2] - picked.to) < 0.01, JSON.stringify(restored));
  await again.close();
  // Back to live: the preset returns, and the stream moves the charts again.
  await page.click('[data-testid=range-live]');
  await page.waitForFunction(() => window.perfscope.range.live && window.location.search.includes('range=1h'));
  const xs = await page.evaluate(() => window.perfscope.charts.cpu.xs.length);
  await page.waitForFunction((n) => window.perfscope.charts.cpu.xs.length > n, xs, { timeout: 10000 });
  await page.close();
});

test('views in the header show their panels, and the URL keeps the view with the range', async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  await page.goto(baseUrl + '/?view=gpu&range=1h');
  await page.waitForSelector('[data-testid=gpus]', { state: 'visible', timeout: 20000 });
  assert.equal(await page.isVisible('[data-testid=kernels-table]'), false);
  assert.equal(await page.isVisible('[data-testid=chart-cpu]'), false);
  assert.equal(await page.isVisible('[data-testid=targets-table]'), true);  // a panel of several views
  assert.match(await page.textContent('[data-testid=views] a.current'), /GPU/);
  await page.click('[data-testid=views] a[data-view-link=kernels]');
  await page.waitForSelector('[data-testid=kernels-table]', { state: 'visible' });
  assert.equal(await page.isVisible('[data-testid=gpus]'), false);
  const search = await page.evaluate(() => window.location.search);
  assert.match(search, /view=kernels/);
  assert.match(search, /range=1h/);  // the range stays in the URL beside the view
  await page.reload();
  await page.waitForSelector('[data-testid=kernels-table]', { state: 'visible', timeout: 20000 });
  assert.equal(await page.isVisible('[data-testid=gpus]'), false);
  assert.equal(await page.evaluate(() => window.perfscope.range.preset), '1h');
  // Host: its charts at their full width once shown.
  await page.click('[data-testid=views] a[data-view-link=host]');
  await page.waitForFunction(() => {
    const c = window.perfscope.charts.cpu;
    return c.plot && Math.abs(c.plot.width - Math.max(300, c.el.clientWidth)) < 2;
  }, null, { timeout: 10000 });
  assert.equal(await page.isVisible('[data-testid=chart-cpu]'), true);
  await page.click('[data-testid=views] a[data-view-link=overview]');
  assert.doesNotMatch(await page.evaluate(() => window.location.search), /view=/);
  await page.close();
});

test('the overview fits a phone 390 px wide: no sideways scrolling, charts drawn within the screen', async () => {
  const page = await browser.newPage({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(baseUrl + '/?view=overview');
  await page.waitForFunction(() => {
    const c = window.perfscope.charts.cpu;
    return c.plot && c.xs.length >= 5 && c.cols[0].some((v) => v !== null);
  }, null, { timeout: 15000 });
  assert.ok(await cpuLineDrawn(page), 'the CPU chart is drawn');
  // The device's width, not innerWidth: a mobile layout viewport widens to content that overflows.
  const layout = await page.evaluate(() => ({
    width: 390,
    scroll: document.documentElement.scrollWidth,
    canvases: [...document.querySelectorAll('canvas')].filter((c) => c.offsetParent !== null)
      .map((c) => c.getBoundingClientRect().right),
    views: document.querySelector('[data-testid=views]').getBoundingClientRect().right,
  }));
  assert.ok(layout.scroll <= layout.width, `the page is ${layout.scroll} px wide on a ${layout.width} px screen`);
  assert.ok(layout.canvases.length > 0);
  for (const right of layout.canvases) assert.ok(right <= layout.width + 0.5, `a chart ends at ${right} px`);
  assert.ok(layout.views <= layout.width + 0.5);
  await page.screenshot({ path: path.join(artifacts, 'dashboard-phone.png'), fullPage: true });
  assert.deepEqual(errors, []);
  await page.close();
});
