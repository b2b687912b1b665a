// The timeline view with a million kernels (issue 23), in real headless Chromium: a server with
// 1,000,000 executions of launch-bound decoding (kernels of 3-9 µs about every 12 µs on one
// stream, each launched ahead by the host, a 1 ms host wait every 500 kernels as between
// tokens, and a copy every 100 kernels on a second stream) — about 11 s of it. The view opens
// on all of it, then pans for PAN_SECONDS at each of three zooms: the whole trace (buckets),
// 50 ms (executions one by one, new ones asked for as the view moves) and 40 µs. Panning is
// driven from inside the page, one step per animation frame, as a drag moves the view; each
// frame's interval and painting time are recorded by the view. Also the server's answer times
// for the timeline at each zoom.
//
// Usage: node bench/timeline_pan.mjs PERFSCOPE_BIN [PAN_SECONDS=3] [ROUNDS=3]
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startPerfscope } from '../tests/support/perfscope_server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '..', 'web', 'package.json'));
const { chromium } = require('playwright-core');

const [bin, panArg, roundsArg] = process.argv.slice(2);
if (!bin) {
  console.error('usage: node bench/timeline_pan.mjs PERFSCOPE_BIN [PAN_SECONDS] [ROUNDS]');
  process.exit(2);
}
process.env.PERFSCOPE_BIN = path.resolve(bin);
const panSeconds = Number(panArg || 3);
const rounds = Number(roundsArg || 3);
const N = 1_000_000;

const server = await startPerfscope({ args: ['--enable-host-collector', 'false', '--enable-gpu-collector', 'false'],
                                      label: 'timeline' });
const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(q * s.length))] : null;
};
try {
  // Times as BigInt epoch ns written out whole (a double holds them only to 256 ns).
  const t0 = BigInt(Date.now() - 3600e3) * 1000000n;
  let at = t0;
  let seed = 7;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const names = ['gemv_bf16_128', 'attn_decode_paged', 'rmsnorm', 'rope', 'silu_mul', 'gemv_bf16_448'];
  const posted = Date.now();
  for (let start = 0; start < N; start += 20_000) {
    const lines = [];
    for (let i = start; i < Math.min(N, start + 20_000); i++) {
      if (i % 500 === 0) at += 1_000_000n;  // the host between tokens
      const dur = BigInt(3000 + Math.floor(rand() * 6000));
      const call = i % 500 === 0 ? at - 30_000n : at - 25_000n;  // launched late after the wait, else ahead
      lines.push(`{"type":"kernel","name":"${names[i % names.length]}","device":"0","stream":"7","start_ns":${at},` +
                 `"end_ns":${at + dur},"launch_start_ns":${call},"launch_end_ns":${call + 4000n}}`);
      if (i % 100 === 0) {
        lines.push(`{"type":"kernel","name":"Memcpy DtoH (Device → Pinned)","device":"0","stream":"9","start_ns":${at},` +
                   `"end_ns":${at + 2000n},"tags":{"op":"memcpy"}}`);
      }
      at += dur + BigInt(2000 + Math.floor(rand() * 2000));
    }
    const r = await fetch(server.url + '/api/v1/events', { method: 'POST', headers: { 'Content-Type': 'application/x-ndjson' },
                                                           body: lines.join('\n') });
    if (r.status !== 200) throw new Error(`ingest answered ${r.status}: ${await r.text()}`);
  }
  const span = at - t0;
  console.log(`posted ${N} kernels (+${N / 100} copies) over ${Number(span) / 1e9} s in ${(Date.now() - posted) / 1000} s`);

  const browser = await chromium.launch({ executablePath: process.env.PERFSCOPE_CHROMIUM || '/usr/bin/chromium',
                                          headless: true, args: ['--no-sandbox', '--disable-gpu'] });
  const results = [];
  for (let round = 0; round < rounds; round++) {
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    const page = await context.newPage();
    await page.goto(`${server.url}/?view=timeline&tl_from=${t0}&tl_to=${at}`);
    await page.waitForFunction(() => window.perfscope && window.perfscope.timeline.state.loads > 0, null,
                               { timeout: 120_000 });
    const row = { round };
    // [label, window width in ns or null for the whole trace, pixels a frame]
    // 12 px a frame: 2,160 px in 3 s, past the width either side of the view that an answer covers, so
    // the view asks the server again while it pans.
    for (const [label, width, step] of [['whole trace', null, 12], ['50 ms', 50_000_000n, 12], ['40 µs', 40_000n, 12]]) {
      if (width !== null) {
        const from = t0 + span / 3n;
        await page.evaluate(([a, b]) => window.perfscope.timeline.setWindow(a, b), [String(from), String(from + width)]);
        await page.waitForFunction(() => window.perfscope.timeline.state.data, null, { timeout: 120_000 });
      }
      const m = await page.evaluate(async ([seconds, px]) => {
        const tl = window.perfscope.timeline;
        const loadsBefore = tl.state.loads;
        tl.state.frames = [];
        const end = performance.now() + seconds * 1000;
        await new Promise((resolve) => {
          const step = () => {
            if (performance.now() >= end) return resolve();
            tl.pan(-px);  // a drag to the left: later times come into view
            requestAnimationFrame(step);
          };
          requestAnimationFrame(step);
        });
        await new Promise((resolve) => setTimeout(resolve, 300));
        const f = tl.state.frames;
        const intervals = f.slice(1).map((x, i) => x.at - f[i].at);
        return { intervals, paints: f.map((x) => x.ms), loads: tl.state.loads - loadsBefore, raw: tl.state.data.raw,
                 events: tl.state.data.events };
      }, [panSeconds, step]);
      const answers = await page.evaluate(() => performance.getEntriesByType('resource')
        .filter((e) => e.name.includes('/api/v1/timeline')).map((e) => e.responseEnd - e.requestStart));
      await page.evaluate(() => performance.clearResourceTimings());
      const med = quantile(m.intervals, 0.5);
      row[label] = {
        frames: m.intervals.length + 1,
        frame_interval_ms_median: med, frame_interval_ms_p95: quantile(m.intervals, 0.95),
        frame_interval_ms_max: Math.max(...m.intervals), fps_median: 1000 / med,
        paint_ms_median: quantile(m.paints, 0.5), paint_ms_p95: quantile(m.paints, 0.95),
        loads_while_panning: m.loads, drawn_raw: m.raw, executions_in_last_answer: m.events,
        server_answer_ms: answers.map((x) => Math.round(x)),
      };
    }
    results.push(row);
    await context.close();
  }
  await browser.close();
  console.log(JSON.stringify(results, null, 1));
} finally {
  await server.stop();
}
