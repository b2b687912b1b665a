// The documentation holds together: every relative link in the README, SECURITY.md and docs/
// names a file or folder of the repository, and the README stays a short front page
// (what it is, the two commands, the ways in, links) with the detail in docs/.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

function markdownFiles() {
  const files = ['README.md', 'SECURITY.md', 'ARCHITECTURE.md', 'bench/RESULTS.md'].filter((f) => existsSync(path.join(root, f)));
  for (const f of readdirSync(path.join(root, 'docs'))) if (f.endsWith('.md')) files.push(path.join('docs', f));
  return files;
}

test('every relative link in the README and docs/ resolves to a file in the repository', () => {
  const broken = [];
  let links = 0;
  for (const file of markdownFiles()) {
    const text = readFileSync(path.join(root, file), 'utf8').replace(/```[^]*?```/g, '');  // not inside code
    for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1].split('#')[0];
      if (!target || /^[a-z]+:/i.test(target)) continue;  // an anchor, or http(s)/mailto
      links++;
      if (!existsSync(path.resolve(root, path.dirname(file), target))) broken.push(`${file}: ${m[1]}`);
    }
  }
  assert.ok(links >= 15, `${links} links checked`);
  assert.deepEqual(broken, []);
});

// GitHub's heading anchors: lower case, punctuation but hyphens dropped, spaces to hyphens.
const slug = (heading) => heading.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replaceAll(' ', '-');
function anchorsOf(file) {
  const text = readFileSync(file, 'utf8').replace(/```[^]*?```/g, '');
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1])));
}

test('every link to a section of a Markdown page names a heading that page has', () => {
  const broken = [];
  let links = 0;
  for (const file of markdownFiles()) {
    const text = readFileSync(path.join(root, file), 'utf8').replace(/```[^]*?```/g, '');
    for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const [target, anchor] = m[1].split('#');
      if (anchor === undefined || /^[a-z]+:/i.test(target)) continue;
      const page = target ? path.resolve(root, path.dirname(file), target) : path.join(root, file);
      if (!page.endsWith('.md') || !existsSync(page)) continue;
      links++;
      if (!anchorsOf(page).has(anchor)) broken.push(`${file}: ${m[1]}`);
    }
  }
  assert.ok(links >= 10, `${links} section links checked`);
  assert.deepEqual(broken, []);
});

test('the README is a front page: the two commands first, under 250 lines, every docs/ page linked', () => {
  const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
  assert.ok(readme.split('\n').length <= 250, `${readme.split('\n').length} lines`);
  const quick = readme.indexOf('## Quick start');
  assert.ok(quick > 0 && readme.indexOf('scripts/run.sh', quick) > 0 && readme.indexOf('scripts/test.sh', quick) > 0);
  for (const f of readdirSync(path.join(root, 'docs'))) {
    if (f.endsWith('.md') && f !== 'README.md') assert.ok(readme.includes(`(docs/${f})`), `docs/${f} is linked from the README`);
  }
});
