// The layer table of the whole tree (ARCHITECTURE.md, server/README.md), checked on the
// sources: which folder may include which, that db/'s public headers reach no SQLite, that
// db/internal/ stays inside db/ (its tests and benchmarks aside), and that Beast and Asio stay
// in the transport. Reads the #include lines of every C++ file; builds nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync, existsSync } from 'node:fs';
import { join, dirname, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { blanked } from './source_text.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

// Folder → the folders its files may include (itself always). Lower layers first.
// 'engine' stands for every room of the engine (engine/README.md).
export const LAYERS = {
  'engine/base': [],
  'engine/series': ['engine/base'],
  'engine/events': ['engine/series', 'engine/base'],
  'engine/analysis': ['engine/events', 'engine/series', 'engine/base'],
  'engine/collectors': ['engine/analysis', 'engine/events', 'engine/series', 'engine/base'],
  'engine/sdk': ['engine/analysis', 'engine/events', 'engine/base'],
  'db': ['engine'],
  // wire and trace go into the CUPTI injection library, which has only these rooms.
  'server/wire': ['engine/events', 'engine/series', 'engine/base'],
  'server/net': [],
  'server/trace': ['server/wire', 'engine/events', 'engine/series', 'engine/base'],
  'server/client': ['server/wire', 'server/net', 'engine'],
  'server/http': ['server/wire', 'server/net', 'engine', 'web'],
  'server/service': ['engine', 'db'],
  'server/api': ['server/http', 'server/wire', 'server/service', 'engine', 'db', 'web'],
  'server/scrape': ['server/client', 'server/wire', 'engine'],
  'server/kubelet': ['engine'],
  'server/cli': ['server/api', 'server/scrape', 'server/kubelet', 'server/client', 'server/trace', 'server/http', 'server/service',
                 'server/wire', 'server/net', 'engine', 'db', 'web'],
};
// Where Beast and Asio may be included: the transport's sources, and the headers that only the
// transport includes.
const ASIO_SOURCES = ['server/net/', 'server/http/', 'server/client/', 'server/cli/'];
const ASIO_HEADERS = ['server/net/net.hpp', 'server/http/session_context.hpp', 'server/http/websocket_session.hpp',
                      'server/http/request_checks.hpp'];

// Whether a set of allowed folders takes `to` ('engine' takes every room of it).
function allows(allowed, to) {
  return allowed.has(to) || (allowed.has('engine') && to.startsWith('engine/'));
}

function sources(dir) {
  const out = [];
  for (const name of readdirSync(join(root, dir))) {
    const path = join(dir, name);
    if (statSync(join(root, path)).isDirectory()) out.push(...sources(path));
    else if (/\.(cpp|hpp|h)$/.test(name)) out.push(path);
  }
  return out;
}

// A file's includes: project files (resolved as the compiler would — from the tree's root,
// from the including file's folder, from tests/ for test sources — and normalized), system
// headers, and quoted includes that resolve nowhere (a violation: the check cannot see them).
function includes(file) {
  const text = readFileSync(join(root, file), 'utf8');
  const project = [], system = [], unresolved = [];
  for (const m of text.matchAll(/^\s*#\s*include\s*([<"])([^>"]+)[>"]/gm)) {
    if (m[1] === '<') { system.push(m[2]); continue; }
    const candidates = [m[2], join(dirname(file), m[2])];
    if (file.startsWith('tests/')) candidates.push(join('tests', m[2]));
    const found = candidates.map((c) => normalize(c)).find((c) => !c.startsWith('..') && existsSync(join(root, c)));
    if (found) project.push(found);
    else unresolved.push(m[2]);
  }
  return { project, system, unresolved };
}

// The folder of the layer table a file belongs to (the longest match), or null.
function folderOf(file) {
  let best = null;
  for (const folder of Object.keys(LAYERS).concat(['web'])) {
    if (file === folder || file.startsWith(folder + '/')) {
      if (!best || folder.length > best.length) best = folder;
    }
  }
  return best;
}

// Every project header a file reaches, and every system header among them.
function closure(file, memo = new Map()) {
  if (memo.has(file)) return memo.get(file);
  const reached = { files: new Set(), system: new Set() };
  memo.set(file, reached);
  const { project, system } = includes(file);
  for (const s of system) reached.system.add(s);
  for (const p of project) {
    reached.files.add(p);
    const sub = closure(p, memo);
    for (const f of sub.files) reached.files.add(f);
    for (const s of sub.system) reached.system.add(s);
  }
  return reached;
}

const tree = ['engine', 'db', 'server'].flatMap(sources);
const everything = [...tree, ...sources('tests'), ...sources('bench')];

test('every quoted include resolves to a file of the tree', () => {
  const unresolved = [];
  for (const file of everything) {
    for (const inc of includes(file).unresolved) unresolved.push(`${file} includes "${inc}"`);
  }
  assert.deepEqual(unresolved, []);
});

test('each folder includes only the folders below it in the layer table', () => {
  const wrong = [];
  for (const file of tree) {
    const from = folderOf(file);
    if (!from) continue;
    const allowed = new Set([from, ...LAYERS[from]]);
    for (const inc of includes(file).project) {
      const to = folderOf(inc);
      if (!to) wrong.push(`${file} includes ${inc}, outside the layer table`);
      else if (!allows(allowed, to)) wrong.push(`${file} includes ${inc} (${from} may use ${[...allowed].join(', ')})`);
    }
  }
  assert.deepEqual(wrong, []);
});

test('the layer table names every folder that holds C++ sources', () => {
  const unplaced = tree.filter((f) => !folderOf(f));
  assert.deepEqual(unplaced, []);
});

test("db/'s public headers reach no SQLite and no internal header", () => {
  const memo = new Map();
  const leaks = [];
  for (const header of sources('db').filter((f) => f.endsWith('.hpp') && !f.startsWith('db/internal/'))) {
    const reached = closure(header, memo);
    if (reached.system.has('sqlite3.h')) leaks.push(`${header} reaches <sqlite3.h>`);
    for (const f of reached.files) if (f.startsWith('db/internal/')) leaks.push(`${header} reaches ${f}`);
  }
  assert.deepEqual(leaks, []);
});

test('db/internal/ is included only by db/ itself, its tests and its benchmarks', () => {
  const outside = [];
  for (const file of everything) {
    if (file.startsWith('db/') || file.startsWith('tests/db/') || file.startsWith('tests/fuzz/') || file.startsWith('bench/')) continue;
    for (const inc of includes(file).project) if (inc.startsWith('db/internal/')) outside.push(`${file} includes ${inc}`);
  }
  assert.deepEqual(outside, []);
});

test('Beast and Asio stay in the transport, never reached from a header of engine/, db/, service/ or api/', () => {
  const asio = (s) => s.startsWith('boost/beast') || s.startsWith('boost/asio');
  const wrong = [];
  const memo = new Map();
  for (const file of tree) {
    const direct = includes(file).system.filter(asio);
    if (direct.length === 0) continue;
    const ok = file.endsWith('.cpp') ? ASIO_SOURCES.some((d) => file.startsWith(d)) : ASIO_HEADERS.includes(file);
    if (!ok) wrong.push(`${file} includes <${direct[0]}>`);
  }
  // Sources too: an api/ source that included a session header would build Beast into api/.
  for (const header of tree.filter((f) => /^(engine|db|server\/service|server\/api)\//.test(f))) {
    const reached = [...closure(header, memo).system].filter(asio);
    if (reached.length) wrong.push(`${header} reaches <${reached[0]}>`);
  }
  assert.deepEqual(wrong, []);
});

// Every library a folder's CMakeLists.txt defines, with the project libraries it links.
function cmakeTargets() {
  const targets = new Map();  // name → { folder, links }
  for (const folder of Object.keys(LAYERS).concat(['web', 'engine'])) {
    const file = join(root, folder, 'CMakeLists.txt');
    if (!existsSync(file)) continue;
    // Comments out, generator expressions ($<BUILD_INTERFACE:db>) down to what they name.
    const text = readFileSync(file, 'utf8').replace(/#.*$/gm, '').replace(/\$<[A-Z_]+:([^>]*)>/g, '$1');
    for (const m of text.matchAll(/add_(?:library|executable)\(\s*([A-Za-z0-9_]+)([^)]*)\)/g)) {
      // A library of engine/ belongs to the room its sources are in (the aggregate to engine).
      const room = m[2].match(/\b(base|series|events|analysis|collectors|sdk)\//);
      targets.set(m[1], { folder: folder === 'engine' && room ? `engine/${room[1]}` : folder, links: [] });
    }
    for (const m of text.matchAll(/target_link_libraries\(\s*([A-Za-z0-9_]+)([^)]*)\)/g)) {
      targets.get(m[1])?.links.push(...m[2].split(/\s+/).filter((t) => t && !/^(PUBLIC|PRIVATE|INTERFACE)$/.test(t)));
    }
  }
  return targets;
}

test("the CMake links agree with the layer table: a library links only its own folder's and lower layers' libraries", () => {
  const targets = cmakeTargets();
  const wrong = [];
  for (const [name, { folder, links }] of targets) {
    const allowed = new Set([folder, ...(LAYERS[folder] ?? [])]);
    for (const link of links) {
      const to = targets.get(link);
      if (to && !allows(allowed, to.folder)) wrong.push(`${name} (${folder}) links ${link} (${to.folder})`);
    }
  }
  assert.deepEqual(wrong, []);
  assert.ok(targets.get('perfscope_service')?.links.includes('db'), 'the links were read');
});

// ARCHITECTURE.md's table, as folder → the folders it names in parentheses ("wire" for
// server/wire); null for "everything above".
function documentedLayers() {
  const text = readFileSync(join(root, 'ARCHITECTURE.md'), 'utf8');
  const block = text.slice(text.indexOf('```\nlayer 0'), text.indexOf('```', text.indexOf('```\nlayer 0') + 3));
  const folders = [...block.matchAll(/^(?:layer \d+)?\s+([a-z]+(?:\/[a-z]+)?)\b/gm)].map((m) => m[1]);
  const full = (short) => folders.find((f) => f === short || f.endsWith(`/${short}`)) ?? short;
  const table = new Map();
  for (const line of block.split('\n')) {
    const m = line.match(/^(?:layer \d+)?\s+([a-z]+(?:\/[a-z]+)?)(?:\s+\(([^)]*)\))?/);
    if (!m || !folders.includes(m[1])) continue;
    const deps = m[2] ?? '';
    table.set(m[1], /everything/.test(deps) ? null : deps.split(',').map((d) => d.trim()).filter(Boolean).map(full));
  }
  return table;
}

test("ARCHITECTURE.md's layer table is this check's table", () => {
  const documented = documentedLayers();
  const wrong = [];
  // Outside the engine (whose rooms engine/README.md orders), every folder is documented with
  // the folders it may use; the engine's rooms count as "engine".
  const outer = (deps) => [...new Set(deps.map((d) => (d.startsWith('engine/') ? 'engine' : d)))].sort();
  for (const [folder, deps] of Object.entries(LAYERS)) {
    if (folder.startsWith('engine/')) continue;
    if (!documented.has(folder)) wrong.push(`${folder} is not in ARCHITECTURE.md's table`);
    else if (documented.get(folder) && outer(deps).join() !== [...documented.get(folder)].sort().join()) {
      wrong.push(`${folder}: the check allows ${outer(deps).join(', ')}; ARCHITECTURE.md says ${documented.get(folder).join(', ')}`);
    }
  }
  for (const folder of documented.keys()) {
    if (folder !== 'engine' && folder !== 'web' && !(folder in LAYERS)) wrong.push(`ARCHITECTURE.md names ${folder}, the check does not`);
  }
  assert.deepEqual(wrong, []);
  assert.ok(documented.size >= 12, `the table was read (${documented.size} folders)`);
});

// Declarations at a namespace's top level of a header: the functions it offers.
const DECLARATION = /^(?!struct |class |enum |union |using |namespace |template|typedef|return |else )[A-Za-z_][\w:<>,\s*&]*?[\s*&>]([a-z_][a-z0-9_]*)\(/gm;
// What server/api/ may call of the analysis: names and their formatting, not computations.
const API_MAY_CALL = new Set(['to_string', 'percentile_key', 'convention_from']);

test('server/api/ computes no analysis: it calls none of engine/analysis/ but its names (the service computes)', () => {
  const offered = new Map();  // function → header
  for (const header of sources('engine/analysis').filter((f) => f.endsWith('.hpp'))) {
    for (const m of blanked(readFileSync(join(root, header), 'utf8'), false).matchAll(DECLARATION)) offered.set(m[1], header);
  }
  const api = sources('server/api').map((f) => [f, blanked(readFileSync(join(root, f), 'utf8'), false)]);
  // Functions api/ declares itself (members too): an unqualified call of one of them is its own.
  const own = new Set();
  for (const [, text] of api) {
    for (const m of text.matchAll(/(?:^|[;{}(,])\s*(?!return\b|else\b|case\b|throw\b)[A-Za-z_][\w:<>*&]*(?:\s+[\w:<>*&]+)*\s+[*&]?([a-z_]\w*)\(/g)) {
      own.add(m[1]);
    }
  }
  const calls = [];
  for (const [file, text] of api) {
    for (const m of text.matchAll(/(^|[^\w.>:]|(?:an|analysis)::)([a-z_][a-z0-9_]*)\s*\(/gm)) {
      const name = m[2];
      if (!offered.has(name) || API_MAY_CALL.has(name)) continue;
      if (!m[1].endsWith('::') && own.has(name)) continue;
      calls.push(`${file} calls ${name} (${offered.get(name)})`);
    }
  }
  assert.deepEqual([...new Set(calls)], []);
  assert.ok(offered.has('scraped_quantile') && offered.has('detect_bottlenecks') && offered.size > 50,
            `the analysis headers were read (${offered.size} functions)`);
});

test('the checks see what they check (a file of every layer was read)', () => {
  for (const folder of Object.keys(LAYERS)) {
    assert.ok(tree.some((f) => folderOf(f) === folder), `no source found in ${folder}`);
  }
  assert.ok(includes('db/internal/sqlite.hpp').system.includes('sqlite3.h'), 'the SQLite wrapper includes sqlite3.h');
  assert.ok(closure('db/internal/connection_pool.hpp').system.has('sqlite3.h'), 'closure follows project includes');
});
