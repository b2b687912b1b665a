// The dashboard tab's memory over a long live session (issue 23): a Release server samples the
// host every 100 ms; headless Chromium keeps the overview open, live, for MINUTES; every
// EVERY minutes the tab's JS heap and DOM nodes (DevTools protocol) and the page's renderer
// process's proportional set size (/proc) are recorded. Prints one line per reading and the slope.
//
// Usage: node bench/dashboard_memory.mjs PERFSCOPE_BIN [MINUTES=60] [EVERY=5]
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startPerfscope } from '../tests/support/perfscope_server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '..', 'web', 'package.json'));
const { chromium } = require('playwright-core');

const [bin, minutesArg, everyArg] = process.argv.slice(2);
if (!bin) {
  console.error('usage: node bench/dashboard_memory.mjs PERFSCOPE_BIN [MINUTES] [EVERY]');
  process.exit(2);
}
process.env.PERFSCOPE_BIN = path.resolve(bin);
const minutes = Number(minutesArg || 60), every = Number(everyArg || 5);

// Proportional set size (shared pages split among their users) of the largest renderer process
// of this browser, in bytes: the page's (a headless browser keeps a spare renderer or two).
function rendererPss(browserPid) {
  let largest = 0;
  const children = (pid) => {
    try { return execFileSync('pgrep', ['-P', String(pid)]).toString().trim().split('\n').filter(Boolean).map(Number); } catch { return []; }
  };
  const stack = [browserPid];
  while (stack.length) {
    const pid = stack.pop();
    for (const c of children(pid)) stack.push(c);
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (!cmd.includes('--type=renderer')) continue;
      const pss = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8').match(/^Pss:\s+(\d+) kB/m);
      if (pss) largest = Math.max(largest, Number(pss[1]) * 1024);
    } catch { /* gone */ }
  }
  return largest;
}

const server = await startPerfscope({ args: ['--enable-gpu-collector', 'false'], label: 'tab-memory' });
const browser = await chromium.launch({ executablePath: process.env.PERFSCOPE_CHROMIUM || '/usr/bin/chromium',
                                        headless: true, args: ['--no-sandbox', '--disable-gpu'] });
try {
  const browserPid = Number(execFileSync('pgrep', ['-n', '-f', 'chromium.*--remote-debugging-pipe']).toString().trim());
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Performance.enable');
  await page.goto(server.url + '/?view=overview');
  await page.waitForFunction(() => window.perfscope && window.perfscope.state.connection === 'live', null, { timeout: 20000 });
  const readings = [];
  for (let m = 0; m <= minutes; m += every) {
    if (m > 0) await new Promise((resolve) => setTimeout(resolve, every * 60_000));
    const { metrics } = await cdp.send('Performance.getMetrics');
    const metric = (name) => metrics.find((x) => x.name === name)?.value;
    const r = { minute: m, js_heap_used: metric('JSHeapUsedSize'), js_heap_total: metric('JSHeapTotalSize'),
                nodes: metric('Nodes'), renderer_pss: rendererPss(browserPid),
                messages: await page.evaluate(() => window.perfscope.state.messages) };
    readings.push(r);
    console.log(JSON.stringify(r));
  }
  const first = readings[1] || readings[0], last = readings[readings.length - 1];
  const mib = (b) => (b / 1048576).toFixed(1);
  console.log(`after ${last.minute} min live: renderer PSS ${mib(last.renderer_pss)} MiB, JS heap ${mib(last.js_heap_used)} MiB used of ` +
              `${mib(last.js_heap_total)}, ${last.nodes} DOM nodes, ${last.messages} stream messages; from minute ${first.minute}: ` +
              `PSS ${mib(last.renderer_pss - first.renderer_pss)} MiB, heap ${mib(last.js_heap_used - first.js_heap_used)} MiB`);
} finally {
  await browser.close();
  await server.stop();
}
