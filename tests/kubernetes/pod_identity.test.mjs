// Pod identity on a Kubernetes node: the real server asks a stand-in kubelet (a real gRPC
// server on a unix socket, kubelet_standin.py) which pod holds which GPU, and names GPUs and
// their processes after it. The processes live in a procfs fixture tree (--procfs) whose cgroups
// put them in pods, the GPUs and their process lists come from the stand-in NVML.
//
//   GPU 0 (GPU-a)  held by serving/llm-0 (vllm):      pids 4101 and 4102, in that pod
//   GPU 1 (GPU-b)  held by research/train-1 (trainer): pid 4201 in that pod; pid 4301, a host process
//   GPU 2 (GPU-c)  shared by two pods (time-slicing replicas GPU-c::0 and GPU-c::1): pid 4401
//   GPU 3 (GPU-d)  held by research/solo (x): pid 4601 of that pod, and pid 4602 of a pod that sees
//                  every GPU (NVIDIA_VISIBLE_DEVICES=all): which is whose, PodResources cannot say
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startPerfscope } from '../support/perfscope_server.mjs';
import { launchChromium } from '../support/browser.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const dir = mkdtempSync(path.join(tmpdir(), 'perfscope-pods-'));
const socket = path.join(dir, 'kubelet.sock');
const answerFile = path.join(dir, 'pods.json');
const proc = path.join(dir, 'proc');
const GiB = 2 ** 30;

const podUid = { llm: '0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0', train: '11111111-2222-3333-4444-555555555555',
                 a: 'aaaaaaaa-0000-0000-0000-000000000001', b: 'bbbbbbbb-0000-0000-0000-000000000002',
                 solo: 'cccccccc-0000-0000-0000-000000000003', all: 'dddddddd-0000-0000-0000-000000000004' };
const containerId = (n) => String(n).repeat(64).slice(0, 64);
const kubeCgroup = (uid, id) => `0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${uid.replaceAll('-', '_')}.slice/cri-containerd-${id}.scope\n`;
const processes = [
  { pid: 4101, comm: 'python3', gpu: 0, mem: 6 * GiB, cgroup: kubeCgroup(podUid.llm, containerId(1)) },
  { pid: 4102, comm: 'python3', gpu: 0, mem: 2 * GiB, cgroup: kubeCgroup(podUid.llm, containerId(1)) },
  { pid: 4201, comm: 'torchrun', gpu: 1, mem: 10 * GiB, cgroup: kubeCgroup(podUid.train, containerId(2)) },
  { pid: 4301, comm: 'nvidia-smi', gpu: 1, mem: GiB, cgroup: '0::/system.slice/ssh.service\n' },
  { pid: 4401, comm: 'python3', gpu: 2, mem: 3 * GiB, cgroup: kubeCgroup(podUid.a, containerId(3)) },
  { pid: 4601, comm: 'python3', gpu: 3, mem: GiB, cgroup: kubeCgroup(podUid.solo, containerId(4)) },
  { pid: 4602, comm: 'python3', gpu: 3, mem: GiB, cgroup: kubeCgroup(podUid.all, containerId(5)) },
];
const gpuDevice = (name, ids) => ({ resource_name: 'nvidia.com/gpu', device_ids: ids, name });
const pods = (llmName) => [
  { name: llmName, namespace: 'serving', containers: [{ name: 'vllm', devices: [gpuDevice('', ['GPU-a'])] }] },
  { name: 'train-1', namespace: 'research', containers: [
    { name: 'sidecar', devices: [] },
    { name: 'trainer', devices: [gpuDevice('', ['GPU-b']), { resource_name: 'example.com/fpga', device_ids: ['0', '1'] }] }] },
  { name: 'notebook-a', namespace: 'research', containers: [{ name: 'jupyter', devices: [gpuDevice('', ['GPU-c::0'])] }] },
  { name: 'notebook-b', namespace: 'research', containers: [{ name: 'jupyter', devices: [gpuDevice('', ['GPU-c::1'])] }] },
  { name: 'solo', namespace: 'research', containers: [{ name: 'x', devices: [gpuDevice('', ['GPU-d'])] }] },
];
function answer(spec) {
  writeFileSync(answerFile + '.new', JSON.stringify(spec));
  renameSync(answerFile + '.new', answerFile);
}

// A procfs with the fields perfscope reads: stat (start time, CPU, RSS), comm, cmdline, status, cgroup.
function writeProc() {
  mkdirSync(proc, { recursive: true });
  writeFileSync(path.join(proc, 'stat'), 'cpu  100 0 100 1000 0 0 0 0 0 0\nbtime 1700000000\n');
  for (const p of processes) {
    const d = path.join(proc, String(p.pid));
    mkdirSync(d, { recursive: true });
    const fields = [p.pid, `(${p.comm})`, 'S', ...Array(18).fill(0), 5000 + p.pid, 0, 2048];  // 22: start, 24: rss pages
    fields[13] = 300; fields[14] = 100;  // utime, stime
    writeFileSync(path.join(d, 'stat'), fields.join(' ') + '\n');
    writeFileSync(path.join(d, 'comm'), p.comm + '\n');
    writeFileSync(path.join(d, 'cmdline'), `${p.comm}\0serve.py\0`);
    writeFileSync(path.join(d, 'status'), `Name:\t${p.comm}\nUid:\t1000\t1000\t1000\t1000\n`);
    writeFileSync(path.join(d, 'cgroup'), p.cgroup);
  }
}

function nvmlScript() {
  const lines = ['count 4'];
  ['a', 'b', 'c', 'd'].forEach((u, i) => {
    lines.push(`${i}.name NVIDIA H100 80GB HBM3`, `${i}.uuid GPU-${u}`, `${i}.mem_total 85520809984`, `${i}.power_mw 200000`);
    const on = processes.filter((p) => p.gpu === i);
    lines.push(`${i}.procs ` + on.map((p) => `${p.pid}:${p.mem}`).join(','));
  });
  return lines.join('\n') + '\n';
}

let kubelet, server;
function startKubelet() {
  rmSync(socket, { force: true });
  const child = spawn('/usr/bin/python3', [path.join(here, 'kubelet_standin.py'), socket, answerFile], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (d) => { if (String(d).includes('ready')) resolve(child); });
    child.on('exit', (code) => reject(new Error('the stand-in kubelet exited with ' + code)));
  });
}
const serverArgs = ['--procfs', proc, '--enable-host-collector', 'false', '--pod-resources-socket', socket,
                    '--pod-resources-interval-ms', '300', '--sampling-interval-ms', '100', '--gpu-process-interval-ms', '200'];
const get = async (p) => (await fetch(server.url + p)).json();
// Polls until `check` of the answer holds, or gives the last answer to the assertion that follows.
async function until(p, check, tries = 100) {
  let body;
  for (let i = 0; i < tries; i++) {
    body = await get(p);
    if (check(body)) return body;
    await sleep(100);
  }
  return body;
}
const byPid = (body, pid) => body.processes.find((p) => p.pid === pid);

before(async () => {
  writeProc();
  mkdirSync(path.join(dir, 'data'));
  answer({ pods: pods('llm-0') });
  kubelet = await startKubelet();
  server = await startPerfscope({ label: 'pods', dataDir: path.join(dir, 'data'), nvmlScript: nvmlScript(), args: serverArgs });
});

after(async () => {
  if (server) await server.stop();
  if (kubelet && kubelet.exitCode === null) kubelet.kill();
  rmSync(dir, { recursive: true, force: true });
});

test('every GPU lists the containers the kubelet says hold it', async () => {
  const body = await until('/api/v1/devices', (b) => b.gpus.length === 4 && b.gpus[0].pods.length > 0);
  const holders = Object.fromEntries(body.gpus.map((g) => [g.uuid, g.pods]));
  assert.deepEqual(holders['GPU-a'], [{ namespace: 'serving', pod: 'llm-0', container: 'vllm' }]);
  assert.deepEqual(holders['GPU-b'], [{ namespace: 'research', pod: 'train-1', container: 'trainer' }]);
  assert.deepEqual(holders['GPU-c'], [{ namespace: 'research', pod: 'notebook-a', container: 'jupyter' },
                                      { namespace: 'research', pod: 'notebook-b', container: 'jupyter' }]);
  const info = await get('/api/v1/info');
  const kubeletInfo = info.collectors.find((c) => c.name === 'kubelet');
  assert.equal(kubeletInfo.enabled, true);
  assert.deepEqual(kubeletInfo.sources, [{ name: 'pod-resources', available: true, detail: `${socket}: 5 pods, 5 NVIDIA devices held` }]);
});

test('processes are named after their pod, namespace and container; others are not', async () => {
  const body = await until('/api/v1/processes?window=5m', (b) => byPid(b, 4101)?.container?.pod && byPid(b, 4401));
  const container = (pid) => byPid(body, pid).container;
  assert.deepEqual({ ...container(4101) }, { runtime: 'containerd', id: containerId(1), pod_uid: podUid.llm, qos_class: 'burstable',
                                             namespace: 'serving', pod: 'llm-0', name: 'vllm' });
  assert.equal(container(4201).pod, 'train-1');
  assert.equal(container(4201).name, 'trainer');
  assert.equal(container(4301), null);  // a host process on a GPU a pod holds is not the pod's
  // Two pods share GPU 2: PodResources gives no pod UIDs to tell which one 4401 is, so neither.
  assert.equal(container(4401).pod_uid, podUid.a);
  assert.equal(container(4401).pod, null);
  assert.equal(container(4401).name, null);
  // One container holds GPU 3, but processes of two pods use it: neither is named after it.
  assert.equal(container(4601).pod, null);
  assert.equal(container(4602).pod, null);
});

test('group=pod and group=namespace sum the processes', async () => {
  const byPod = await until('/api/v1/processes?window=5m&group=pod', (b) => b.pods?.length === 3);
  const row = (pod) => byPod.pods.find((g) => (g.pod ? g.pod.pod : null) === pod);
  assert.equal(row('llm-0').processes, 2);
  assert.equal(row('llm-0').peak_memory_bytes_sum, 8 * GiB);
  assert.deepEqual(row('llm-0').pod, { namespace: 'serving', pod: 'llm-0', pod_uid: podUid.llm });
  assert.equal(row('train-1').processes, 1);
  assert.equal(row('train-1').peak_memory_bytes_sum, 10 * GiB);
  assert.equal(row(null).processes, 4);  // the host process, the shared GPU's, and GPU 3's two
  assert.equal(byPod.pods.reduce((n, g) => n + g.processes, 0), byPod.processes.length);

  const byNamespace = await get('/api/v1/processes?window=5m&group=namespace');
  const ns = Object.fromEntries(byNamespace.namespaces.map((g) => [g.namespace, g]));
  assert.equal(ns.serving.processes, 2);
  assert.equal(ns.research.processes, 1);
  assert.equal(ns.null.processes, 4);
  const bad = await fetch(server.url + '/api/v1/processes?group=node');
  assert.equal(bad.status, 400);
  assert.equal((await bad.json()).error.field, 'group');
});

test('per-process and per-GPU series carry the names', async () => {
  let text = '';
  const line = (re) => text.split('\n').find((l) => re.test(l));
  // The pod's names reach a process's series at the first pass after the kubelet answered.
  const named = () => /perfscope_gpu_pod_info\{/.test(text) && /pod="llm-0"/.test(line(/^perfscope_gpu_process_memory_bytes\{.*pid="4101"/) ?? '');
  for (let i = 0; i < 50 && !named(); i++) {
    text = await (await fetch(server.url + '/metrics')).text();
    await sleep(100);
  }
  const memory = line(/^perfscope_gpu_process_memory_bytes\{.*pid="4101"/);
  assert.ok(memory, text.slice(0, 2000));
  assert.match(memory, /container="vllm"/);
  assert.match(memory, /namespace="serving"/);
  assert.match(memory, /pod="llm-0"/);
  assert.match(line(/^perfscope_gpu_process_memory_bytes\{.*pid="4401"/), /container="[0-9a-f]{12}"/);  // its short id
  assert.doesNotMatch(line(/^perfscope_gpu_process_memory_bytes\{.*pid="4401"/), /pod=/);
  assert.equal(Number(line(/^perfscope_gpu_container_memory_bytes\{.*pod="llm-0"/).split(' ').pop()), 8 * GiB);
  const info = text.split('\n').filter((l) => l.startsWith('perfscope_gpu_pod_info{'));
  assert.equal(info.length, 5, info.join('\n'));
  assert.ok(info.some((l) => /container="vllm"/.test(l) && /gpu="0"/.test(l) && /pod="llm-0"/.test(l) && / 1$/.test(l)), info.join('\n'));
});

test('the Processes view names each process after its pod, as kubectl does', async () => {
  const browser = await launchChromium();
  try {
    for (const width of [1440, 390]) {
      const page = await browser.newPage({ viewport: { width, height: 900 } });
      await page.goto(server.url + '/?view=processes');
      await page.waitForSelector('[data-testid=processes-table] tr[data-key^="4101-"]', { timeout: 20000 });
      const cells = async (pid) => page.$$eval(`[data-testid=processes-table] tr[data-key^="${pid}-"] td`, (tds) => tds.map((t) => t.textContent));
      assert.equal((await cells(4101))[3], 'serving/llm-0 · vllm');
      assert.equal((await cells(4201))[3], 'research/train-1 · trainer');
      assert.equal((await cells(4401))[3], 'containerd:333333333333');  // the shared GPU's: no pod named
      assert.equal((await cells(4301))[3], 'ssh.service');
      if (process.env.PERFSCOPE_ARTIFACTS) {
        mkdirSync(process.env.PERFSCOPE_ARTIFACTS, { recursive: true });
        for (const colorScheme of ['dark', 'light']) {
          await page.emulateMedia({ colorScheme });
          await page.screenshot({ path: path.join(process.env.PERFSCOPE_ARTIFACTS, `processes-pods-${width}-${colorScheme}.png`), fullPage: true });
        }
      }
      await page.close();
    }
  } finally {
    await browser.close();
  }
});

test('a pod replaced on a GPU replaces its holder; a failing kubelet keeps the last answer and says why', async () => {
  answer({ pods: pods('llm-1') });
  let body = await until('/api/v1/devices', (b) => b.gpus[0].pods[0]?.pod === 'llm-1');
  assert.equal(body.gpus[0].pods[0].pod, 'llm-1');
  let text = '';
  for (let i = 0; i < 50; i++) {
    text = await (await fetch(server.url + '/metrics')).text();
    if (/perfscope_gpu_container_memory_bytes\{[^}]*pod="llm-1"/.test(text) && !/pod="llm-0"/.test(text)) break;
    await sleep(100);
  }
  assert.doesNotMatch(text, /perfscope_gpu_pod_info\{[^}]*pod="llm-0"/);  // retired, not left at 1
  assert.doesNotMatch(text, /perfscope_gpu_container_[a-z_]+\{[^}]*pod="llm-0"/);  // the sums too
  assert.match(text, /perfscope_gpu_container_memory_bytes\{[^}]*pod="llm-1"/);
  assert.match(text, /perfscope_gpu_pod_info\{[^}]*pod="llm-1"/);

  answer({ pods: [], status: 12, message: 'List is switched off on this kubelet' });
  const info = await until('/api/v1/info', (b) => !b.collectors.find((c) => c.name === 'kubelet').sources[0].available);
  const source = info.collectors.find((c) => c.name === 'kubelet').sources[0];
  assert.equal(source.available, false);
  assert.match(source.detail, /gRPC status 12: List is switched off on this kubelet/);
  for (let i = 0; i < 50 && !/^perfscope_kubelet_pod_resources_up 0$/m.test(text); i++) {  // the sampler's next pass
    text = await (await fetch(server.url + '/metrics')).text();
    await sleep(100);
  }
  assert.match(text, /^perfscope_kubelet_pod_resources_up 0$/m);
  body = await get('/api/v1/devices');
  assert.equal(body.gpus[0].pods[0].pod, 'llm-1');  // pods rarely move: the last answer stands

  kubelet.kill();
  await new Promise((r) => kubelet.once('exit', r));
  rmSync(socket, { force: true });
  const gone = await until('/api/v1/info', (b) => /cannot connect/.test(b.collectors.find((c) => c.name === 'kubelet').sources[0].detail));
  assert.match(gone.collectors.find((c) => c.name === 'kubelet').sources[0].detail, new RegExp(`PodResources at ${socket}: cannot connect`));
});

test('the names are stored with the processes and read back after a restart', async () => {
  await server.stop();
  server = await startPerfscope({ label: 'pods', dataDir: path.join(dir, 'data'), nvmlScript: 'count 0\n',
                                  args: serverArgs });
  const body = await get('/api/v1/processes?window=1h');
  const p = byPid(body, 4101);
  assert.ok(p, JSON.stringify(body.processes.map((x) => x.pid)));
  assert.equal(p.container.namespace, 'serving');
  assert.equal(p.container.name, 'vllm');
  assert.match(p.container.pod, /^llm-[01]$/);
  const devices = await get('/api/v1/devices');
  assert.deepEqual(devices.gpus, []);
});
