// Limits under hostile or heavy load, on the real binary: a slowloris client (headers sent a
// byte at a time) is cut off by the header timeout without starving others; beyond the
// connection cap new connections get 503 with Retry-After instead of waiting; a connection
// is closed after its request cap; an overloaded query pool answers 503 with Retry-After
// rather than queueing without bound, and recovers.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { startPerfscope, postEvents } from '../support/perfscope_server.mjs';

let server;
let host;
let port;

before(async () => {
  server = await startPerfscope({
    args: ['--enable-host-collector', 'false', '--max-connections', '6', '--header-timeout-ms', '1000',
           '--max-requests-per-connection', '3'],
    label: 'limits',
  });
  ({ hostname: host, port } = new URL(server.url));
});

after(async () => {
  if (server) await server.stop();
});

// A raw connection; resolves with everything the server sent once it closes.
function raw(onOpen) {
  return new Promise((resolve) => {
    const s = connect(Number(port), host);
    let got = '';
    s.on('connect', () => onOpen(s));
    s.on('data', (c) => { got += c; });
    s.on('close', () => resolve(got));
    s.on('error', () => {});
  });
}

function slowloris() {
  let timer;
  const closed = raw((s) => {
    const request = 'GET /api/v1/series HTTP/1.1\r\nHost: localhost\r\nX-Slow: ';
    let i = 0;
    timer = setInterval(() => { if (!s.destroyed) s.write(request[i++ % request.length]); }, 100);
  });
  return closed.finally(() => clearInterval(timer));
}

test('slowloris clients are cut off by the header timeout; the connection cap answers 503', async () => {
  const started = Date.now();
  const slow = Array.from({ length: 6 }, () => slowloris());
  await new Promise((r) => setTimeout(r, 300));
  // Every slot is taken: a seventh connection is told to come back, at once.
  const refused = await raw((s) => s.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n'));
  assert.match(refused, /^HTTP\/1\.1 503/);
  assert.match(refused, /Retry-After: 1/i);
  await Promise.all(slow);
  const elapsed = Date.now() - started;
  assert.ok(elapsed >= 900 && elapsed < 5000, `slow clients cut off after ${elapsed} ms`);
  // The slots are free again.
  assert.equal((await fetch(server.url + '/healthz')).status, 200);
});

test('a connection announces its idle timeout and closes after its request cap', async () => {
  const replies = await raw((s) => {
    s.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n'.repeat(4));
  });
  const count = (replies.match(/HTTP\/1\.1 200/g) || []).length;
  assert.equal(count, 3, replies);
  assert.match(replies, /Connection: close/i);
  // The replies before the last announce how long an idle connection is kept (--header-timeout-ms
  // 1000 here), so that clients close it first; the last, closing, one does not.
  const [first, , last] = replies.split(/(?=HTTP\/1\.1 )/);
  assert.match(first, /\r\nKeep-Alive: timeout=1\r\n/i);
  assert.doesNotMatch(last, /Keep-Alive:/i);
});

test('an overloaded query pool answers 503 with Retry-After, then recovers', async () => {
  const busyServer = await startPerfscope({
    args: ['--enable-host-collector', 'false', '--worker-threads', '1', '--max-pending-requests', '2'], label: 'overload',
  });
  try {
    await overload(busyServer);
  } finally {
    await busyServer.stop();
  }
});

async function overload(server) {
  const t0 = Date.now() * 1e6;
  const events = [];
  for (let i = 0; i < 20000; i++) events.push({ type: 'kernel', name: 'k' + (i % 50), start_ns: t0 + i * 1000, end_ns: t0 + i * 1000 + 500 });
  await postEvents(server.url, events.slice(0, 10000));
  await postEvents(server.url, events.slice(10000));
  const replies = await Promise.all(Array.from({ length: 30 }, () => fetch(server.url + '/api/v1/report?format=html&window=all')));
  const statuses = replies.map((r) => r.status);
  const busy = replies.filter((r) => r.status === 503);
  assert.ok(busy.length > 0, `some requests were turned away: ${statuses}`);
  assert.ok(statuses.every((s) => s === 200 || s === 503), `only 200 or 503: ${statuses}`);
  assert.equal(busy[0].headers.get('retry-after'), '1');
  assert.equal((await busy[0].json()).error.code, 'overloaded');
  await Promise.all(replies.map((r) => r.body && r.body.cancel && r.body.cancel().catch(() => {})));
  assert.equal((await fetch(server.url + '/api/v1/series')).status, 200, 'recovered');
}
