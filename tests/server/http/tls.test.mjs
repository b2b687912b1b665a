// TLS: with --tls-cert-file/--tls-key-file the real server speaks HTTPS and WSS (OpenSSL
// through Beast's SSL stream) with a certificate made here by the openssl tool; plain HTTP to
// that port gets no answer and costs the server nothing; bad certificate options stop the
// start with the file named.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startPerfscope, runPerfscope } from '../../support/perfscope_server.mjs';

const dir = mkdtempSync(path.join(tmpdir(), 'perfscope-tls-'));
const cert = path.join(dir, 'cert.pem');
const key = path.join(dir, 'key.pem');
let server, ca, port;

function makeCert(certPath, keyPath) {
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', keyPath, '-out', certPath,
                           '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'],
               { stdio: 'ignore' });
}

before(async () => {
  makeCert(cert, key);
  ca = readFileSync(cert);
  server = await startPerfscope({ label: 'tls', args: ['--tls-cert-file', cert, '--tls-key-file', key] });
  port = Number(new URL(server.url).port);
});
after(async () => { await server.stop(); rmSync(dir, { recursive: true, force: true }); });

function request(method, pathname, body) {
  return new Promise((resolve, reject) => {
    const req = https.request({ host: '127.0.0.1', port, method, path: pathname, ca,
                                headers: body ? { 'Content-Type': 'application/json' } : {} }, (res) => {
      let data = '';
      res.on('data', (c) => { data += c; });
      res.on('end', () => resolve({ status: res.statusCode, body: data }));
    });
    req.on('error', reject);
    if (body) req.write(body);
    req.end();
  });
}

test('HTTPS: the URL says https, the certificate verifies, the API answers and ingest works', async () => {
  assert.match(server.url, /^https:\/\/127\.0\.0\.1:\d+$/);
  assert.equal((await request('GET', '/healthz')).status, 200);
  const posted = await request('POST', '/api/v1/events',
                               JSON.stringify({ events: [{ type: 'kernel', name: 'tls_kernel', duration_ms: 1 }] }));
  assert.equal(posted.status, 200, posted.body);
  const page = await request('GET', '/');
  assert.equal(page.status, 200);
  assert.match(page.body, /<!doctype html>/i);
});

test('WSS: the stream upgrades over TLS and says hello', async () => {
  const text = await new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port, ca, servername: 'localhost' }, () => {
      s.write('GET /api/v1/stream HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
              'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n');
    });
    let got = '';
    s.on('data', (c) => {
      got += c.toString('latin1');
      if (got.includes('"hello"')) { s.destroy(); resolve(got); }
    });
    s.on('error', reject);
    setTimeout(() => { s.destroy(); resolve(got); }, 3000);
  });
  assert.match(text, /^HTTP\/1\.1 101/);
  assert.match(text, /"type":"hello"/);
});

test('plain HTTP to the TLS port gets no HTTP answer, and the server keeps serving', async () => {
  const reply = await new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => s.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n'));
    let got = '';
    s.on('data', (c) => { got += c.toString('latin1'); });
    s.on('close', () => resolve(got));
    s.on('error', () => resolve(got));
    setTimeout(() => { s.destroy(); resolve(got); }, 3000);
  });
  assert.doesNotMatch(reply, /HTTP\/1\.1 200/);
  assert.equal((await request('GET', '/healthz')).status, 200);
});

test('a certificate the client does not trust is refused by the client', async () => {
  await assert.rejects(new Promise((resolve, reject) => {
    https.get({ host: '127.0.0.1', port, path: '/healthz' }, resolve).on('error', reject);
  }), /self[- ]signed|unable to verify|certificate/i);
});

test('perfscope\'s own clients speak HTTPS and verify the certificate', async () => {
  const env = { ...process.env, SSL_CERT_FILE: cert };
  const push = await runPerfscope(['push', '--server', server.url],
                                 { input: '{"type":"kernel","name":"pushed_over_tls","duration_ms":2}\n', env });
  assert.equal(push.status, 0, push.stderr);
  assert.match(push.stdout, /accepted 1 events/);
  const health = await runPerfscope(['healthcheck', '--server', server.url], { env });
  assert.equal(health.status, 0, health.stderr);
  const report = await runPerfscope(['report', '--server', server.url, '--format', 'json', '--window', 'all'], { env });
  assert.equal(report.status, 0, report.stderr);
  assert.ok(JSON.parse(report.stdout).kernels.top.some((k) => k.name === 'pushed_over_tls'));
  // Without the certificate in the trust store: refused, and said why.
  const untrusted = await runPerfscope(['healthcheck', '--server', server.url],
                                     { env: { ...process.env, SSL_CERT_FILE: path.join(dir, 'none.pem') } });
  assert.equal(untrusted.status, 1);
  assert.match(untrusted.stderr, /certificate verify failed|TLS/i);
});

test('bad TLS options stop the start and name the file', () => {
  const other = path.join(dir, 'other');
  makeCert(other + '.pem', other + '.key');
  const run = (args) => spawnSync(process.env.PERFSCOPE_BIN, ['serve', '--listen', '127.0.0.1:0', '--data-dir', dir, ...args],
                                  { encoding: 'utf8', timeout: 20000 });
  const mismatch = run(['--tls-cert-file', cert, '--tls-key-file', other + '.key']);
  assert.notEqual(mismatch.status, 0);
  assert.match(mismatch.stderr, /TLS key .*other\.key.*(mismatch|does not match)/);
  const missing = run(['--tls-cert-file', path.join(dir, 'nope.pem'), '--tls-key-file', key]);
  assert.notEqual(missing.status, 0);
  assert.match(missing.stderr, /cannot use TLS certificate .*nope\.pem/);
  writeFileSync(path.join(dir, 'garbage.pem'), 'not a certificate');
  const garbage = run(['--tls-cert-file', path.join(dir, 'garbage.pem'), '--tls-key-file', key]);
  assert.match(garbage.stderr, /garbage\.pem/);
  const alone = run(['--tls-cert-file', cert]);
  assert.equal(alone.status, 2);
  assert.match(alone.stderr, /tls-key-file/);
});

test('healthcheck in a TLS container: https to the listen port, trusting the server\'s own certificate', () => {
  const run = (env) => spawnSync(process.env.PERFSCOPE_BIN, ['healthcheck'],
                                 { encoding: 'utf8', env: { ...process.env, PERFSCOPE_LISTEN: `0.0.0.0:${port}`, ...env } });
  const ok = run({ PERFSCOPE_TLS_CERT_FILE: cert });
  assert.equal(ok.status, 0, ok.stderr);
  // Plain HTTP to the TLS port gets no answer.
  const plain = run({ PERFSCOPE_TLS_CERT_FILE: '' });
  assert.equal(plain.status, 1);
  // Another certificate pinned: the server's does not verify.
  const otherCert = path.join(dir, 'other.pem'), otherKey = path.join(dir, 'other-key.pem');
  makeCert(otherCert, otherKey);
  const wrong = run({ PERFSCOPE_TLS_CERT_FILE: otherCert });
  assert.equal(wrong.status, 1);
  assert.match(wrong.stderr, /TLS|certificate/i);
  const missing = run({ PERFSCOPE_TLS_CERT_FILE: path.join(dir, 'absent.pem') });
  assert.equal(missing.status, 1);
  assert.match(missing.stderr, /absent\.pem/);
});

test('scraping over https: a CA file verifies the target; another CA leaves it down with the reason', async () => {
  const otherCert = path.join(dir, 'scrape-other.pem'), otherKey = path.join(dir, 'scrape-other-key.pem');
  makeCert(otherCert, otherKey);
  const peer = await startPerfscope({
    label: 'tls-scrape',
    args: ['--enable-host-collector', 'false', '--enable-gpu-collector', 'false',
           '--scrape', `https://127.0.0.1:${port}/metrics,job=tls,interval=200ms,ca_file=${cert}`,
           '--scrape', `https://localhost:${port}/metrics,job=wrong_ca,interval=200ms,ca_file=${otherCert}`],
  });
  try {
    let sources = [];
    for (let i = 0; i < 50; i++) {
      const info = await (await fetch(peer.url + '/api/v1/info')).json();
      sources = info.collectors.find((c) => c.name === 'scrape').sources;
      if (sources.every((s) => !/not scraped yet/.test(s.detail))) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const good = sources.find((s) => s.name.includes('127.0.0.1'));
    assert.equal(good.available, true, good.detail);
    const wrong = sources.find((s) => s.name.includes('localhost'));
    assert.equal(wrong.available, false);
    assert.match(wrong.detail, /certificate|verify|handshake/i);
    // The sampler's next pass stores what the scrape read.
    let stored = false;
    for (let i = 0; i < 50 && !stored; i++) {
      const all = (await (await fetch(peer.url + '/api/v1/series')).json()).series;
      stored = all.some((s) => s.labels.job === 'tls' && s.name.startsWith('perfscope_'));
      if (!stored) await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(stored, 'the https target\'s series are stored');
  } finally {
    await peer.stop();
  }
});
