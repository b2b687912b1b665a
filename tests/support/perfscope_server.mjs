// Starts the real perfscope binary on a free loopback port for the Node tests, with an
// optional scripted stand-in NVML (CI has no GPU), and stops it again.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

// `nvmlScript`: the stand-in NVML's script text, or null for no GPU collector input.
// `dataDir`: the caller's data directory (kept on stop); by default a fresh one, removed.
// `listen`: host:port (default a free loopback port): a restart on the same address.
// `env`: variables added to the server's environment.
export async function startPerfscope({ args = [], nvmlScript = null, label = 'test', dataDir: given = null,
                                       listen = '127.0.0.1:0', env: extraEnv = {} } = {}) {
  const dataDir = given || mkdtempSync(path.join(tmpdir(), `perfscope-${label}-`));
  const env = { ...process.env, ...extraEnv };
  const extra = [];
  if (nvmlScript !== null) {
    const script = path.join(dataDir, 'nvml.txt');  // (in a given directory too)
    writeFileSync(script, nvmlScript);
    env.PERFSCOPE_FAKE_NVML_SCRIPT = script;
    extra.push('--nvml-library', process.env.PERFSCOPE_FAKE_NVML);
  }
  const proc = spawn(process.env.PERFSCOPE_BIN,
                     ['serve', '--listen', listen, '--data-dir', dataDir, ...extra, ...args],
                     { stdio: ['ignore', 'pipe', 'inherit'], env });
  const exit = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  const url = await new Promise((resolve, reject) => {
    let out = '';
    let started = false;
    const timer = setTimeout(() => reject(new Error('server did not report its address in 20 s: ' + out)), 20000);
    proc.stdout.on('data', (chunk) => {
      out += chunk;
      const m = out.match(/listening on (https?:\/\/[^\s]+)/);
      if (m && !started) { started = true; clearTimeout(timer); resolve(m[1].replace(/\/$/, '')); }
    });
    proc.on('exit', (code) => {
      if (started) return;  // a later exit is stop()'s, or a test's own kill
      clearTimeout(timer);
      if (!given) rmSync(dataDir, { recursive: true, force: true });  // a server that never started leaves nothing
      reject(new Error('server exited early with ' + code));
    });
  });
  return {
    url, proc, exit, dataDir,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      await exit;
      if (!given) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export async function postEvents(url, events) {
  const r = await fetch(url + '/api/v1/events', {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ events }),
  });
  if (r.status !== 200) throw new Error(`ingest answered ${r.status}: ${await r.text()}`);
  return r.json();
}

// Runs the perfscope binary as a command (report, push, import, healthcheck …) without
// blocking the event loop: a spawnSync of seconds under the sanitizers stalls this process's
// idle keep-alive sockets, and a fetch after it reuses one the server has meanwhile closed.
// Resolves to spawnSync's shape: { status, signal, stdout, stderr }.
export function runPerfscope(args, { input = null, env = process.env } = {}) {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.env.PERFSCOPE_BIN, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    proc.stdout.setEncoding('utf8').on('data', (chunk) => { stdout += chunk; });
    proc.stderr.setEncoding('utf8').on('data', (chunk) => { stderr += chunk; });
    proc.on('error', reject);
    proc.on('close', (status, signal) => resolve({ status, signal, stdout, stderr }));
    proc.stdin.end(input ?? undefined);
  });
}
