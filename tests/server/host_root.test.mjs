// A node agent reads the host's procfs and sysfs mounted into its container (--procfs,
// --sysfs): the server started on fixture trees reads its host figures from them alone.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startPerfscope, runPerfscope } from '../support/perfscope_server.mjs';

const proc = path.join(process.env.PERFSCOPE_FIXTURES, 'vm', 'proc');
const sys = path.join(process.env.PERFSCOPE_FIXTURES, 'sensors', 'sys');
const memTotalKiB = Number(readFileSync(path.join(proc, 'meminfo'), 'utf8').match(/^MemTotal:\s+(\d+) kB/m)[1]);
let server;

before(async () => {
  server = await startPerfscope({ label: 'host-root', args: ['--procfs', proc, '--sysfs', sys, '--enable-gpu-collector', 'false'] });
});
after(async () => { await server.stop(); });

// The newest reading of every series named `name`, once the first sampling pass has made one.
async function latest(name) {
  for (let i = 0; i < 100; i++) {
    const body = await (await fetch(`${server.url}/api/v1/series`)).json();
    const found = body.series.filter((s) => s.name === name && s.latest).map((s) => ({ labels: s.labels, v: s.latest.value }));
    if (found.length) return found;
    await new Promise((r) => setTimeout(r, 100));
  }
  return [];
}

test('the host collector reads the given roots, and says so', async () => {
  const info = await (await fetch(`${server.url}/api/v1/info`)).json();
  const host = info.collectors.find((c) => c.name === 'host');
  const source = (name) => host.sources.find((s) => s.name === name);
  assert.equal(source('meminfo').available, true);
  assert.equal(source('meminfo').detail, path.join(proc, 'meminfo'));
  assert.equal(source('temperature').available, true);
  assert.ok(source('temperature').detail.startsWith(sys), source('temperature').detail);
});

test('every collector of the table is listed, on or off with the option that switches it, the running ones timed', async () => {
  let info;
  for (let i = 0; i < 100; i++) {  // after a pass has been timed
    info = await (await fetch(`${server.url}/api/v1/info`)).json();
    if (info.collectors.find((c) => c.name === 'host')?.passes > 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const byName = Object.fromEntries(info.collectors.map((c) => [c.name, c]));
  assert.deepEqual(Object.keys(byName), ['host', 'nvidia', 'scrape', 'kubelet']);
  assert.equal(byName.host.enabled, true);
  assert.ok(byName.host.passes > 0 && byName.host.last_pass_seconds > 0, JSON.stringify(byName.host));
  assert.deepEqual({ ...byName.nvidia }, { name: 'nvidia', enabled: false, option: '--enable-gpu-collector', sources: [],
                                           last_pass_seconds: null, mean_pass_seconds: null, passes: null });
  assert.equal(byName.scrape.enabled, false);
  assert.equal(byName.scrape.option, '--scrape');
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  assert.match(metrics, /^perfscope_collector_duration_seconds\{collector="host"\} [0-9.e-]+$/m);
  assert.match(metrics, /^perfscope_collector_seconds_total\{collector="host"\} [0-9.e-]+$/m);
  assert.doesNotMatch(metrics, /collector="nvidia"/);
});

test('its figures are the mounted tree\'s, not this machine\'s', async () => {
  const total = await latest('host_memory_total_bytes');
  assert.equal(total.at(-1).v, memTotalKiB * 1024);
  const temperatures = await latest('host_temperature_celsius');
  assert.ok(temperatures.some((p) => p.v === 45), JSON.stringify(temperatures.slice(0, 4)));
});

test('a root that is not procfs is refused at start, naming the option', async () => {
  const r = await runPerfscope(['serve', '--procfs', sys, '--data-dir', '/nonexistent-never-created']);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--procfs: '.*' is not a procfs mount \(it has no stat file\)/);
});
