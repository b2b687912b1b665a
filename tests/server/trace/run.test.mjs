// `perfscope run` end to end without a GPU: the real binary starts a stand-in "CUDA program"
// (trace_replay) the way it starts any command — injection variables set, a unix socket to
// report to — and the stand-in replays activity records recorded on an H100 through the
// injection library's own sink. Checks that every event reaches the server tagged with the run,
// that several processes are collected, the offline file and `perfscope import`, the exit
// status, two runs compared by the A/B endpoint, and clear errors for bad invocations.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startPerfscope, runPerfscope } from '../../support/perfscope_server.mjs';
import { eventsOfRun as eventsOfRunOf } from '../../support/report_csv.mjs';

const bin = process.env.PERFSCOPE_BIN;
const replay = process.env.PERFSCOPE_TRACE_REPLAY;
const records = path.join(process.env.PERFSCOPE_FIXTURES, 'cupti', 'records.ndjson');
const lines = readFileSync(records, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
const gpuWork = lines.filter((r) => ['kernel', 'memcpy', 'memset'].includes(r.record)).length;
const memoryOps = lines.filter((r) => r.record === 'memory').length;
const work = mkdtempSync(path.join(tmpdir(), 'perfscope-trace-'));
let server;

before(async () => { server = await startPerfscope({ label: 'trace' }); });
after(async () => { await server.stop(); rmSync(work, { recursive: true, force: true }); });

function run(args, command) {
  // Asynchronous: the server runs in this process's event loop and must keep answering.
  return new Promise((resolve) => {
    const p = spawn(bin, ['run', ...args, '--', ...command], { cwd: work });
    let stderr = '';
    p.stderr.on('data', (d) => { stderr += d; });
    p.on('exit', (status) => resolve({ status, stderr }));
  });
}

const eventsOfRun = (table, name) => eventsOfRunOf(server.url, table, name);

test('every recorded kernel, copy and allocation reaches the server, tagged with the run', async () => {
  const r = await run(['--server', server.url, '--name', 'ci-a', '--library', replay],
                      [replay, records, '--expect-injection', replay]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /ci-a: \d+ kernels and copies/);
  assert.match(r.stderr, /from 1 process;/);
  const kernels = await eventsOfRun('kernels', 'ci-a');
  assert.equal(kernels.length, gpuWork);
  assert.ok(kernels.some((k) => k.name === 'tiny_kernel(int*, int)'), 'demangled names');
  assert.ok(kernels.every((k) => /pid="\d+"/.test(k.tags)));
  const launched = kernels.filter((k) => k.launch_start_ns !== '');
  assert.ok(launched.length > 0, 'kernels correlated with their launch calls');
  assert.equal((await eventsOfRun('memory', 'ci-a')).length, memoryOps);
  // What the dashboard's kernel table and the timeline analysis read.
  const table = await (await fetch(`${server.url}/api/v1/kernels?window=all`)).json();
  const tiny = table.kernels.find((k) => k.name === 'tiny_kernel(int*, int)');
  assert.ok(tiny && tiny.count >= 20, JSON.stringify(table.kernels.map((k) => k.name)));
  assert.deepEqual(tiny.launch_configs[0].block, [256, 1, 1]);
  const analysis = await (await fetch(`${server.url}/api/v1/analysis?window=all`)).json();
  const stream = analysis.timeline.find((t) => t.stream === '7');
  assert.ok(stream && stream.kernel_count >= gpuWork && stream.launch_delay_ms.count > 0, JSON.stringify(analysis.timeline));
});

test('several traced processes of one command are all collected', async () => {
  const r = await run(['--server', server.url, '--name', 'ci-multi', '--library', replay],
                      ['bash', '-c', `"${replay}" "${records}" & "${replay}" "${records}"; wait`]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /from 2 processes/);
  assert.equal((await eventsOfRun('kernels', 'ci-multi')).length, 2 * gpuWork);
});

test('without a server the events go to a file that perfscope import loads', async () => {
  const file = path.join(work, 'offline.ndjson');
  const r = await run(['--server', 'http://127.0.0.1:9', '--name', 'ci-offline', '--output', file, '--library', replay],
                      [replay, records]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /no server at http:\/\/127\.0\.0\.1:9/);
  assert.match(r.stderr, /perfscope import/);
  assert.ok(existsSync(file));
  const imported = await runPerfscope(['import', file, '--server', server.url]);
  assert.equal(imported.status, 0, imported.stderr);
  assert.equal((await eventsOfRun('kernels', 'ci-offline')).length, gpuWork);
});

test('a duty-cycled run traces only its windows, marks them, and the analysis scales to them', async () => {
  // The recording looped 12 times (~1.6 s), paced: its kernels end in one burst every 136 ms.
  // Windows of 150 ms every 300 ms (50 %): each whole window holds at least one burst.
  const r = await run(['--server', server.url, '--name', 'ci-duty', '--trace-window', '150ms', '--trace-every', '300ms',
                       '--library', replay], [replay, records, '--rebase', '1', '--repeat', '12']);
  assert.equal(r.status, 0, r.stderr);
  const kernels = await eventsOfRun('kernels', 'ci-duty');
  const info = await (await fetch(`${server.url}/api/v1/runs/ci-duty`)).json();
  assert.equal(info.trace_window_ns, 150e6);
  assert.equal(info.trace_every_ns, 300e6);
  // The windows as the traced process marked them.
  const q = new URLSearchParams({ name: 'trace_window_seconds', run: 'ci-duty', from: String(info.start_ns - 1e9),
                                  to: String(info.end_ns + 1e9), max_points: '100000' });
  const series = (await (await fetch(`${server.url}/api/v1/series/query?${q}`)).json()).series;
  const windows = series.flatMap((s) => s.points.map(([ts, v]) => [ts, ts + v * 1e9]));
  assert.ok(windows.length >= 3, JSON.stringify(series));
  for (const [open, close] of windows) {
    assert.ok(close - open <= 150e6 + 1e3, 'no window longer than asked');
    assert.equal((open % 300e6) > 150e6 ? -1 : 0, 0, 'windows open on the wall-clock schedule');
  }
  // Only work inside a window was recorded (a record is taken when its work ends).
  assert.ok(kernels.length > 0 && kernels.length < 12 * gpuWork * 0.85, `${kernels.length} of ${12 * gpuWork}`);
  for (const k of kernels) {
    const end = Number(k.end_ns);
    assert.ok(windows.some(([open, close]) => end >= open - 25e6 && end <= close + 25e6), `kernel ending at ${end} outside the windows`);
  }
  // The runs API and the analysis say how it was sampled and scale counts to it.
  assert.ok(info.sampling && info.sampling.sampled_fraction > 0.2 && info.sampling.sampled_fraction < 0.8, JSON.stringify(info.sampling));
  const estimated = info.kernels.count / info.sampling.sampled_fraction;
  assert.ok(Math.abs(info.kernels.estimated_count - estimated) < 1e-6 * estimated);
  const analysis = await (await fetch(`${server.url}/api/v1/analysis?run=ci-duty`)).json();
  assert.ok(analysis.sampling, 'the analysis says it was sampled');
  const f = analysis.sampling.sampled_fraction;
  assert.ok(Math.abs(f - info.sampling.sampled_fraction) < 0.05, `${f} vs ${info.sampling.sampled_fraction}`);
  assert.equal(analysis.sampling.runs[0].run, 'ci-duty');
  const observed = kernels.filter((k) => k.name === 'tiny_kernel(int*, int)').length;
  const top = analysis.kernels.top.find((k) => k.name === 'tiny_kernel(int*, int)');
  assert.ok(observed > 0 && top, JSON.stringify(analysis.kernels.top));
  assert.ok(Math.abs(top.count - observed / f) <= 1, `${top.count} estimated from ${observed} observed at ${f}`);
  const device = analysis.timeline.find((t) => t.run === 'ci-duty' && t.stream === null);
  assert.equal(device.sampled_fraction, f);
  assert.ok(device.busy_ratio > 0 && device.span_ms < (info.end_ns - info.start_ns) / 1e6 * 0.8,
            'the timeline spans the windows, not the time between them');
  // The trace export draws the windows, one span per window of the run.
  const trace = await (await fetch(`${server.url}/api/v1/trace?run=ci-duty&window=all`)).json();
  const spans = trace.traceEvents.filter((e) => e.cat === 'trace_window');
  assert.equal(spans.length, windows.length);
  assert.equal(trace.metadata.trace_windows, windows.length);
  // Options that do not make a schedule are refused before anything starts.
  for (const [args, message] of [[['--duty-cycle', '0%'], /--duty-cycle/], [['--trace-window', '100ms'], /--trace-window: needs/],
                                 [['--trace-every', 'soon', '--trace-window', '1s'], /--trace-every/]]) {
    const bad = await run(['--server', server.url, ...args, '--library', replay], [replay, records]);
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, message);
  }
});

test('the command\'s exit status is perfscope run\'s', async () => {
  const r = await run(['--server', server.url, '--library', replay], ['bash', '-c', 'exit 7']);
  assert.equal(r.status, 7);
  const missing = await run(['--server', server.url, '--library', replay], ['/nonexistent/program']);
  assert.equal(missing.status, 127);
  assert.match(missing.stderr, /cannot start \/nonexistent\/program/);
});

test('two runs compare with the A/B endpoint by their run tags', async () => {
  const r = await run(['--server', server.url, '--name', 'ci-b', '--library', replay], [replay, records]);
  assert.equal(r.status, 0, r.stderr);
  await eventsOfRun('kernels', 'ci-b');
  const res = await fetch(`${server.url}/api/v1/abtests`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: 'runs', window: 'all',
                           a: { kernel: 'tiny_kernel(int*, int)', tags: { run: 'ci-a' } },
                           b: { kernel: 'tiny_kernel(int*, int)', tags: { run: 'ci-b' } } }),
  });
  const created = await res.json();
  assert.equal(res.status, 201, JSON.stringify(created));
  const body = await (await fetch(server.url + created.url)).json();
  const tiny = lines.filter((l) => l.record === 'kernel' && l.name === '_Z11tiny_kernelPii').length;
  assert.equal(body.a.n, tiny);
  assert.equal(body.b.n, tiny);
  assert.ok(body.verdict, JSON.stringify(body));
});

test('bad invocations get a clear message and exit 2', async () => {
  const kinds = await run(['--kinds', 'kernel,graphs', '--library', replay], ['true']);
  assert.equal(kinds.status, 2);
  assert.match(kinds.stderr, /unknown activity kind "graphs"/);
  const lib = await run(['--library', path.join(work, 'missing.so')], ['true']);
  assert.equal(lib.status, 2);
  assert.match(lib.stderr, /injection library \(libperfscope_cupti\.so\) was not found at/);
  const none = spawnSync(bin, ['run'], { encoding: 'utf8' });
  assert.equal(none.status, 2);
});
