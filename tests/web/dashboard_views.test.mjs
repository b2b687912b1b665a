// Browser tests of the dashboard, the views in detail: a kernel's launches, achieved rates and
// roofline, energy, runs compared, the GPU view, anomalies on their series, a model's TTFT
// percentiles against its SLO, and every view saved as a screenshot. The range and the themes:
// dashboard_scope.test.mjs; multi-GPU jobs: dashboard_collectives.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startPerfscope, postEvents } from '../support/perfscope_server.mjs';
import { textProblems } from './text_boxes.mjs';
import { artifacts, baseUrl, binary, browser, drawnPixels, server } from './dashboard_fixture.mjs';

const fixtures = path.join(path.dirname(new URL(import.meta.url).pathname), '..', 'fixtures');

test('a kernel row opens the kernel: launch configurations, newest executions, kept in the URL', async () => {
  // Three executions of 2, 4 and 6 ms with one launch configuration, on stream 9.
  const now = Date.now() * 1e6;
  await postEvents(baseUrl, [2, 4, 6].map((d, i) => ({ type: 'kernel', name: 'detail_kernel', stream: '9',
    start_ns: now - (100 - i * 20) * 1e6, end_ns: now - (100 - i * 20 - d) * 1e6, grid: [64, 1, 1], block: [256, 1, 1],
    registers_per_thread: 32, launch_start_ns: now - (101 - i * 20) * 1e6, launch_end_ns: now - (100.5 - i * 20) * 1e6 })));
  const page = await browser.newPage({ viewport: { width: 1280, height: 1400 } });
  await page.goto(baseUrl + '/?view=kernels');
  const row = '[data-testid=kernels-table] tr[data-kernel="detail_kernel"]';
  await page.waitForSelector(row, { timeout: 20000 });
  await page.click(row);
  await page.waitForSelector('[data-testid=kernel-detail]', { state: 'visible' });
  assert.equal(await page.textContent('#kd-name'), 'detail_kernel');
  assert.match(await page.textContent('[data-testid=kernel-detail-summary]'), /^3 executions · total 12\.0 ms · avg 4\.00 ms \(min 2\.00, max 6\.00\)/);
  assert.match(await page.textContent('[data-testid=kernel-detail-configs] tbody'), /64×1×1\s*256×1×1\s*–\s*32\s*3/);
  await page.waitForFunction(() => document.querySelectorAll('#kd-records tbody tr').length === 3);
  const first = await page.textContent('#kd-records tbody tr:first-child');
  assert.match(first, /6\.00 ms/);  // newest first
  assert.match(first, /0 · 9/);
  assert.match(first, /0\.500 ms/);  // launch delay: start − launch call end
  assert.equal(await page.inputValue('[data-testid=percentile-subject]'), 'kernel:detail_kernel');
  // Its durations over the time range: the slices holding them, the p50 line drawn.
  await page.waitForFunction(() => window.perfscope.state.kernelDetail.loads > 0, null, { timeout: 15000 });
  const slices = await page.evaluate(() => window.perfscope.state.kernelDetail.slices.filter((x) => x.count > 0));
  assert.equal(slices.reduce((n, x) => n + x.count, 0), 3);
  assert.ok(await drawnPixels(page, '[data-testid=kernel-detail-chart]', undefined, 0) > 0, 'the p50 line is drawn');
  assert.match(await page.evaluate(() => window.location.search), /kernel=detail_kernel/);
  await page.reload();
  await page.waitForSelector('[data-testid=kernel-detail]', { state: 'visible', timeout: 20000 });
  assert.equal(await page.textContent('#kd-name'), 'detail_kernel');
  await page.click('[data-testid=kernel-detail-close]');
  assert.equal(await page.isVisible('[data-testid=kernel-detail]'), false);
  assert.doesNotMatch(await page.evaluate(() => window.location.search), /kernel=/);
  await page.close();
});

test('the overview opens with key figures that link to their views: GPU busy, power, memory headroom, top kernel, serving p99', async () => {
  const now = Date.now() * 1e6;
  await postEvents(baseUrl, [{ type: 'kernel', name: 'summary_top_kernel', device: 'summary-dev', start_ns: now - 900e6, end_ns: now - 100e6 }]);
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  await page.goto(baseUrl + '/');
  const text = (id) => page.textContent(`[data-testid=${id}]`);
  await page.waitForFunction(() => document.querySelector('[data-testid=summary-gpu-power]').textContent !== '–', null, { timeout: 15000 });
  // The stand-in GPUs: 87 % and 12 % busy, 512 W and 700 W, 40 GB and 1 GB used of 85.5 GB.
  assert.equal(await text('summary-gpu-busy'), '49.5%');
  assert.equal(await text('summary-gpu-power'), '1212.0 W');
  assert.equal(await text('summary-gpu-free'), '42.4 GiB');
  await page.waitForFunction(() => /summary_top_kernel/.test(document.querySelector('[data-testid=summary-top-kernel]').textContent),
    null, { timeout: 20000 });
  assert.equal(await text('summary-top-kernel'), 'summary_top_kernel');
  assert.equal(await page.textContent('a.stat:has([data-testid=summary-top-kernel]) .label'),
               'Top kernel (range) · 100.0% of its device');  // alone on its device
  assert.equal(await page.getAttribute('a.stat:has([data-testid=summary-top-kernel])', 'href'), '?view=kernels');
  // Only on the overview.
  await page.click('[data-testid=views] [data-view-link=host]');
  assert.equal(await page.isVisible('[data-testid=summary]'), false);
  await page.close();
});

test('a C++ kernel is listed by its short name, its whole signature on hover and in its drill-down', async () => {
  const signature = 'void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, ' +
    'at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)';
  const now = Date.now() * 1e6;
  await postEvents(baseUrl, [{ type: 'kernel', name: signature, stream: '3', start_ns: now - 50e6, end_ns: now - 49e6 }]);
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  await page.goto(baseUrl + '/?view=kernels');
  const row = `[data-testid=kernels-table] tr[data-kernel="${signature}"]`;
  await page.waitForSelector(row, { timeout: 20000 });
  assert.equal(await page.textContent(`${row} .kname`), 'at::native::vectorized_elementwise_kernel');
  assert.equal(await page.getAttribute(`${row} .kname`, 'title'), signature);
  // One line, not the ten a wrapped signature took.
  const height = await page.evaluate((sel) => document.querySelector(sel).getBoundingClientRect().height, row);
  assert.ok(height < 40, `the row is ${height} px high`);
  await page.click(row);
  await page.waitForSelector('[data-testid=kernel-detail]', { state: 'visible' });
  assert.equal(await page.textContent('#kd-name'), 'at::native::vectorized_elementwise_kernel');
  assert.equal(await page.textContent('[data-testid=kernel-detail-signature]'), signature);
  assert.ok(await page.isVisible('[data-testid=kernel-detail-signature]'));
  await page.close();
});

test('without NVML the GPU view says why and how to enable it', async () => {
  const bare = await startPerfscope({ args: ['--nvml-library', '/nonexistent/libnvidia-ml.so.1', '--enable-host-collector', 'false'],
                                      label: 'no-nvml' });
  const page = await browser.newPage();
  try {
    await page.goto(bare.url + '/');
    await page.waitForSelector('[data-testid=gpu-absent]', { state: 'visible', timeout: 20000 });
    const text = await page.textContent('[data-testid=gpu-absent]');
    assert.match(text, /nonexistent/);  // NVML's own reason: the library it could not load
    assert.match(text, /--nvml-library PATH/);
    assert.equal(await page.isVisible('[data-testid=gpus]'), false);
  } finally {
    await page.close();
    await bare.stop();
  }
});

test('a kernel reporting its work shows its achieved TFLOP/s, GB/s and roofline; GPU 0 its targets', async () => {
  // Two bf16 executions of 2e12 FLOPs and 1e10 bytes, 10 ms each, on GPU 0: 200 TFLOP/s, 1000
  // GB/s, 200 FLOP/B — under the H100's ridge (989.4 TFLOP/s ÷ 3.35 TB/s = 295 FLOP/B), so
  // memory-bound with 200 × 3.352 TB/s = 670 TFLOP/s attainable: 30 % of it.
  const now = Date.now() * 1e6;
  await postEvents(baseUrl, [0, 1].map((i) => ({ type: 'kernel', name: 'worked_gemm', start_ns: now - (30 - i * 10) * 1e6,
    end_ns: now - (20 - i * 10) * 1e6, flops: 2e12, bytes: 1e10, dtype: 'bf16', device: '0' })));
  const page = await browser.newPage({ viewport: { width: 1280, height: 1400 } });
  await page.goto(baseUrl + '/?view=kernels');
  const row = '[data-testid=kernels-table] tr[data-kernel="worked_gemm"]';
  await page.waitForSelector(row, { timeout: 20000 });
  assert.equal((await page.textContent(`${row} td[data-col=tflops]`)).trim(), '200');
  assert.equal((await page.textContent(`${row} td[data-col=gbps]`)).trim(), '1.00 k');
  assert.equal((await page.textContent(`${row} td[data-col=roofline]`)).trim(), 'memory · 30%');
  // Its device, and its share of that device's kernel time (not of every producer's).
  assert.equal((await page.textContent(`${row} td[data-col=devices]`)).trim(), '0');
  const listed = (await (await fetch(baseUrl + '/api/v1/kernels?from=now-300s')).json()).kernels;
  const onZero = listed.filter((k) => k.devices.length === 1 && k.devices[0] === '0').reduce((n, k) => n + k.total_ms, 0);
  const mine = listed.find((k) => k.name === 'worked_gemm');
  assert.equal((await page.textContent(`${row} td[data-col=share]`)).trim(), `${(mine.total_ms / onZero * 100).toFixed(1)}%`);
  assert.match(await page.getAttribute(`${row} td[data-col=roofline]`, 'title'), /H100 SXM\), bf16: 200 FLOP\/B, ridge 295/);
  // --device-target 0,min_tflops=500,target_tflops=800,memory_budget=30GB: 200 TFLOP/s is under
  // 0.8 × 500, and 40 GB used is over 30 GB.
  const tflops = '[data-testid=targets-table] tr[data-gpu="0"][data-figure=tflops]';
  await page.waitForSelector(`${tflops}[data-status=below_minimum]`, { timeout: 20000 });
  assert.match(await page.textContent(tflops), /200 TFLOP\/s kernels.*min 500 TFLOP\/s · target 800 TFLOP\/s.*25% of target/);
  assert.equal(await page.getAttribute('[data-testid=targets-table] tr[data-gpu="0"][data-figure=memory_bytes]', 'data-status'),
               'over_budget');
  assert.match(await page.textContent('[data-testid=targets-recommendations]'), /GPU 0: Achieved 200 TFLOP\/s is below 400 TFLOP\/s/);
  await page.screenshot({ path: path.join(artifacts, 'dashboard-targets.png'), fullPage: true });
  await page.close();
});

test('the energy panel gives joules per inference from the GPU energy counter', async () => {
  // A GPU counter rising 300 J over the last 20 s and one model's 30 requests in that time.
  const now = Date.now() * 1e6;
  const events = [];
  for (let i = 0; i < 3; i++) {
    const at = now - (20 - 10 * i) * 1e9;
    events.push({ type: 'sample', metric: 'gpu_energy_joules_total', labels: { gpu: '7', uuid: 'GPU-energy' },
                  value: 5000 + 150 * i, ts_ns: at });
    events.push({ type: 'sample', metric: 'gpu_power_watts', labels: { gpu: '7', uuid: 'GPU-energy' }, value: 15, ts_ns: at });
  }
  for (let i = 0; i < 30; i++) {
    events.push({ type: 'inference', model: 'energy-model', latency_ms: 40, compute_ms: 30, ts_ns: now - (19 - i * 0.5) * 1e9 });
  }
  await postEvents(baseUrl, events);
  const page = await browser.newPage({ viewport: { width: 1280, height: 1400 } });
  await page.goto(baseUrl + '/?view=energy');
  await page.waitForSelector('[data-testid=energy-table] tr[data-model="energy-model"]', { timeout: 30000 });
  const cells = await page.$$eval('[data-testid=energy-table] tr[data-model="energy-model"] td', (tds) => tds.map((td) => td.textContent));
  // Other tests' models may share the window: this one's share is its compute time's.
  const a = await page.evaluate(() => window.perfscope.state.analysis.energy);
  const row = a.models.find((m) => m.model === 'energy-model');
  assert.equal(a.gpus.find((g) => g.uuid === 'GPU-energy').joules, 300);
  assert.ok(Math.abs(row.joules / row.share - a.total_joules) < 1e-6, JSON.stringify(a));
  assert.equal(cells[1], Number(row.joules).toPrecision(4));
  assert.equal(cells[2], Number(row.joules / 30).toPrecision(3));
  // The request ending at now − 10 s was in flight when the middle reading was taken.
  assert.match(await page.textContent('[data-testid=energy-gpus]'),
               /GPU 7: 300\.0 J, 15\.0 W average, 15\.0 W peak; during requests 15\.0 W average, 15\.0 W peak/);
  // Unknown is not zero: the stand-in GPU 0 draws 512 W while its energy counter stands still.
  const still = a.gpus.find((g) => g.uuid === 'GPU-aaaa');
  assert.equal(still.joules, null, JSON.stringify(still));
  assert.match(still.unknown.joules, /did not advance in the window while the board drew power/);
  assert.match(await page.textContent('[data-testid=energy-gpus]'), /GPU 0: energy unknown, 512 W average/);
  await page.close();
});

test('runs are listed and two of them compare kernel by kernel', async () => {
  // Two runs of one program as a producer reports them: the run, then its kernels tagged with
  // it; in the second, `attention` takes 1.6 times as long.
  const t0 = Date.now() * 1e6;
  for (const [n, name, slow] of [[0, 'baseline', 1], [1, 'fused', 1.6]]) {
    const start = t0 + n * 2e9;
    const events = [{ type: 'run', name, command: ['python', 'gen.py'], start_ns: start, end_ns: start + 1e9, exit_status: 0 }];
    for (let i = 0; i < 60; i++) {
      const at = start + 1e6 + i * 1e7;
      for (const [k, us] of [['gemm', 200], ['attention', 50 * slow]]) {
        events.push({ type: 'kernel', name: k, start_ns: at, end_ns: at + Math.round((us + (i % 7)) * 1e3),
                      tags: { run: name } });
      }
    }
    await postEvents(baseUrl, events);
  }
  // A duty-cycled run: windows of 100 ms every 400 ms, marked as the traced process marks them,
  // 10 kernels in each: 300 ms of its 1 s traced, 30 kernels seen of an estimated 100.
  const start = t0 - 2e9;
  const sampled = [{ type: 'run', name: 'sampled', start_ns: start, end_ns: start + 1e9, exit_status: 0,
                     trace_window_ns: 1e8, trace_every_ns: 4e8 }];
  for (const w of [0, 4e8, 8e8]) {
    sampled.push({ type: 'sample', metric: 'trace_window_seconds', labels: { run: 'sampled', pid: '7' }, ts_ns: start + w, value: 0.1 });
    for (let i = 0; i < 10; i++) {
      const at = start + w + i * 5e6;
      sampled.push({ type: 'kernel', name: 'gemm', start_ns: at, end_ns: at + 2e5, tags: { run: 'sampled' } });
    }
  }
  await postEvents(baseUrl, sampled);
  const page = await browser.newPage({ viewport: { width: 1280, height: 1600 } });
  await page.goto(baseUrl + '/?view=runs');
  await page.waitForSelector('[data-testid=runs-table] tr[data-run="fused"]', { timeout: 20000 });
  await page.waitForSelector('[data-testid=runs-table] tr[data-run="sampled"] [data-testid=run-sampled]', { timeout: 20000 });
  assert.match(await page.textContent('[data-testid=runs-table] tr[data-run="sampled"]'), /30 \(≈100, sampled 30\.0%\)/);
  assert.match(await page.textContent('[data-testid=runs-table] tr[data-run="baseline"]'), /finished/);
  await page.selectOption('[data-testid=runs-a]', 'baseline');
  await page.selectOption('[data-testid=runs-b]', 'fused');
  // A comparison that takes time says so while it runs: held back a second here, the button
  // is disabled and the result area counts the seconds.
  await page.route('**/api/v1/runs/compare?*', async (route) => {
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await route.continue();
  });
  await page.click('[data-testid=runs-compare]');
  await page.waitForFunction(() => /Comparing baseline and fused… \d+\.\d s/.test(document.getElementById('runs-result').textContent),
                             null, { timeout: 5000 });
  assert.equal(await page.isDisabled('[data-testid=runs-compare]'), true);
  await page.waitForSelector('[data-testid=runs-verdict]', { timeout: 20000 });
  assert.equal(await page.isDisabled('[data-testid=runs-compare]'), false);
  await page.unroute('**/api/v1/runs/compare?*');
  assert.equal(await page.textContent('[data-testid=runs-verdict]'), 'slower');
  const first = await page.getAttribute('[data-testid=runs-kernels] tbody tr:first-child', 'data-kernel');
  assert.equal(first, 'attention', 'the kernel that moved comes first');
  assert.equal(await page.getAttribute('[data-testid=runs-kernels] tbody tr:first-child', 'data-verdict'), 'slower');
  const c = await page.evaluate(() => window.perfscope.state.runCompare);
  assert.ok(c.kernels[0].p_adjusted < 0.001);
  assert.equal(c.kernels.find((k) => k.name === 'gemm').verdict, 'unchanged');
  mkdirSync(artifacts, { recursive: true });
  await page.locator('[data-testid=runs-table]').screenshot({ path: path.join(artifacts, 'dashboard-runs.png') });

  // A run's page: at the top of the view, in the URL, replaced by the next run's, closed by Back.
  await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
  await page.click('[data-testid=runs-table] tr[data-run="fused"]');
  await page.waitForFunction(() => window.perfscope.state.runPage.run?.name === 'fused', null, { timeout: 10000 });
  assert.equal(new URL(page.url()).searchParams.get('run_page'), 'fused');
  const box = await page.locator('[data-testid=run-page]').boundingBox();
  assert.ok(box.y >= -1 && box.y < 200, `the run's page is at the top of the window (y ${box.y})`);
  const facts = await page.textContent('[data-testid=run-page-facts]');
  assert.match(facts, /finished/);
  assert.match(facts, /120 executions of 2 kernels/);
  assert.match(facts, /python gen\.py/);
  await page.screenshot({ path: path.join(artifacts, 'run-page.png') });
  await page.click('[data-testid=runs-table] tr[data-run="sampled"]');
  await page.waitForFunction(() => window.perfscope.state.runPage.run?.name === 'sampled', null, { timeout: 10000 });
  assert.match(await page.textContent('[data-testid=run-page-summary]'), /Traced in windows: 30\.0% of its time/);
  assert.doesNotMatch(await page.textContent('[data-testid=run-page-facts]'), /120 executions/, 'nothing of the last run stays');
  await page.goBack();
  await page.waitForFunction(() => window.perfscope.state.runPage.name === 'fused', null, { timeout: 10000 });
  // From the page: the run against the one before it, then its timeline.
  await page.click('[data-testid=run-page-compare]');
  await page.waitForFunction(() => window.perfscope.state.runCompare?.b.name === 'fused' &&
                             window.perfscope.state.runCompare?.a.name === 'baseline', null, { timeout: 20000 });
  await page.click('[data-testid=run-page-timeline]');
  await page.waitForFunction(() => new URLSearchParams(location.search).get('view') === 'timeline' &&
                             new URLSearchParams(location.search).get('tl_run') === 'fused', null, { timeout: 10000 });
  // Back: the run's page again (the timeline was a new entry after it, so 'sampled' is no longer
  // forward of it), then the list without a page.
  await page.goBack();
  await page.waitForFunction(() => document.body.dataset.currentView === 'runs' &&
                             window.perfscope.state.runPage.name === 'fused', null, { timeout: 10000 });
  await page.goBack();
  await page.waitForFunction(() => window.perfscope.state.runPage.name === null, null, { timeout: 10000 });
  assert.equal(await page.isHidden('[data-testid=run-page]'), true);
  await page.close();
});

test('a GPU process opens its page at the top of the Processes view, replacing the last one, kept in the URL', async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.goto(baseUrl + '/?view=gpu');
  await page.waitForSelector('[data-testid=processes-table] tr[data-key]', { timeout: 20000 });
  // The stand-in's two processes (by pid: the table may list an earlier sighting of one as past).
  await page.waitForFunction(() => [4242, 4343].every((pid) => window.perfscope.state.processes.some((p) => p.pid === pid && p.state === 'running')),
                             null, { timeout: 20000 });
  const keys = await page.evaluate(() => [4242, 4343].map((pid) => window.perfscope.state.processes.find((p) => p.pid === pid && p.state === 'running').key));
  await page.click(`[data-testid=processes-table] tr[data-key="${keys[0]}"]`);
  await page.waitForFunction((k) => window.perfscope.state.processPage.key === k && window.perfscope.state.process?.key === k,
                             keys[0], { timeout: 10000 });
  const url = new URL(page.url()).searchParams;
  assert.equal(url.get('view'), 'processes', 'a process opened from the GPU view moves to Processes');
  assert.equal(url.get('process'), keys[0]);
  const box = await page.locator('[data-testid=process-page]').boundingBox();
  assert.ok(box.y >= -1 && box.y < 200, `the process's page is at the top of the window (y ${box.y})`);
  const first = await page.evaluate(() => window.perfscope.state.process);
  assert.equal(first.pid, 4242, 'the table lists the most memory first');
  assert.match(await page.textContent('[data-testid=process-detail]'), /peak 2\.00 GiB/);
  await page.waitForFunction(() => document.querySelector('[data-testid=process-chart] canvas'), null, { timeout: 10000 });
  mkdirSync(artifacts, { recursive: true });
  await page.screenshot({ path: path.join(artifacts, 'process-page.png') });
  assert.match(await page.textContent('[data-testid=process-page-name]'), new RegExp(`pid ${first.pid}`));
  await page.click(`[data-testid=processes-table] tr[data-key="${keys[1]}"]`);
  await page.waitForFunction((k) => window.perfscope.state.process?.key === k, keys[1], { timeout: 10000 });
  const second = await page.evaluate(() => window.perfscope.state.process);
  assert.notEqual(second.pid, first.pid);
  assert.match(await page.textContent('[data-testid=process-page-name]'), new RegExp(`pid ${second.pid}`));
  assert.doesNotMatch(await page.textContent('[data-testid=process-page-name]'), new RegExp(`pid ${first.pid}\\b`));
  await page.goBack();
  await page.waitForFunction((k) => window.perfscope.state.processPage.key === k, keys[0], { timeout: 10000 });
  await page.click('[data-testid=process-page-close]');
  await page.waitForFunction(() => window.perfscope.state.processPage.key === null, null, { timeout: 10000 });
  assert.equal(new URL(page.url()).searchParams.get('process'), null);
  await page.close();
});

test('the GPU view lists every GPU, shows throttling and follows the picked GPU', async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1200 } });
  await page.goto(baseUrl + '/?view=gpu');
  await page.waitForSelector('[data-testid=gpus]:not([hidden])', { timeout: 15000 });
  assert.equal(await page.locator('[data-testid=gpu-pick] option').count(), 2);
  await page.waitForFunction(() => document.querySelectorAll('[data-testid=gpu-overview] tbody tr').length === 2, null,
                             { timeout: 15000 });
  await page.waitForFunction(() => /87\.0%/.test(document.querySelector('[data-testid=gpu-overview] tr[data-gpu="0"]').textContent),
                             null, { timeout: 15000 });
  assert.match(await page.textContent('[data-testid=gpu-overview] tr[data-gpu="1"]'), /sw_power_cap/);
  // An H100 by its NVML name: its datasheet peak beside its identity.
  assert.match(await page.textContent('#gpu-identity'), /H100 SXM: 989\.4 TFLOP\/s BF16 dense/);
  assert.equal(await page.isVisible('[data-testid=gpu-absent]'), false);
  // GPU 0's charts: its utilization, not GPU 1's.
  await page.waitForFunction(() => window.perfscope.charts.gpuUtil.xs.length >= 5, null, { timeout: 15000 });
  const keys = await page.evaluate(() => window.perfscope.charts.gpuUtil.keys);
  assert.ok(keys.includes('gpu_utilization_ratio{gpu="0",uuid="GPU-aaaa"}'), keys.join(' '));
  assert.ok(!keys.some((k) => k.includes('GPU-bbbb')));
  assert.ok(keys.some((k) => k.startsWith('gpu_dram_bandwidth_utilization_ratio')), 'GPM bandwidth is charted');
  assert.ok(await drawnPixels(page, '[data-testid=chart-gpu-util]', undefined, 50) > 50, 'the busy line is drawn');
  // Pick GPU 1: the charts start over with its series, and the strip shows its power cap.
  await page.selectOption('[data-testid=gpu-pick]', '1');
  await page.waitForFunction(() => window.perfscope.charts.gpuUtil.keys.some((k) => k.includes('GPU-bbbb')), null,
                             { timeout: 15000 });
  await page.waitForSelector('[data-testid=gpu-throttle] span.on[data-reason="sw_power_cap"]', { timeout: 15000 });
  mkdirSync(artifacts, { recursive: true });
  await page.screenshot({ path: path.join(artifacts, 'dashboard-gpus.png'), fullPage: true });
  await page.close();
});

test('an anomaly alert on the stream marks the chart of its series', async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  // The real stream, plus one alert message as the server sends them.
  await page.routeWebSocket(/\/api\/v1\/stream/, (ws) => {
    const upstream = ws.connectToServer();
    ws.onMessage((m) => upstream.send(m));
    upstream.onMessage((m) => ws.send(m));
    setTimeout(() => ws.send(JSON.stringify({ type: 'alert', kind: 'anomaly', ts_ns: Date.now() * 1e6,
      series: 'host_cpu_utilization_ratio{cpu="total"}', value: 0.99, score: 12.5, center: 0.05 })), 1500);
  });
  await page.goto(baseUrl + '/');
  // The server's own alerts may arrive too; the test's is told apart by its score.
  await page.waitForFunction(() => window.perfscope.state.alerts.some((a) => a.score === 12.5), null, { timeout: 15000 });
  const t = await page.evaluate(() => window.perfscope.state.alerts.find((a) => a.score === 12.5).ts_ns / 1e9);
  assert.ok(await page.evaluate((x) => window.perfscope.charts.cpu.marks.includes(x), t), 'the CPU chart is marked');
  assert.ok(!(await page.evaluate((x) => window.perfscope.charts.mem.marks.includes(x), t)), 'only the chart of that series');
  // Drawn as a red dashed line, until the header's toggle hides the marks (kept for the next visit).
  const red = [0xf2, 0x49, 0x5c];
  assert.ok(await drawnPixels(page, '[data-testid=chart-cpu]', red, 5) > 5, 'the mark is drawn');
  await page.click('[data-testid=marks-toggle]');
  assert.equal(await page.getAttribute('[data-testid=marks-toggle]', 'aria-pressed'), 'false');
  assert.equal(await drawnPixels(page, '[data-testid=chart-cpu]', red), 0, 'no mark drawn');
  await page.reload();
  assert.equal(await page.getAttribute('[data-testid=marks-toggle]', 'aria-pressed'), 'false');
  await page.click('[data-testid=marks-toggle]');  // shown again for the tests after this one
  await page.close();
});

test('the anomalies of the time range are marked on their series when the charts fill from history', async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const at = (Date.now() - 60e3) * 1e6;  // a minute ago: inside the default 5 minutes
  // The server's answer for the range, with one anomaly planted (the sampler's are chance).
  await page.route(/\/api\/v1\/anomalies/, async (route) => {
    const r = await route.fetch();
    const body = await r.json();
    body.anomalies.push({ ts_ns: at, series: 'host_memory_used_bytes', name: 'host_memory_used_bytes', labels: {},
      value: 9e9, score: 14.2, center: 1e9 });
    await route.fulfill({ response: r, json: body });
  });
  await page.goto(baseUrl + '/?view=host');
  await page.waitForFunction(() => window.perfscope && window.perfscope.state.prefills > 0, null, { timeout: 20000 });
  assert.ok(await page.evaluate((t) => window.perfscope.charts.mem.marks.includes(t), at / 1e9), 'the memory chart is marked');
  assert.ok(!(await page.evaluate((t) => window.perfscope.charts.cpu.marks.includes(t), at / 1e9)), 'only the chart of that series');
  // The view asks again while the page closes: an answer cut off by the close is no failure.
  await page.unrouteAll({ behavior: 'ignoreErrors' });
  await page.close();
});

test('the serving table gives each model its percentiles, TTFT, TPOT, errors and SLO share; the latency panel shows requests', async () => {
  // 100 requests of 1..100 ms, TTFT a tenth of it, 11 output tokens; every tenth failed.
  const now = Date.now() * 1e6;
  await postEvents(baseUrl, Array.from({ length: 100 }, (_, i) => ({ type: 'inference', model: 'table-model',
    ts_ns: now - (100 - i) * 1e8, latency_ms: i + 1, ttft_ms: (i + 1) / 10, output_tokens: 11,
    status: (i + 1) % 10 === 0 ? 'error' : 'ok' })));
  await postEvents(baseUrl, [{ type: 'kernel', name: 'serving_view_kernel', start_ns: now - 2e6, end_ns: now - 1e6 }]);
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  await page.goto(baseUrl + '/?view=serving&range=5m&sla_ms=50');
  const row = '[data-testid=inference-table] tr[data-model="table-model"]';
  await page.waitForSelector(`${row} td[data-col=p50]:not(:empty)`, { timeout: 20000 });
  const cell = async (col) => (await page.textContent(`${row} td[data-col=${col}]`)).trim();
  // Nearest rank over 1..100 ms; TPOT = (latency − TTFT) / 10 = 0.09 × latency.
  assert.deepEqual([await cell('p50'), await cell('p90'), await cell('p99')], ['50.0', '90.0', '99.0']);
  assert.equal(await cell('ttft'), '5.00 · 9.90');
  assert.equal(await cell('tpot'), '4.50 · 8.91');
  assert.equal(await cell('errors'), '10 (10.0%)');
  // Within 50 ms and successful: 1..50 less the five failures among them.
  assert.equal(await cell('slo'), '45.0%');
  const api = await (await fetch(baseUrl + '/api/v1/inference?from=now-300s&latency=true&sla_ms=50')).json();
  const m = api.models.find((x) => x.model === 'table-model');
  assert.equal(m.latency_ms.p99, 99);
  assert.equal(m.goodput_ratio, 0.45);
  assert.equal(await page.inputValue('[data-testid=slo-latency]'), '50');
  // The latency panel of this view picks among models only; the kernel stays in the Kernels view.
  await page.waitForFunction(() => document.querySelector('#pct-subject').value.startsWith('model:'));
  const shown = await page.$$eval('#pct-subject option', (os) => os.filter((o) => o.value && !o.hidden).map((o) => o.value));
  assert.ok(shown.length > 0 && shown.every((v) => v.startsWith('model:')), shown.join(' '));
  await page.click('[data-testid=views] [data-view-link=kernels]');
  await page.waitForFunction(() => document.querySelector('#pct-subject').value.startsWith('kernel:'));
  // A new objective is read again at once and kept in the URL.
  await page.click('[data-testid=views] [data-view-link=serving]');
  await page.fill('[data-testid=slo-latency]', '100');
  await page.dispatchEvent('[data-testid=slo-latency]', 'change');
  await page.waitForFunction((sel) => document.querySelector(sel)?.textContent.trim() === '90.0%', `${row} td[data-col=slo]`, { timeout: 15000 });
  assert.equal(new URL(page.url()).searchParams.get('sla_ms'), '100');
  await page.screenshot({ path: path.join(artifacts, 'serving-table.png'), fullPage: true });
  await page.close();
});

test('a model row opens its TTFT percentiles over time against its SLO, kept in the URL', async () => {
  // Two minutes of requests of one model: TTFT 20 ms, then 80 ms in the last 40 seconds.
  const now = Date.now() * 1e6;
  const events = [];
  for (let i = 0; i < 120; i++) {
    const ts = now - (120 - i) * 1e9;
    events.push({ type: 'inference', model: 'slo-model', ts_ns: ts, latency_ms: 300, ttft_ms: i < 80 ? 20 : 80,
                  output_tokens: 16 });
  }
  await postEvents(baseUrl, events);
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(baseUrl + '/?view=serving');
  await page.click('[data-testid=inference-table] tr[data-model="slo-model"]', { timeout: 20000 });
  await page.selectOption('[data-testid=model-detail-field]', 'ttft_ms');
  await page.fill('[data-testid=model-detail-slo]', '50');
  await page.dispatchEvent('[data-testid=model-detail-slo]', 'change');
  const slices = await (await page.waitForFunction(() => {
    const d = window.perfscope.state.modelDetail;
    return d.field === 'ttft_ms' && d.slo === 50 && d.slices.some((x) => x.sla_compliance_rate != null) && d.slices;
  }, null, { timeout: 15000 })).jsonValue();
  const filled = slices.filter((s) => s.count > 0);
  assert.ok(filled.length >= 10, `${filled.length} slices hold requests`);
  // Early slices all within the SLO at 20 ms, the last ones none.
  assert.equal(filled[0].percentiles.p50, 20);
  assert.equal(filled[0].sla_compliance_rate, 1);
  assert.equal(filled[filled.length - 1].percentiles.p99, 80);
  assert.equal(filled[filled.length - 1].sla_compliance_rate, 0);
  assert.match(await page.textContent('[data-testid=model-detail-summary]'), /120 requests .* 66\.7% within the SLO \(40 over\)/);
  assert.ok(await drawnPixels(page, '[data-testid=model-detail-chart]', undefined, 30) > 30, 'the p50 line is drawn');
  assert.ok(await drawnPixels(page, '[data-testid=model-detail-chart]', [0xf2, 0x49, 0x5c], 30) > 30, 'the SLO line is drawn');
  const url = new URL(page.url());
  assert.equal(url.searchParams.get('model'), 'slo-model');
  assert.equal(url.searchParams.get('field'), 'ttft_ms');
  assert.equal(url.searchParams.get('slo'), '50');
  // A reload (a shared link) opens the same.
  await page.reload();
  await page.waitForFunction(() => window.perfscope.state.modelDetail.loads > 0, null, { timeout: 15000 });
  assert.equal(await page.isHidden('[data-testid=model-detail]'), false);
  assert.equal(await page.inputValue('[data-testid=model-detail-field]'), 'ttft_ms');
  assert.equal(await page.evaluate(() => window.perfscope.state.modelDetail.slo), 50);
  mkdirSync(artifacts, { recursive: true });
  await page.locator('[data-testid=model-detail]').screenshot({ path: path.join(artifacts, 'model-detail.png') });
  await page.click('[data-testid=model-detail-close]');
  assert.equal(new URL(page.url()).searchParams.get('model'), null);
  assert.deepEqual(errors, []);
  await page.close();
});

test('every view in the header opens, with no text overlapping or cut off, saved as a screenshot at 1440 and 390 px, dark and light', async () => {
  mkdirSync(artifacts, { recursive: true });
  const found = [];
  for (const { width, height, suffix, phone, scheme } of [
    { width: 1440, height: 900, suffix: '', scheme: 'dark' }, { width: 390, height: 844, suffix: '-phone', phone: true, scheme: 'dark' },
    { width: 1440, height: 900, suffix: '-light', scheme: 'light' }, { width: 390, height: 844, suffix: '-phone-light', phone: true, scheme: 'light' }]) {
    const page = await browser.newPage({ viewport: { width, height }, colorScheme: scheme, isMobile: !!phone, hasTouch: !!phone });
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(baseUrl + '/');
    const views = await page.$$eval('[data-view-link]', (links) => links.map((a) => a.dataset.viewLink));
    assert.ok(views.length >= 10, `views: ${views}`);
    for (const view of views) {
      await page.goto(`${baseUrl}/?view=${view}`);
      await page.waitForFunction(() => window.perfscope && window.perfscope.state.connection === 'live', null, { timeout: 15000 });
      // Its link marked current, and something of it on the screen.
      assert.equal(await page.getAttribute(`[data-view-link=${view}]`, 'class'), 'current', view);
      const shown = await page.$$eval('[data-view]', (els) => els.filter((e) => e.offsetParent !== null).length);
      assert.ok(shown > 0, `view ${view} shows a panel`);
      // Nothing wider than the screen: wide tables scroll inside their panel, not the page. Measured
      // against the device's width: a mobile layout viewport (innerWidth) widens to the content.
      const overflow = await page.evaluate((w) => document.documentElement.scrollWidth - w, width);
      assert.ok(overflow <= 0, `view ${view} at ${width} px scrolls sideways by ${overflow} px`);
      // The first panel or figure keeps a gap below the navigation bar, whatever the view begins with.
      const gap = await page.evaluate(() => {
        const nav = document.getElementById('views').getBoundingClientRect().bottom;
        const tops = [...document.querySelectorAll('.panel, .stat, section.gpus > *')].filter((e) => e.offsetParent !== null)
          .map((e) => e.getBoundingClientRect().top);
        return Math.min(...tops) - nav;
      });
      assert.ok(gap >= 8 && gap <= 32, `view ${view} at ${width} px: its first panel is ${gap} px below the navigation`);
      // The key figures read whole (a kernel's name may end in an ellipsis; its title has it all).
      const cut = await page.$$eval('.summary .value', (els) => els.filter((e) => e.offsetParent !== null &&
        e.id !== 's-top-kernel' && e.scrollWidth > e.clientWidth + 1).map((e) => `${e.id}: ${e.textContent}`));
      assert.deepEqual(cut, [], `view ${view} at ${width} px: key figures cut short`);
      // The tables read once and their follow-up requests answered (the latency panel's
      // percentiles), then two animation frames: the charts have drawn what they hold.
      await page.waitForFunction(() => window.perfscope.state.eventRefreshes > 0, null, { timeout: 15000 });
      // Best effort: a live page on a loaded machine may never go quiet for half a second.
      await page.waitForLoadState('networkidle', { timeout: 5000 }).catch(() => {});
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
      await page.screenshot({ path: path.join(artifacts, `view-${view}${suffix}.png`), fullPage: !!phone });
      for (const p of await textProblems(page)) found.push(`${view} at ${width} px, ${scheme}: ${p}`);
    }
    assert.deepEqual(errors, []);
    await page.close();
  }
  assert.deepEqual(found, []);
});

// Last: the imported trace's kernels (device 0, with FLOPs) would change the figures the tests
// above check.
test('a kernel opened after another shows only its own figures, at the top of the view: an imported GPU kernel', async () => {
  // The recorded PyTorch trace, moved to have ended a minute ago (its baseTimeNanoseconds), and
  // imported as users do; before it, a plain kernel opened first.
  const trace = JSON.parse(readFileSync(path.join(fixtures, 'pytorch', 'recorded_trace.json'), 'utf8'));
  const lastUs = Math.max(...trace.traceEvents.filter((e) => e.ts != null).map((e) => e.ts + (e.dur || 0)));
  trace.baseTimeNanoseconds = Math.round(Date.now() * 1e6 - 60e9 - lastUs * 1e3);
  const dir = mkdtempSync(path.join(tmpdir(), 'perfscope-import-'));
  const file = path.join(dir, 'trace.json');
  writeFileSync(file, JSON.stringify(trace));
  const imported = spawn(binary, ['import', file, '--name', 'imported-trace', '--server', baseUrl], { stdio: 'ignore' });
  assert.equal(await new Promise((r) => imported.on('exit', r)), 0, 'the import succeeds');
  rmSync(dir, { recursive: true, force: true });
  const now = Date.now() * 1e6;
  await postEvents(baseUrl, [1, 2].map((i) => ({ type: 'kernel', name: 'plain_first', start_ns: now - i * 5e6, end_ns: now - i * 5e6 + 1e6 })));
  const api = await (await fetch(baseUrl + '/api/v1/kernels?from=now-300s')).json();
  const gpu = api.kernels.find((k) => k.name.startsWith('void gemmSN_TN_kernel'));
  assert.ok(gpu, api.kernels.map((k) => k.name).join('\n'));

  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  await page.goto(baseUrl + '/?view=kernels');
  await page.click('[data-testid=kernels-table] tr[data-kernel="plain_first"]', { timeout: 20000 });
  await page.waitForFunction(() => window.perfscope.state.kernelDetail.loads > 0 && window.perfscope.state.percentiles?.count === 2,
    null, { timeout: 15000 });
  const loads = await page.evaluate(() => window.perfscope.state.kernelDetail.loads);
  await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
  await page.click(`[data-testid=kernels-table] tr[data-kernel="${gpu.name.replace(/"/g, '\\"')}"]`);
  assert.equal(await page.textContent('#kd-name'), 'gemmSN_TN_kernel');
  assert.match(await page.textContent('[data-testid=kernel-detail-summary]'), new RegExp(`^${gpu.count} executions`));
  // Its own percentiles over time and its own distribution in the latency panel: the counts are its.
  await page.waitForFunction((n) => window.perfscope.state.kernelDetail.loads > n.loads &&
    window.perfscope.state.percentiles?.count === n.count, { loads, count: gpu.count }, { timeout: 15000 });
  const slices = await page.evaluate(() => window.perfscope.state.kernelDetail.slices);
  assert.equal(slices.reduce((n, x) => n + x.count, 0), gpu.count);
  assert.equal(await page.inputValue('[data-testid=percentile-subject]'), 'kernel:' + gpu.name);
  await page.waitForFunction((n) => document.querySelectorAll('#kd-records tbody tr').length === n, Math.min(gpu.count, 20));
  // In view: the page went to it, at the top of the view.
  const top = await page.evaluate(() => document.querySelector('[data-testid=kernel-detail]').getBoundingClientRect().top);
  assert.ok(top > -1 && top < 200, `the drill-down starts ${top} px down the window`);  // (sub-pixel scrolling)
  // And its executions one click away on the timeline.
  await page.waitForSelector('[data-testid=kernel-detail-timeline]', { state: 'visible' });
  const link = new URL(await page.getAttribute('[data-testid=kernel-detail-timeline]', 'href'), baseUrl);
  assert.equal(link.searchParams.get('view'), 'timeline');
  assert.ok(Number(link.searchParams.get('tl_to')) > Number(link.searchParams.get('tl_from')));
  await page.screenshot({ path: path.join(artifacts, 'kernel-detail-imported.png') });

  // The imported run on the timeline: its CPU operators as a track above its GPU's streams.
  await page.goto(baseUrl + '/?view=timeline&tl_run=imported-trace');
  await page.waitForFunction(() => { const d = window.perfscope.timeline.state.data; return d && d.ops && window.perfscope.timeline.state.layout.length > 1; },
    null, { timeout: 20000 });
  const ops = await page.evaluate(() => {
    const s = window.perfscope.timeline.state;
    return { rows: s.layout.map((r) => r.kind), count: s.data.ops.count, names: s.data.ops.names };
  });
  assert.equal(ops.rows[0], 'ops', `the operators first: ${ops.rows}`);
  assert.ok(ops.rows.includes('stream'), 'then the GPU streams');
  assert.ok(ops.count > 0 && ops.names.some((n) => n.startsWith('aten::')), JSON.stringify(ops.names));
  await page.screenshot({ path: path.join(artifacts, 'timeline-imported-operators.png') });
  await page.close();
});
