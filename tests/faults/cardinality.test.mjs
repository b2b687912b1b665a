// Cardinality caps on the real binary: a producer that puts a request id into kernel names,
// tag values or custom series cannot grow the server, the database and every view without
// bound. Names past a cap are stored as [other] (every event kept, totals right), new custom
// series past theirs refuse the batch with the field and the cap named, and what was folded or
// refused is counted in /api/v1/info and /metrics.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { startPerfscope, postEvents } from '../support/perfscope_server.mjs';

let server;

before(async () => {
  server = await startPerfscope({
    args: ['--enable-host-collector', 'false', '--enable-gpu-collector', 'false',
           '--cardinality-limit', 'series=3,tag_value=50', '--db-commit-interval-ms', '50'],
    label: 'cardinality',
  });
});

after(async () => {
  if (server) await server.stop();
});

const OTHER = '[other]';

function kernel(name, i, tags = {}) {
  const start = 1_700_000_000_000_000_000 + i * 1000;
  return { type: 'kernel', name, start_ns: start, end_ns: start + 500, tags };
}

async function info() {
  return (await fetch(server.url + '/api/v1/info')).json();
}

test('20,000 distinct kernel names in one request: 10,000 kept, the rest folded into [other]', async () => {
  const events = Array.from({ length: 20000 }, (_, i) => kernel(`gemm_request_${i}`, i));
  const answer = await postEvents(server.url, events);
  assert.equal(answer.accepted, 20000);
  assert.equal(answer.folded, 10000);

  const url = server.url + '/api/v1/kernels?from=1700000000000000000&to=1700000001000000000';
  const kernels = (await (await fetch(url)).json()).kernels;
  assert.equal(kernels.length, 10001);
  const other = kernels.find((k) => k.name === OTHER);
  assert.ok(other, 'an [other] row');
  assert.equal(other.count, 10000);
  // Every execution is still counted: the GPU time of the window is all there.
  const total = kernels.reduce((n, k) => n + k.count, 0);
  assert.equal(total, 20000);

  // Known names keep working past the cap; a new one folds again.
  const more = await postEvents(server.url, [kernel('gemm_request_7', 30000), kernel('fresh_name', 30001)]);
  assert.equal(more.folded, 1);

  const caps = (await info()).cardinality;
  assert.deepEqual(caps.kernel_name, { limit: 10000, distinct: 10000, folded: 10001, refused: 0 });
  const metrics = await (await fetch(server.url + '/metrics')).text();
  assert.match(metrics, /^perfscope_cardinality_folded_total\{dimension="kernel_name"\} 10001$/m);
  assert.match(metrics, /^perfscope_cardinality_limit\{dimension="kernel_name"\} 10000$/m);
  assert.match(metrics, /^perfscope_cardinality_values\{dimension="kernel_name"\} 10000$/m);
});

test('request ids in a tag fold per key; other keys keep their values', async () => {
  const events = Array.from({ length: 80 }, (_, i) =>
    kernel('gemm_request_1', 40000 + i, { request_id: `r${i}`, model: 'llama' }));
  const answer = await postEvents(server.url, events);
  assert.equal(answer.folded, 30);
  const base = server.url + '/api/v1/kernels?from=1700000000000000000&to=1700000001000000000';
  const folded = (await (await fetch(base + '&tag.request_id=' + encodeURIComponent(OTHER))).json()).kernels;
  assert.deepEqual(folded.map((k) => [k.name, k.count]), [['gemm_request_1', 30]]);
  const kept = (await (await fetch(base + '&tag.request_id=r3')).json()).kernels;
  assert.deepEqual(kept.map((k) => [k.name, k.count]), [['gemm_request_1', 1]]);
  const model = (await (await fetch(base + '&tag.model=llama')).json()).kernels;
  assert.equal(model[0].count, 80);
  assert.equal((await info()).cardinality.tag_value.folded, 30);
});

test('a new custom series past its cap refuses the batch, naming the field and the cap', async () => {
  const sample = (pool, extra = {}) => ({ type: 'sample', metric: 'queue_depth', labels: { pool }, value: 1, ...extra });
  assert.equal((await postEvents(server.url, [sample('a'), sample('b'), sample('c')])).accepted, 3);

  const kernelsUrl = server.url + '/api/v1/kernels?from=1700000000000000000&to=1700000001000000000';
  const executions = async () => (await (await fetch(kernelsUrl)).json()).kernels.reduce((n, k) => n + k.count, 0);
  const before = await executions();
  const r = await fetch(server.url + '/api/v1/events', {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ events: [kernel('not_stored', 50000), sample('a'), sample('d')] }),
  });
  assert.equal(r.status, 422);
  const body = await r.json();
  assert.equal(body.error.code, 'cardinality_limit');
  assert.equal(body.error.field, 'metric');
  assert.equal(body.error.limit, 3);
  assert.match(body.error.message, /event 2/);
  assert.match(body.error.message, /pool="d"/);

  // Nothing of the refused batch was stored.
  assert.equal(await executions(), before);
  const series = (await (await fetch(server.url + '/api/v1/series')).json()).series;
  const pools = series.filter((s) => s.name === 'queue_depth').map((s) => s.labels.pool).sort();
  assert.deepEqual(pools, ['a', 'b', 'c']);

  // Known series still pass.
  assert.equal((await postEvents(server.url, [sample('b')])).accepted, 1);
  const caps = (await info()).cardinality;
  assert.deepEqual(caps.series, { limit: 3, distinct: 3, folded: 0, refused: 1 });
  const metrics = await (await fetch(server.url + '/metrics')).text();
  assert.match(metrics, /^perfscope_cardinality_refused_total\{dimension="series"\} 1$/m);
});

test('a malformed --cardinality-limit stops the start with the option named', () => {
  const r = spawnSync(process.env.PERFSCOPE_BIN,
                      ['serve', '--listen', '127.0.0.1:0', '--cardinality-limit', 'kernels=5'], { encoding: 'utf8' });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--cardinality-limit.*kernels=5/);
});
