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
