// Runs, end to end without a GPU: the scenario of three `perfscope run`s of one program about a
// second apart into one server, replayed from records recorded on an H100 by the stand-in
// program (each replay rebased to the moment it runs and paced as recorded). The runs are
// listed with their status; memory after they end holds nothing and suspects no leak; module
// statics are apart; each run's timeline equals that run traced alone; no bottleneck rule sees
// the idle time between runs; every read endpoint takes run= (and tag.KEY=); run against run finds nothing in
// the same program twice and names the kernel slowed in a variant first.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startPerfscope, postEvents, runPerfscope } from '../../support/perfscope_server.mjs';

const bin = process.env.PERFSCOPE_BIN;
const replay = process.env.PERFSCOPE_TRACE_REPLAY;
const records = path.join(process.env.PERFSCOPE_FIXTURES, 'cupti', 'records.ndjson');
const TINY = 'tiny_kernel(int*, int)';
const work = mkdtempSync(path.join(tmpdir(), 'perfscope-runs-'));
let server, alone;

function traced(url, name, extra = []) {
  return new Promise((resolve) => {
    const p = spawn(bin, ['run', '--server', url, '--name', name, '--library', replay, '--',
                          replay, records, '--rebase', '1', ...extra], { cwd: work });
    let stderr = '';
    p.stderr.on('data', (d) => { stderr += d; });
    p.on('exit', (status) => resolve({ status, stderr }));
  });
}
const get = async (url) => {
  const r = await fetch(url);
  return { status: r.status, body: r.headers.get('content-type').includes('json') ? await r.json() : await r.text() };
};
const pause = (ms) => new Promise((r) => setTimeout(r, ms));

before(async () => {
  server = await startPerfscope({ label: 'runs', args: ['--enable-host-collector', 'false'] });
  alone = await startPerfscope({ label: 'runs-alone', args: ['--enable-host-collector', 'false'] });
  for (const name of ['traced1', 'traced2', 'traced3']) {
    const r = await traced(server.url, name);
    assert.equal(r.status, 0, r.stderr);
    await pause(1000);
  }
  const r = await traced(alone.url, 'traced1');
  assert.equal(r.status, 0, r.stderr);
});
after(async () => {
  await server.stop();
  await alone.stop();
  rmSync(work, { recursive: true, force: true });
});

test('three runs are listed, newest first, with what they reported and what their kernels say', async () => {
  const { status, body } = await get(`${server.url}/api/v1/runs`);
  assert.equal(status, 200);
  assert.deepEqual(body.runs.map((r) => r.name), ['traced3', 'traced2', 'traced1']);
  for (const r of body.runs) {
    assert.equal(r.status, 'finished');
    assert.equal(r.exit_status, 0);
    assert.equal(r.records, 50);
    assert.equal(r.dropped, 0);
    assert.equal(r.kernels.count, 23);
    assert.ok(r.end_ns > r.start_ns && r.wall_s > 0.1, JSON.stringify(r));
    assert.ok(r.pids.length >= 1 && r.pids.every((p) => p > 0));
    assert.deepEqual(r.gpus, ['0']);
    assert.equal(r.command[0], replay);
    assert.ok(r.gpu_busy_ms > 0 && r.gpu_busy_ms <= r.kernel_span_ms);
  }
  const one = await get(`${server.url}/api/v1/runs/traced2`);
  assert.equal(one.status, 200);
  assert.equal(one.body.name, 'traced2');
  const none = await get(`${server.url}/api/v1/runs/nope`);
  assert.equal(none.status, 404);
  assert.equal(none.body.error.field, 'name');
});

test('memory after the runs end holds nothing and suspects no leak; module statics are apart', async () => {
  const mem = (await get(`${server.url}/api/v1/memory?window=all`)).body;
  assert.equal(mem.current_allocated_bytes, 0, JSON.stringify(mem));
  assert.equal(mem.live_allocations, 0);
  const doc = (await get(`${server.url}/api/v1/analysis?window=all&leak_age_s=1`)).body;
  assert.deepEqual(doc.memory.leak_suspects, []);
  assert.equal(doc.memory.current_allocated_bytes, 0);
  // A module's statics (as the converter tags CUPTI's device_static records) are no allocation.
  await postEvents(server.url, [
    { type: 'memory', op: 'alloc', address: '0xa0', size_bytes: 4, tag: 'device_static', tags: { pid: '9', run: 'statics' } },
    { type: 'memory', op: 'alloc', address: '0xb0', size_bytes: 4, tag: 'device_static', tags: { pid: '9', run: 'statics' } },
  ]);
  const after = (await get(`${server.url}/api/v1/memory?window=all`)).body;
  assert.equal(after.current_allocated_bytes, 0);
  assert.equal(after.allocation_count, mem.allocation_count);
  assert.deepEqual(after.module_statics, { current_bytes: 8, peak_bytes: 8, count: 2 });
});

test('each run\'s timeline is that run\'s alone; no rule fires on the idle time between runs', async () => {
  const doc = (await get(`${server.url}/api/v1/analysis?window=all`)).body;
  const single = (await get(`${alone.url}/api/v1/analysis?window=all`)).body;
  const own = single.timeline.find((t) => t.stream === null);
  assert.equal(own.run, 'traced1');
  const rows = doc.timeline.filter((t) => t.stream === null);
  assert.deepEqual(rows.map((t) => t.run).sort(), ['traced1', 'traced2', 'traced3']);
  for (const t of rows) {
    assert.equal(t.kernel_count, own.kernel_count);
    assert.ok(Math.abs(t.busy_ratio - own.busy_ratio) < 1e-12, `${t.run}: ${t.busy_ratio} vs ${own.busy_ratio}`);
    assert.ok(t.span_ms < 1000, 'a run\'s span is its own, not the seconds between runs');
  }
  const overhead = doc.bottlenecks.find((b) => b.id === 'launch_overhead_bound');
  assert.ok(Math.abs(overhead.evidence.kernel_busy_ratio - own.busy_ratio) < 1e-12, JSON.stringify(overhead));
  assert.ok(overhead.evidence.kernel_avg_gap_ms < 1, 'gaps within runs, not between them');
  for (const rule of ['launch_overhead_bound', 'host_bound_input_pipeline']) {
    assert.notEqual(doc.bottlenecks.find((b) => b.id === rule).status, 'fired', rule);
  }
  assert.deepEqual(doc.runs.map((r) => r.run).sort(), ['traced1', 'traced2', 'traced3']);
  assert.match(doc.methods.timeline, /per run/);
});

test('every read endpoint takes run=', async () => {
  const u = server.url + '/api/v1';
  const all = (await get(`${u}/kernels?window=all`)).body;
  const tinyAll = all.kernels.find((k) => k.name === TINY).count;
  const kernels = (await get(`${u}/kernels?run=traced2`)).body;
  assert.equal(kernels.kernels.find((k) => k.name === TINY).count * 3, tinyAll);
  // A name that is no run is refused alike everywhere (run= means a run; tag.run= a tag).
  for (const path of ['kernels', 'percentiles?kernel=x', 'memory', 'inference', 'analysis', 'report?format=json',
                      'regressions?window=1h', 'trace', 'timeline?window=1h', 'operators']) {
    const r = await get(`${u}/${path}${path.includes('?') ? '&' : '?'}run=nobody`);
    assert.equal(r.status, 404, path);
    assert.equal(r.body.error.field, 'run', path);
    assert.match(r.body.error.message, /no run named 'nobody' .*tag\.run=nobody/, path);
  }
  const cmp = await get(`${u}/runs/compare?a=traced1&b=nobody`);
  assert.equal(cmp.status, 404);
  assert.match(cmp.body.error.message, /no run named 'nobody' .*tag\.run=nobody/);
  const recs = (await get(`${u}/kernels/${encodeURIComponent(TINY)}/records?run=traced3&limit=100`)).body.records;
  assert.equal(recs.length, tinyAll / 3);
  assert.ok(recs.every((r) => r.tags.run === 'traced3'));
  const pct = (await get(`${u}/percentiles?kernel=${encodeURIComponent(TINY)}&run=traced1`)).body;
  assert.equal(pct.count, tinyAll / 3);
  assert.equal((await get(`${u}/percentiles?command_queue=q&run=traced1`)).status, 400);
  const mem = (await get(`${u}/memory?run=traced1`)).body;
  assert.equal(mem.run, 'traced1');
  assert.equal(mem.allocation_count * 3, (await get(`${u}/memory?window=all`)).body.allocation_count);
  assert.equal((await get(`${u}/inference?run=traced1`)).status, 200);
  const doc = (await get(`${u}/analysis?run=traced2`)).body;
  assert.equal(doc.run, 'traced2');
  assert.deepEqual([...new Set(doc.timeline.map((t) => t.run))], ['traced2']);
  assert.equal(doc.kernels.top.find((k) => k.name === TINY).count, tinyAll / 3);
  const missing = await get(`${u}/analysis?run=nobody`);
  assert.equal(missing.status, 404);
  assert.equal(missing.body.error.field, 'run');
  const report = (await get(`${u}/report?format=json&run=traced2`)).body;
  assert.equal(report.summary.kernel_time.executions, 23);
  assert.ok(!JSON.stringify(report).includes('NaN'));
  const md = (await get(`${u}/report?format=md&run=traced2`)).body;
  assert.match(md, /tiny_kernel/);
  assert.doesNotMatch(md, /nan|inf\b/i);
  const csv = (await get(`${u}/report?format=csv&table=kernels&run=traced1`)).body.trim().split('\n');
  assert.equal(csv.length - 1, 23);
  // The generic tag filter: tag.KEY=VALUE, every one carried.
  const byTag = (await get(`${u}/kernels?tag.run=traced2`)).body;
  assert.deepEqual(byTag.kernels, kernels.kernels);
  const pid = String((await get(`${u}/runs/traced3`)).body.pids[0]);
  const ofPid = (await get(`${u}/kernels?window=all&tag.pid=${pid}`)).body;
  assert.equal(ofPid.kernels.find((k) => k.name === TINY).count, tinyAll / 3);
  assert.deepEqual((await get(`${u}/kernels?window=all&tag.pid=${pid}&tag.run=traced1`)).body.kernels, []);
  const badTag = await get(`${u}/kernels?tag.9x=1`);
  assert.equal(badTag.status, 400);
  assert.equal(badTag.body.error.field, 'tag.9x');
  assert.equal((await get(`${u}/percentiles?kernel=${encodeURIComponent(TINY)}&tag.run=traced2`)).body.count, tinyAll / 3);
  const regressions = (await get(`${u}/regressions?run=traced1&window=1h`)).body;
  assert.equal(regressions.subjects, 4, 'the run\'s four kernel names');
  const trace = (await get(`${u}/trace?run=traced1`)).body;
  assert.equal(trace.traceEvents.filter((e) => e.ph === 'X' && e.cat === 'kernel').length, tinyAll / 3);
});

test('run against run: nothing changes in the same program; a slowed kernel comes first', async () => {
  const same = (await get(`${server.url}/api/v1/runs/compare?a=traced1&b=traced2`)).body;
  assert.equal(same.verdict, 'unchanged');
  assert.ok(same.kernels.every((k) => k.verdict === 'unchanged' || k.verdict === 'insufficient_samples'),
            JSON.stringify(same.kernels));
  assert.equal(same.totals.kernel_count.change, 0);
  const r = await traced(server.url, 'slowed', ['--slow', 'tiny_kernel=1.5']);
  assert.equal(r.status, 0, r.stderr);
  const diff = (await get(`${server.url}/api/v1/runs/compare?a=traced1&b=slowed`)).body;
  assert.equal(diff.kernels[0].name, TINY);
  assert.equal(diff.kernels[0].verdict, 'slower');
  assert.ok(diff.kernels[0].p_adjusted < 0.001, JSON.stringify(diff.kernels[0]));
  assert.ok(Math.abs(diff.kernels[0].mean_change - 0.5) < 0.01);
  assert.equal(diff.verdict, 'slower');
  const md = (await get(`${server.url}/api/v1/report?format=md&window=all&compare=traced1,slowed`)).body;
  assert.match(md, /## Run comparison: `traced1` → `slowed`/);
  assert.match(md, /\| `tiny_kernel\(int\*, int\)` \| 20 \/ 20 \|.*\| slower \|/);
  const html = (await get(`${server.url}/api/v1/report?format=html&window=all&compare=traced1,slowed`)).body;
  assert.match(html, /"compare":\{/);
  const bad = await get(`${server.url}/api/v1/report?format=json&compare=traced1`);
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error.field, 'compare');
  assert.equal((await get(`${server.url}/api/v1/report?format=json&compare=traced1,nope`)).body.error.field, 'compare');
  assert.equal((await get(`${server.url}/api/v1/runs/compare?a=traced1`)).status, 400);
  assert.equal((await get(`${server.url}/api/v1/runs/compare?a=traced1&b=nope`)).status, 404);
});

test('a run written to a file registers when it is imported', async () => {
  const file = path.join(work, 'offline.ndjson');
  const p = await runPerfscope(['run', '--server', 'http://127.0.0.1:9', '--name', 'offline', '--output', file,
                                '--library', replay, '--', replay, records]);
  assert.equal(p.status, 0, p.stderr);
  const imported = await runPerfscope(['import', file, '--server', server.url]);
  assert.equal(imported.status, 0, imported.stderr);
  const run = (await get(`${server.url}/api/v1/runs/offline`)).body;
  assert.equal(run.status, 'finished');
  assert.equal(run.kernels.count, 23);
});
