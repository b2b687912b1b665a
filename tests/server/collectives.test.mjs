// Collectives of a real two-rank job: traces recorded on two H100s over NVLink by
// tests/gpu/run_collectives.sh (torchrun, an all-reduce per step, rank 1 given more matmuls in
// one job and none in the other), imported as `perfscope run` would have streamed them. The
// straggler is the rank the job slowed, by the extra compute its own CUDA events measured (its
// compute per step less the other rank's); the
// job with equal ranks has none.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startPerfscope } from '../support/perfscope_server.mjs';

const fixtures = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'collectives');
let server;

async function load(job) {
  const child = spawn(process.env.PERFSCOPE_BIN, ['import', path.join(fixtures, job, 'trace.ndjson.gz'), '--server', server.url],
                      { stdio: ['ignore', 'ignore', 'inherit'] });
  assert.equal(await new Promise((r) => child.on('exit', r)), 0, `import of ${job}`);
}
const measured = (job, rank) => JSON.parse(readFileSync(path.join(fixtures, job, `rank${rank}.json`), 'utf8'));

before(async () => {
  server = await startPerfscope({ label: 'collectives' });
  await load('straggler');
  await load('equal');
});
after(async () => server && server.stop());

async function jobOf(run) {
  const res = await fetch(`${server.url}/api/v1/collectives?window=all&tag.run=${run}`);
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.equal(body.source, 'kernel_names');
  assert.equal(body.jobs.length, 1, JSON.stringify(body.jobs.map((j) => j.run)));
  return body.jobs[0];
}

test('the rank given more compute is the straggler, late by the compute its own events measured', async () => {
  const job = await jobOf('straggler');
  assert.equal(job.run, 'straggler');
  assert.equal(job.ranks_from, 'rank tag');
  assert.deepEqual(job.ranks.map((r) => [r.rank, r.device]), [['0', '0'], ['1', '1']]);
  assert.ok(!job.mismatch, job.mismatch);
  assert.equal(job.unmatched, 0);
  // The warm-up and measured steps, plus the barrier's all-reduce at the end.
  assert.ok(job.matched >= measured('straggler', 0).steps, `${job.matched} matched`);
  assert.equal(job.ops[0].op, 'AllReduce');
  assert.ok(job.straggler, job.no_straggler);
  assert.equal(job.straggler.rank, '1');
  // What the job planted, by its own CUDA events: rank 1's compute per step less rank 0's.
  const planted = measured('straggler', 1).compute_ms_median - measured('straggler', 0).compute_ms_median;
  assert.ok(planted > 0.5, `the job planted ${planted} ms`);
  const found = job.straggler.extra_per_step_ms;
  assert.ok(Math.abs(found - planted) <= 0.1 * planted, `extra compute per step ${found} ms, planted ${planted} ms`);
  // Rank 0 waits in the all-reduce for rank 1; rank 1 hardly waits.
  assert.ok(job.ranks[0].wait_share > 0.5, JSON.stringify(job.ranks[0]));
  assert.ok(job.ranks[1].wait_share < 0.2, JSON.stringify(job.ranks[1]));
  assert.equal(job.ops[0].bytes, null, 'kernel names carry no sizes');
});

test('equal ranks have no straggler, and say why', async () => {
  const job = await jobOf('equal');
  assert.ok(!job.mismatch, job.mismatch);
  assert.ok(job.matched >= measured('equal', 0).steps);
  assert.equal(job.straggler, null, JSON.stringify(job.straggler));
  assert.match(job.no_straggler, /no rank arrived last|that matter/);
});

test('a window that begins between the ranks\' kernels of one all-reduce skips the lone kernel', async () => {
  const all = await jobOf('equal');
  // An instance whose kernels ended apart: a window from between the two ends holds one rank's
  // kernel of it but not the other's (kernels are selected by their end).
  const cut = all.instances.slice(5).find((i) => i.ranks[0].end_ns !== i.ranks[1].end_ns);
  assert.ok(cut, 'an instance whose ranks ended apart');
  const from = BigInt(Math.min(cut.ranks[0].end_ns, cut.ranks[1].end_ns)) + 1n;
  const res = await fetch(`${server.url}/api/v1/collectives?from=${from}&to=now&tag.run=equal`);
  assert.equal(res.status, 200);
  const job = (await res.json()).jobs[0];
  assert.ok(job.skipped >= 1, JSON.stringify({ skipped: job.skipped, unmatched: job.unmatched }));
  assert.equal(job.straggler, null, JSON.stringify(job.straggler));
  // Every instance pairs the same kernels as over the whole job.
  const pairs = new Set(all.instances.map((i) => i.ranks.map((r) => r.start_ns).join('/')));
  for (const i of job.instances) assert.ok(pairs.has(i.ranks.map((r) => r.start_ns).join('/')), `instance ${i.sequence}`);
});

test('a rank tag selects one rank\'s kernels, and an unknown run is refused by name', async () => {
  const one = await (await fetch(`${server.url}/api/v1/kernels?window=all&tag.run=straggler&tag.rank=1`)).json();
  assert.ok(one.kernels.length > 0);
  const both = await (await fetch(`${server.url}/api/v1/kernels?window=all&tag.run=straggler`)).json();
  const count = (k) => k.kernels.reduce((n, row) => n + row.count, 0);
  assert.ok(count(one) < count(both), `${count(one)} of ${count(both)}`);
  const job = await (await fetch(`${server.url}/api/v1/collectives?window=all&tag.run=straggler&tag.rank=1`)).json();
  assert.equal(job.jobs[0].ranks.length, 1);
  assert.equal(job.jobs[0].no_straggler, 'collectives of one rank only');
  const refused = await fetch(`${server.url}/api/v1/collectives?run=nope`);
  assert.equal(refused.status, 404);
  assert.equal((await refused.json()).error.field, 'run');
});
