// The server's log as an operator reads it: --log-format json writes one object a line with
// stable keys, --access-log one line per answer (token values redacted, malformed requests
// and WebSocket upgrades included), and --log-level drops what is below it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

// A server on a free port with `args`; its stderr collected until it stops.
async function serve(args) {
  const dir = mkdtempSync(path.join(tmpdir(), 'perfscope-log-'));
  const proc = spawn(process.env.PERFSCOPE_BIN, ['serve', '--listen', '127.0.0.1:0', '--data-dir', dir,
                                                 '--enable-gpu-collector', 'false', ...args]);
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  const url = await new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/[^/\s]+)/);
      if (m) resolve(m[1]);
    });
    proc.on('exit', (code) => reject(new Error(`server exited with ${code}: ${stderr}`)));
  });
  const stop = async () => {
    proc.kill('SIGTERM');
    await new Promise((r) => proc.on('close', r));
    rmSync(dir, { recursive: true, force: true });
    return stderr;
  };
  return { url, stop };
}

function raw(url, text) {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), hostname, () => socket.end(text));
    let answer = '';
    socket.on('data', (d) => { answer += d; });
    socket.on('close', () => resolve(answer));
  });
}

test('json lines with an access entry for every answer, tokens redacted', async () => {
  const server = await serve(['--log-format', 'json', '--access-log', 'true']);
  assert.equal((await fetch(`${server.url}/healthz`)).status, 200);
  assert.equal((await fetch(`${server.url}/api/v1/info?access_token=sekrit-value`)).status, 200);
  assert.equal((await fetch(`${server.url}/api/v1/info?access%5Ftoken=sekrit-value`)).status, 200);
  assert.equal((await fetch(`${server.url}/api/v1/nothing-here`)).status, 404);
  assert.match(await raw(server.url, 'GET /x HTTP/1.1\r\nHost: a\r\nContent-Length: zz\r\n\r\n'), /^HTTP\/1\.1 400/);
  // The dashboard's stream: its token travels in the query.
  const ws = new WebSocket(`${server.url.replace('http', 'ws')}/api/v1/stream?access_token=sekrit-value`);
  await new Promise((resolve, reject) => { ws.onopen = resolve; ws.onerror = reject; });
  ws.close();
  await new Promise((r) => setTimeout(r, 300));
  const stderr = await server.stop();
  assert.ok(!stderr.includes('sekrit-value'), 'a token value never reaches the log');
  const lines = stderr.trim().split('\n').map((l) => JSON.parse(l));  // every line is one object
  for (const l of lines) {
    assert.match(l.ts, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.ok(['debug', 'info', 'warn', 'error'].includes(l.level), JSON.stringify(l));
    assert.equal(typeof l.msg, 'string');
  }
  const access = lines.filter((l) => l.msg === 'access');
  const entry = (target) => access.find((a) => a.target === target);
  assert.deepEqual({ ...entry('/healthz'), ts: undefined, duration_ms: undefined, bytes: undefined },
                   { ts: undefined, level: 'info', msg: 'access', remote: '127.0.0.1', method: 'GET', target: '/healthz',
                     status: 200, completed: true, duration_ms: undefined, bytes: undefined });
  assert.ok(entry('/healthz').bytes > 0 && entry('/healthz').duration_ms >= 0);
  assert.equal(entry('/api/v1/info?access_token=REDACTED').status, 200);
  assert.equal(entry('/api/v1/info?access%5Ftoken=REDACTED').status, 200);
  assert.equal(entry('/api/v1/nothing-here').status, 404);
  assert.equal(entry('/x').status, 400);
  assert.equal(entry('/api/v1/stream?access_token=REDACTED').status, 101);
});

test('text lines by default, and --log-level warn keeps only warnings and errors', async () => {
  const plain = await serve([]);
  await fetch(`${plain.url}/healthz`);
  const text = await plain.stop();
  assert.match(text, /^\d{4}-\d\d-\d\dT[\d:.]+Z INFO database /m);
  assert.doesNotMatch(text, /access/, 'no access log unless asked for');
  const quiet = await serve(['--log-level', 'warn', '--access-log', 'true']);
  await fetch(`${quiet.url}/healthz`);
  const warn = await quiet.stop();
  assert.doesNotMatch(warn, / INFO /);
});
