// Access control end to end on the real binary: a non-loopback address refused without a
// token, --insecure-no-auth allowed with a warning, bearer tokens with read and write scopes
// on REST, /metrics and the WebSocket stream, and the dashboard asking for a token and going
// live with it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync, writeFileSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startPerfscope } from '../support/perfscope_server.mjs';

const require = createRequire(path.join(process.env.PERFSCOPE_WEB_DIR, 'package.json'));
const { chromium } = require('playwright-core');

const READ = 'read-token-0123456789abcdef';
const WRITE = 'write-token-0123456789abcdef';
let server;
let tokenDir;

function run(args, env = {}) {
  return new Promise((resolve) => {
    const p = spawn(process.env.PERFSCOPE_BIN, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    p.stdout.on('data', (c) => { out += c; });
    p.stderr.on('data', (c) => { err += c; });
    // A server that did start is stopped once it says so (or after 30 s): on a loaded machine
    // the start takes what it takes, and a fixed wait would stop it before it spoke.
    const stop = () => { if (p.exitCode === null && p.signalCode === null) p.kill('SIGTERM'); };
    p.stdout.on('data', () => { if (out.includes('listening on')) stop(); });
    const timer = setTimeout(stop, 30000);
    p.on('exit', (code) => { clearTimeout(timer); resolve({ code, out, err }); });
  });
}

before(async () => {
  tokenDir = mkdtempSync(path.join(tmpdir(), 'perfscope-tokens-'));
  writeFileSync(path.join(tokenDir, 'tokens'), `# test tokens\nread ${READ}\nwrite ${WRITE}\n`);
  server = await startPerfscope({ args: ['--token-file', path.join(tokenDir, 'tokens'), '--sampling-interval-ms', '200'],
                                  label: 'auth' });
});

after(async () => {
  if (server) await server.stop();
  rmSync(tokenDir, { recursive: true, force: true });
});

test('a non-loopback address needs a token or an explicit --insecure-no-auth', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'perfscope-open-'));
  try {
    const refused = await run(['serve', '--listen', '0.0.0.0:0', '--data-dir', dir]);
    assert.equal(refused.code, 1);
    assert.match(refused.err, /refusing to listen on 0\.0\.0\.0 without a token/);
    const open = await run(['serve', '--listen', '0.0.0.0:0', '--data-dir', dir, '--insecure-no-auth', 'true']);
    assert.match(open.err, /no authentication/);
    assert.match(open.out, /listening on/);
    const withToken = await run(['serve', '--listen', '0.0.0.0:0', '--data-dir', dir], { PERFSCOPE_WRITE_TOKEN: WRITE });
    assert.match(withToken.out, /listening on/);
    const short = await run(['serve', '--listen', '0.0.0.0:0', '--data-dir', dir], { PERFSCOPE_WRITE_TOKEN: 'short' });
    assert.equal(short.code, 1);
    assert.match(short.err, /at least 16 characters/);
    assert.ok(!short.err.includes('short '), 'the token itself is not printed');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('--init-token-file creates private tokens once', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'perfscope-init-'));
  try {
    const file = path.join(dir, 'tokens');
    const first = await run(['serve', '--listen', '127.0.0.1:0', '--data-dir', dir, '--token-file', file, '--init-token-file', 'true']);
    assert.match(first.out, /listening on/);
    const text = readFileSync(file, 'utf8');
    assert.match(text, /^read [0-9a-f]{64}$/m);
    assert.match(text, /^write [0-9a-f]{64}$/m);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(readFileSync(file + '.read', 'utf8').trim(), text.match(/^read (\S+)$/m)[1]);
    assert.ok(!first.out.includes(text.match(/^write (\S+)$/m)[1]) && !first.err.includes(text.match(/^write (\S+)$/m)[1]),
              'tokens are never logged');
    await run(['serve', '--listen', '127.0.0.1:0', '--data-dir', dir, '--token-file', file, '--init-token-file', 'true']);
    assert.equal(readFileSync(file, 'utf8'), text, 'an existing file is kept');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('read and write scopes on REST and /metrics; /healthz stays open', async () => {
  const get = (p, token) => fetch(server.url + p, { headers: token ? { Authorization: 'Bearer ' + token } : {} });
  assert.equal((await get('/healthz')).status, 200);
  assert.equal((await get('/')).status, 200, 'the dashboard page loads to ask for a token');
  const denied = await get('/metrics');
  assert.equal(denied.status, 401);
  assert.match(denied.headers.get('www-authenticate'), /^Bearer/);
  assert.equal((await get('/metrics', 'wrong-token-0123456789')).status, 401);
  assert.equal((await get('/metrics', READ)).status, 200);
  assert.equal((await get('/api/v1/series', WRITE)).status, 200, 'write includes read');
  const post = (token) => fetch(server.url + '/api/v1/events', {
    method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + token },
    body: JSON.stringify({ events: [{ type: 'kernel', name: 'authed', duration_ms: 1 }] }),
  });
  const forbidden = await post(READ);
  assert.equal(forbidden.status, 403);
  assert.equal((await forbidden.json()).error.code, 'forbidden');
  assert.equal((await post(WRITE)).status, 200);
  const info = await (await get('/api/v1/info', READ)).json();
  assert.equal(info.security.auth, 'bearer_tokens');
  assert.equal(info.security.tokens, 2);
  assert.ok(!JSON.stringify(info).includes(READ), 'info never shows a token');
});

test('the token is checked before a body is read', async () => {
  // Headers announcing 10 MB, and no body: the answer must come at once, not after a timeout.
  const { hostname, port } = new URL(server.url);
  const started = Date.now();
  const reply = await new Promise((resolve) => {
    const s = connect(Number(port), hostname, () => {
      s.write('POST /api/v1/events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 10000000\r\n\r\n');
    });
    let got = '';
    s.on('data', (c) => { got += c; });
    s.on('close', () => resolve(got));
    s.on('error', () => resolve(got));
  });
  assert.match(reply, /^HTTP\/1\.1 401/);
  assert.ok(Date.now() - started < 3000, 'answered without waiting for the body');
});

test('the WebSocket stream checks the token', async () => {
  const ws = (suffix) => new Promise((resolve) => {
    const s = new WebSocket(server.url.replace('http', 'ws') + '/api/v1/stream' + suffix);
    s.onopen = () => { s.close(); resolve('open'); };
    s.onerror = () => resolve('refused');
  });
  assert.equal(await ws(''), 'refused');
  assert.equal(await ws('?access_token=not-the-token-0123'), 'refused');
  assert.equal(await ws('?access_token=' + READ), 'open');
});

test('the dashboard asks for a token, then shows live data', async () => {
  const browser = await chromium.launch({ executablePath: process.env.PERFSCOPE_CHROMIUM || '/usr/bin/chromium', headless: true,
                                          args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  try {
    const page = await browser.newPage();
    await page.goto(server.url + '/');
    await page.waitForSelector('[data-testid=auth]:not([hidden])', { timeout: 10000 });
    await page.fill('[data-testid=auth-token]', READ);
    await page.click('[data-testid=auth-submit]');
    await page.waitForFunction(() => window.perfscope && window.perfscope.state.connection === 'live', null, { timeout: 15000 });
    await page.waitForFunction(() => window.perfscope.charts.cpu.xs.length >= 3, null, { timeout: 15000 });
    assert.equal(await page.evaluate(() => sessionStorage.getItem('perfscope.token')), READ);
    assert.equal(await page.evaluate(() => localStorage.length), 0, 'nothing kept beyond the session');
  } finally {
    await browser.close();
  }
});

test('CORS: off by default; an allowed origin may call the API from its pages, others may not', async () => {
  // Page origins: two more servers; the API server allows the first one only.
  const allowedPage = await startPerfscope({ args: ['--enable-host-collector', 'false'], label: 'page-a' });
  const otherPage = await startPerfscope({ args: ['--enable-host-collector', 'false'], label: 'page-b' });
  const api = await startPerfscope({ args: ['--enable-host-collector', 'false', '--cors-allow-origin', allowedPage.url],
                                     label: 'cors' });
  const browser = await chromium.launch({ executablePath: process.env.PERFSCOPE_CHROMIUM || '/usr/bin/chromium', headless: true,
                                          args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  try {
    const plain = await fetch(server.url + '/healthz', { headers: { Origin: allowedPage.url } });
    assert.equal(plain.headers.get('access-control-allow-origin'), null, 'no CORS unless configured');
    const preflight = await fetch(api.url + '/api/v1/events', {
      method: 'OPTIONS', headers: { Origin: allowedPage.url, 'Access-Control-Request-Method': 'POST' },
    });
    assert.equal(preflight.status, 204);
    assert.match(preflight.headers.get('access-control-allow-headers'), /Authorization/);
    const callFrom = async (page) => {
      const tab = await browser.newPage();
      await tab.goto(page.url + '/healthz');
      const result = await tab.evaluate(async (url) => {
        try {
          const r = await fetch(url + '/api/v1/events', { method: 'POST', headers: { 'Content-Type': 'application/json' },
                                                          body: JSON.stringify({ events: [{ type: 'kernel', name: 'cors', duration_ms: 1 }] }) });
          return 'HTTP ' + r.status;
        } catch (e) {
          return 'blocked';
        }
      }, api.url);
      await tab.close();
      return result;
    };
    assert.equal(await callFrom(allowedPage), 'HTTP 200');
    assert.equal(await callFrom(otherPage), 'blocked');
  } finally {
    await browser.close();
    for (const s of [api, allowedPage, otherPage]) await s.stop();
  }
});
