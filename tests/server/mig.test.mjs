// MIG through the real binary and the stand-in NVML (this machine's GPU must never be switched
// into MIG mode): a GPU in MIG mode with two instances, one process of this test in each. The
// instances are devices of their own in /api/v1/devices and /metrics, with their memory; each
// process is attributed to its instance, once, not to the parent GPU as well.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startPerfscope } from '../support/perfscope_server.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const dataDir = mkdtempSync(path.join(tmpdir(), 'perfscope-mig-'));
let server, a, b;

function script() {
  // The parent lists every process of every instance, as NVML does in MIG mode.
  return ['count 1', '0.name NVIDIA H100 80GB HBM3', '0.uuid GPU-mig', '0.util_gpu 40', '0.mem_total 85520809984',
          '0.mem_used 9000000000', '0.power_mw 300000', '0.limit_mw 700000', '0.temp 60', '0.mig_mode 1', '0.mig_max 7',
          `0.procs ${a.pid}:3221225472,${b.pid}:1073741824`,
          '0/0.uuid MIG-one', '0/0.name NVIDIA H100 80GB HBM3 MIG 3g.40gb', '0/0.gi 1', '0/0.ci 0',
          '0/0.mem_total 42949672960', '0/0.mem_used 3221225472', '0/0.mem_reserved 0', `0/0.procs ${a.pid}:3221225472`,
          '0/5.uuid MIG-two', '0/5.name NVIDIA H100 80GB HBM3 MIG 1g.10gb', '0/5.gi 13', '0/5.ci 0',
          '0/5.mem_total 10737418240', '0/5.mem_used 1073741824', '0/5.mem_reserved 0', `0/5.procs ${b.pid}:1073741824`,
  ].join('\n') + '\n';
}
async function get(p) {
  const r = await fetch(server.url + p);
  return { status: r.status, body: p === '/metrics' ? await r.text() : await r.json() };
}
// The exposition as series → value ("perfscope_gpu_memory_total_bytes{…}" → number).
async function metrics() {
  const series = new Map();
  for (const line of (await get('/metrics')).body.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    series.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return series;
}

before(async () => {
  a = spawn('sleep', ['60']);
  b = spawn('sleep', ['60']);
  server = await startPerfscope({ label: 'mig', dataDir, nvmlScript: script(),
                                  args: ['--sampling-interval-ms', '100', '--gpu-process-interval-ms', '200'] });
  await sleep(1500);
});

after(async () => {
  if (server) await server.stop();
  a.kill();
  b.kill();
  rmSync(dataDir, { recursive: true, force: true });
});

test('each MIG instance is a device with its identity, parent and labels', async () => {
  const { status, body } = await get('/api/v1/devices');
  assert.equal(status, 200);
  assert.deepEqual(body.gpus.map((g) => g.uuid), ['GPU-mig', 'MIG-one', 'MIG-two']);
  const [parent, one, two] = body.gpus;
  assert.equal(parent.mig_mode, true);
  assert.equal(parent.mig, undefined);
  assert.equal(one.name, 'NVIDIA H100 80GB HBM3 MIG 3g.40gb');
  assert.deepEqual(one.mig, { parent_uuid: 'GPU-mig', gpu_instance_id: 1, compute_instance_id: 0 });
  assert.deepEqual(two.labels, { gpu: '0', gpu_instance: '13', compute_instance: '0', uuid: 'MIG-two' });
  assert.equal(one.pci_bus_id, parent.pci_bus_id);
  assert.ok(one.unsupported.includes('utilization'), JSON.stringify(one.unsupported));
});

test('instances have their own memory series; the board figures stay the GPU\'s', async () => {
  const m = await metrics();
  assert.equal(m.get('perfscope_gpu_memory_total_bytes{compute_instance="0",gpu="0",gpu_instance="1",uuid="MIG-one"}'), 42949672960);
  assert.equal(m.get('perfscope_gpu_memory_used_bytes{compute_instance="0",gpu="0",gpu_instance="13",uuid="MIG-two"}'), 1073741824);
  assert.equal(m.get('perfscope_gpu_power_watts{gpu="0",uuid="GPU-mig"}'), 300);
  for (const key of m.keys()) {
    if (key.includes('MIG-')) assert.ok(!key.startsWith('perfscope_gpu_power'), key);
  }
});

test('processes are attributed to their instance, once', async () => {
  const { status, body } = await get('/api/v1/processes?window=5m');
  assert.equal(status, 200);
  const rows = body.processes.filter((p) => p.pid === a.pid || p.pid === b.pid);
  assert.equal(rows.length, 2, JSON.stringify(body.processes));
  assert.equal(rows.find((p) => p.pid === a.pid).gpu_uuid, 'MIG-one');
  assert.equal(rows.find((p) => p.pid === b.pid).gpu_uuid, 'MIG-two');
  assert.equal(rows.find((p) => p.pid === a.pid).peak_memory_bytes, 3221225472);
  const series = [...(await metrics()).keys()].filter((k) => k.startsWith('perfscope_gpu_process_memory_bytes{'));
  assert.equal(series.length, 2, series.join('\n'));
  assert.ok(series.every((k) => /uuid="MIG-/.test(k)), series.join('\n'));
});
