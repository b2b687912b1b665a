// The licence and the third-party notices travel with what perfscope ships: every dependency the
// build links (CMake packages found REQUIRED) or embeds (npm packages compiled into the binary)
// has a section in NOTICE with its licence text; `perfscope licenses` prints NOTICE and
// LICENSE; the server serves both; an HTML report carries uPlot's notice; `--version` and `-V`
// answer as `version` does. The checker is also run on a NOTICE with a section removed, which it
// must refuse: a check that cannot fail is no check.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startPerfscope } from '../support/perfscope_server.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const binary = process.env.PERFSCOPE_BIN;
const notice = readFileSync(path.join(root, 'NOTICE'), 'utf8');
const licence = readFileSync(path.join(root, 'LICENSE'), 'utf8');

// What the build takes from elsewhere: CMake packages it requires (Threads is the C library's)
// and npm packages whose files web/CMakeLists.txt compiles into the binary.
function dependencies() {
  const cmake = readFileSync(path.join(root, 'CMakeLists.txt'), 'utf8');
  const found = [...cmake.matchAll(/find_package\((\w+)[^)]*\bREQUIRED\b[^)]*\)/g),
                 ...cmake.matchAll(/pkg_check_modules\((\w+)[^)]*\bREQUIRED\b[^)]*\)/g)].map((m) => m[1]);
  const web = readFileSync(path.join(root, 'web/CMakeLists.txt'), 'utf8');
  const embedded = [...web.matchAll(/node_modules\/([\w.@-]+)/g)].map((m) => m[1]);
  // Threads is the C library's; PkgConfig a build tool that finds packages, linked by none.
  return { cmake: [...new Set(found)].filter((p) => !['Threads', 'PkgConfig'].includes(p)), npm: [...new Set(embedded)] };
}

// The dependencies that have no section (with a licence text) in `text`.
function missingNotices(text, deps) {
  const sections = new Map();
  const parts = text.split(/^== /m).slice(1);
  for (const part of parts) {
    const header = /^(.+?) \| (.+?) \| (cmake|npm): (\S+) ==\n/.exec(part);
    assert.ok(header, `a section header reads "== NAME | SPDX | cmake|npm: PACKAGE ==": ${part.slice(0, 80)}`);
    sections.set(`${header[3]}:${header[4]}`, part.slice(header[0].length));
  }
  const missing = [];
  for (const [kind, names] of Object.entries(deps)) {
    for (const name of names) {
      const body = sections.get(`${kind}:${name}`);
      if (!body || body.trim().length < 200) missing.push(`${kind}:${name}`);
    }
  }
  return missing;
}

test('every dependency the build links or embeds has its notice', () => {
  const deps = dependencies();
  assert.ok(deps.cmake.includes('Boost') && deps.cmake.includes('SQLite3') && deps.cmake.includes('nghttp2') &&
            deps.npm.includes('uplot'), JSON.stringify(deps));
  assert.deepEqual(missingNotices(notice, deps), []);
  // Without uPlot's section, or with a new package the build requires, the check fails.
  const withoutUplot = notice.replace(/^== uPlot [^]*?(?=^== )/m, '');
  assert.deepEqual(missingNotices(withoutUplot, deps), ['npm:uplot']);
  assert.deepEqual(missingNotices(notice, { ...deps, cmake: [...deps.cmake, 'Protobuf'] }), ['cmake:Protobuf']);
  assert.match(licence, /Apache License\s+Version 2\.0/);
});

test('perfscope licenses prints the notices and the licence; --version and -V answer like version', () => {
  const out = execFileSync(binary, ['licenses'], { encoding: 'utf8' });
  assert.ok(out.includes(notice.trim()), 'NOTICE, whole');
  assert.ok(out.includes(licence.trim()), 'LICENSE, whole');
  const version = execFileSync(binary, ['version'], { encoding: 'utf8' });
  assert.match(version, /^perfscope \S+ \(/);
  for (const flag of ['--version', '-V']) {
    const r = spawnSync(binary, [flag], { encoding: 'utf8' });
    assert.equal(r.status, 0, `${flag}: ${r.stderr}`);
    assert.equal(r.stdout, version, flag);
  }
});

let server;
before(async () => { server = await startPerfscope({ label: 'licenses', args: ['--enable-host-collector', 'false'] }); });
after(async () => { if (server) await server.stop(); });

test('the server serves both beside the dashboard, and an HTML report carries uPlot\'s notice', async () => {
  for (const [file, text] of [['NOTICE.txt', notice], ['LICENSE.txt', licence]]) {
    const r = await fetch(`${server.url}/${file}`);
    assert.equal(r.status, 200, file);
    assert.match(r.headers.get('content-type'), /^text\/plain/);
    assert.equal(await r.text(), text, file);
  }
  const html = await (await fetch(`${server.url}/api/v1/report?format=html`)).text();
  const uplot = /^== uPlot [^]*?(?=\n+== )/m.exec(notice)[0];
  assert.ok(html.includes(`<!--\n${uplot}\n-->`), 'the uPlot notice as a comment before its script');
  assert.ok(html.indexOf(uplot) < html.indexOf('var uPlot='));
});
