// A full disk under the database: ingest is refused with a clear error (503 with Retry-After,
// nothing half-written), the server stays up and keeps answering reads, and ingest works
// again once space is freed. Uses a real size-limited tmpfs, which needs root to mount; where
// mounting is not permitted the test is skipped and says so.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statfsSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startPerfscope } from '../support/perfscope_server.mjs';

function kernels(n, offset) {
  const t0 = 1_700_000_000_000_000_000 / 1e9;  // whole seconds: exact in a double
  const events = [];
  for (let i = 0; i < n; i++) {
    // Distinct names and tags make rows that do not compress into one chunk.
    events.push({ type: 'inference', model: 'disk-' + ((offset + i) % 997), latency_ms: 1 + i % 7,
                  ts_ns: (t0 + offset + i) * 1e9, tags: { request: 'r' + (offset + i), pad: 'x'.repeat(200) } });
  }
  return { events };
}

async function post(url, body) {
  const r = await fetch(url + '/api/v1/events', { method: 'POST', headers: { 'Content-Type': 'application/json' },
                                                  body: JSON.stringify(body) });
  return { status: r.status, retry: r.headers.get('retry-after'), body: await r.json() };
}

test('a full disk refuses ingest clearly, keeps serving reads, and recovers', async (t) => {
  const mnt = mkdtempSync(path.join(tmpdir(), 'perfscope-full-'));
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=6m', 'tmpfs', mnt]);
  if (mounted.status !== 0) {
    rmSync(mnt, { recursive: true, force: true });
    t.skip('mounting a size-limited tmpfs needs root: ' + String(mounted.stderr).trim());
    return;
  }
  let server;
  try {
    server = await startPerfscope({ args: ['--enable-host-collector', 'false', '--db-commit-interval-ms', '20'],
                                    dataDir: mnt });
    // The server's start-up files are in place; leave it about 1.5 MB.
    const { bavail, bsize } = statfsSync(mnt);
    const filler = path.join(mnt, 'filler');
    writeFileSync(filler, Buffer.alloc(Math.max(0, bavail * bsize - 1_500_000)));

    let accepted = 0, refused = null;
    for (let batch = 0; batch < 200 && !refused; batch++) {
      const r = await post(server.url, kernels(500, batch * 500));
      if (r.status === 200) accepted += r.body.accepted;
      else refused = r;
    }
    assert.ok(refused, 'the disk filled up');
    assert.ok(accepted > 0);
    assert.ok([503, 507].includes(refused.status), `status ${refused.status}`);
    assert.match(refused.body.error.message, /full/i);
    assert.equal(refused.retry, '5');

    // Still up, still answering reads, and every accepted event is there.
    assert.equal((await fetch(server.url + '/healthz')).status, 200);
    const inference = await (await fetch(server.url + '/api/v1/inference?window=all')).json();
    const stored = inference.models.reduce((n, m) => n + m.requests, 0);
    assert.equal(stored, accepted);

    unlinkSync(filler);
    const again = await post(server.url, kernels(500, 1_000_000));
    assert.equal(again.status, 200, JSON.stringify(again.body));
  } finally {
    if (server) await server.stop();
    spawnSync('umount', [mnt]);
    rmSync(mnt, { recursive: true, force: true });
  }
});

// The database turning read-only under the running server (its files made immutable, which
// stops even root from writing): ingest is refused with 503 naming the cause, nothing is
// half-written, reads go on, and ingest works again once the files are writable. Needs root
// and a file system with the immutable attribute (ext4, xfs); skipped elsewhere.
test('a read-only database refuses ingest clearly, keeps serving reads, and recovers', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'perfscope-ro-'));
  const probe = path.join(dir, 'probe');
  writeFileSync(probe, '');
  const attr = (flag, files) => spawnSync('chattr', [flag, ...files]);
  if (attr('+i', [probe]).status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    t.skip('the immutable attribute is not available here (needs root and ext4/xfs)');
    return;
  }
  attr('-i', [probe]);
  unlinkSync(probe);
  let server;
  // The database and its WAL, where commits write (the -shm index has a test of its own below).
  const files = ['perfscope.db', 'perfscope.db-wal'].map((f) => path.join(dir, f));
  try {
    server = await startPerfscope({ args: ['--enable-host-collector', 'false', '--db-commit-interval-ms', '20'],
                                    dataDir: dir });
    const first = await post(server.url, kernels(100, 0));
    assert.equal(first.status, 200);

    assert.equal(attr('+i', [...files, dir]).status, 0);
    const refused = await post(server.url, kernels(100, 100));
    assert.equal(refused.status, 503, JSON.stringify(refused.body));
    assert.match(refused.body.error.message, /read-only|cannot be written/i);
    assert.equal(refused.retry, '5');
    assert.equal((await fetch(server.url + '/healthz')).status, 200);
    // Alive, but not ready: /readyz says why, for a load balancer to stop sending events.
    const notReady = await fetch(server.url + '/readyz');
    assert.equal(notReady.status, 503);
    assert.match((await notReady.json()).checks.database, /cannot be written/);
    const during = await (await fetch(server.url + '/api/v1/inference?window=all')).json();
    assert.equal(during.models.reduce((n, m) => n + m.requests, 0), 100);

    assert.equal(attr('-i', [...files, dir]).status, 0);
    const again = await post(server.url, kernels(100, 200));
    assert.equal(again.status, 200, JSON.stringify(again.body));
    const ready = await fetch(server.url + '/readyz');
    assert.equal(ready.status, 200);
    const readiness = await ready.json();
    assert.equal(readiness.status, 'ready');
    assert.equal(readiness.checks.database, 'ok');
    const after = await (await fetch(server.url + '/api/v1/inference?window=all')).json();
    assert.equal(after.models.reduce((n, m) => n + m.requests, 0), 200);  // the refused batch is not there
  } finally {
    attr('-i', [...files, dir]);
    if (server) await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

// The WAL index (-shm) made immutable under the running server: SQLite stores to it through a
// shared mapping on every transaction, and such a store used to fault the process (SIGBUS).
// Now reads and ingest answer 503 naming the file, the process keeps serving, nothing of the
// refused batches is kept, and everything works again once the file is writable.
test('an index file that cannot be written is answered 503, not a dead process, and recovers', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'perfscope-shm-'));
  const shm = path.join(dir, 'perfscope.db-shm');
  const attr = (flag) => spawnSync('chattr', [flag, shm]);
  let server;
  try {
    server = await startPerfscope({ args: ['--enable-host-collector', 'false', '--db-commit-interval-ms', '20'],
                                    dataDir: dir });
    assert.equal((await post(server.url, kernels(50, 0))).status, 200);
    if (attr('+i').status !== 0) {
      t.skip('the immutable attribute is not available here (needs root and ext4/xfs)');
      return;
    }
    for (let round = 0; round < 3; round++) {
      const refused = await post(server.url, kernels(50, 1000 + 50 * round));
      assert.equal(refused.status, 503, JSON.stringify(refused.body));
      assert.match(refused.body.error.message, /perfscope\.db-shm cannot be written/);
      const read = await fetch(server.url + '/api/v1/inference?window=all');
      assert.equal(read.status, 503);
      assert.match((await read.json()).error.message, /cannot be written/);
      assert.equal((await fetch(server.url + '/healthz')).status, 200);
    }
    assert.equal(attr('-i').status, 0);
    assert.equal((await post(server.url, kernels(50, 50))).status, 200);
    const after = await (await fetch(server.url + '/api/v1/inference?window=all')).json();
    assert.equal(after.models.reduce((n, m) => n + m.requests, 0), 100);  // the refused batches are not there
  } finally {
    attr('-i');
    if (server) await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
