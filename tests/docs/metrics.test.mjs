// docs/metrics.md is the reference of what /metrics exports: every family a server exports —
// here one with a GPU (the stand-in NVML, GPM on), the host collector and events of every kind —
// (an application's own custom metrics apart) has its row there with the same type, the labels it carries and the same meaning (its HELP
// text). Families that need what this server lacks (a scrape target, RAPL, MIG) keep their
// rows. PERFSCOPE_UPDATE_DOCS=1 rewrites the table from what the server exports.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startPerfscope, postEvents } from '../support/perfscope_server.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const docPath = path.join(root, 'docs', 'metrics.md');
let server;

before(async () => {
  server = await startPerfscope({
    label: 'metrics-doc',
    nvmlScript: ['count 1', '0.name NVIDIA H100 80GB HBM3', '0.uuid GPU-aaaa', '0.util_gpu 50', '0.mem_total 85520809984',
                 '0.mem_used 1000000000', '0.power_mw 300000', '0.limit_mw 700000', '0.temp 50', '0.energy_mj 1000',
                 '0.clock_sm 1980', '0.max_clock_sm 1980', '0.reasons 0x4', '0.gpm 1', '0.gpm.10 61', '0.gpm.2 80',
                 '0.procs 4242:1048576'].join('\n') + '\n',
  });
  const now = Date.now() * 1e6;
  await postEvents(server.url, [
    { type: 'kernel', name: 'k', start_ns: now - 2e6, end_ns: now - 1e6, device: '0' },
    { type: 'inference', model: 'm', ts_ns: now, latency_ms: 12, ttft_ms: 3, tpot_ms: 1, input_tokens: 10, output_tokens: 20 },
    { type: 'memory', op: 'alloc', address: '0x10', size_bytes: 1024, ts_ns: now, device: '0', kind: 'device' },
  ]);
});
after(async () => { await server.stop(); });

// Families as the exposition declares them: name → { type, help, labels }.
function families(text) {
  const out = new Map();
  for (const line of text.split('\n')) {
    let m;
    if ((m = line.match(/^# HELP (\S+) (.*)$/))) out.set(m[1], { ...(out.get(m[1]) ?? { labels: new Set() }), help: m[2] });
    else if ((m = line.match(/^# TYPE (\S+) (\S+)$/))) out.set(m[1], { ...(out.get(m[1]) ?? { labels: new Set() }), type: m[2] });
    else if ((m = line.match(/^([a-zA-Z_:][\w:]*?)(?:_bucket|_sum|_count)?\{([^}]*)\}/)) || (m = line.match(/^([a-zA-Z_:][\w:]*?)(?:_bucket|_sum|_count)? /))) {
      const name = out.has(m[1]) ? m[1] : line.match(/^[a-zA-Z_:][\w:]*/)[0];
      const f = out.get(name);
      if (f && m[2]) for (const kv of m[2].matchAll(/([a-zA-Z_]\w*)="/g)) if (kv[1] !== 'le') f.labels.add(kv[1]);
    }
  }
  return out;
}

// The table's rows: | `name` | type | labels | meaning |
function documented(markdown) {
  const rows = new Map();
  for (const m of markdown.matchAll(/^\| `([^`]+)` \| (\w+) \| ([^|]*) \| (.*) \|$/gm)) {
    rows.set(m[1], { type: m[2], labels: m[3].trim(), help: m[4].replaceAll('\\|', '|') });
  }
  return rows;
}

const cell = (text) => text.replaceAll('|', '\\|');

test('every family /metrics exports is documented with its type, labels and meaning', async () => {
  // Rates and ratios need two passes, the GPU's per-process series a pass of their own: three
  // passes, however slowly this machine runs them, before the families are read.
  for (let i = 0; i < 300; i++) {
    const info = await (await fetch(`${server.url}/api/v1/info`)).json();
    if (info.sampler.passes >= 3) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const exported = families(await (await fetch(`${server.url}/metrics`)).text());
  for (const needs of ['perfscope_gpu_up', 'perfscope_host_cpu_seconds_total', 'perfscope_host_cpu_utilization_ratio',
                       'perfscope_gpu_process_memory_bytes']) {
    assert.ok(exported.has(needs), `${needs} is exported after three passes`);
  }
  assert.ok(exported.size > 40, `families: ${[...exported.keys()]}`);
  const doc = readFileSync(docPath, 'utf8');
  const rows = documented(doc);
  const rowOf = (name, f) => `| \`${name}\` | ${f.type} | ${[...f.labels].sort().map((l) => `\`${l}\``).join(', ')} | ${cell(f.help)} |`;
  if (process.env.PERFSCOPE_UPDATE_DOCS === '1') {
    const all = new Map([...rows].map(([name, r]) => [name, `| \`${name}\` | ${r.type} | ${r.labels} | ${cell(r.help)} |`]));
    for (const [name, f] of exported) all.set(name, rowOf(name, f));
    const table = [...all.keys()].sort().map((k) => all.get(k)).join('\n');
    const start = doc.indexOf('| Metric |');
    const end = doc.indexOf('\n\n', start);
    writeFileSync(docPath, doc.slice(0, start) + '| Metric | Type | Labels | Meaning |\n| --- | --- | --- | --- |\n' + table +
                  (end < 0 ? '\n' : doc.slice(end)));
    return;
  }
  const problems = [];
  for (const [name, f] of exported) {
    const r = rows.get(name);
    if (!r) { problems.push(`${name}: not in docs/metrics.md`); continue; }
    if (r.type !== f.type) problems.push(`${name}: documented as ${r.type}, exported as ${f.type}`);
    if (r.help !== f.help) problems.push(`${name}: documented meaning differs from its HELP text`);
    for (const l of f.labels) if (!r.labels.includes(`\`${l}\``)) problems.push(`${name}: label ${l} not documented`);
  }
  assert.deepEqual(problems, [], 'run with PERFSCOPE_UPDATE_DOCS=1 to rewrite the table, then review the diff');
});

test('every family the dashboard reads by name is one docs/metrics.md lists (one name, one home)', () => {
  const documented = new Set([...readFileSync(docPath, 'utf8').matchAll(/^\| `perfscope_([a-z0-9_]+)`/gm)].map((m) => m[1]));
  const web = path.join(root, 'web', 'src');
  const read = new Map();  // family → the file that names it
  const walk = (dir) => {
    for (const name of readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, name.name);
      if (name.isDirectory()) walk(file);
      else if (name.name.endsWith('.js')) {
        // Series names in quotes, by the unit suffixes of metric families (Prometheus' naming).
        for (const m of readFileSync(file, 'utf8').matchAll(/['"`]((?:gpu|host|process)_[a-z0-9_]*?(?:_ratio|_bytes|_watts|_celsius|_hertz|_active|_total|_per_second|load\d+))['"`{]/g)) {
          read.set(m[1], path.relative(root, file));
        }
      }
    }
  };
  walk(web);
  assert.ok(read.size >= 15, `the dashboard's series names were found (${read.size})`);
  assert.deepEqual([...read].filter(([family]) => !documented.has(family)).map(([f, file]) => `${file}: ${f}`), []);
});
