// GPU processes on the real binary: the scripted stand-in NVML lists two real processes of this
// test (sleep children, so procfs knows them) with their memory and SM shares, refreshed as the
// driver would every 200 ms. perfscope lists them live with their lifetime figures, keeps the
// one that ended, splits the board's energy by SM share, groups by container, answers one
// process with its series, and after a restart still knows both from the store.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startPerfscope, postEvents } from '../support/perfscope_server.mjs';
import { launchChromium } from '../support/browser.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const dataDir = mkdtempSync(path.join(tmpdir(), 'perfscope-processes-'));
const base = ['count 1', '0.name NVIDIA H100 80GB HBM3', '0.uuid GPU-proc', '0.util_gpu 90', '0.mem_total 85520809984',
              '0.mem_used 9000000000', '0.power_mw 300000', '0.limit_mw 700000', '0.temp 60'];
let server, a, b, refresher;
let listed = [];  // [[pid, memory, sm]]

function script() {
  const now = Date.now() * 1000;  // the driver's sample time, in µs
  const lines = [...base];
  if (listed.length) {
    lines.push('0.procs ' + listed.map(([pid, mem]) => `${pid}:${mem}`).join(','));
    lines.push('0.proc_util ' + listed.map(([pid, , sm]) => `${pid}:${sm}:10:0:0@${now}`).join(','));
  }
  return lines.join('\n') + '\n';
}
// Replaced whole (a rename), never rewritten in place: the stand-in must not read half a file.
function refresh() {
  writeFileSync(path.join(dataDir, 'nvml.txt.new'), script());
  renameSync(path.join(dataDir, 'nvml.txt.new'), path.join(dataDir, 'nvml.txt'));
}
async function get(p) {
  const r = await fetch(server.url + p);
  return { status: r.status, body: await r.json() };
}
const byPid = (rows, pid) => rows.find((p) => p.pid === pid);

before(async () => {
  a = spawn('sleep', ['60']);
  b = spawn('sleep', ['60']);
  listed = [[a.pid, 6 * 2 ** 30, 80], [b.pid, 2 * 2 ** 30, 20]];
  server = await startPerfscope({ label: 'processes', dataDir, nvmlScript: script(), args: ['--sampling-interval-ms', '100', '--gpu-process-interval-ms', '200'] });
  refresher = setInterval(refresh, 200);
  await sleep(2000);
});

after(async () => {
  clearInterval(refresher);
  if (server) await server.stop();
  a.kill();
  b.kill();
  rmSync(dataDir, { recursive: true, force: true });
});

test('live processes are listed with who they are and what they used', async () => {
  const { status, body } = await get('/api/v1/processes?window=5m');
  assert.equal(status, 200);
  const pa = byPid(body.processes, a.pid), pb = byPid(body.processes, b.pid);
  assert.ok(pa && pb, JSON.stringify(body.processes));
  assert.equal(pa.state, 'running');
  assert.equal(pa.command, 'sleep');
  assert.equal(pa.cmdline, 'sleep 60');
  assert.match(pa.key, new RegExp(`^${a.pid}-\\d+$`));  // pid and start time
  assert.equal(pa.visible, true);
  assert.equal(pa.gpu, '0');
  assert.equal(pa.gpu_uuid, 'GPU-proc');
  assert.equal(pa.peak_memory_bytes, 6 * 2 ** 30);
  assert.ok(Math.abs(pa.mean_sm_ratio - 0.8) < 1e-9, JSON.stringify(pa));
  assert.ok(pa.gpu_seconds > 0.5 && pa.energy_joules > 0);
  // 300 W split 80:20 while both ran.
  assert.ok(Math.abs(pa.energy_joules / pb.energy_joules - 4) < 0.05, `${pa.energy_joules} / ${pb.energy_joules}`);
  assert.equal(pa.user.length > 0, true);
  assert.match(body.methods.energy, /split by the processes' SM shares/);
});

test('a process that ended stays, and its series are answered over its lifetime', async () => {
  listed = [[a.pid, 6 * 2 ** 30, 80]];
  refresh();
  b.kill();
  await sleep(800);
  const { body } = await get('/api/v1/processes?window=5m');
  const pb = byPid(body.processes, b.pid);
  assert.equal(pb.state, 'exited');
  assert.ok(pb.last_seen_ns < Date.now() * 1e6);
  assert.equal(byPid(body.processes, a.pid).state, 'running');
  const one = await get(`/api/v1/processes/${pb.key}`);
  assert.equal(one.status, 200, JSON.stringify(one.body));
  const memory = one.body.series.find((s) => s.name === 'gpu_process_memory_bytes');
  assert.ok(memory && memory.points.length > 5, JSON.stringify(one.body.series.map((s) => s.name)));
  assert.ok(memory.points.every(([ts]) => ts >= pb.first_seen_ns && ts <= pb.last_seen_ns));
  assert.equal((await get('/api/v1/processes/1-1')).status, 404);
});

test('a run shows what NVML saw of its processes, and lists them', async () => {
  const start = Date.now() * 1e6 - 10e9;
  await postEvents(server.url, [{ type: 'run', name: 'decode', command: ['sleep', '60'], pids: [a.pid], start_ns: start }]);
  const run = await get('/api/v1/runs/decode');
  assert.equal(run.status, 200, JSON.stringify(run.body));
  assert.equal(run.body.gpu_processes.processes, 1);  // b is not the run's
  assert.equal(run.body.gpu_processes.peak_memory_bytes, 6 * 2 ** 30);
  assert.ok(Math.abs(run.body.gpu_processes.mean_sm_ratio - 0.8) < 1e-9);
  const listed = await get('/api/v1/processes?run=decode');
  assert.deepEqual(listed.body.processes.map((p) => p.pid), [a.pid]);
});

test('grouping by container and checking the parameters', async () => {
  const { body } = await get('/api/v1/processes?window=5m&group=container');
  assert.equal(body.containers.length, 1);  // this test's processes run in no container of their own… or in one
  assert.equal(body.containers[0].processes, 2);
  const bad = await get('/api/v1/processes?group=user');
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error.field, 'group');
  assert.equal((await get('/api/v1/processes?gpu=7')).body.processes.length, 0);
  assert.equal((await get('/api/v1/processes?run=absent')).status, 404);
});

test('the Processes view lists them, sorts them and opens one\'s history', async () => {
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1400 } });
    await page.goto(server.url + '/?view=processes');
    await page.waitForSelector(`[data-testid=processes-table] tr[data-key^="${a.pid}-"]`, { timeout: 20000 });
    // The live one first, the one that ended after it (greyed), both with their commands.
    const states = await page.$$eval('[data-testid=processes-table] tbody tr', (rows) => rows.map((r) => r.dataset.state));
    assert.deepEqual(states, ['running', 'exited']);
    const live = await page.textContent(`[data-testid=processes-table] tr[data-key^="${a.pid}-"]`);
    assert.match(live, /6\.00 GiB/);
    assert.match(live, /80\.0%/);
    assert.match(live, /sleep 60/);
    // Sorting by PID ascending, then descending.
    await page.click('#processes-table th[data-key=pid]');
    const pids = await page.$$eval('[data-testid=processes-table] tbody tr', (rows) => rows.map((r) => r.children[1].textContent));
    assert.equal(pids[0], String(a.pid));  // live first whatever the order
    // One process's history.
    await page.click(`[data-testid=processes-table] tr[data-key^="${b.pid}-"]`);
    await page.waitForFunction(() => window.perfscope.state.process && window.perfscope.state.process.series.length > 0,
                               null, { timeout: 10000 });
    assert.match(await page.textContent('[data-testid=process-page-name]'), /sleep · pid \d+ · GPU \d/);
    assert.match(await page.textContent('[data-testid=process-detail]'), /^exited · peak/);
    assert.ok(await page.$('[data-testid=process-chart] canvas'), 'the history is drawn');
  } finally {
    await browser.close();
  }
});

test('after a restart the store still knows both', async () => {
  const before = (await get('/api/v1/processes?window=5m')).body.processes;
  clearInterval(refresher);
  // Stopped first: a pass of the old server between the refresh and its stop would see both gone.
  await server.stop();
  listed = [];
  refresh();
  server = await startPerfscope({ label: 'processes', dataDir, nvmlScript: script(), args: ['--sampling-interval-ms', '100', '--gpu-process-interval-ms', '200'] });
  await sleep(300);
  const { body } = await get('/api/v1/processes?window=1h');
  const pa = byPid(body.processes, a.pid), pb = byPid(body.processes, b.pid);
  assert.ok(pa && pb, JSON.stringify(body.processes));
  assert.equal(pb.state, 'exited');
  assert.equal(pa.state, 'unknown');  // it ran when the server stopped; nobody saw it end
  const was = byPid(before, a.pid);
  assert.ok(pa.energy_joules >= was.energy_joules && pa.gpu_seconds >= was.gpu_seconds);
});

// Unknown is not zero: on a GPU whose driver has no per-process utilization, processes get no
// share of the board's time or energy, and say so, rather than 0 J beside a board drawing 300 W.
test('without per-process SM shares, a process has its time and energy unknown, with the reason', async () => {
  const c = spawn('sleep', ['60']);
  let own;
  try {
    own = await startPerfscope({ label: 'no-shares', args: ['--sampling-interval-ms', '100', '--gpu-process-interval-ms', '200'],
                                 nvmlScript: [...base, `0.procs ${c.pid}:${2 ** 30}`, '0.process_utilization_rc 3'].join('\n') + '\n' });
    let pc;
    for (let i = 0; i < 100 && !(pc && pc.duration_s > 0.5); i++) {
      await sleep(100);
      pc = byPid((await (await fetch(own.url + '/api/v1/processes?window=5m')).json()).processes, c.pid);
    }
    assert.ok(pc && pc.duration_s > 0.5, JSON.stringify(pc));
    assert.equal(pc.peak_memory_bytes, 2 ** 30);
    for (const field of ['energy_joules', 'gpu_seconds', 'max_sm_ratio', 'mean_sm_ratio']) assert.equal(pc[field], null, field);
    assert.match(pc.unknown.energy_joules, /no SM share/);
    const grouped = (await (await fetch(own.url + '/api/v1/processes?window=5m&group=container')).json()).containers;
    assert.deepEqual(grouped.map((g) => g.energy_joules), [null]);
  } finally {
    c.kill();
    if (own) await own.stop();
  }
});
