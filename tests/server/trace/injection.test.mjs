// The injection library (libperfscope_cupti.so) end to end without a GPU, built with no CUDA
// toolkit: `perfscope run` starts a stand-in CUDA program (cuda_program) that loads the library
// as the CUDA driver does; the library finds a CUPTI the way it finds a real one and traces
// through it, and that CUPTI (a stand-in, fake_cupti) plays back records recorded on an H100.
// Checks which CUPTI is chosen — a pip-installed PyTorch's, one the program loaded itself, one
// given with --cupti — that the records arrive complete with their launch calls, and that with
// no usable CUPTI the program runs untraced and says why. (Where a CUDA toolkit is installed,
// the search would find it after the environment's; the stand-ins come first, so it is never
// reached.)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, copyFileSync, existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startPerfscope } from '../../support/perfscope_server.mjs';
import { eventsOfRun } from '../../support/report_csv.mjs';

const bin = process.env.PERFSCOPE_BIN;
const program = process.env.PERFSCOPE_CUDA_PROGRAM;
const fakeCupti = process.env.PERFSCOPE_FAKE_CUPTI;
const anyLibrary = process.env.PERFSCOPE_FAKE_NVML;  // loads and does nothing: torch/lib's stand-in
const records = path.join(process.env.PERFSCOPE_FIXTURES, 'cupti', 'records.ndjson');
const lines = readFileSync(records, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
const gpuWork = lines.filter((r) => ['kernel', 'memcpy', 'memset'].includes(r.record)).length;
const launches = lines.filter((r) => r.record === 'api' && r.cbid === 211).length;
const memoryOps = lines.filter((r) => r.record === 'memory').length;
const work = mkdtempSync(path.join(tmpdir(), 'perfscope-injection-'));
let server;

// A pip-installed PyTorch's layout: its CUPTI in nvidia/cu13/lib, its own libraries in torch/lib.
const site = path.join(work, 'venv', 'lib', 'python3.12', 'site-packages');
const pipCupti = path.join(site, 'nvidia', 'cu13', 'lib', 'libcupti.so.13');
const torchLib = path.join(site, 'torch', 'lib', 'libtorch_cuda.so');
const looseCupti = path.join(work, 'elsewhere', 'libcupti.so.13');

before(async () => {
  for (const [from, to] of [[fakeCupti, pipCupti], [fakeCupti, looseCupti], [anyLibrary, torchLib]]) {
    mkdirSync(path.dirname(to), { recursive: true });
    copyFileSync(from, to);
  }
  server = await startPerfscope({ label: 'injection' });
});
after(async () => { await server.stop(); rmSync(work, { recursive: true, force: true }); });

// No toolkit anywhere the search looks: only what each case puts there.
function environment(extra = {}) {
  const env = { ...process.env, ...extra };
  for (const k of ['CUDA_HOME', 'CUDA_PATH', 'LD_LIBRARY_PATH', 'PERFSCOPE_CUPTI_PATH', 'PERFSCOPE_CUPTI_LIBRARY']) {
    if (!(k in extra)) delete env[k];
  }
  return env;
}

function run(args, command, env = environment(), file = records) {
  return new Promise((resolve) => {
    const p = spawn(bin, ['run', '--server', server.url, ...args, '--', program, file, ...command], { cwd: work, env });
    let stderr = '';
    p.stderr.on('data', (d) => { stderr += d; });
    p.on('exit', (status) => resolve({ status, stderr }));
  });
}

const kernelsOf = (name) => eventsOfRun(server.url, 'kernels', name);

test('a pip-installed PyTorch: the CUPTI of its Python environment traces it', async () => {
  const r = await run(['--name', 'pip-env'], ['--preload', torchLib]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /perfscope: tracing with CUPTI 13\.0\.1, the Python environment's \((.*)\)/);
  assert.equal(r.stderr.match(/the Python environment's \((.*)\)/)[1], pipCupti);
  assert.match(r.stderr, new RegExp(`played back through ${pipCupti.replace(/[.]/g, '\\.')}`));
  const kernels = await kernelsOf('pip-env');
  assert.equal(kernels.length, gpuWork, JSON.stringify(kernels.slice(0, 2)));
  const tiny = kernels.filter((k) => k.name === 'tiny_kernel(int*, int)');
  assert.equal(tiny.length, launches, 'every launched kernel, demangled');
  // Launch callbacks went through CUPTI's subscriber to the converter: every kernel has its
  // call, at the times the stand-in CUPTI's clock gave inside the callback (the recorded ones).
  // (Nanoseconds since 1970 exceed a double's integers: compared as the file's text.)
  const launchStarts = new Set(readFileSync(records, 'utf8').split('\n').filter((l) => /"cbid":211\b/.test(l))
    .map((l) => l.match(/"start_ns":(\d+)/)[1]));
  assert.equal(launchStarts.size, launches);
  assert.ok(tiny.every((k) => launchStarts.has(k.launch_start_ns)), JSON.stringify(tiny[0]));
  assert.equal(tiny[0].block, '256x1x1');
  assert.equal((await eventsOfRun(server.url, 'memory', 'pip-env')).length, memoryOps);
});

test('a CUPTI the program loaded itself comes before any other', async () => {
  const r = await run(['--name', 'own-cupti'], ['--preload', looseCupti, '--preload', torchLib]);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr.match(/tracing with CUPTI [^,]+, loaded by the program \((.*)\)/)?.[1], looseCupti, r.stderr);
  assert.equal((await kernelsOf('own-cupti')).length, gpuWork);
});

test('--cupti names the library, whatever else is there', async () => {
  const r = await run(['--name', 'given', '--cupti', looseCupti], ['--preload', torchLib]);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr.match(/tracing with CUPTI [^,]+, given \((.*)\)/)?.[1], looseCupti, r.stderr);
  assert.equal((await kernelsOf('given')).length, gpuWork);
  const missing = await run(['--name', 'given-missing', '--cupti', path.join(work, 'nope.so')], []);
  assert.equal(missing.status, 2);
  assert.match(missing.stderr, /--cupti: no library at .*nope\.so/);
});

test('with no usable CUPTI the program runs untraced and says why', async () => {
  // (A machine's own toolkit would be found by the search: the cases name their library.)
  const notCupti = await run(['--name', 'not-cupti', '--cupti', torchLib], []);
  assert.equal(notCupti.status, 0, notCupti.stderr);
  assert.match(notCupti.stderr, /perfscope: tracing off: no usable CUPTI library \(.*libtorch_cuda\.so: has no cuptiGetVersion\); name one with `perfscope run --cupti PATH`/);
  assert.match(notCupti.stderr, /cuda_program: ran without CUPTI/);
  // CUDA 11.8's CUPTI (API version 18) is older than the records declared: refused.
  const old = await run(['--name', 'old-cupti', '--cupti', looseCupti], [],
                        environment({ PERFSCOPE_FAKE_CUPTI_VERSION: '18' }));
  assert.equal(old.status, 0, old.stderr);
  assert.match(old.stderr, /tracing off: no usable CUPTI library \(.*libcupti\.so\.13: CUPTI API version 18 is older than CUDA 12\.0's\)/);
  assert.match(old.stderr, /cuda_program: ran without CUPTI/);
});

// A Kubernetes sidecar's way: `perfscope relay` copies the library into a volume the pod shares
// and listens on a socket there; the program is started by someone else with the library and the
// socket in its environment (no perfscope binary beside it), possibly as another user.
test('a relay takes a program started with the library and the socket in its environment', async () => {
  const shared = path.join(work, 'shared');
  mkdirSync(shared);
  const socket = path.join(shared, 'trace.sock');
  const relay = spawn(bin, ['relay', '--socket', socket, '--library-into', shared, '--server', server.url, '--name', 'sidecar'],
                      { cwd: work, env: environment() });
  let relayErr = '';
  relay.stderr.on('data', (d) => { relayErr += d; });
  const relayExit = new Promise((resolve) => relay.on('exit', (code) => resolve(code)));
  for (let i = 0; i < 100 && !relayErr.includes('report to'); i++) await new Promise((r) => setTimeout(r, 50));
  assert.match(relayErr, new RegExp(`run sidecar: traced programs report to ${socket.replace(/[.]/g, '\\.')}`));
  assert.equal(statSync(socket).mode & 0o777, 0o777, 'any user of the pod may connect');
  const library = path.join(shared, 'libperfscope_cupti.so');
  const program_ = spawn(program, [records, '--preload', torchLib],
                         { cwd: work, env: environment({ CUDA_INJECTION64_PATH: library, PERFSCOPE_TRACE_SOCKET: socket,
                                                         PERFSCOPE_RUN_NAME: 'sidecar' }) });
  let programErr = '';
  program_.stderr.on('data', (d) => { programErr += d; });
  assert.equal(await new Promise((resolve) => program_.on('exit', resolve)), 0, programErr);
  assert.match(programErr, /tracing with CUPTI 13\.0\.1, the Python environment's/);
  let kernels = [];
  for (let i = 0; i < 100 && kernels.length < gpuWork; i++) {
    kernels = await kernelsOf('sidecar');
    if (kernels.length < gpuWork) await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(kernels.length, gpuWork);
  // Stopped as a pod stops its sidecar: the run ends, with the process that reported.
  relay.kill('SIGTERM');
  assert.equal(await relayExit, 0, relayErr);
  assert.match(relayErr, new RegExp(`sidecar: ${gpuWork} kernels and copies, ${memoryOps} memory operations from 1 process`));
  assert.equal(existsSync(socket), false, 'the socket goes with the relay');
  const runs = await (await fetch(`${server.url}/api/v1/runs/sidecar`)).json();
  assert.ok(runs.end_ns > runs.start_ns, JSON.stringify(runs));
  assert.deepEqual(runs.pids, [program_.pid]);
  const noSocket = spawn(bin, ['relay', '--socket', path.join(work, 'no-such-dir', 'trace.sock'), '--server', server.url],
                         { cwd: work, env: environment() });
  let noSocketErr = '';
  noSocket.stderr.on('data', (d) => { noSocketErr += d; });
  assert.equal(await new Promise((resolve) => noSocket.on('exit', resolve)), 1);
  assert.match(noSocketErr, /perfscope relay: cannot listen on .*no-such-dir\/trace\.sock: No such file or directory/);
});

// A relay outlives what it talks to: a bad line costs itself alone, a server that restarts gets
// the events again once it answers, a line without end is dropped without holding the others,
// and what is at the socket's path and is not a socket is left alone.
test('a relay keeps going: bad lines, a restarted server, endless lines, a path that is not a socket', async () => {
  const { createConnection } = await import('node:net');
  const { writeFileSync } = await import('node:fs');
  const dir = path.join(work, 'relay-robust');
  mkdirSync(dir);
  const port = 20000 + Math.floor(Math.random() * 20000);
  let own = await startPerfscope({ label: 'relay-target', listen: `127.0.0.1:${port}`, dataDir: path.join(dir, 'data') });
  const socket = path.join(dir, 'trace.sock');
  const relay = spawn(bin, ['relay', '--socket', socket, '--server', own.url, '--name', 'robust'], { cwd: work, env: environment() });
  let relayErr = '';
  relay.stderr.on('data', (d) => { relayErr += d; });
  const relayExit = new Promise((resolve) => relay.on('exit', (code) => resolve(code)));
  for (let i = 0; i < 100 && !relayErr.includes('report to'); i++) await new Promise((r) => setTimeout(r, 50));
  const client = createConnection(socket);
  await new Promise((r) => client.once('connect', r));
  const line = (metric, value) => JSON.stringify({ type: 'sample', metric, value, ts_ns: Date.now() * 1e6 }) + '\n';
  const latest = async (server, metric) => {
    const series = (await (await fetch(`${server.url}/api/v1/series`)).json()).series;
    return series.filter((s) => s.name === metric).map((s) => s.latest?.value);
  };
  async function until(server, metric, want) {
    let got = [];
    for (let i = 0; i < 150 && got[0] !== want; i++) {
      got = await latest(server, metric);
      if (got[0] !== want) await new Promise((r) => setTimeout(r, 100));
    }
    return got;
  }
  // Good lines around a malformed one and one the server refuses: every good one arrives.
  client.write(line('relay_good_a', 1) + '{"type":"sample","metric":\n' + line('relay_good_b', 2) +
               JSON.stringify({ type: 'sample', metric: 'relay_bad', value: 'x' }) + '\n' + line('relay_good_c', 3));
  assert.deepEqual(await until(own, 'relay_good_c', 3), [3]);
  assert.deepEqual(await latest(own, 'relay_good_a'), [1]);
  assert.deepEqual(await latest(own, 'relay_good_b'), [2]);
  assert.match(relayErr, /perfscope relay: the server refused events \(HTTP 400\)/);
  // A line with no end: dropped once past 4 MiB, the connection's later lines still read.
  client.write('{"type":"sample","metric":"' + 'x'.repeat(5 << 20));
  client.write('"}\n' + line('relay_after_long', 4));
  assert.deepEqual(await until(own, 'relay_after_long', 4), [4]);
  // The server goes away: lines go to the file beside the socket; back, they go to it again.
  await own.stop();
  client.write(line('relay_while_down', 5));
  for (let i = 0; i < 100 && !relayErr.includes('lost the server'); i++) await new Promise((r) => setTimeout(r, 50));
  assert.match(relayErr, /lost the server .*; events go to .*relay-robust\/perfscope-run-robust\.ndjson until it answers again/);
  own = await startPerfscope({ label: 'relay-target', listen: `127.0.0.1:${port}`, dataDir: path.join(dir, 'data') });
  await new Promise((r) => setTimeout(r, 5500));
  client.write(line('relay_after_restart', 6));
  assert.deepEqual(await until(own, 'relay_after_restart', 6), [6]);
  assert.match(relayErr, /the server answers again/);
  assert.match(readFileSync(path.join(dir, 'perfscope-run-robust.ndjson'), 'utf8'), /relay_while_down/);
  client.end();
  relay.kill('SIGTERM');
  assert.equal(await relayExit, 0, relayErr);
  assert.match(relayErr, /1 lines longer than 4 MiB dropped/);
  await own.stop();
  // A file where the socket should go is not removed.
  const precious = path.join(dir, 'precious.txt');
  writeFileSync(precious, 'keep me');
  const refused = spawn(bin, ['relay', '--socket', precious, '--server', 'http://127.0.0.1:1'], { cwd: work, env: environment() });
  let refusedErr = '';
  refused.stderr.on('data', (d) => { refusedErr += d; });
  assert.equal(await new Promise((resolve) => refused.on('exit', resolve)), 1);
  assert.match(refusedErr, /cannot listen on .*precious\.txt: something that is not a socket is there/);
  assert.equal(readFileSync(precious, 'utf8'), 'keep me');
});

// NCCL's profiler plugin is the same library: `perfscope run` names it in NCCL_PROFILER_PLUGIN,
// the stand-in NCCL (in the stand-in CUPTI) loads it by that path as NCCL does and describes each
// collective right after its kernel's launch, and the kernels leave the process tagged with what
// NCCL said. The fixture: a 64 MiB all-reduce, a group of an all-gather and a reduce-scatter in
// one kernel, a compute kernel, and an all-reduce whose description never came.
const ncclRecords = path.join(process.env.PERFSCOPE_FIXTURES, 'cupti', 'nccl_records.ndjson');
const tagsOf = (k) => Object.fromEntries([...k.tags.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));

test('NCCL loads the library as its profiler plugin: collective kernels carry communicator, bytes and algorithm', async () => {
  const r = await run(['--name', 'nccl-plugin', '--cupti', looseCupti], [], environment(), ncclRecords);
  assert.equal(r.status, 0, r.stderr);
  const kernels = await kernelsOf('nccl-plugin');
  assert.equal(kernels.length, 4, JSON.stringify(kernels));
  const byStart = kernels.map((k) => ({ name: k.name, tags: tagsOf(k) })).sort((a, b) => a.name.localeCompare(b.name));
  const [allReduce, lost] = byStart.filter((k) => k.name.startsWith('ncclDevKernel_AllReduce'))
    .sort((a, b) => ('coll_bytes' in b.tags) - ('coll_bytes' in a.tags));
  assert.deepEqual(
    ['comm', 'comm_ranks', 'comm_rank', 'coll_op', 'coll_bytes', 'algo', 'proto', 'channels'].map((t) => allReduce.tags[t]),
    ['9f3c2a1b5e7d4c60', '2', '1', 'AllReduce', String(64 * 1024 * 1024), 'RING', 'SIMPLE', '16']);
  // One kernel, two collectives: both operations, and nccl-tests' bytes of each (count × 2 bytes × 2 ranks).
  const group = byStart.find((k) => k.name.startsWith('ncclDevKernel_Generic'));
  assert.equal(group.tags.coll_op, 'AllGather+ReduceScatter');
  assert.equal(group.tags.colls, '2');
  assert.equal(group.tags.coll_bytes, String(2 * 1048576 * 2 * 2));
  // Not described: sent on without, and counted.
  assert.equal(lost.tags.comm, undefined);
  const compute = byStart.find((k) => k.name.startsWith('tiny_kernel'));
  assert.equal(compute.tags.comm, undefined);
  const counts = async (metric) => {
    const series = (await (await fetch(`${server.url}/api/v1/series`)).json()).series;
    return series.filter((x) => x.name === metric && x.labels?.run === 'nccl-plugin').map((x) => x.latest?.value);
  };
  assert.deepEqual(await counts('trace_collectives'), [3]);
  assert.deepEqual(await counts('trace_collective_kernels_undescribed'), [1]);
  assert.deepEqual(await counts('trace_collectives_unmatched'), [0]);
});

test('a profiler plugin of the user\'s own is left in place, and the run says what that costs', async () => {
  const r = await run(['--name', 'nccl-own', '--cupti', looseCupti], [], environment({ NCCL_PROFILER_PLUGIN: 'none' }),
    ncclRecords);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /NCCL_PROFILER_PLUGIN is set \(none\): collectives are known by their kernels' names only/);
  const kernels = await kernelsOf('nccl-own');
  assert.equal(kernels.length, 4);
  assert.ok(kernels.every((k) => !k.tags.includes('comm=')), 'no NCCL description without the plugin');
});
