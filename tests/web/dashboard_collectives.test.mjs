// The dashboard's multi-GPU pages: two-rank jobs recorded on the GPU machine (the straggler and
// the overlap job, and an all-reduce sweep NCCL described), each on a server of its own beside
// the fixture's: the run page's ranks and collectives, the timeline's rank groups and collective
// lines, and the overview's straggler tile, at 1440 and 390 px.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import path from 'node:path';
import { startPerfscope } from '../support/perfscope_server.mjs';
import { artifacts, binary, browser } from './dashboard_fixture.mjs';

const fixtures = path.join(path.dirname(new URL(import.meta.url).pathname), '..', 'fixtures');

// A server of its own holding the two-rank jobs recorded on the GPU machine (server.collectives).
let own;
const spans = {};  // job → the dashboard's URL range over its run (ms since the epoch)

before(async () => {
  own = await startPerfscope({ label: 'dashboard-collectives', args: ['--enable-host-collector', 'false'] });
  for (const job of ['straggler', 'overlap']) {
    const child = spawn(binary, ['import', path.join(fixtures, 'collectives', job, 'trace.ndjson.gz'), '--server', own.url],
                        { stdio: ['ignore', 'ignore', 'inherit'] });
    assert.equal(await new Promise((r) => child.on('exit', r)), 0, `import of ${job}`);
    // The trace holds the ranks' events; the run itself is what `perfscope run` reports around
    // them: its span, from the trace's kernels (nanoseconds past 2^53: as text).
    const text = gunzipSync(readFileSync(path.join(fixtures, 'collectives', job, 'trace.ndjson.gz'))).toString('utf8');
    const starts = [...text.matchAll(/"start_ns":(\d+)/g)].map((m) => BigInt(m[1]));
    const ends = [...text.matchAll(/"end_ns":(\d+)/g)].map((m) => BigInt(m[1]));
    const first = starts.reduce((a, b) => (b < a ? b : a)), last = ends.reduce((a, b) => (b > a ? b : a));
    spans[job] = `from=${first / 1000000n - 1000n}&to=${last / 1000000n + 1000n}`;
    const run = `{"events":[{"type":"run","name":"${job}","command":["torchrun","--nproc-per-node","2","collective_job.py"],` +
      `"start_ns":${first - 1000000n},"end_ns":${last + 1000000n},"exit_status":0,"gpus":["0","1"]}]}`;
    const res = await fetch(own.url + '/api/v1/events', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: run });
    assert.equal(res.status, 200, await res.text());
  }
});

after(async () => {
  await own?.stop();
});

test('a multi-GPU run\'s page names its straggler and breaks each rank\'s step down, at 1440 and 390 px', async () => {
  mkdirSync(artifacts, { recursive: true });
  for (const width of [1440, 390]) {
    const page = await browser.newPage({ viewport: { width, height: 900 } });
    await page.goto(own.url + '/?view=runs&run_page=straggler');
    await page.waitForSelector('[data-testid=collectives-ranks] tr[data-rank]', { timeout: 20000 });
    const job = await page.evaluate(() => window.perfscope.state.runPage.collectives);
    assert.equal(job.straggler.rank, '1');
    assert.match(await page.textContent('[data-testid=collectives-straggler]'), /Straggler: rank 1 — last to arrive in 99% of the collectives, 1\.6\d ms more compute per 4\.\d\d ms step/);
    assert.match(await page.textContent('[data-testid=collectives-summary]'), /2 ranks \(by rank tag\) · 71 collectives matched across them · 70 steps of one collective/);
    // Each rank's bar: its parts as wide as their share of the step, together the whole bar.
    for (const r of job.ranks) {
      const widths = await page.$$eval(`[data-testid=collectives-ranks] tr[data-rank="${r.rank}"] .stack span`,
                                       (spans) => spans.map((s) => [s.dataset.part, s.getBoundingClientRect().width]));
      const whole = await page.$eval(`[data-testid=collectives-ranks] tr[data-rank="${r.rank}"] .stack`, (b) => b.getBoundingClientRect().width);
      const b = r.per_step;
      const want = { compute: b.compute_ms - b.overlapped_ms, overlapped: b.overlapped_ms, exposed: b.exposed_ms, idle: b.idle_ms };
      const sum = Object.values(want).reduce((a, v) => a + v, 0);
      assert.ok(Math.abs(sum - b.window_ms) < 0.1 * b.window_ms, `rank ${r.rank}: the median parts make about a median step`);
      for (const [part, w] of widths) {
        assert.ok(Math.abs(w / whole - want[part] / sum) < 0.02, `rank ${r.rank} ${part}: ${w} of ${whole} px`);
      }
      assert.ok(Math.abs(widths.reduce((a, [, w]) => a + w, 0) - whole) < 2, `rank ${r.rank}: the parts fill the bar`);
    }
    // Rank 0 waits for rank 1 in every all-reduce; rank 1 hardly waits. Columns: rank, GPU, bar,
    // compute, exposed communication, overlap, waiting, last in.
    const cells = async (rank) => page.$$eval(`[data-testid=collectives-ranks] tr[data-rank="${rank}"] td`, (tds) => tds.map((t) => t.textContent));
    const [zero, one] = [await cells('0'), await cells('1')];
    assert.equal(zero[4], '1.90', `rank 0 exposed: ${zero}`);
    assert.equal(zero[6], '87%', `rank 0 waiting: ${zero}`);
    assert.equal(one[6], '0%', `rank 1 waiting: ${one}`);
    assert.equal(one[7], '70', `rank 1 last in: ${one}`);
    assert.match(await page.textContent('[data-testid=collectives-ops]'), /AllReduce\s*71/);
    for (const colorScheme of ['dark', 'light']) {
      await page.emulateMedia({ colorScheme });
      await page.locator('[data-testid=run-page]').screenshot({ path: path.join(artifacts, `run-page-collectives-${width}-${colorScheme}.png`) });
    }
    // The overlap job's page: most of rank 1's communication beside its compute.
    await page.goto(own.url + '/?view=runs&run_page=overlap');
    await page.waitForFunction(() => window.perfscope.state.runPage.collectives?.run === 'overlap', null, { timeout: 20000 });
    const overlapOne = await page.$eval('[data-testid=collectives-ranks] tr[data-rank="1"] td:nth-child(6)', (t) => t.textContent);
    assert.match(overlapOne, /^9\d%$/, `rank 1 overlap ${overlapOne}`);
    await page.close();
  }
});

test('a multi-GPU job\'s timeline groups its ranks on one clock and links each collective through them', async () => {
  // The job's timeline: a track group per rank on one clock, each all-reduce a line through its
  // ranks' kernels in the order they arrived; hovering one names the rank that came last.
  for (const width of [1440, 390]) {
    const page = await browser.newPage({ viewport: { width, height: 900 } });
    await page.goto(own.url + '/?view=timeline&tl_run=straggler');
    await page.waitForFunction(() => window.perfscope.timeline.state.data?.collectives.length > 0, null, { timeout: 20000 });
    // Three steps of the middle of the run.
    await page.evaluate(() => {
      const s = window.perfscope.timeline.state, c = s.data.collectives[30], next = s.data.collectives[33];
      s.collectivesDrawn = 0;
      s.a = c.at[0][1] + s.shift - 500000;
      s.b = next.at[1][1] + s.shift + 1500000;
      window.perfscope.timeline.zoom(1);
    });
    await page.waitForFunction(() => { const s = window.perfscope.timeline.state; return s.data && s.layout.length > 2 && s.collectivesDrawn >= 3 && s.collectivesDrawn < 10; },
                               null, { timeout: 20000 });
    const groups = await page.evaluate(() => {
      const s = window.perfscope.timeline.state;
      return s.layout.filter((r) => r.kind === 'launch').map((r) => [r.device, s.data.ranks.get(r.device)]);
    });
    assert.deepEqual(groups, [['0', '0'], ['1', '1']]);
    const drawn = await page.evaluate(() => window.perfscope.timeline.state.collectivesDrawn);
    assert.ok(drawn >= 3 && drawn <= 5, `${drawn} collectives linked in three steps`);
    // Hover rank 0's kernel of an instance in view: the tooltip says who came last.
    const point = await page.evaluate(() => {
      const s = window.perfscope.timeline.state, c = s.data.collectives.find((x) => x.at[0][1] + s.shift > s.a + (s.b - s.a) * 0.2);
      const row = s.layout.find((r) => r.kind === 'stream' && r.device === c.at[0][0] && r.track.start.includes(c.at[0][1]));
      const i = row.track.start.indexOf(c.at[0][1]);
      const mid = (row.track.start[i] + row.track.end[i]) / 2 + s.shift;
      return { share: (mid - s.a) / (s.b - s.a), y: row.y + 10 };
    });
    const box = await page.locator('[data-testid=timeline-canvas]').boundingBox();
    await page.mouse.move(box.x + 132 + point.share * (box.width - 132), box.y + point.y);
    await page.waitForSelector('[data-testid=timeline-tip]', { state: 'visible', timeout: 5000 });
    const tip = await page.textContent('[data-testid=timeline-tip]');
    assert.match(tip, /rank 0 · GPU 0 · stream/);
    assert.match(tip, /AllReduce across 2 ranks: rank 1 arrived last, \d[\d.]* (ms|µs) after the first/);
    await page.locator('[data-view=timeline]').screenshot({ path: path.join(artifacts, `timeline-ranks-tip-${width}.png`) });
    await page.mouse.move(0, 0);
    for (const colorScheme of ['dark', 'light']) {
      await page.emulateMedia({ colorScheme });
      await page.waitForTimeout(100);
      await page.locator('[data-view=timeline]').screenshot({ path: path.join(artifacts, `timeline-ranks-${width}-${colorScheme}.png`) });
      // The streams' names are repainted in the theme's text colour: light on dark, dark on light.
      const brightest = await page.evaluate(() => {
        const s = window.perfscope.timeline.state, canvas = document.querySelector('[data-testid=timeline-canvas]');
        const dpr = canvas.width / canvas.getBoundingClientRect().width, ctx = canvas.getContext('2d');
        let most = 0;
        for (const row of s.layout.filter((r) => r.kind === 'stream')) {
          const px = ctx.getImageData(4 * dpr, (row.y + 6) * dpr, 100 * dpr, 13 * dpr).data;
          for (let i = 0; i < px.length; i += 4) if (px[i + 3] > 200) most = Math.max(most, (px[i] + px[i + 1] + px[i + 2]) / 3);
        }
        return most;
      });
      if (colorScheme === 'dark') assert.ok(brightest > 170, `stream names on the dark theme: brightest ${brightest}`);
      else assert.ok(brightest > 0 && brightest < 110, `stream names on the light theme: brightest ${brightest}`);
    }
    await page.close();
  }
});

test('the overview names the straggler of the job in its range and opens its page', async () => {
  // The overview names the straggler of the job in its range, and opens the job's page; a range
  // whose job has none says so; one with no multi-GPU job shows no such tile.
  for (const width of [1440, 390]) {
    const page = await browser.newPage({ viewport: { width, height: 900 } });
    await page.goto(own.url + `/?run=straggler&${spans.straggler}`);
    await page.waitForFunction(() => !document.getElementById('s-straggler-tile').hidden, null, { timeout: 20000 });
    assert.equal(await page.textContent('[data-testid=summary-straggler]'), 'rank 1');
    assert.equal(await page.textContent('#s-straggler-tile .label'), 'Straggler (range) · +1.63 ms compute a step');
    assert.match(await page.getAttribute('#s-straggler-tile', 'title'), /run straggler: rank 1 arrived last at 98\.6% of the collectives, with 1\.63 ms more compute per 4\.29 ms step/);
    for (const colorScheme of ['dark', 'light']) {
      await page.emulateMedia({ colorScheme });
      await page.locator('[data-testid=summary]').screenshot({ path: path.join(artifacts, `overview-straggler-${width}-${colorScheme}.png`) });
    }
    await page.click('#s-straggler-tile');
    await page.waitForSelector('[data-testid=collectives-ranks] tr[data-rank]', { timeout: 20000 });
    assert.match(page.url(), /view=runs/);
    assert.match(page.url(), /run_page=straggler/);
    await page.close();
  }
  const overlap = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  await overlap.goto(own.url + `/?run=overlap&${spans.overlap}`);
  await overlap.waitForFunction(() => !document.getElementById('s-straggler-tile').hidden, null, { timeout: 20000 });
  assert.equal(await overlap.textContent('[data-testid=summary-straggler]'), 'none');
  assert.equal(await overlap.textContent('#s-straggler-tile .label'), 'Straggler (range) · 2 ranks');
  await overlap.close();
  const none = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  await none.goto(own.url + '/');
  await none.waitForFunction(() => window.perfscope.state.analysis, null, { timeout: 20000 });
  assert.equal(await none.$eval('#s-straggler-tile', (t) => t.hidden), true);
  await none.close();
});

test('a run NCCL described shows each collective\'s size, algorithm and bus bandwidth against the NVLink peak', async () => {
  // The all-reduce sweep recorded on two H200s with NCCL's profiler plugin (server.collectives),
  // on a server whose stand-in NVML gives each GPU 18 NVLink links at 25 000 MB/s.
  const gpus = ['count 2'];
  for (const g of [0, 1]) gpus.push(`${g}.name NVIDIA H200`, `${g}.uuid GPU-s${g}`, `${g}.mem_total 150754820096`, `${g}.nvlink switch:18`, `${g}.nvlink_mbps 25000`);
  const own = await startPerfscope({ label: 'dashboard-sweep', nvmlScript: gpus.join('\n') + '\n', args: ['--enable-host-collector', 'false'] });
  try {
    const trace = path.join(fixtures, 'collectives', 'sweep', 'trace.ndjson.gz');
    const child = spawn(binary, ['import', trace, '--server', own.url], { stdio: ['ignore', 'ignore', 'inherit'] });
    assert.equal(await new Promise((r) => child.on('exit', r)), 0);
    const text = gunzipSync(readFileSync(trace)).toString('utf8');
    const first = [...text.matchAll(/"start_ns":(\d+)/g)].map((m) => BigInt(m[1])).reduce((a, b) => (b < a ? b : a));
    const last = [...text.matchAll(/"end_ns":(\d+)/g)].map((m) => BigInt(m[1])).reduce((a, b) => (b > a ? b : a));
    const run = `{"events":[{"type":"run","name":"sweep","command":["torchrun","collective_job.py","--sweep-mb","64,128,256"],` +
      `"start_ns":${first - 1000000n},"end_ns":${last + 1000000n},"exit_status":0,"gpus":["0","1"]}]}`;
    const res = await fetch(own.url + '/api/v1/events', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: run });
    assert.equal(res.status, 200, await res.text());
    const api = await (await fetch(own.url + '/api/v1/collectives?window=all&tag.run=sweep')).json();
    const want = api.jobs[0].ops.find((o) => o.op === 'AllReduce' && o.bytes === 64 * 1024 * 1024);
    mkdirSync(artifacts, { recursive: true });
    for (const width of [1440, 390]) {
      const page = await browser.newPage({ viewport: { width, height: 900 } });
      await page.goto(own.url + '/?view=runs&run_page=sweep');
      await page.waitForSelector('[data-testid=collectives-ops] tr[data-bytes]', { timeout: 20000 });
      const headers = await page.$$eval('[data-testid=collectives-ops] th', (th) => th.map((t) => t.textContent));
      assert.deepEqual(headers, ['Collective', 'Size', 'Algorithm', 'Count', 'p50', 'p99', 'Waiting', 'Bus bw GB/s', 'Of peak']);
      const cells = await page.$$eval(`[data-testid=collectives-ops] tr[data-op="AllReduce"][data-bytes="${64 * 1024 * 1024}"] td`,
                                      (tds) => tds.map((t) => t.textContent));
      assert.deepEqual([cells[0], cells[1], cells[2]], ['AllReduce', '64.0 MiB', `${want.algorithm} · ${want.protocol}`]);
      assert.equal(cells[7], want.busbw_p50_gb_per_second.toFixed(0));
      assert.equal(cells[8], (want.busbw_share_of_peak * 100).toFixed(0) + '%');
      assert.match(await page.textContent('[data-testid=run-page]'), /of the 450 GB\/s NVLink peak per GPU and direction/);
      assert.match(await page.textContent('[data-testid=collectives-summary]'), /GPUs 0–1 over NV18 \(NVSwitch\)/);
      // Bus bandwidth and its share of the peak are on screen without scrolling, on a phone too.
      const right = await page.$eval(`[data-testid=collectives-ops] tr[data-bytes="${64 * 1024 * 1024}"] td:last-child`,
                                     (td) => td.getBoundingClientRect().right);
      assert.ok(right <= width, `the share of peak ends at ${right} px of ${width}`);
      for (const colorScheme of ['dark', 'light']) {
        await page.emulateMedia({ colorScheme });
        await page.locator('[data-testid=run-page]').screenshot({ path: path.join(artifacts, `run-page-bus-bandwidth-${width}-${colorScheme}.png`) });
      }
      await page.close();
    }
  } finally {
    await own.stop();
  }
});
