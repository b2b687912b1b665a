// DNS rebinding, from a real browser: Chromium resolves a foreign name (evil.example) to
// 127.0.0.1, as a page that rebinds its own name would, and the loopback server (no token)
// refuses every request whose Host names it — the page, the API, a POST of events, the
// WebSocket stream — while localhost works; a name given with --allowed-host is answered.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { startPerfscope } from '../support/perfscope_server.mjs';

const require = createRequire(path.join(process.env.PERFSCOPE_WEB_DIR, 'package.json'));
const { chromium } = require('playwright-core');
let server, allowing, browser;

before(async () => {
  server = await startPerfscope({ label: 'rebinding' });
  allowing = await startPerfscope({ label: 'rebinding-allowed', args: ['--allowed-host', 'perfscope.lab,evil.example'] });
  browser = await chromium.launch({
    executablePath: process.env.PERFSCOPE_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
           '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage',
           '--host-resolver-rules=MAP evil.example 127.0.0.1, MAP perfscope.lab 127.0.0.1'],
  });
});
after(async () => {
  if (browser) await browser.close();
  await server.stop();
  await allowing.stop();
});

// A request with a Host header of our choosing (fetch will not set one).
function withHost(url, host, method = 'GET', body = '') {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = request({ host: u.hostname, port: u.port, path: u.pathname, method,
                          headers: { Host: host, 'Content-Type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (c) => { text += c; });
      res.on('end', () => resolve({ status: res.statusCode, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('a rebound name reaches nothing; localhost does', async () => {
  const port = new URL(server.url).port;
  const page = await browser.newPage();
  const info = await page.goto(`http://evil.example:${port}/api/v1/info`);
  assert.equal(info.status(), 403);
  const body = JSON.parse(await info.text());
  assert.equal(body.error.code, 'host_not_allowed');
  assert.equal(body.error.field, 'Host');
  const dashboard = await page.goto(`http://evil.example:${port}/`);
  assert.equal(dashboard.status(), 403, 'not even the page loads under the foreign name');
  // What a rebound page would do next: post events and open the stream, same-origin.
  const posted = await page.evaluate(async () => {
    const r = await fetch('/api/v1/events', { method: 'POST', headers: { 'Content-Type': 'application/json' },
                                              body: JSON.stringify({ events: [{ type: 'kernel', name: 'x', duration_ms: 1 }] }) });
    return r.status;
  });
  assert.equal(posted, 403);
  const stream = await page.evaluate((p) => new Promise((resolve) => {
    const ws = new WebSocket(`ws://evil.example:${p}/api/v1/stream`);
    ws.onopen = () => resolve('open');
    ws.onerror = () => resolve('refused');
  }), port);
  assert.equal(stream, 'refused');
  const ok = await page.goto(`http://localhost:${port}/api/v1/info`);
  assert.equal(ok.status(), 200);
  await page.close();
  const info2 = await (await fetch(server.url + '/api/v1/info')).json();
  assert.ok(info2.runtime.http.refused_hosts >= 3, JSON.stringify(info2.runtime.http));
  assert.equal((await withHost(server.url + '/api/v1/events', `evil.example:${port}`, 'POST', '{"events":[]}')).status, 403);
  assert.equal((await withHost(server.url + '/healthz', `127.0.0.1:${port}`)).status, 200);
});

test('names given with --allowed-host are answered', async () => {
  const port = new URL(allowing.url).port;
  const page = await browser.newPage();
  for (const name of ['perfscope.lab', 'evil.example', 'localhost']) {
    const r = await page.goto(`http://${name}:${port}/api/v1/info`);
    assert.equal(r.status(), 200, name);
  }
  const info = await (await page.goto(`http://perfscope.lab:${port}/api/v1/info`)).json();
  assert.deepEqual(info.config.allowed_host, ['perfscope.lab', 'evil.example']);
  await page.close();
  assert.equal((await withHost(allowing.url + '/api/v1/info', 'other.example')).status, 403);
});

// Cross-site writes, from a real browser: a page on another origin (another port of the same
// machine) posts events and an A/B test without a preflight (no-cors, a Blob body: no
// Content-Type) and streams events over a WebSocket; nothing of it may be stored. The server's
// own page still writes.
test('a page on another origin can neither write nor open a WebSocket; the server\'s own page can', async () => {
  const { createServer } = await import('node:http');
  const foreign = createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html' });
    res.end('<!doctype html><title>elsewhere</title>');
  });
  await new Promise((r) => foreign.listen(0, '127.0.0.1', r));
  const port = new URL(server.url).port;
  const before = (await (await fetch(server.url + '/api/v1/info')).json()).runtime.http.refused_origins;
  const page = await browser.newPage();
  try {
    await page.goto(`http://127.0.0.1:${foreign.address().port}/`);
    const outcome = await page.evaluate(async (target) => {
      const events = JSON.stringify({ events: [{ type: 'kernel', name: 'cross_origin_probe', duration_ms: 1 }] });
      const blob = new Blob([events]);
      const out = {};
      out.events = await fetch(target + '/api/v1/events', { method: 'POST', mode: 'no-cors', body: blob }).then(() => 'sent', () => 'failed');
      out.text = await fetch(target + '/api/v1/events', { method: 'POST', mode: 'no-cors', body: events }).then(() => 'sent', () => 'failed');
      out.abtest = await fetch(target + '/api/v1/abtests', { method: 'POST', mode: 'no-cors',
        body: JSON.stringify({ name: 'cross_origin_probe', a: { kernel: 'a' }, b: { kernel: 'b' } }) }).then(() => 'sent', () => 'failed');
      const ws = (path, send) => new Promise((resolve) => {
        const socket = new WebSocket(target.replace('http', 'ws') + path);
        socket.onopen = () => { if (send) socket.send(send); resolve('open'); };
        socket.onerror = () => resolve('refused');
      });
      out.ingest = await ws('/api/v1/ingest', events);
      out.stream = await ws('/api/v1/stream', null);
      return out;
    }, `http://127.0.0.1:${port}`);
    // The opaque answers of no-cors requests say nothing to the page; the server's store does.
    assert.equal(outcome.ingest, 'refused');
    assert.equal(outcome.stream, 'refused');
    const kernels = await (await fetch(server.url + '/api/v1/kernels?window=all')).json();
    assert.ok(!kernels.kernels.some((k) => k.name === 'cross_origin_probe'), 'nothing a foreign page sent was stored');
    const abtests = await (await fetch(server.url + '/api/v1/abtests')).json();
    assert.ok(!JSON.stringify(abtests).includes('cross_origin_probe'), 'no A/B test was created');
    const after = (await (await fetch(server.url + '/api/v1/info')).json()).runtime.http.refused_origins;
    assert.ok(after - before >= 5, `refused origins counted: ${before} → ${after}`);
    // The server's own page writes as before.
    await page.goto(`http://127.0.0.1:${port}/`);
    const own = await page.evaluate(async () => {
      const r = await fetch('/api/v1/events', { method: 'POST', headers: { 'Content-Type': 'application/json' },
                                                body: JSON.stringify({ events: [{ type: 'kernel', name: 'own_page_probe', duration_ms: 1 }] }) });
      return r.status;
    });
    assert.equal(own, 200);
  } finally {
    await page.close();
    foreign.close();
  }
});
