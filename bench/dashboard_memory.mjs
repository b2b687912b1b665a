// The dashboard tab's memory over a long live session (issue 23): a Release server samples the
// host every 100 ms; headless Chromium keeps the overview open, live, for MINUTES; every
// EVERY minutes it records, for the page's renderer process:
//   - private_footprint: Chrome's own measure of a tab's memory (its task manager's "Memory
//     footprint"): the process's private resident and swapped pages, from a memory dump;
//   - pss and its parts from /proc (anonymous, file-backed, shared memory): the file part is the
//     browser's code, split among whichever processes map it, so it moves when others start;
//   - what each of Chrome's allocators holds (v8, blink_gc, partition_alloc, malloc, cc, canvas,
//     shared_memory, ...), from the same memory dump, to say where any growth is;
//   - the JS heap and DOM nodes and the stream messages the page received.
//
// The tab is opened as a user's is: Chromium is driven over its DevTools protocol directly, and
// on the page only the Performance domain is enabled. A test driver (Playwright) enables the
// Network domain on every page, and with it the renderer keeps each response body for the
// inspector (up to Chrome's buffer limit): memory a user's tab never holds. NETWORK=1 enables it
// too, to measure that difference.
//
// Usage: node --experimental-websocket bench/dashboard_memory.mjs PERFSCOPE_BIN [MINUTES=60] [EVERY=5]
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startPerfscope } from '../tests/support/perfscope_server.mjs';

const [bin, minutesArg, everyArg] = process.argv.slice(2);
if (!bin || typeof WebSocket === 'undefined') {
  console.error('usage: node --experimental-websocket bench/dashboard_memory.mjs PERFSCOPE_BIN [MINUTES] [EVERY]');
  process.exit(2);
}
process.env.PERFSCOPE_BIN = path.resolve(bin);
const minutes = Number(minutesArg || 60), every = Number(everyArg || 5);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// A DevTools protocol connection to the browser; a page's commands name its session.
class Cdp {
  constructor(url) {
    this.ws = new WebSocket(url);
    this.next = 1;
    this.waiting = new Map();
    this.listeners = new Map();
    this.ws.onmessage = (m) => {
      const msg = JSON.parse(m.data);
      if (msg.id && this.waiting.has(msg.id)) {
        const { resolve, reject } = this.waiting.get(msg.id);
        this.waiting.delete(msg.id);
        if (msg.error) reject(new Error(`${msg.error.message} (${msg.error.code})`)); else resolve(msg.result);
      } else if (msg.method) {
        for (const fn of this.listeners.get(msg.method) || []) fn(msg.params);
      }
    };
  }
  open() { return new Promise((resolve, reject) => { this.ws.onopen = resolve; this.ws.onerror = reject; }); }
  send(method, params = {}, sessionId = undefined) {
    const id = this.next++;
    this.ws.send(JSON.stringify({ id, method, params, sessionId }));
    return new Promise((resolve, reject) => this.waiting.set(id, { resolve, reject }));
  }
  on(method, fn) { this.listeners.set(method, [...(this.listeners.get(method) || []), fn]); }
  off(method, fn) { this.listeners.set(method, (this.listeners.get(method) || []).filter((f) => f !== fn)); }
}

// One memory dump of every process of the browser (the memory-infra trace category): per pid,
// Chrome's private footprint and the size of each top-level allocator, in bytes.
async function memoryDump(cdp) {
  const events = [];
  const collect = (p) => events.push(...p.value);
  cdp.on('Tracing.dataCollected', collect);
  const complete = new Promise((resolve) => {
    const done = () => { cdp.off('Tracing.tracingComplete', done); resolve(); };
    cdp.on('Tracing.tracingComplete', done);
  });
  await cdp.send('Tracing.start', {
    traceConfig: { includedCategories: ['disabled-by-default-memory-infra'], excludedCategories: ['*'],
                   memoryDumpConfig: { triggers: [] } },
    transferMode: 'ReportEvents',
  });
  await cdp.send('Tracing.requestMemoryDump', { deterministic: true, levelOfDetail: 'detailed' });
  await cdp.send('Tracing.end');
  await complete;
  cdp.off('Tracing.dataCollected', collect);
  const byPid = new Map();
  const entry = (pid) => byPid.get(pid) || byPid.set(pid, { private_footprint: 0, allocators: {} }).get(pid);
  for (const e of events) {
    const dumps = e.ph === 'v' ? e.args?.dumps : null;
    if (!dumps) continue;
    if (dumps.process_totals?.private_footprint_bytes) {
      entry(e.pid).private_footprint = parseInt(dumps.process_totals.private_footprint_bytes, 16);
    }
    for (const [name, node] of Object.entries(dumps.allocators || {})) {
      const size = node.attrs?.size?.value;
      if (name.includes('/') || !size || name === 'global') continue;
      entry(e.pid).allocators[name] = parseInt(size, 16);
    }
  }
  return byPid;
}

function smapsRollup(pid) {
  const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kb = (field) => Number((text.match(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm')) || [0, 0])[1]) * 1024;
  return { pss: kb('Pss'), pss_anon: kb('Pss_Anon'), pss_file: kb('Pss_File'), pss_shmem: kb('Pss_Shmem') };
}

const isRenderer = (pid) => {
  try { return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('--type=renderer'); } catch { return false; }
};

// Chromium with a DevTools port of its own choosing, written to DevToolsActivePort in its profile.
async function launchChromium() {
  const profile = mkdtempSync(path.join(os.tmpdir(), 'perfscope-tab-'));
  const child = spawn(process.env.PERFSCOPE_CHROMIUM || '/usr/bin/chromium',
                      ['--headless', '--no-sandbox', '--disable-gpu', '--window-size=1440,900', '--remote-debugging-port=0',
                       `--user-data-dir=${profile}`, '--no-first-run', 'about:blank'], { stdio: 'ignore' });
  for (let i = 0; i < 200; i++) {
    try {
      const [port, wsPath] = readFileSync(path.join(profile, 'DevToolsActivePort'), 'utf8').trim().split('\n');
      const cdp = new Cdp(`ws://127.0.0.1:${port}${wsPath}`);
      await cdp.open();
      const exited = new Promise((resolve) => child.once('exit', resolve));
      const close = async () => {
        child.kill();
        await exited;
        rmSync(profile, { recursive: true, force: true });
      };
      return { cdp, close };
    } catch { await sleep(100); }
  }
  child.kill();
  throw new Error('Chromium did not open its DevTools port');
}

const server = await startPerfscope({ args: ['--enable-gpu-collector', 'false'], label: 'tab-memory' });
const chromium = await launchChromium();
try {
  const { cdp } = chromium;
  const { targetId } = await cdp.send('Target.createTarget', { url: 'about:blank' });
  const { sessionId } = await cdp.send('Target.attachToTarget', { targetId, flatten: true });
  await cdp.send('Performance.enable', {}, sessionId);
  if (process.env.NETWORK === '1') await cdp.send('Network.enable', {}, sessionId);
  await cdp.send('Page.navigate', { url: server.url + '/?view=overview' }, sessionId);
  const evaluate = async (expression) =>
    (await cdp.send('Runtime.evaluate', { expression, returnByValue: true }, sessionId)).result.value;
  for (let i = 0; i < 200 && !(await evaluate('window.perfscope?.state.connection === "live"')); i++) await sleep(100);
  const readings = [];
  for (let m = 0; m <= minutes; m += every) {
    if (m > 0) await sleep(every * 60_000);
    const { metrics } = await cdp.send('Performance.getMetrics', {}, sessionId);
    const metric = (name) => metrics.find((x) => x.name === name)?.value;
    // The page's renderer: of the browser's renderers (a headless browser may keep a spare
    // one), the one whose canvases are in the dump.
    const dump = await memoryDump(cdp);
    const [pid, own] = [...dump].filter(([p, d]) => isRenderer(p) && d.allocators.canvas !== undefined)
      .sort((a, b) => b[1].private_footprint - a[1].private_footprint)[0] || [0, { private_footprint: 0, allocators: {} }];
    const r = { minute: m, private_footprint: own.private_footprint, ...(pid ? smapsRollup(pid) : {}),
                js_heap_used: metric('JSHeapUsedSize'), js_heap_total: metric('JSHeapTotalSize'), nodes: metric('Nodes'),
                messages: await evaluate('window.perfscope.state.messages'), allocators: own.allocators };
    readings.push(r);
    console.log(JSON.stringify(r));
  }
  const first = readings[1] || readings[0], last = readings[readings.length - 1];
  const mib = (b) => (b / 1048576).toFixed(1);
  console.log(`after ${last.minute} min live: private footprint ${mib(last.private_footprint)} MiB, PSS ${mib(last.pss)} MiB ` +
              `(anonymous ${mib(last.pss_anon)}, file ${mib(last.pss_file)}, shared memory ${mib(last.pss_shmem)}), JS heap ` +
              `${mib(last.js_heap_used)} MiB used of ${mib(last.js_heap_total)}, ${last.nodes} DOM nodes, ${last.messages} stream ` +
              `messages; from minute ${first.minute}: private footprint ${mib(last.private_footprint - first.private_footprint)} MiB, ` +
              `PSS ${mib(last.pss - first.pss)} MiB (anonymous ${mib(last.pss_anon - first.pss_anon)})`);
} finally {
  await chromium.close();
  await server.stop();
}
