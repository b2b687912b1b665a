// The dashboard's budgets in real headless Chromium (issue 23): first contentful paint from a
// local server, bytes transferred for the first view, and how long 24 hours of a 10 Hz series
// take to appear drawn (history read, downsampled by the server, drawn by uPlot): after a
// navigation, with every chart's history loading, and on its own (request to next frame); and
// a switch to every view with that day loaded (to the next frame, and until its requests are drawn).
// A Release server with the host collector off gets 24 h of host_cpu_utilization_ratio
// {cpu="total"} at 10 Hz (864,000 samples, posted as `sample` events); then ROUNDS fresh
// browser contexts open the overview with ?range=24h.
//
// Usage: node bench/dashboard_budgets.mjs PERFSCOPE_BIN [ROUNDS=7]   (Chromium: /usr/bin/chromium)
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startPerfscope, postEvents } from '../tests/support/perfscope_server.mjs';
import { VIEWS } from '../web/src/lib/views.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '..', 'web', 'package.json'));
const { chromium } = require('playwright-core');

const [bin, roundsArg] = process.argv.slice(2);
if (!bin) {
  console.error('usage: node bench/dashboard_budgets.mjs PERFSCOPE_BIN [ROUNDS]');
  process.exit(2);
}
process.env.PERFSCOPE_BIN = path.resolve(bin);
const rounds = Number(roundsArg || 7);

const server = await startPerfscope({ args: ['--enable-host-collector', 'false', '--enable-gpu-collector', 'false'],
                                      label: 'budgets' });
try {
  // 24 h at 10 Hz, ending now: a busy-then-idle day with noise, in jiffy fractions as the collector's.
  const now = Date.now() * 1e6;
  const n = 864_000;
  for (let start = 0; start < n; start += 20_000) {
    const events = [];
    for (let i = start; i < Math.min(n, start + 20_000); i++) {
      const busy = Math.round(10 + 8 * Math.sin(i / 40_000) + (i * 7919 % 5) - 2);
      events.push({ type: 'sample', metric: 'host_cpu_utilization_ratio', labels: { cpu: 'total' },
                    ts_ns: now - (n - i) * 100_000_000, value: Math.max(0, Math.min(20, busy)) / 20 });
    }
    await postEvents(server.url, events);
  }
  const browser = await chromium.launch({ executablePath: process.env.PERFSCOPE_CHROMIUM || '/usr/bin/chromium',
                                          headless: true, args: ['--no-sandbox', '--disable-gpu'] });
  const results = [];
  for (let r = 0; r < rounds; r++) {
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    const page = await context.newPage();
    // Requests in flight, for the view switches below: a view is settled when what it asked for came.
    await page.addInitScript(() => {
      let inflight = 0;
      const real = window.fetch;
      window.__inflight = () => inflight;
      window.fetch = (...args) => { inflight++; return real(...args).finally(() => { inflight--; }); };
    });
    await page.goto(server.url + '/?range=24h');
    // Drawn: the CPU chart holds the day, downsampled (about 1,200 points).
    await page.waitForFunction(() => {
      const c = window.perfscope && window.perfscope.charts.cpu;
      if (!c || !c.plot || c.xs.length < 900) return false;
      window.__drawnAt = window.__drawnAt || performance.now();
      return true;
    }, null, { timeout: 60_000, polling: 'raf' });
    const m = await page.evaluate(() => {
      const paint = performance.getEntriesByName('first-contentful-paint')[0];
      const nav = performance.getEntriesByType('navigation')[0];
      const resources = performance.getEntriesByType('resource');
      // The first view: the page and what it loaded before the history and the stream.
      const first = resources.filter((e) => !e.name.includes('/api/'));
      return {
        first_contentful_paint_ms: paint ? paint.startTime : null,
        first_view_transfer_bytes: nav.transferSize + first.reduce((s, e) => s + e.transferSize, 0),
        first_view_decoded_bytes: nav.decodedBodySize + first.reduce((s, e) => s + e.decodedBodySize, 0),
        day_drawn_ms: window.__drawnAt,
        points: window.perfscope.charts.cpu.xs.length,
      };
    });
    // The day again, on its own: the history read (downsampled by the server) and drawn, timed
    // in the page from the request to the next frame.
    m.day_query_and_draw_ms = await page.evaluate(async (url) => {
      const t0 = performance.now();
      const r = await (await fetch(url)).json();
      const s = r.series[0];
      const avg = s.columns.indexOf('avg');
      window.perfscope.charts.cpu.fill({ 'host_cpu_utilization_ratio{cpu="total"}': s.points.map((p) => [p[0] / 1e9, p[avg]]) });
      await new Promise((resolve) => requestAnimationFrame(() => resolve()));
      return performance.now() - t0;
    }, '/api/v1/series/query?name=host_cpu_utilization_ratio&cpu=total&from=now-86400s&max_points=1200');
    // Every view in turn and back to the overview, the day on the CPU chart: from the click on the
    // navigation to the frame after it (painted), and to the frame after the view's own requests
    // have come back and been drawn (settled).
    m.switches = {};
    for (const view of [...VIEWS.slice(1), 'overview']) {
      m.switches[view] = await page.evaluate(async (v) => {
        const frame = () => new Promise((resolve) => requestAnimationFrame(() => resolve()));
        const link = document.querySelector(`a[data-view-link="${v}"]`);
        const t0 = performance.now();
        link.click();
        await frame();
        await frame();
        const painted = performance.now() - t0;
        // Settled: the frame after the last of the view's requests came back, once none has been
        // in flight for 200 ms (a view may start its reads a moment after it is shown).
        let done = performance.now();
        while (performance.now() - done < 200) {
          await frame();
          if (window.__inflight() > 0) {
            while (window.__inflight() > 0) await frame();
            await frame();
            done = performance.now();
          }
        }
        return { painted, settled: done - t0 };
      }, view);
    }
    m.switch_painted_max_ms = Math.max(...Object.values(m.switches).map((x) => x.painted));
    m.switch_settled_max_ms = Math.max(...Object.values(m.switches).map((x) => x.settled));
    m.switch_settled_median_ms = Object.values(m.switches).map((x) => x.settled).sort((x, y) => x - y)[Math.floor(VIEWS.length / 2)];
    results.push(m);
    await context.close();
  }
  await browser.close();
  const median = (k) => {
    const v = results.map((x) => x[k]).sort((a, b) => a - b);
    return v[Math.floor(v.length / 2)];
  };
  const range = (k) => `${Math.min(...results.map((x) => x[k])).toFixed(0)}–${Math.max(...results.map((x) => x[k])).toFixed(0)}`;
  console.log(JSON.stringify(results));
  console.log(`first contentful paint: median ${median('first_contentful_paint_ms').toFixed(0)} ms (${range('first_contentful_paint_ms')}) over ${rounds} fresh contexts`);
  console.log(`first view transferred: ${median('first_view_transfer_bytes')} bytes (${median('first_view_decoded_bytes')} decoded)`);
  console.log(`24 h of a 10 Hz series drawn: median ${median('day_drawn_ms').toFixed(0)} ms after navigation (${range('day_drawn_ms')}, every chart's history loading at once), ${median('points')} points`);
  console.log(`24 h of a 10 Hz series read and drawn on its own: median ${median('day_query_and_draw_ms').toFixed(0)} ms (${range('day_query_and_draw_ms')})`);
  console.log(`view switch, the day loaded (${VIEWS.length} views each round): slowest painted median ${median('switch_painted_max_ms').toFixed(0)} ms ` +
              `(${range('switch_painted_max_ms')}); settled: median view ${median('switch_settled_median_ms').toFixed(0)} ms, ` +
              `slowest median ${median('switch_settled_max_ms').toFixed(0)} ms (${range('switch_settled_max_ms')})`);
  for (const view of [...VIEWS.slice(1), 'overview']) {
    const v = results.map((x) => x.switches[view].settled).sort((a, b) => a - b);
    console.log(`  ${view}: settled median ${v[Math.floor(v.length / 2)].toFixed(0)} ms (${v[0].toFixed(0)}–${v[v.length - 1].toFixed(0)})`);
  }
} finally {
  await server.stop();
}
