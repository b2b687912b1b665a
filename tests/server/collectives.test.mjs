// Collectives of a real two-rank job: traces recorded on two H100s over NVLink by
// tests/gpu/run_collectives.sh (torchrun, an all-reduce per step, rank 1 given more matmuls in
// one job and none in the other), imported as `perfscope run` would have streamed them. The
// straggler is the rank the job slowed, by the extra compute its own CUDA events measured (its
// compute per step less the other rank's); the
// job with equal ranks has none. Each rank's time breakdown (compute, communication overlapped
// with it and exposed, idle) equals a sweep over the trace's own kernels, for the job whose
// all-reduce runs after the matmuls (none overlapped) and one whose all-reduce runs beside them.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
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
  await load('overlap');
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

// Each rank's kernels from the trace file itself, times relative to the trace's first kernel
// (nanosecond timestamps pass 2^53: read as BigInt). A kernel is communication when it is an
// NCCL collective by name, else compute.
function kernelsByRank(job) {
  const text = gunzipSync(readFileSync(path.join(fixtures, job, 'trace.ndjson.gz'))).toString('utf8');
  const raw = [];
  for (const line of text.split('\n')) {
    if (!line.includes('"type":"kernel"')) continue;
    const e = JSON.parse(line);
    raw.push({ rank: e.tags.rank, comm: /^nccl.*_(AllReduce|AllGather|ReduceScatter|Broadcast|Reduce|SendRecv|AllToAll)_/.test(e.name),
               start: BigInt(/"start_ns":(\d+)/.exec(line)[1]), end: BigInt(/"end_ns":(\d+)/.exec(line)[1]) });
  }
  const origin = raw.reduce((m, k) => (k.start < m ? k.start : m), raw[0].start);
  const ranks = new Map();
  for (const k of raw) {
    if (!ranks.has(k.rank)) ranks.set(k.rank, []);
    ranks.get(k.rank).push({ comm: k.comm, start: Number(k.start - origin), end: Number(k.end - origin) });
  }
  return { origin, ranks };
}

// The hand computation: sweep the kernels' start and end points in time order, counting how
// many compute and how many communication kernels are running, and add each stretch's length to
// the state it was in. [from, to) clips the sweep.
function sweep(kernels, from, to) {
  const points = [];
  for (const k of kernels) {
    const s = Math.max(k.start, from), e = Math.min(k.end, to);
    if (e <= s) continue;
    points.push([s, k.comm ? 0 : 1, +1], [e, k.comm ? 0 : 1, -1]);
  }
  points.sort((a, b) => a[0] - b[0]);
  const active = [0, 0];  // communication, compute
  const ns = { compute: 0, overlapped: 0, exposed: 0 };
  let at = from;
  for (const [t, kind, delta] of points) {
    const span = t - at;
    if (active[1] > 0) ns.compute += span;
    if (active[0] > 0) ns[active[1] > 0 ? 'overlapped' : 'exposed'] += span;
    at = t;
    active[kind] += delta;
  }
  const ms = (v) => v / 1e6;
  const window = to - from;
  return { window_ms: ms(window), compute_ms: ms(ns.compute), communication_ms: ms(ns.overlapped + ns.exposed),
           overlapped_ms: ms(ns.overlapped), exposed_ms: ms(ns.exposed),
           idle_ms: ms(window - ns.compute - ns.exposed) };
}

const nearestRankMedian = (v) => [...v].sort((a, b) => a - b)[Math.ceil(0.5 * v.length) - 1];

for (const [job, overlaps] of [['equal', false], ['overlap', true]]) {
  test(`${job}: each rank's compute, overlapped and exposed communication and idle time equal a sweep over its kernels`, async () => {
    const got = await jobOf(job);
    const { ranks } = kernelsByRank(job);
    const all = [...ranks.values()].flat();
    const from = Math.min(...all.map((k) => k.start)), to = Math.max(...all.map((k) => k.end));
    // Steps: one all-reduce each (the job's only collective); a step from one all-reduce's first
    // arrival on any rank to the next's, the k-th all-reduce of each rank being one instance.
    assert.equal(got.step_collectives, 1);
    assert.equal(got.unmatched, 0);
    const comms = [...ranks.values()].map((ks) => ks.filter((k) => k.comm).sort((a, b) => a.start - b.start));
    const bounds = comms[0].map((_, k) => Math.min(...comms.map((c) => c[k].start)));
    assert.equal(got.matched, bounds.length);
    assert.equal(got.steps, bounds.length - 1);
    for (const r of got.ranks) {
      const kernels = ranks.get(r.rank);
      const hand = sweep(kernels, from, to);
      for (const key of Object.keys(hand)) {
        assert.ok(Math.abs(r.breakdown[key] - hand[key]) <= 1e-6 * Math.max(1, hand[key]),
                  `rank ${r.rank} ${key}: ${r.breakdown[key]} against ${hand[key]} by hand`);
      }
      const perStep = bounds.slice(0, -1).map((b, j) => sweep(kernels, b, bounds[j + 1]));
      for (const key of Object.keys(hand)) {
        const want = nearestRankMedian(perStep.map((x) => x[key]));
        assert.ok(Math.abs(r.per_step[key] - want) <= 1e-6 * Math.max(1, want),
                  `rank ${r.rank} ${key} per step: ${r.per_step[key]} against ${want} by hand`);
      }
      if (overlaps) {
        // The all-reduce ran beside the matmuls: most of it hidden.
        assert.ok(r.breakdown.overlap_ratio > 0.3, `rank ${r.rank} overlap ${r.breakdown.overlap_ratio}`);
      } else {
        assert.equal(r.breakdown.overlapped_ms, 0, `rank ${r.rank}: nothing overlaps an all-reduce that follows its inputs`);
      }
    }
  });
}

test('a rank late into collectives the others run beside their compute is no straggler', async () => {
  // In the overlap job rank 0 enters each all-reduce later than rank 1, but rank 1 waits for it
  // beside its own matmuls: nobody is held up.
  const job = await jobOf('overlap');
  assert.equal(job.straggler, null, JSON.stringify(job.straggler));
  assert.match(job.no_straggler, /waited for it beside their own compute/);
  // Where the wait is exposed, the straggler says what it costs the others.
  const straggler = (await jobOf('straggler')).straggler;
  assert.ok(straggler.exposed_wait_caused_ms > 0.5 * straggler.extra_per_step_ms, JSON.stringify(straggler));
});

test('the communication rule weighs exposed time that moved data, not waiting for a straggler', async () => {
  // Rank 0 of the straggler job spends much of each step exposed in the all-reduce, but waiting
  // for rank 1 there: the straggler's doing, not the link's.
  const rank0 = (await jobOf('straggler')).ranks[0];
  assert.ok(rank0.per_step.exposed_share > 0.3, JSON.stringify(rank0.per_step));
  assert.ok(rank0.per_step.exposed_transfer_ms / rank0.per_step.window_ms < 0.2, JSON.stringify(rank0));
  assert.ok(rank0.per_step.exposed_transfer_ms < 0.25 * rank0.per_step.exposed_ms, 'most of it is waiting');
  const doc = await (await fetch(`${server.url}/api/v1/analysis?window=all&tag.run=straggler`)).json();
  const rule = doc.bottlenecks.find((b) => b.id === 'communication_bound');
  assert.equal(rule.status, 'ok', JSON.stringify(rule));
  assert.ok(rule.evidence.collective_exposed_transfer_share < 0.2, JSON.stringify(rule.evidence));
  assert.equal(doc.bottlenecks.find((b) => b.id === 'straggler').status, 'fired');
});

test('reports carry the multi-GPU job: Markdown, terminal and the JSON document', async () => {
  const md = await (await fetch(`${server.url}/api/v1/report?format=md&window=all&tag.run=straggler`)).text();
  assert.match(md, /## Multi-GPU jobs/);
  assert.match(md, /\*\*Straggler: rank 1\*\* — last in 98\.6% of the collectives, 1\.6\d ms more compute per 4\.\d\d ms step/);
  assert.match(md, /\| 0 \| 0 \| 2\.\d\d ms \| 1\.9\d ms \| 0\.\d\d ms \| 0\.00 ms \|/, "rank 0: its median step, most of its communication alone");
  const terminal = await (await fetch(`${server.url}/api/v1/report?format=terminal&window=all&tag.run=straggler`)).text();
  assert.match(terminal, /=== Multi-GPU Job straggler ===/);
  const doc = await (await fetch(`${server.url}/api/v1/report?format=json&window=all&tag.run=overlap`)).json();
  assert.equal(doc.collectives.length, 1);
  assert.equal(doc.collectives[0].run, 'overlap');
  assert.equal(doc.collectives[0].instances, undefined, 'a document summarises: no matched instances');
  assert.ok(doc.collectives[0].ranks[1].per_step.overlap_ratio > 0.5);
});

test('the timeline names each GPU by its rank and gives each collective\'s kernels in the order the ranks arrived', async () => {
  const job = await jobOf('straggler');
  const tl = await (await fetch(`${server.url}/api/v1/timeline?window=all&tag.run=straggler`)).json();
  assert.equal(tl.mode, 'raw');
  assert.deepEqual(tl.ranks.map((r) => [r.device, r.rank]), [['0', '0'], ['1', '1']]);
  assert.equal(tl.collectives.length, job.matched);
  for (const c of tl.collectives) {
    assert.equal(c.at.length, 2);
    assert.ok(c.at[0][1] <= c.at[1][1], 'in arrival order');
    assert.equal(c.last_rank, c.at[1][0], 'the last to arrive is the last point (rank = device here)');
    for (const [device, start] of c.at) {
      assert.ok(tl.tracks.some((t) => t.device === device && t.start.includes(start) &&
                                      tl.names[t.name[t.start.indexOf(start)]].startsWith('ncclDevKernel')),
                `a collective kernel starts at ${start} on GPU ${device}`);
    }
  }
  // Rank 1 is the straggler: it arrives last in nearly every instance.
  assert.ok(tl.collectives.filter((c) => c.last_rank === '1').length >= 0.9 * tl.collectives.length);
});

test('the trace shows each rank as a process and each collective as a flow through its ranks\' kernels', async () => {
  const trace = await (await fetch(`${server.url}/api/v1/trace?window=all&tag.run=straggler`)).json();
  const names = trace.traceEvents.filter((e) => e.ph === 'M' && e.name === 'process_name').map((e) => e.args.name);
  assert.ok(names.includes('rank 0 (GPU 0)') && names.includes('rank 1 (GPU 1)'), names.join(', '));
  const job = await jobOf('straggler');
  assert.equal(trace.metadata.collective_flows, job.matched);
  const slices = trace.traceEvents.filter((e) => e.ph === 'X' && e.name.startsWith('nccl'));
  const flows = new Map();
  for (const e of trace.traceEvents.filter((x) => x.cat === 'collective')) {
    if (!flows.has(e.id)) flows.set(e.id, []);
    flows.get(e.id).push(e);
  }
  assert.equal(flows.size, job.matched);
  for (const points of flows.values()) {
    assert.deepEqual(points.map((p) => p.ph), ['s', 'f'], 'two ranks: a start and a finish');
    assert.notEqual(points[0].pid, points[1].pid, 'the flow crosses ranks');
    assert.ok(Number(points[0].ts) <= Number(points[1].ts), 'from the first rank to arrive to the last');
    for (const p of points) {
      assert.ok(slices.some((x) => x.pid === p.pid && x.tid === p.tid && Number(x.ts) === Number(p.ts)),
                'each point is at the start of that rank\'s collective kernel');
    }
  }
});

// A pure all-reduce loop of 64, 128 and 256 MiB on two H200s (tests/gpu/run_bus_bandwidth.sh),
// traced with NCCL's profiler plugin: each collective described, so its bytes, algorithm and
// protocol are known, and bus bandwidth by nccl-tests' formula agrees with the job's own CUDA
// events around the loop (what nccl-tests does). The server's stand-in NVML gives each GPU 18
// NVLink links at 26 562 MB/s per link, as the H200s' driver did: the peak bandwidth is set against.
test('NCCL described the sweep: bus bandwidth within 10 % of the job\'s own CUDA-event timing, against the NVLink peak', async () => {
  const script = ['count 2'];
  for (const g of [0, 1]) {
    script.push(`${g}.name NVIDIA H200`, `${g}.uuid GPU-sweep-${g}`, `${g}.mem_total 150754820096`, `${g}.nvlink switch:18`,
                `${g}.nvlink_link_mbps 26562`);
  }
  const own = await startPerfscope({ label: 'collectives-sweep', nvmlScript: script.join('\n') + '\n' });
  try {
    const child = spawn(process.env.PERFSCOPE_BIN, ['import', path.join(fixtures, 'sweep', 'trace.ndjson.gz'), '--server', own.url],
                        { stdio: ['ignore', 'ignore', 'inherit'] });
    assert.equal(await new Promise((r) => child.on('exit', r)), 0);
    const body = await (await fetch(`${own.url}/api/v1/collectives?window=all&tag.run=sweep`)).json();
    assert.equal(body.source, 'nccl_profiler');
    assert.ok(Math.abs(body.link_peak_gb_per_second - 18 * 26.562) < 1e-9, body.link_peak_gb_per_second);
    assert.equal(body.unknown.bytes, undefined);
    const [job] = body.jobs;
    assert.ok(!job.mismatch, job.mismatch);
    assert.equal(job.unmatched, 0);
    assert.ok(job.communicators >= 1);
    // What its collectives crossed: the two GPUs' 18 links, through NVSwitches.
    assert.deepEqual(job.links, [{ a: '0', b: '1', link: 'NV18', nvlinks: 18, via_nvswitch: true }]);
    const ranks = [0, 1].map((r) => measured('sweep', r));
    for (const [i, size] of ranks[0].sweep.entries()) {
      const want = (ranks[0].sweep[i].busbw_gb_per_s + ranks[1].sweep[i].busbw_gb_per_s) / 2;
      const row = job.ops.find((o) => o.op === 'AllReduce' && o.bytes === size.bytes);
      assert.ok(row, `an AllReduce row of ${size.bytes} bytes in ${JSON.stringify(job.ops.map((o) => [o.op, o.bytes]))}`);
      assert.ok(row.instances >= size.iterations, `${row.instances} instances, the loop ran ${size.iterations}`);
      assert.equal(row.comm_ranks, 2);
      assert.match(row.algorithm, /^(RING|TREE|NVLS|NVLS_TREE|PAT|COLLNET_DIRECT|COLLNET_CHAIN)$/);
      assert.match(row.protocol, /^(LL|LL128|SIMPLE)$/);
      const got = row.busbw_p50_gb_per_second;
      assert.ok(Math.abs(got / want - 1) <= 0.10, `${size.bytes >> 20} MiB: busbw ${got} GB/s, the job's ${want} GB/s`);
      assert.ok(Math.abs(row.busbw_share_of_peak - got / (18 * 26.562)) < 1e-9);
    }
    const described = job.instances.filter((i) => i.bytes);
    assert.ok(described.length > 0 && described.every((i) => i.comm && i.busbw_gb_per_second > 0));
    // The reports carry the sizes, NCCL's choices and the bandwidth.
    const md = await (await fetch(`${own.url}/api/v1/report?format=md&window=all&tag.run=sweep`)).text();
    assert.match(md, /\| `AllReduce` \| 64\.00 MiB \| (RING|TREE|NVLS) · (LL|LL128|SIMPLE) \| [\d,]+ \| [^|]+ \| [^|]+ \| \d+\.\d% \| \d+\.\d GB\/s \| \d+\.\d% \|/);
    const terminal = await (await fetch(`${own.url}/api/v1/report?format=terminal&window=all&tag.run=sweep`)).text();
    assert.match(terminal, /AllReduce\s+256\.00 MiB\s+[\d,]+\s+\S+ \S+\s+\d+\.\d GB\/s\s+\d+\.\d%/);
    const analysis = await (await fetch(`${own.url}/api/v1/analysis?window=all&tag.run=sweep`)).json();
    // The GPUs' idle time was waiting with the next kernel launched, not for the host: no
    // launch-overhead finding.
    const launch = analysis.bottlenecks.find((f) => f.id === 'launch_overhead_bound');
    assert.equal(launch.status, 'ok', JSON.stringify(launch));
    assert.ok(launch.evidence.kernel_host_wait_share < 0.5);
    // Every large all-reduce reached more than half the peak: the rule is evaluated, and quiet.
    const rule = analysis.bottlenecks.find((f) => f.id === 'low_bus_bandwidth');
    assert.equal(rule.status, 'ok', JSON.stringify(rule));
    assert.ok(rule.evidence.collective_large_busbw_share_of_peak > 0.5);
  } finally {
    await own.stop();
  }
});
