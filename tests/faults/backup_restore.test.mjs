// Backup and restore as docs/operations.md tells them: SQLite's online backup of the database
// while the server keeps writing (`sqlite3 perfscope.db ".backup copy.db"`), then a server
// started on the copy. The copy passes the integrity check and holds every batch acknowledged
// before the backup began, whole batches only (a batch is one transaction), and nothing that
// was never acknowledged.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, mkdirSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startPerfscope } from '../support/perfscope_server.mjs';

const BATCH = 200;

function sqlite(db, ...args) {
  return new Promise((resolve, reject) => {
    const p = spawn('sqlite3', [db, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (c) => { out += c; });
    p.stderr.on('data', (c) => { err += c; });
    p.on('error', reject);
    p.on('close', (code) => (code === 0 ? resolve(out.trim()) : reject(new Error(`sqlite3 ${args.join(' ')}: ${err}`))));
  });
}

function batch(n) {
  const t0 = BigInt(Date.now()) * 1000000n - 60000000000n;
  const events = [];
  for (let i = 0; i < BATCH; i++) {
    const start = t0 + BigInt(n * BATCH + i) * 1000n;
    events.push(`{"type":"kernel","name":"k${i % 7}","start_ns":${start},"end_ns":${start + 500n}}`);
  }
  return `{"events":[${events.join(',')}]}`;
}

test('an online backup taken while events arrive restores every acknowledged batch, whole', async () => {
  const work = mkdtempSync(path.join(tmpdir(), 'perfscope-backup-'));
  const live = path.join(work, 'live');
  const restored = path.join(work, 'restored');
  mkdirSync(live);
  mkdirSync(restored);
  const server = await startPerfscope({ label: 'backup', dataDir: live, args: ['--enable-gpu-collector', 'false'] });
  let acknowledged = 0;
  let sending = true;
  const producer = (async () => {
    for (let n = 0; sending; n++) {
      const r = await fetch(server.url + '/api/v1/events', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: batch(n) });
      assert.equal(r.status, 200, await r.text());
      acknowledged += BATCH;
    }
  })();
  try {
    while (acknowledged < 20 * BATCH) await new Promise((res) => setTimeout(res, 20));
    const before = acknowledged;
    await sqlite(path.join(live, 'perfscope.db'), `.backup '${path.join(work, 'copy.db')}'`);
    const during = acknowledged;
    sending = false;
    await producer;
    assert.ok(acknowledged > before, 'events kept arriving while the backup ran');
    assert.equal(await sqlite(path.join(work, 'copy.db'), 'PRAGMA integrity_check'), 'ok');
    // Restore: the copy becomes a data directory's database.
    renameSync(path.join(work, 'copy.db'), path.join(restored, 'perfscope.db'));
    const second = await startPerfscope({ label: 'restore', dataDir: restored, args: ['--enable-gpu-collector', 'false'] });
    try {
      const kernels = (await (await fetch(second.url + '/api/v1/kernels?window=all')).json()).kernels;
      const count = kernels.reduce((sum, k) => sum + k.count, 0);
      assert.ok(count >= before, `the copy holds ${count} kernels, ${before} were acknowledged before the backup began`);
      assert.ok(count <= during + BATCH, `the copy holds ${count}, at most ${during + BATCH} could have been committed`);
      assert.equal(count % BATCH, 0, 'whole batches only');
    } finally {
      await second.stop();
    }
  } finally {
    sending = false;
    await producer.catch(() => {});
    await server.stop();
    rmSync(work, { recursive: true, force: true });
  }
});
