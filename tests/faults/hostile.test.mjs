// What a hostile client found, each case as a regression test against the real server on
// loopback: framing that once killed the process (a 70 KB chunked trailer), Host framing per
// RFC 9112, cross-origin writes and WebSocket upgrades, a stream client that sends and never
// reads, acknowledged samples sent out of order, a batch whose sizes and times would wrap later
// sums, and names that would turn the HTML, terminal and CSV reports against their reader.
// After every framing case the server must still answer /healthz and keep what it acknowledged.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { readFileSync, rmSync } from 'node:fs';
import { startPerfscope, postEvents } from '../support/perfscope_server.mjs';
import { rawExchange } from '../support/raw_socket.mjs';

let server, port;
before(async () => {
  server = await startPerfscope({ label: 'hostile' });
  port = Number(new URL(server.url).port);
});
after(async () => {
  assert.equal(server.proc.exitCode, null, 'the server is still running');
  await server.stop();
  // The restarted server was handed its first one's data directory, which stop() keeps.
  rmSync(server.dataDir, { recursive: true, force: true });
});

const raw = (bytes, { wait = 3000 } = {}) => rawExchange(port, bytes, { wait });
const statusOf = (text) => { const m = /^HTTP\/1\.[01] (\d{3})/.exec(text); return m ? Number(m[1]) : null; };

async function healthy() {
  const r = await fetch(server.url + '/healthz');
  assert.equal(r.status, 200, 'the server answers /healthz');
}

// A 4xx and a closed connection (or a close without an answer), and the server still serving.
async function refusedAndClosed(bytes, label) {
  const r = await raw(bytes);
  const code = statusOf(r.text);
  assert.ok(r.closed, `${label}: the connection is closed (got ${code})`);
  assert.ok(code === null || (code >= 400 && code < 500), `${label}: got ${code}: ${r.text.slice(0, 200)}`);
  await healthy();
  return code;
}

const chunkedHead = (path = '/healthz', method = 'GET') =>
  `${method} ${path} HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n`;

test('chunked trailers, chunk extensions and chunk-size lines are bounded: a 4xx, never a dead process', async () => {
  const cases = {
    'a 70,000-byte trailer field': chunkedHead() + '1\r\nx\r\n0\r\nX-Big: ' + 'a'.repeat(70000) + '\r\n\r\n',
    'a 200,000-byte trailer field': chunkedHead() + '1\r\nx\r\n0\r\nX-Big: ' + 'a'.repeat(200000) + '\r\n\r\n',
    'a 60,000-byte trailer field (past the header limit)': chunkedHead() + '1\r\nx\r\n0\r\nX-Big: ' + 'a'.repeat(60000) + '\r\n\r\n',
    'a 70,000-byte trailer field name': chunkedHead() + '1\r\nx\r\n0\r\n' + 'N'.repeat(70000) + ': v\r\n\r\n',
    'ten thousand small trailer fields': chunkedHead() + '1\r\nx\r\n0\r\n' + 'X-T: v\r\n'.repeat(10000) + '\r\n',
    'a 100,000-byte chunk extension': chunkedHead() + '1;ext=' + 'e'.repeat(100000) + '\r\nx\r\n0\r\n\r\n',
    'an extension on the last chunk': chunkedHead() + '1\r\nx\r\n0;' + 'e'.repeat(100000) + '\r\n\r\n',
    'a chunk-size of 100,000 zeros': chunkedHead() + '0'.repeat(100000) + '1\r\nx\r\n0\r\n\r\n',
    'a trailer on an ingest POST': chunkedHead('/api/v1/events', 'POST').replace('\r\n\r\n', '\r\nContent-Type: application/json\r\n\r\n') +
      '2\r\n{}\r\n0\r\nX-Big: ' + 'a'.repeat(70000) + '\r\n\r\n',
  };
  for (const [label, bytes] of Object.entries(cases)) await refusedAndClosed(bytes, label);
  // A small trailer is still fine.
  const ok = await raw(chunkedHead() + '1\r\nx\r\n0\r\nX-Small: 1\r\n\r\n', { wait: 1500 });
  assert.equal(statusOf(ok.text), 200, ok.text.slice(0, 200));
  // And pipelined after a kept-alive request.
  const pipelined = await raw('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n' + chunkedHead() + '1\r\nx\r\n0\r\nX-Big: ' +
                              'a'.repeat(70000) + '\r\n\r\n');
  assert.ok(pipelined.closed);
  assert.equal(statusOf(pipelined.text), 200, 'the first request is answered');
  assert.match(pipelined.text.slice(20), /HTTP\/1\.1 4\d\d/, 'the second is refused');
  await healthy();
});

test('Host per RFC 9112: missing on HTTP/1.1 or repeated is 400; HTTP/1.0 may omit it', async () => {
  const missing = await raw('GET /healthz HTTP/1.1\r\n\r\n');
  assert.equal(statusOf(missing.text), 400, missing.text.slice(0, 200));
  assert.match(missing.text, /"field":"Host"/);
  const twice = await raw('GET /healthz HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\n\r\n');
  assert.equal(statusOf(twice.text), 400, twice.text.slice(0, 200));
  const twiceSame = await raw('GET /healthz HTTP/1.1\r\nHost: localhost\r\nHost: localhost\r\n\r\n');
  assert.equal(statusOf(twiceSame.text), 400);
  const old = await raw('GET /healthz HTTP/1.0\r\n\r\n');
  assert.equal(statusOf(old.text), 200, old.text.slice(0, 200));
  await healthy();
});

const sample = (metric, ts, value = 1) => ({ type: 'sample', metric, ts_ns: ts, value });

test('cross-origin writes: a foreign Origin is refused on writes and upgrades; a body of another type is 415', async () => {
  const body = JSON.stringify({ events: [sample('xorigin_probe', Date.now() * 1e6)] });
  const post = (headers) => fetch(server.url + '/api/v1/events', { method: 'POST', headers, body });
  let r = await post({ 'Content-Type': 'application/json', Origin: 'http://evil.example' });
  assert.equal(r.status, 403);
  assert.equal((await r.json()).error.code, 'origin_not_allowed');
  r = await post({ 'Content-Type': 'application/json', Origin: 'null' });
  assert.equal(r.status, 403, 'a sandboxed page (Origin: null) is foreign');
  r = await post({ 'Content-Type': 'application/json', Origin: `http://localhost:${port + 1}` });
  assert.equal(r.status, 403, 'another port of the same host is another origin');
  r = await fetch(server.url + '/api/v1/abtests', { method: 'POST', headers: { 'Content-Type': 'application/json', Origin: 'https://evil.example' },
                                                 body: '{}' });
  assert.equal(r.status, 403);
  // No Content-Type (a no-cors fetch of a Blob) and text/plain (of a string) are not JSON.
  const noType = await raw(`POST /api/v1/events HTTP/1.1\r\nHost: localhost\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
  assert.equal(statusOf(noType.text), 415, noType.text.slice(0, 300));
  r = await post({ 'Content-Type': 'text/plain;charset=UTF-8' });
  assert.equal(r.status, 415);
  r = await fetch(server.url + '/api/v1/abtests', { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: '{}' });
  assert.equal(r.status, 415);
  // The server's own page, and a client that is not a browser, still write.
  r = await post({ 'Content-Type': 'application/json', Origin: server.url });
  assert.equal(r.status, 200, await r.text());
  r = await post({ 'Content-Type': 'application/json', Origin: server.url.replace('127.0.0.1', 'localhost') });
  assert.equal(r.status, 403, 'another name of the same machine is another origin');
  // WebSocket upgrades of both endpoints from a foreign page.
  for (const path of ['/api/v1/stream', '/api/v1/ingest']) {
    const upgrade = (origin) => raw(`GET ${path} HTTP/1.1\r\nHost: localhost:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
                                    `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n` +
                                    (origin ? `Origin: ${origin}\r\n` : '') + '\r\n', { wait: 1500 });
    const foreign = await upgrade('http://evil.example');
    assert.equal(statusOf(foreign.text), 403, `${path}: ${foreign.text.slice(0, 200)}`);
    const own = await upgrade(`http://localhost:${port}`);
    assert.equal(statusOf(own.text), 101, `${path} from the server's own page`);
    const none = await upgrade(null);
    assert.equal(statusOf(none.text), 101, `${path} from a client that is not a browser`);
  }
  await healthy();
});

// A masked client text frame (RFC 6455), 16- or 64-bit length as needed.
function wsFrame(text) {
  const payload = Buffer.from(text);
  const mask = Buffer.from([1, 2, 3, 4]);
  let head;
  if (payload.length < 126) head = Buffer.from([0x81, 0x80 | payload.length]);
  else if (payload.length < 65536) { head = Buffer.alloc(4); head[0] = 0x81; head[1] = 0x80 | 126; head.writeUInt16BE(payload.length, 2); }
  else { head = Buffer.alloc(10); head[0] = 0x81; head[1] = 0x80 | 127; head.writeBigUInt64BE(BigInt(payload.length), 2); }
  const masked = Buffer.alloc(payload.length);
  for (let i = 0; i < payload.length; i++) masked[i] = payload[i] ^ mask[i & 3];
  return Buffer.concat([head, mask, masked]);
}

function rssKiB(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m[1]);
}

test('a stream client that sends and never reads cannot grow the server: its replies stop its reads', async () => {
  // A server of its own, whose RSS is its live memory: under AddressSanitizer freed blocks are
  // held in a quarantine (256 MB by default), which is not the server's.
  const own = await startPerfscope({
    label: 'hostile-reader', args: ['--enable-gpu-collector', 'false'],
    env: { ASAN_OPTIONS: `${process.env.ASAN_OPTIONS ?? ''}:quarantine_size_mb=0:thread_local_quarantine_size_kb=0` },
  });
  const ownPort = Number(new URL(own.url).port);
  // Each subscribe message is ~61 KB of valid patterns, echoed back in full; the clients never
  // read. Unbounded, the server would take in every message and queue every echo:
  // 3 × 400 × 61 KB ≈ 73 MB.
  const patterns = [];
  while (JSON.stringify(patterns).length < 60000) patterns.push('series_' + patterns.length + '_*');
  const message = wsFrame(JSON.stringify({ subscribe: patterns }));
  const sent = 400 * message.length;
  const before = rssKiB(own.proc.pid);
  const sockets = [];
  let closedEarly = 0;
  for (let c = 0; c < 3; c++) {
    const s = net.connect(ownPort, '127.0.0.1');
    sockets.push(s);
    s.on('error', () => {});
    s.on('close', () => { closedEarly++; });
    await new Promise((resolve) => s.on('connect', resolve));
    // As a browser does: frames only once the 101 has come; from then on, nothing is read.
    const upgraded = new Promise((resolve) => {
      let head = '';
      const onData = (chunk) => {
        head += chunk.toString('latin1');
        if (head.includes('\r\n\r\n')) { s.off('data', onData); s.pause(); resolve(head); }
      };
      s.on('data', onData);
    });
    s.write(`GET /api/v1/stream HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
            `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`);
    assert.match(await upgraded, /^HTTP\/1\.1 101/);
    for (let i = 0; i < 400; i++) s.write(message);
  }
  // Until the server has taken all it will take: what the clients still hold stops shrinking.
  let held = sockets.map((s) => s.writableLength), steady = 0, peak = before;
  for (let i = 0; i < 120 && steady < 8; i++) {
    await new Promise((r) => setTimeout(r, 250));
    peak = Math.max(peak, rssKiB(own.proc.pid));
    const now = sockets.map((s) => s.writableLength);
    steady = now.every((n, k) => n === held[k]) ? steady + 1 : 0;
    held = now;
  }
  const grown = (peak - before) / 1024;
  console.log(`non-reading stream clients: RSS ${before >> 10} → peak ${peak >> 10} MiB (+${grown.toFixed(1)} MiB); ` +
              `still unsent per client: ${held.map((n) => (n / 2 ** 20).toFixed(1)).join(', ')} of ${(sent / 2 ** 20).toFixed(1)} MiB`);
  assert.equal(closedEarly, 0, 'the server holds the clients (it stops reading them, it does not cut them off)');
  // The server stopped reading each client long before the end of what it sent (32 replies'
  // worth, plus what the sockets' kernel buffers hold).
  for (const n of held) assert.ok(n > sent / 3, `the server went on reading a client that never read: ${n} of ${sent} bytes left`);
  assert.ok(grown < 40, `RSS grew ${grown.toFixed(1)} MiB for three clients that never read`);
  for (const s of sockets) s.destroy();
  await own.stop();
});

test('acknowledged samples sent out of order are all readable at once, and after a restart', async () => {
  const base = Math.floor(Date.now() / 1000) * 1e9 - 120e9;
  // 700 samples 100 ms apart: shuffled a few positions, then four producers interleaved.
  const ts = Array.from({ length: 700 }, (_, i) => base + i * 1e8);
  let seed = 11;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  for (let i = 0; i + 4 < ts.length; i++) { const j = i + Math.floor(rand() * 5); [ts[i], ts[j]] = [ts[j], ts[i]]; }
  const producers = [[], [], [], []];
  ts.forEach((t, i) => producers[i % 4].push(t));
  // Batches of 7 from the producers in turn, each acknowledged before the next.
  for (let k = 0; k < 700 / 28; k++) {
    for (const p of producers) await postEvents(server.url, p.slice(k * 7, k * 7 + 7).map((t) => sample('late_probe', t, t / 1e8 - base / 1e8)));
  }
  const from = base - 1e9, to = base + 71e9;
  const count = async (url) => {
    const q = await (await fetch(`${url}/api/v1/series/query?name=late_probe&from=${from}&to=${to}&max_points=100000`)).json();
    const points = q.series.reduce((n, s) => n + s.points.length, 0);
    const p = await (await fetch(`${url}/api/v1/percentiles?series=late_probe&from=${from}&to=${to}`)).json();
    const csv = await (await fetch(`${url}/api/v1/report?format=csv&table=samples&from=${from}&to=${to}`)).text();
    const rows = csv.trim().split('\r\n').filter((l) => l.includes('late_probe')).length;
    return { points, percentiles: p.count, csv: rows };
  };
  assert.deepEqual(await count(server.url), { points: 700, percentiles: 700, csv: 700 });
  // Every value present once, in time order.
  const q = await (await fetch(`${server.url}/api/v1/series/query?name=late_probe&from=${from}&to=${to}&max_points=100000`)).json();
  const values = q.series[0].points.map((p) => Math.round(p[1]));
  assert.deepEqual(values, Array.from({ length: 700 }, (_, i) => i));

  const dataDir = server.dataDir;
  const listen = `127.0.0.1:${port}`;
  server.proc.kill('SIGTERM');
  await server.exit;
  server = await startPerfscope({ label: 'hostile', dataDir, listen });
  assert.deepEqual(await count(server.url), { points: 700, percentiles: 700, csv: 700 }, 'after a restart');
});

test('sizes and times that would wrap a later sum are refused, and reads keep working', async () => {
  const now = Date.now() * 1e6;
  const refuse = async (event, field) => {
    const r = await fetch(server.url + '/api/v1/events', { method: 'POST', headers: { 'Content-Type': 'application/json' },
                                                         body: JSON.stringify({ events: [event] }) });
    assert.equal(r.status, 400, JSON.stringify(event));
    const e = (await r.json()).error;
    assert.equal(e.field, field, e.message);
  };
  // JSON numbers past 2^53 lose precision in JavaScript: sent as raw text.
  const rawPost = (text) => fetch(server.url + '/api/v1/events', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: text });
  let r = await rawPost(`{"events":[{"type":"memory","op":"alloc","address":"0x1","size_bytes":9223372036854775807,"ts_ns":${now}}]}`);
  assert.equal(r.status, 400);
  assert.equal((await r.json()).error.field, 'size_bytes');
  r = await rawPost(`{"events":[{"type":"kernel","name":"k","start_ns":1,"end_ns":9223372036854775807}]}`);
  assert.equal(r.status, 400);
  assert.equal((await r.json()).error.field, 'end_ns');
  await refuse({ type: 'kernel', name: 'k', start_ns: 1e9, end_ns: 1e9 + 8 * 86400e9 }, 'end_ns');
  await refuse({ type: 'inference', model: 'm', latency_ms: 1e300 }, 'latency_ms');
  await refuse({ type: 'inference', model: 'm', latency_ms: 1, output_tokens: 2 ** 32 }, 'output_tokens');
  await refuse({ type: 'inference', model: 'm', latency_ms: 1, input_tokens: 2 ** 40 }, 'input_tokens');
  // The largest token counts, summed over requests, stay exact; model= keeps that model's row.
  await postEvents(server.url, Array.from({ length: 3 }, (_, i) => ({ type: 'inference', model: 'token_sum', latency_ms: 1, output_tokens: 2 ** 32 - 1, ts_ns: now + i })));
  const inf = await (await fetch(server.url + '/api/v1/inference?window=all&model=token_sum')).json();
  assert.deepEqual(inf.models.map((m) => [m.model, m.output_tokens]), [['token_sum', 3 * (2 ** 32 - 1)]]);
  assert.deepEqual((await (await fetch(server.url + '/api/v1/inference?window=all&model=no_such_model')).json()).models, []);
  await refuse({ type: 'sample', metric: 'm'.repeat(100000), value: 1 }, 'metric');
  await refuse({ type: 'kernel', name: 'k', duration_ms: 1, tags: { ['k'.repeat(5000)]: 'v' } }, 'tags');
  // The largest allowed, many times over: sums stay right and every read answers.
  const big = 2 ** 50;
  const allocs = Array.from({ length: 20 }, (_, i) => ({ type: 'memory', op: 'alloc', address: `0x${i + 1}`, size_bytes: big, ts_ns: now + i }));
  allocs.push({ type: 'memory', op: 'alloc', address: '0xff', size_bytes: 1, ts_ns: now + 30 });
  await postEvents(server.url, allocs);
  const week = 7 * 86400e9;
  await postEvents(server.url, Array.from({ length: 3 }, (_, i) => ({ type: 'kernel', name: 'weeklong', start_ns: now - week + i, end_ns: now + i })));
  for (const path of ['/api/v1/memory?window=1h', '/api/v1/analysis?window=all', '/api/v1/kernels?window=all', '/api/v1/report?window=all']) {
    const a = await fetch(server.url + path);
    assert.equal(a.status, 200, `${path}: ${(await a.text()).slice(0, 300)}`);
  }
  const kernels = await (await fetch(server.url + '/api/v1/kernels?window=all')).json();
  const k = (kernels.kernels ?? kernels).find((x) => x.name === 'weeklong');
  assert.ok(k && k.avg_ms >= k.min_ms && k.avg_ms <= k.max_ms, JSON.stringify(k));
});

test('names cannot turn the HTML, terminal or CSV report against their reader', async () => {
  const now = Date.now() * 1e6;
  const names = ['<!--<script>', '</script><script>alert(1)</script>', ']]>"\'&amp;', 'esc\u001b[31mred\u0000nul\u009b',
                 '=HYPERLINK("http://evil.example","x")', '+1+2', '-2+3', '@SUM(A1)', 'cr\rin\u0000the name'];
  await postEvents(server.url, names.map((name, i) => ({ type: 'kernel', name, start_ns: now - 1e6 + i, end_ns: now + i })));
  const html = await (await fetch(server.url + '/api/v1/report?format=html&window=5m')).text();
  // The data block holds no '<' at all, and parses back to the names as sent.
  const m = /<script type="application\/json" id="report-data">([^]*?)<\/script>/.exec(html);
  assert.ok(m, 'the data block is there and ends where it should');
  assert.ok(!m[1].includes('<'), 'no < inside the data block');
  const doc = JSON.parse(m[1]);
  const shown = new Set(doc.kernels?.top?.map?.((k) => k.name) ?? []);
  for (const n of names) assert.ok(JSON.stringify(doc).includes(JSON.stringify(n).slice(1, -1)) || shown.has(n), `${n} in the data`);
  assert.equal((html.match(/<script/g) || []).length, 3, 'only the report\'s own three scripts');

  const terminal = await (await fetch(server.url + '/api/v1/report?format=terminal&window=5m')).text();
  assert.ok(!/[\u0000-\u0008\u000b-\u001f\u007f\u0080-\u009f]/.test(terminal), 'no control characters reach the terminal');
  assert.match(terminal, /esc\^\[\[31mred/, 'ESC shown as ^[');
  // A model of that name too: its few requests bring a warning line, where the name is not in a
  // code span. Outside code spans Markdown passes HTML through: none may come from a name.
  await postEvents(server.url, [{ type: 'inference', model: '<img src=x onerror=alert(1)>', latency_ms: 5, ts_ns: now }]);
  const md = await (await fetch(server.url + '/api/v1/report?format=md&window=5m')).text();
  assert.ok(!/[\u0000-\u0008\u000b-\u001f\u007f\u0080-\u009f]/.test(md), 'nor through Markdown');
  assert.match(md, /onerror=alert/, 'the model is in the report');
  const prose = md.replace(/`[^`\n]*`/g, '');
  assert.ok(!/<(script|img|!--)/i.test(prose), `raw HTML from a name in the Markdown: ${prose.match(/.{0,40}<(script|img|!--).{0,40}/i)?.[0]}`);

  const csv = await (await fetch(server.url + '/api/v1/report?format=csv&table=kernels&window=5m')).text();
  const firstCells = csv.split('\r\n').slice(1).filter(Boolean).map((l) => l.startsWith('"') ? l.slice(1) : l);
  for (const cell of firstCells) assert.ok(!/^[=+\-@\t\r]/.test(cell), `a CSV cell that a spreadsheet runs: ${cell.slice(0, 60)}`);
  assert.ok(csv.includes(`"'=HYPERLINK(""http://evil.example"",""x"")"`), 'the formula kept as text, with a leading apostrophe');
  assert.ok(csv.includes("'-2+3"));
  assert.ok(!/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\u0080-\u009f]/.test(csv), 'no control characters in the CSV');
  assert.match(csv, /esc\^\[\[31mred\^@nul\uFFFD/, 'ESC and NUL in caret notation, C1 as U+FFFD');
});

test('one meaning of run=: events tagged with a run that was never started are refused alike everywhere', async () => {
  const now = Date.now() * 1e6;
  await postEvents(server.url, [
    { type: 'kernel', name: 'tagged_only', start_ns: now - 2e6, end_ns: now - 1e6, tags: { run: 'ra' } },
    { type: 'inference', model: 'tagged_model', latency_ms: 5, ts_ns: now, tags: { run: 'ra' } },
  ]);
  const u = server.url + '/api/v1';
  const messages = new Set();
  for (const path of ['kernels', 'percentiles?kernel=tagged_only', 'inference', 'analysis', 'report?format=json', 'report?format=md',
                      'memory', 'timeline?window=5m', 'runs/ra']) {
    const r = await fetch(`${u}/${path}${path.includes('?') ? '&' : path.startsWith('runs/') ? '' : '?'}${path.startsWith('runs/') ? '' : 'run=ra'}`);
    assert.equal(r.status, 404, path);
    messages.add((await r.json()).error.message);
  }
  const cmp = await fetch(`${u}/runs/compare?a=ra&b=ra`);
  assert.equal(cmp.status, 404);
  messages.add((await cmp.json()).error.message);
  // An A/B side's "run" means the same: its evaluation is refused, naming the side.
  const ab = await fetch(`${u}/abtests`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: 'by-run', a: { kernel: 'tagged_only' }, b: { kernel: 'tagged_only', run: 'ra' } }) });
  assert.equal(ab.status, 201);
  const evaluated = await fetch(server.url + ab.headers.get('location'));
  assert.equal(evaluated.status, 404);
  const refusal = (await evaluated.json()).error;
  assert.equal(refusal.field, 'b.run');
  messages.add(refusal.message);
  assert.deepEqual([...messages], ["no run named 'ra' (events tagged run=ra without a run of that name are selected with tag.run=ra)"]);
  const byTag = await (await fetch(`${u}/kernels?window=5m&tag.run=ra`)).json();
  assert.deepEqual(byTag.kernels.map((k) => k.name), ['tagged_only']);
});

// A query whose client leaves is cancelled where it stands (its database reads interrupted,
// its bootstrap stopped), so a client that gives up frees its worker. The client here half-
// closes after its request, which the server counts as leaving (as Go's server and nginx do),
// and reads what comes back: the cancellation, not the result. The same request from a client
// that stays gets the evaluation.
test('an A/B evaluation whose client leaves is cancelled, not computed for nobody', async () => {
  const batch = (name, offset) => Array.from({ length: 10000 }, (_, i) =>
    ({ type: 'kernel', name, duration_ms: 1 + ((i * 7919 + offset) % 1000) / 1000 }));
  for (let k = 0; k < 5; k++) {
    await postEvents(server.url, batch('cancel-a', k));
    await postEvents(server.url, batch('cancel-b', k + 3));
  }
  const created = await fetch(server.url + '/api/v1/abtests', {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: 'leaves', a: { kernel: 'cancel-a' }, b: { kernel: 'cancel-b' }, window: 'all',
                           bootstrap_resamples: 100000 }),
  });
  assert.equal(created.status, 201, await created.text());
  const location = created.headers.get('location');
  const halfClosed = await new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    const chunks = [];
    s.on('connect', () => s.end(`GET ${location} HTTP/1.1\r\nHost: localhost\r\n\r\n`));
    s.on('data', (c) => chunks.push(c));
    s.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
  });
  assert.equal(statusOf(halfClosed), 503, halfClosed.slice(0, 300));
  assert.match(halfClosed, /cancelled: its client closed the connection/);
  const stayed = await fetch(server.url + location);
  assert.equal(stayed.status, 200);
  const result = await stayed.json();
  assert.equal(result.a.n, 50000);
  assert.ok(result.bootstrap_resamples_used >= 1000);
  await healthy();
});

test('a report lists every A/B test and evaluates them for a bounded time, naming where the rest are', async () => {
  // After the test above: cancel-a and cancel-b hold 50,000 kernels each. Twenty light tests
  // (no data), then ten heavy ones (newest, so evaluated first) that together take seconds.
  const create = async (body) => {
    const r = await fetch(server.url + '/api/v1/abtests', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    assert.equal(r.status, 201, await r.text());
  };
  for (let i = 0; i < 20; i++) await create({ name: `light ${i}`, a: { kernel: `none-${i}` }, b: { kernel: `none-${i}b` } });
  for (let i = 0; i < 10; i++) {
    await create({ name: `heavy ${i}`, a: { kernel: 'cancel-a' }, b: { kernel: 'cancel-b' }, window: 'all', bootstrap_resamples: 100000 });
  }
  const all = await (await fetch(server.url + '/api/v1/abtests')).json();
  const report = await (await fetch(server.url + '/api/v1/report?window=all')).json();
  assert.equal(report.abtests.length, (all.abtests ?? all).length, 'every A/B test is listed, not the newest 20');
  const skipped = report.abtests.filter((t) => t.not_evaluated);
  assert.ok(skipped.length > 0, 'ten evaluations over 100,000 kernels do not fit the report\'s time');
  for (const t of skipped) assert.match(t.not_evaluated, new RegExp(`/api/v1/abtests/${t.id}`));
  assert.ok(report.abtests[0].verdict, 'the newest is evaluated');
  const md = await (await fetch(server.url + '/api/v1/report?window=all&format=md')).text();
  assert.match(md, /not evaluated: the report/);
  await healthy();
});

test('one client cannot take every connection slot: past its own cap it gets 503, others are served', async () => {
  // 70 connections at once that say nothing; the server holds what its cap per client (64)
  // allows, fewer the connections this test's own fetch pool keeps, and answers the rest 503.
  const outcomes = await Promise.all(Array.from({ length: 70 }, () => new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    const chunks = [];
    let done = false;
    const finish = (held) => { if (!done) { done = true; resolve({ s, held, text: Buffer.concat(chunks).toString('latin1') }); } };
    s.on('data', (c) => chunks.push(c));
    s.on('close', () => finish(false));
    s.on('error', () => finish(false));
    setTimeout(() => finish(true), 3000);  // still open and unanswered after 3 s: held
  })));
  const held = outcomes.filter((o) => o.held).length;
  const refused = outcomes.filter((o) => !o.held);
  assert.ok(held <= 64, `held ${held} connections, the default cap is 64`);
  assert.ok(refused.length >= 6, `${refused.length} refused of 70`);
  for (const r of refused) {
    assert.equal(statusOf(r.text), 503, r.text.slice(0, 200));
    assert.match(r.text, /too many connections from this client/);
  }
  for (const o of outcomes) o.s.destroy();
  // Slots come back as the connections close: a fresh connection is answered.
  let answered = null;
  for (let i = 0; i < 50 && statusOf(answered?.text ?? '') !== 200; i++) {
    if (i) await new Promise((r) => setTimeout(r, 100));
    answered = await raw('GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
  }
  assert.equal(statusOf(answered.text), 200, answered.text.slice(0, 200));
});

test('an ingest WebSocket message is bounded by --ws-max-message-bytes: larger closes with 1009', async () => {
  const own = await startPerfscope({ label: 'hostile-ws', args: ['--ws-max-message-bytes', '32768'] });
  try {
    const batch = (n) => JSON.stringify({ events: Array.from({ length: n }, (_, i) => ({ type: 'kernel', name: 'ws_bound', duration_ms: 1 + i })) });
    const small = batch(100), large = batch(1000);
    assert.ok(small.length < 32768 && large.length > 32768, `${small.length} and ${large.length} bytes`);
    // Raw frames (no WebSocket client in every Node this runs on): the upgrade, a batch under
    // the bound, then one over it.
    const s = net.connect(Number(new URL(own.url).port), '127.0.0.1');
    let received = Buffer.alloc(0);
    const arrived = (pattern) => new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${pattern} in 10 s: ${received.toString('latin1').slice(0, 300)}`)), 10000);
      const check = () => { if (pattern.test(received.toString('latin1'))) { clearTimeout(timer); resolve(); } else setTimeout(check, 20); };
      check();
    });
    const closed = new Promise((resolve) => s.on('close', resolve));
    s.on('data', (c) => { received = Buffer.concat([received, c]); });
    s.on('error', () => {});
    s.write('GET /api/v1/ingest HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
            'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n');
    await arrived(/"type":"hello"/);
    s.write(wsFrame(small));
    await arrived(/"accepted":100/);
    s.write(wsFrame(large));
    await arrived(/\x88/);  // a Close frame
    const at = received.lastIndexOf(0x88);
    assert.equal(received.readUInt16BE(at + 2), 1009, 'a message over the bound closes the connection as too big');
    s.end();
    await closed;
    const kernels = await (await fetch(own.url + '/api/v1/kernels?window=all')).json();
    const k = (kernels.kernels ?? kernels).find((x) => x.name === 'ws_bound');
    assert.equal(k.count, 100, 'what was acknowledged is kept; nothing of the refused message');
  } finally {
    await own.stop();
  }
});

test('body framing per RFC 9112 and 9110: unknown transfer codings, expectations, 100-continue', async () => {
  const body = '{"events":[]}';
  const post = (extra) => `POST /api/v1/events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n${extra}\r\n`;
  // A coding other than chunked last leaves the length unknown: 400 and close, even with a length.
  assert.equal(await refusedAndClosed(post(`Transfer-Encoding: foo\r\nContent-Length: ${body.length}\r\n`) + body,
                                      'Transfer-Encoding: foo'), 400);
  // A coding this server cannot decode before chunked: 501, then close.
  const gz = await raw(post('Transfer-Encoding: gzip, chunked\r\n') + `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`);
  assert.equal(statusOf(gz.text), 501, gz.text.slice(0, 200));
  assert.ok(gz.closed, 'closed after a 501 on framing');
  assert.match(gz.text, /"field":"Transfer-Encoding"/);
  // An expectation the server does not know: 417.
  const odd = await raw(post(`Expect: foo\r\nContent-Length: ${body.length}\r\n`) + body);
  assert.equal(statusOf(odd.text), 417, odd.text.slice(0, 200));
  // 100-continue: the interim answer comes before the body is sent, then the real one.
  const cont = await rawExchange(port, post(`Expect: 100-continue\r\nContent-Length: ${body.length}\r\n`), { wait: 3000, then: body });
  assert.match(cont.text, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /, cont.text.slice(0, 200));
  // Security headers on every answer; HTML may not be framed.
  const page = await fetch(server.url + '/');
  assert.equal(page.headers.get('x-content-type-options'), 'nosniff');
  assert.equal(page.headers.get('x-frame-options'), 'DENY');
  assert.match(page.headers.get('content-security-policy'), /frame-ancestors 'none'/);
  assert.equal((await fetch(server.url + '/api/v1/info')).headers.get('x-content-type-options'), 'nosniff');
  await healthy();
});

test('WebSocket handshakes refused as JSON: a malformed key, an unknown version', async () => {
  const upgrade = (key, version = '13') => 'GET /api/v1/stream HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n' +
    `Connection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: ${version}\r\n\r\n`;
  for (const key of ['not-a-key', 'dGhlIHNhbXBsZSBub25jZQ', 'dGhlIHNhbXBsZSBub25jZQ=!']) {
    const r = await raw(upgrade(key));
    assert.equal(statusOf(r.text), 400, `${key}: ${r.text.slice(0, 200)}`);
    assert.match(r.text, /"field":"Sec-WebSocket-Key"/);
  }
  const v = await raw(upgrade('dGhlIHNhbXBsZSBub25jZQ==', '8'));
  assert.equal(statusOf(v.text), 426);
  assert.match(v.text, /Sec-WebSocket-Version: 13/i);
  assert.match(v.text, /application\/json/);
  await healthy();
});
