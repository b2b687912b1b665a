// Exports are spooled, not built in memory: CSV tables and traces are written to a file as
// they are produced and sent from it, so clients that ask for large exports and never read
// hold a file each, not the export in the server's heap. Also checked: what a reading client
// gets is complete, on the wire gzipped or not, as a .csv.gz file, and for HEAD; a slow reader
// that keeps reading gets all of it, one that stops is cut off.
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

// Reads an export over a raw socket: `pace(elapsedMs)` says how many bytes of the body the
// client may have taken that long after the headers came (Infinity: all it can); the headers
// are read at once. Resolves with the body's length as announced and as received once the
// server ends the connection.
function readExport(port, target, pace) {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let started = 0;
    let head = '';
    let announced = -1;
    let received = 0;
    let taken = 0;
    const take = () => {
      for (;;) {
        const allowed = announced < 0 ? 1024 : pace(Date.now() - started) - taken;
        if (allowed <= 0) return;
        const chunk = s.read(Math.min(allowed, 4096)) ?? s.read();
        if (!chunk) return;
        if (announced >= 0) {
          taken += chunk.length;
          received += chunk.length;
          continue;
        }
        head += chunk.toString('latin1');
        const end = head.indexOf('\r\n\r\n');
        if (end < 0) continue;
        announced = Number(/content-length: (\d+)/i.exec(head.slice(0, end))[1]);
        received = taken = Buffer.byteLength(head, 'latin1') - end - 4;
        started = Date.now();
      }
    };
    const timer = setInterval(take, 50);
    s.on('readable', take);
    s.on('error', reject);
    s.on('end', () => { clearInterval(timer); s.destroy(); resolve({ announced, received }); });
    s.write(`GET ${target} HTTP/1.1\r\nHost: localhost\r\nAccept-Encoding: identity\r\nConnection: close\r\n\r\n`);
  });
}

test('a slow reader that keeps reading gets the whole export; one that takes nothing is cut off', async () => {
  // A server of its own with a short request timeout, so that the readers take seconds: ~16 MB
  // of CSV from 8,000 kernels with two tags of 1,000 bytes each.
  const own = await startPerfscope({
    label: 'exports-slow', args: ['--enable-gpu-collector', 'false', '--enable-host-collector', 'false',
                                  '--request-timeout-ms', '3000'],
  });
  try {
    const note = 'n'.repeat(1000);
    const t0 = Date.now() * 1e6 - 60e9;
    for (let b = 0; b < 8000; b += 2000) {
      const batch = [];
      for (let i = b; i < b + 2000; i++) {
        batch.push({ type: 'kernel', name: `gemm_${i % 50}`, start_ns: t0 + i * 1e5, end_ns: t0 + i * 1e5 + 5e4,
                     tags: { note, more: note } });
      }
      assert.equal((await postEvents(own.url, batch)).accepted, 2000);
    }
    await readers(own.url);
  } finally {
    await own.stop();
  }
});

async function readers(url) {
  const port = Number(new URL(url).port);
  const target = '/api/v1/report?format=csv&table=kernels&window=all';
  // Slow: 64 KB/s for twelve seconds (four request timeouts), then as fast as it can. The
  // kernel wakes a blocked writer only when a third of its send buffer (megabytes) has drained,
  // which at this pace takes some 16 s: a timeout per write cut such a reader off. (Not much
  // slower: on loopback the receiver opens its window a segment of 64 KB at a time, and the
  // server sees no progress in between.)
  const slow = readExport(port, target, (ms) => (ms < 12000 ? 64 * ms : Infinity));
  // Stalled: after the headers, nothing for three timeouts, then all it can.
  const stalled = readExport(port, target, (ms) => (ms < 9000 ? 0 : Infinity));
  const [a, b] = await Promise.all([slow, stalled]);
  assert.ok(a.announced > 10 * 2 ** 20, `an export of some size: ${a.announced}`);
  assert.equal(a.received, a.announced, 'the slow reader got the whole body');
  assert.ok(b.received < b.announced, `the stalled reader was cut off: ${b.received} of ${b.announced} bytes`);
  assert.equal((await fetch(url + '/healthz')).status, 200);
}
