// HTTP and WebSocket abuse against the real server on loopback: malformed request lines, huge
// headers, bad chunked encoding, path traversal on the static routes (plain and encoded),
// invalid UTF-8, deeply nested JSON, numbers that overflow, duplicate keys, wrong content
// types, and WebSocket frames that break the protocol. Each must get a 4xx or a closed
// connection — never a crash — and the server must keep serving others after every case.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startPerfscope } from '../support/perfscope_server.mjs';
import { rawExchange } from '../support/raw_socket.mjs';

let server, port;
let tried = 0;
before(async () => {
  server = await startPerfscope({ label: 'abuse' });
  port = Number(new URL(server.url).port);
});
after(async () => {
  console.log(`abuse cases tried: ${tried}`);
  assert.equal(server.proc.exitCode, null, 'the server is still running');
  await server.stop();
});

const raw = (bytes, options) => rawExchange(port, bytes, options);

function status(text) {
  const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
  return m ? Number(m[1]) : null;
}

async function stillServing() {
  const r = await fetch(server.url + '/healthz');
  assert.equal(r.status, 200);
}

// A 4xx, or a connection closed without a success.
async function refused(bytes, label) {
  tried++;
  const r = await raw(bytes);
  const code = status(r.text);
  assert.ok((code !== null && code >= 400 && code < 500) || (code === null && r.closed),
            `${label}: got ${code ?? 'no status'} (${r.closed ? 'closed' : 'open'}): ${r.text.slice(0, 200)}`);
  await stillServing();
  return { code, text: r.text };
}

const post = (body, type = 'application/json', extra = '') =>
  `POST /api/v1/events HTTP/1.1\r\nHost: localhost\r\nContent-Type: ${type}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}Connection: close\r\n\r\n${body}`;

test('malformed request lines', async () => {
  for (const line of ['GARBAGE\r\n\r\n', 'GET\r\n\r\n', 'GET / HTTP/9.9\r\n\r\n', 'GET /healthz HTTP/1.1 extra\r\n\r\n',
                      '\x00\x01\x02\x03\r\n\r\n', 'GET /\x7f HTTP/1.1\r\nHost: localhost\r\n\r\n',
                      'GET / HTTP/1.1\r\nBad Header Without Colon\r\n\r\n']) {
    await refused(line, JSON.stringify(line));
  }
});

test('huge headers and bodies', async () => {
  await refused(`GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'a'.repeat(200_000)}\r\n\r\n`, 'huge header');
  let many = 'GET /healthz HTTP/1.1\r\nHost: localhost\r\n';
  for (let i = 0; i < 5000; i++) many += `X-H${i}: v\r\n`;
  await refused(many + '\r\n', 'many headers');
  await refused(`POST /api/v1/events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 99999999999\r\n\r\n{`,
                'declared body far over the limit');
});

test('bad chunked encoding', async () => {
  const head = 'POST /api/v1/events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n';
  await refused(head + 'ZZ\r\nabc\r\n0\r\n\r\n', 'non-hex chunk size');
  await refused(head + '5\r\nabcdefghij\r\n0\r\n\r\n', 'chunk longer than its size');
  await refused(head + 'ffffffffffffffffff\r\nx\r\n', 'chunk size overflow');
  await refused('POST /api/v1/events HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n',
                'both Content-Length and chunked');
});

test('path traversal on the static routes, plain and encoded', async () => {
  for (const p of ['/../../etc/passwd', '/%2e%2e/%2e%2e/etc/passwd', '/..%2f..%2fetc%2fpasswd', '/static/../../etc/passwd',
                   '/%252e%252e/etc/passwd', '/..%5c..%5cetc%5cpasswd', '/.%2e/.%2e/etc/passwd', '/%c0%ae%c0%ae/etc/passwd',
                   '/index.html%00.js', '//etc/passwd']) {
    tried++;
    const r = await raw(`GET ${p} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`);
    const code = status(r.text);
    assert.ok(!r.text.includes('root:'), `${p} leaked a file`);
    // The dashboard's index for a path it does not know is acceptable; a file outside never is.
    assert.ok(code === null || code === 200 || (code >= 400 && code < 500), `${p}: ${code}`);
    if (code === 200) assert.match(r.text, /<!doctype html>/i, `${p}: 200 must be the dashboard`);
    await stillServing();
  }
});

test('bodies that break the JSON rules name the problem', async () => {
  const cases = [
    ['invalid UTF-8', Buffer.concat([Buffer.from('{"events":[{"type":"kernel","name":"'), Buffer.from([0xff, 0xfe]),
                                     Buffer.from('","duration_ms":1}]}')])],
    ['deeply nested', '['.repeat(100_000)],
    ['deep object', '{"events":' + '{"a":'.repeat(50_000) + '1' + '}'.repeat(50_000) + '}'],
    ['number overflow', '{"events":[{"type":"kernel","name":"k","start_ns":99999999999999999999999,"end_ns":1}]}'],
    ['float overflow', '{"events":[{"type":"kernel","name":"k","duration_ms":1e400}]}'],
    ['negative size', '{"events":[{"type":"memory","op":"alloc","address":"a","size_bytes":-5}]}'],
    ['truncated', '{"events":[{"type":"kernel","name":"k"'],
    ['not events', '{"event":[]}'],
    ['lone surrogate', '{"events":[{"type":"kernel","name":"\\ud800","duration_ms":1}]}'],
  ];
  for (const [label, body] of cases) {
    tried++;
    const head = `POST /api/v1/events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n`;
    const r = await raw([head, body]);
    const code = status(r.text);
    assert.ok(code >= 400 && code < 500, `${label}: ${code} ${r.text.slice(0, 300)}`);
    assert.match(r.text, /"error"/, label);
    await stillServing();
  }
  const none = await (await fetch(server.url + '/api/v1/kernels?window=all')).json();
  assert.equal(none.kernels.length, 0, 'nothing half-written');
});

test('duplicate keys and wrong content types', async () => {
  tried++;
  const dup = await raw(post('{"events":[{"type":"kernel","name":"a","name":"b","duration_ms":1}]}'));
  assert.ok([200, 400].includes(status(dup.text)), dup.text.slice(0, 200));
  await stillServing();
  const wrong = await refused(post('{"events":[]}', 'text/plain'), 'text/plain body');
  assert.equal(wrong.code, 415);
  await refused(post('<xml/>', 'application/xml'), 'xml body');
  await refused(post('{"events":[]}', 'application/json', 'Content-Encoding: br\r\n'), 'unknown content encoding');
  await refused(post('not gzip at all', 'application/json', 'Content-Encoding: gzip\r\n'), 'corrupt gzip');
});

test('WebSocket frames that break the protocol', async () => {
  const upgrade = 'GET /api/v1/stream HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
                  'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n';
  const mask = Buffer.from([1, 2, 3, 4]);
  const frames = {
    'unmasked client frame': Buffer.from([0x81, 0x02, 0x68, 0x69]),
    'reserved bits set': Buffer.concat([Buffer.from([0xf1, 0x82]), mask, Buffer.from([0x69, 0x6b])]),
    'unknown opcode': Buffer.concat([Buffer.from([0x83, 0x80]), mask]),
    'huge length claim': Buffer.concat([Buffer.from([0x81, 0xff, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]), mask]),
    'fragmented control frame': Buffer.concat([Buffer.from([0x09, 0x80]), mask]),
    'invalid UTF-8 text': Buffer.concat([Buffer.from([0x81, 0x82]), mask, Buffer.from([0xff ^ 1, 0xfe ^ 2])]),
  };
  for (const [label, frame] of Object.entries(frames)) {
    tried++;
    const r = await raw(upgrade, { wait: 3000, then: frame });
    assert.equal(status(r.text), 101, `${label}: the upgrade itself is fine`);
    // Failing the connection (RFC 6455 §7.1.7): a Close frame (opcode 8) with a status that
    // says why, then the TCP close; a peer that never answers the Close is cut off at the
    // server's close timeout.
    const frames = Buffer.from(r.text.slice(r.text.indexOf('\r\n\r\n') + 4), 'latin1');
    const closeAt = frames.indexOf(0x88);
    assert.ok(r.closed || closeAt >= 0, `${label}: no Close frame and the connection stays open`);
    if (closeAt >= 0 && frames.length >= closeAt + 4) {
      const code = frames.readUInt16BE(closeAt + 2);
      assert.ok([1002, 1007, 1009].includes(code), `${label}: close status ${code}`);
    }
    await stillServing();
  }
  tried++;
  const bad = await raw(upgrade.replace('Sec-WebSocket-Version: 13', 'Sec-WebSocket-Version: 99'));
  assert.ok(status(bad.text) >= 400 || bad.closed, 'a wrong WebSocket version is refused');
  await stillServing();
});
