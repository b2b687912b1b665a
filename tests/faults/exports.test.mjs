// Exports are spooled, not built in memory: CSV tables and traces are written to a file as
// they are produced and sent from it, so clients that ask for large exports and never read
// hold a file each, not the export in the server's heap. Also checked: what a reading client
// gets is complete, on the wire gzipped or not, as a .csv.gz file, and for HEAD.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { startPerfscope, postEvents } from '../support/perfscope_server.mjs';

const kernels = 40000;
let server;

before(async () => {
  // RSS as live memory: under AddressSanitizer freed blocks would otherwise sit in its
  // quarantine (256 MB by default).
  server = await startPerfscope({
    label: 'exports', args: ['--enable-gpu-collector', 'false', '--enable-host-collector', 'false'],
    env: { ASAN_OPTIONS: `${process.env.ASAN_OPTIONS ?? ''}:quarantine_size_mb=0:thread_local_quarantine_size_kb=0` },
  });
  // ~400 bytes a CSV row (one tag value of 300 bytes, the same for all): ~16 MB a table.
  const note = 'n'.repeat(300);
  const t0 = Date.now() * 1e6 - 60e9;
  for (let b = 0; b < kernels; b += 5000) {
    const batch = [];
    for (let i = b; i < b + 5000; i++) {
      batch.push({ type: 'kernel', name: `gemm_${i % 50}`, stream: String(i % 4), start_ns: t0 + i * 1e5,
                   end_ns: t0 + i * 1e5 + 5e4, tags: { note } });
    }
    assert.equal((await postEvents(server.url, batch)).accepted, 5000);
  }
});

after(async () => {
  if (server) await server.stop();
});

const csvUrl = () => server.url + '/api/v1/report?format=csv&table=kernels&window=all';

test('a large CSV export arrives whole: identity, gzip on the wire, as a .csv.gz file, and HEAD', async () => {
  const plain = await fetch(csvUrl(), { headers: { 'Accept-Encoding': 'identity' } });
  assert.equal(plain.status, 200);
  assert.equal(plain.headers.get('content-encoding'), null);
  const text = await plain.text();
  assert.equal(Number(plain.headers.get('content-length')), Buffer.byteLength(text));
  const rows = text.split('\r\n');
  assert.equal(rows.at(-1), '', 'the body ends with a whole row');
  assert.equal(rows.length - 2, kernels, 'every kernel, once');
  assert.ok(Buffer.byteLength(text) > 10 * 2 ** 20, `an export of some size: ${Buffer.byteLength(text)} bytes`);

  const zipped = await fetch(csvUrl());  // fetch sends Accept-Encoding: gzip, … and inflates
  assert.equal(zipped.headers.get('content-encoding'), 'gzip');
  assert.equal(await zipped.text(), text);

  const file = await fetch(csvUrl() + '&compress=gzip', { headers: { 'Accept-Encoding': 'identity' } });
  assert.equal(file.headers.get('content-type'), 'application/gzip');
  assert.match(file.headers.get('content-disposition'), /perfscope-kernels\.csv\.gz/);
  assert.equal(gunzipSync(Buffer.from(await file.arrayBuffer())).toString('utf8'), text);

  const head = await fetch(csvUrl(), { method: 'HEAD', headers: { 'Accept-Encoding': 'identity' } });
  assert.equal(head.status, 200);
  assert.equal(Number(head.headers.get('content-length')), Buffer.byteLength(text));
  assert.equal((await head.arrayBuffer()).byteLength, 0);

  const trace = await (await fetch(server.url + '/api/v1/trace?window=all')).json();
  assert.equal(trace.traceEvents.filter((e) => e.ph === 'X' && e.cat === 'kernel').length, kernels);
  assert.equal(trace.metadata.truncated, false);
});

function rssKiB(pid) {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
}

test('clients that ask for large exports and never read cannot grow the server', async () => {
  const port = Number(new URL(server.url).port);
  const targets = [];
  for (let i = 0; i < 4; i++) targets.push('/api/v1/report?format=csv&table=kernels&window=all');
  for (let i = 0; i < 2; i++) targets.push('/api/v1/trace?window=all');
  const before = rssKiB(server.proc.pid);
  let peak = before;
  const sockets = [];
  const answered = targets.map((target) => new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    sockets.push(s);
    s.on('error', reject);
    // The first bytes (the headers) come once the export is complete; after them, nothing is
    // read: the socket is paused, and the server's writes stop when the buffers are full.
    s.once('data', (chunk) => { s.pause(); resolve(chunk.toString('latin1')); });
    s.write(`GET ${target} HTTP/1.1\r\nHost: localhost\r\n\r\n`);
  }));
  const sampler = setInterval(() => { peak = Math.max(peak, rssKiB(server.proc.pid)); }, 50);
  try {
    for (const head of await Promise.all(answered)) assert.match(head, /^HTTP\/1\.1 200/);
    for (let i = 0; i < 10; i++) {
      await new Promise((r) => setTimeout(r, 100));
      peak = Math.max(peak, rssKiB(server.proc.pid));
    }
  } finally {
    clearInterval(sampler);
    for (const s of sockets) s.destroy();
  }
  const grown = (peak - before) / 1024;
  console.log(`six non-reading export clients (four ~16 MB CSV tables, two traces): RSS ${before >> 10} → ` +
              `peak ${peak >> 10} MiB (+${grown.toFixed(1)} MiB)`);
  // Built in memory, the four tables alone would stay held: 4 × 16 MB, plus the traces.
  assert.ok(grown < 40, `RSS grew ${grown.toFixed(1)} MiB for six export clients that never read`);
  assert.equal((await fetch(server.url + '/healthz')).status, 200);
});
