// The dashboard's browser tests share this fixture: the real perfscope binary serving the
// dashboard with two scripted GPUs (the stand-in NVML), and one headless Chromium (Debian's
// package, driven by playwright-core). Each test file that imports it gets a server and a
// browser of its own (node runs each file in a process of its own), started before its first
// test and stopped after its last; the files are split so each has a wide margin under its
// ctest timeout on two busy cores with the sanitizers.
import { before, after } from 'node:test';
import { createRequire } from 'node:module';
import path from 'node:path';
import { startPerfscope } from '../support/perfscope_server.mjs';

const require = createRequire(path.join(process.env.PERFSCOPE_WEB_DIR, 'package.json'));
const { chromium } = require('playwright-core');

export const binary = process.env.PERFSCOPE_BIN;
export const artifacts = process.env.PERFSCOPE_ARTIFACTS;
const chromiumPath = process.env.PERFSCOPE_CHROMIUM || '/usr/bin/chromium';

export let server;
export let serverExit;
export let baseUrl;
export let browser;
let instance;

// Two GPUs through the scripted stand-in NVML (CI has none): GPU 1 is held back by its power cap;
// two processes hold memory on GPU 0.
export const nvmlScript = [
  'count 2',
  '0.name NVIDIA H100 80GB HBM3', '0.uuid GPU-aaaa', '0.util_gpu 87', '0.mem_total 85520809984', '0.mem_used 40000000000',
  '0.power_mw 512000', '0.limit_mw 700000', '0.temp 64', '0.clock_sm 1980', '0.reasons 0', '0.max_clock_mem 2619',
  '0.bus_width 5120', '0.gpm 1', '0.gpm.10 61', '0.gpm.2 80', '0.procs 4242:2147483648,4343:1073741824',
  '1.name NVIDIA H100 80GB HBM3', '1.uuid GPU-bbbb', '1.util_gpu 12', '1.mem_total 85520809984', '1.mem_used 1000000000',
  '1.power_mw 700000', '1.limit_mw 700000', '1.temp 51', '1.reasons 0x4',
].join('\n') + '\n';

before(async () => {
  instance = await startPerfscope({
    args: ['--sampling-interval-ms', '100', '--device-target', '0,min_tflops=500,target_tflops=800,memory_budget=30GB'],
    nvmlScript, label: 'browser' });
  server = instance.proc;
  serverExit = instance.exit;
  baseUrl = instance.url;
  browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
           '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
});

after(async () => {
  if (browser) await browser.close();
  if (instance) await instance.stop();
});

// Waits until a chart's canvas holds more than `min` pixels close to a line colour (default: the
// CPU total line's green, #73bf69) and returns how many: a chart draws on its next animation
// frame after its data arrives, later on a loaded machine, so the test waits for the frame
// rather than looking once. Resolves with the last count when 15 s pass without it.
export async function drawnPixels(page, selector, rgb = [0x73, 0xbf, 0x69], min = 0) {
  // With `above` set: the count once it is above that (else false); without: the count now.
  // The count is taken from the poll that saw it, not re-read: a live chart redraws between two
  // reads, and a fresh server's line spans only a few pixels of the range.
  const count = ({ selector, want, above }) => {
    const canvas = document.querySelector(selector + ' canvas');
    let n = 0;
    if (canvas && canvas.width > 0 && canvas.height > 0) {
      const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
      for (let i = 0; i < data.length; i += 4) {
        const d = Math.abs(data[i] - want[0]) + Math.abs(data[i + 1] - want[1]) + Math.abs(data[i + 2] - want[2]);
        if (data[i + 3] > 0 && d < 90) n++;
      }
    }
    return above === undefined ? n : (n > above ? n : false);
  };
  try {
    const seen = await page.waitForFunction(count, { selector, want: rgb, above: min }, { timeout: 15000, polling: 100 });
    return await seen.jsonValue();
  } catch {
    // Not drawn in time: the caller's assertion says what is missing.
  }
  return page.evaluate(count, { selector, want: rgb });
}

// Waits until the CPU chart's lines cover the stretch of the plot its data spans — at least
// 80 % of the pixel columns between its first and last value hold a line's colour, and at least
// a quarter the total's own (the per-core lines are drawn over it where they meet it), that
// stretch at least 8 px wide — and returns { span, drawn, total }. A pixel count alone depends
// on how long the server has run and on the value (a flat line at 100 % on a busy machine is
// one pixel thick at the plot's edge); this does not. The bound only guards against a hang:
// the stretch grows as samples arrive.
export async function cpuLineDrawn(page, rgb = [0x73, 0xbf, 0x69]) {
  const covered = (total) => {
    const c = window.perfscope.charts.cpu;
    const p = c.plot;
    const canvas = document.querySelector('[data-testid=chart-cpu] canvas');
    if (!p || !canvas || canvas.width === 0) return false;
    const hex = (s) => (typeof s === 'string' && /^#[0-9a-f]{6}$/i.test(s)
      ? [1, 3, 5].map((i) => parseInt(s.slice(i, i + 2), 16)) : null);
    const colours = p.series.map((s, i) => (i === 0 ? null : hex(typeof s.stroke === 'function' ? s.stroke(p, i) : s.stroke)))
      .filter(Boolean);
    const near = (data, i, want) => data[i + 3] > 0 &&
      Math.abs(data[i] - want[0]) + Math.abs(data[i + 1] - want[1]) + Math.abs(data[i + 2] - want[2]) < 90;
    const values = c.cols[0];
    const first = values.findIndex((v) => v !== null);
    const last = values.findLastIndex((v) => v !== null);
    if (first < 0) return false;
    const left = Math.max(p.bbox.left, Math.floor(p.valToPos(c.xs[first], 'x', true)));
    const right = Math.min(p.bbox.left + p.bbox.width - 1, Math.ceil(p.valToPos(c.xs[last], 'x', true)));
    if (right - left < 8) return false;
    const { data, width } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
    const height = data.length / 4 / width;
    let drawn = 0, own = 0;
    for (let x = left; x <= right; x++) {
      let any = false, mine = false;
      for (let y = 0; y < height && !(any && mine); y++) {
        const i = (y * width + x) * 4;
        if (!mine && near(data, i, total)) mine = any = true;
        else if (!any && colours.some((want) => near(data, i, want))) any = true;
      }
      drawn += any;
      own += mine;
    }
    const span = right - left + 1;
    return drawn >= 0.8 * span && own >= 0.25 * span ? { span, drawn, total: own } : false;
  };
  try {
    return await (await page.waitForFunction(covered, rgb, { timeout: 90000, polling: 200 })).jsonValue();
  } catch {
    return null;  // the caller's assertion says what is missing
  }
}

// Opens a view as a person does, by its link in the navigation (the overview shows a summary:
// most panels live in a view of their own).
export async function showView(page, view) {
  await page.click(`[data-testid=views] a[data-view-link="${view}"]`);
  await page.waitForFunction((v) => document.body.dataset.currentView === v, view, { timeout: 5000 });
}
