// Crash consistency: several clients ingest continuously while the server is killed with
// SIGKILL at random moments, 20 times over (PERFSCOPE_KILL_ROUNDS: bench/kill_trials.sh runs
// 100 and more), and restarted on the same database each time.
// Every batch the server answered 200 must be in the database afterwards (kernels read back
// through `perfscope report --db`, inference rows by their batch tag), and the database must
// pass SQLite's integrity check.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import readline from 'node:readline';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const binary = process.env.PERFSCOPE_BIN;
const kRounds = Number(process.env.PERFSCOPE_KILL_ROUNDS || 20);
const kClients = 3;
const kKernelsPerBatch = 40;

// What `pick` takes from each line a command prints (after `skip` header lines), failing on a
// non-zero exit.
async function lines(command, args, { skip = 0, pick = (line) => line } = {}) {
  const proc = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  proc.stderr.on('data', (c) => { err += c; });
  const exit = new Promise((resolve) => proc.on('close', resolve));
  const out = [];
  let n = 0;
  for await (const line of readline.createInterface({ input: proc.stdout, crlfDelay: Infinity })) {
    if (n++ >= skip && line) out.push(pick(line));
  }
  assert.equal(await exit, 0, `${command} failed: ${err}`);
  return out;
}

// One numeric column of a command's output, sorted, for binary search.
async function sortedColumn(command, args, options) {
  return Float64Array.from(await lines(command, args, options)).sort();
}

function contains(sorted, value) {
  let lo = 0, hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid] < value) lo = mid + 1; else hi = mid;
  }
  return lo < sorted.length && sorted[lo] === value;
}

function start(dataDir) {
  const proc = spawn(binary, ['serve', '--listen', '127.0.0.1:0', '--data-dir', dataDir, '--enable-host-collector', 'false',
                              '--db-commit-interval-ms', '20'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  proc.stderr.on('data', (c) => { err += c; });
  const exit = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal, err })));
  const url = new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (c) => {
      out += c;
      const m = out.match(/listening on (http:\/\/[^\s]+)/);
      if (m) resolve(m[1].replace(/\/$/, ''));
    });
    proc.on('exit', (code) => reject(new Error(`server exited (${code}) before listening: ${err}`)));
  });
  return { proc, exit, url };
}

// One client: posts batches until told to stop; returns the ids of acknowledged batches.
async function client(url, id, round, stopped, acked, startNs) {
  for (let seq = 0; !stopped.value; seq++) {
    const batch = `${round}-${id}-${seq}`;
    const events = [];
    for (let i = 0; i < kKernelsPerBatch; i++) {
      const s = startNs.next++;
      // Start times are unique integers (below 2^53, exact in JSON) that name the execution.
      events.push({ type: 'kernel', name: `crash_k${id}`, start_ns: s * 1000, end_ns: s * 1000 + 500 });
    }
    events.push({ type: 'inference', model: 'crash', latency_ms: 1, ts_ns: startNs.next * 1000, tags: { batch } });
    try {
      const r = await fetch(url + '/api/v1/events', {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ events }),
      });
      const body = await r.text();
      if (r.status === 200) acked.push({ batch, first: events[0].start_ns, count: kKernelsPerBatch });
      else if (r.status !== 503) throw new Error(`unexpected ${r.status}: ${body}`);
    } catch (e) {
      if (String(e).includes('unexpected')) throw e;
      return;  // the server died under us: this batch is unacknowledged
    }
  }
}

test(`every acknowledged batch survives ${kRounds} SIGKILLs, and the database stays intact`, async () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'perfscope-crash-'));
  const acked = [];
  const startNs = { next: 1_000_000 };
  try {
    for (let round = 0; round < kRounds; round++) {
      const server = start(dataDir);
      const url = await server.url;
      const stopped = { value: false };
      const clients = Array.from({ length: kClients }, (_, id) => client(url, id, round, stopped, acked, startNs));
      await new Promise((r) => setTimeout(r, 150 + Math.random() * 700));
      server.proc.kill('SIGKILL');
      const { signal } = await server.exit;
      assert.equal(signal, 'SIGKILL');
      stopped.value = true;
      await Promise.all(clients);
    }
    assert.ok(acked.length >= kRounds, `batches acknowledged: ${acked.length}`);

    // A last start recovers the write-ahead log; then a clean stop.
    const last = start(dataDir);
    await last.url;
    last.proc.kill('SIGTERM');
    assert.equal((await last.exit).code, 0);

    const db = path.join(dataDir, 'perfscope.db');
    const integrity = spawnSync('sqlite3', [db, 'PRAGMA integrity_check'], { encoding: 'utf8' });
    assert.equal(integrity.stdout.trim(), 'ok', integrity.stderr);

    // Read line by line: at hundreds of kills the tables outgrow a string (and a Set).
    const starts = await sortedColumn(binary, ['report', '--db', db, '--format', 'csv', '--table', 'kernels', '--window', 'all'],
                                      { skip: 1, pick: (line) => Number(line.split(',')[4]) });
    const tagged = new Set(await lines('sqlite3', [db, "SELECT tags FROM inference WHERE model = 'crash'"]));
    const missing = [];
    for (const a of acked) {
      for (let i = 0; i < a.count; i++) {
        if (!contains(starts, a.first + i * 1000)) { missing.push(`${a.batch} kernel ${i}`); break; }
      }
      if (!tagged.has(`batch="${a.batch}"`)) missing.push(`${a.batch} inference`);
    }
    assert.deepEqual(missing, [], `${missing.length} acknowledged batches lost of ${acked.length}`);
    console.log(`${acked.length} acknowledged batches of ${kKernelsPerBatch + 1} events across ${kRounds} kills: all present`);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});
