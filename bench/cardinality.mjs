// What a careless producer costs, with and without the cardinality caps: posts TOTAL kernels
// each with a distinct name (a request id in the name), in requests of 20,000, to a real server
// started once with the default caps and once with the kernel-name cap off
// (--cardinality-limit kernel_name=0), and reports per run: the wall time of the posts, what
// was folded, the size of /api/v1/kernels over the window, the server's RSS and the database
// size after a commit.
// Usage: node bench/cardinality.mjs PERFSCOPE_BIN [TOTAL=200000]
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { startPerfscope } from '../tests/support/perfscope_server.mjs';

const [bin, totalArg] = process.argv.slice(2);
if (!bin) {
  console.error('usage: node bench/cardinality.mjs PERFSCOPE_BIN [TOTAL]');
  process.exit(2);
}
const total = Number(totalArg ?? 200000);
process.env.PERFSCOPE_BIN = path.resolve(bin);  // what startPerfscope runs
const perRequest = 20000;
const base = 1_700_000_000_000_000_000;

function rssMb(pid) {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmRSS:'));
  return Number(line.split(/\s+/)[1]) / 1024;
}

function dbMb(dir) {
  let bytes = 0;
  for (const f of readdirSync(dir)) if (f.includes('.db')) bytes += statSync(path.join(dir, f)).size;
  return bytes / 1e6;
}

async function trial(label, extra) {
  const server = await startPerfscope({
    label: 'cardinality', args: ['--enable-host-collector', 'false', '--enable-gpu-collector', 'false', ...extra],
  });
  let folded = 0;
  const t0 = performance.now();
  for (let sent = 0; sent < total; sent += perRequest) {
    const events = [];
    for (let i = sent; i < Math.min(total, sent + perRequest); i++) {
      const s = base + i * 1000;
      events.push({ type: 'kernel', name: `gemm_request_${i}`, start_ns: s, end_ns: s + 500 });
    }
    const r = await fetch(server.url + '/api/v1/events', {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ events }),
    });
    if (r.status !== 200) throw new Error(`ingest answered ${r.status}: ${await r.text()}`);
    folded += (await r.json()).folded ?? 0;
  }
  const postS = (performance.now() - t0) / 1000;
  const t1 = performance.now();
  const kernels = await (await fetch(`${server.url}/api/v1/kernels?from=${base}&to=${base + 1e12}`)).text();
  const kernelsMs = performance.now() - t1;
  const rows = JSON.parse(kernels).kernels.length;
  await new Promise((r) => setTimeout(r, 1500));  // a commit interval
  const row = { label, posts_s: postS.toFixed(2), folded, kernel_rows: rows,
                kernels_answer_mb: (kernels.length / 1e6).toFixed(2), kernels_ms: kernelsMs.toFixed(0),
                rss_mb: rssMb(server.proc.pid).toFixed(1), db_mb: dbMb(server.dataDir).toFixed(1) };
  await server.stop();
  return row;
}

const rows = [await trial('default caps', []), await trial('kernel_name cap off', ['--cardinality-limit', 'kernel_name=0'])];
console.log(`${total} kernels with distinct names in requests of ${perRequest}:`);
console.log('| server | posts s | folded | /api/v1/kernels rows | answer MB | answer ms | RSS MB | DB MB |');
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const r of rows) {
  console.log(`| ${r.label} | ${r.posts_s} | ${r.folded} | ${r.kernel_rows} | ${r.kernels_answer_mb} | ${r.kernels_ms} | ${r.rss_mb} | ${r.db_mb} |`);
}
