// The options table of docs/operations.md is the one `perfscope serve --help` prints: every
// option the binary takes is documented there and nothing documented there is gone, so the
// reference cannot drift from the option table it describes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

test('docs/operations.md documents exactly the options of perfscope serve', () => {
  const help = spawnSync(process.env.PERFSCOPE_BIN, ['serve', '--help'], { encoding: 'utf8' });
  assert.equal(help.status, 0, help.stderr);
  const taken = new Set([...help.stdout.matchAll(/^\s*(?:-\w,\s*)?(--[a-z0-9-]+)/gm)].map((m) => m[1]));
  taken.delete('--help');
  const doc = readFileSync(path.join(root, 'docs', 'operations.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## Options'), doc.indexOf('\n## ', doc.indexOf('## Options') + 1));
  // A row's first cell names one option or several (`--procfs`, `--sysfs`).
  const documented = new Set([...section.matchAll(/^\| ([^|]+)\|/gm)]
    .flatMap((m) => [...m[1].matchAll(/`(--[a-z0-9-]+)`/g)].map((o) => o[1])));
  assert.ok(taken.size > 30, `options parsed from --help: ${[...taken]}`);
  assert.deepEqual([...taken].filter((o) => !documented.has(o)), [], 'taken by perfscope serve but not documented');
  assert.deepEqual([...documented].filter((o) => !taken.has(o)), [], 'documented but not an option of perfscope serve');
});
