// Golden answers: a fixed set of events (fixed times, a seeded generator) goes through the real
// server's ingest into a fresh database, and every reading of it — the analysis, kernels, memory,
// inference, operators, percentiles, trace, timeline, regressions, runs and their comparison,
// A/B tests, processes, the JSON/Markdown/HTML reports and the CSV tables — must equal
// tests/fixtures/golden/ byte for byte, but for the fields that say when or where it was asked
// (masked below). It pins what the server says while its insides are rearranged.
//
// To accept a deliberate change: PERFSCOPE_UPDATE_GOLDEN=1 ctest -R golden.api, then review the
// diff of tests/fixtures/golden/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startPerfscope } from '../support/perfscope_server.mjs';
import { T0, S, toJson, events } from '../support/golden_events.mjs';

const goldenDir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'golden');
const update = Boolean(process.env.PERFSCOPE_UPDATE_GOLDEN);
let server;

// Fields that say when, where or by which build an answer was made, and what the server
// running the test is like: masked, at any depth.
// (`age_s`: a live allocation's age, counted to the moment of asking; `version`: perfscope's,
// not a model's; `host`: this machine's name, not a memory kind or a run's host.)
// Only keys that occur: a mask over nothing would hide the day such a key appears.
const MASKED = new Set(['generated_ns', 'created_ns', 'age_s']);
const masked = (k, v) => MASKED.has(k) || (k === 'version' && /^\d+\.\d+\.\d+/.test(String(v))) ||
  (k === 'host' && v === hostname());
function mask(value) {
  if (Array.isArray(value)) return value.map(mask);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, masked(k, v) ? '<masked>' : mask(v)]));
  }
  return value;
}

const from = T0 - S;
const to = T0 + 300n * S;
const win = `from=${from}&to=${to}`;
// Each: the golden file's name and the request.
const READINGS = [
  ['analysis.json', `/api/v1/analysis?${win}`],
  ['analysis-run.json', `/api/v1/analysis?run=next`],
  ['kernels.json', `/api/v1/kernels?${win}`],
  ['kernel-records.json', `/api/v1/kernels/gemm/records?${win}&limit=5`],
  ['memory.json', `/api/v1/memory?${win}`],
  ['inference.json', `/api/v1/inference?${win}`],
  ['operators.json', `/api/v1/operators?${win}`],
  ['percentiles-kernel.json', `/api/v1/percentiles?kernel=gemm&${win}&sla_ms=8`],
  ['percentiles-ttft.json', `/api/v1/percentiles?model=llama&field=ttft_ms&${win}&sla_ms=25`],
  ['percentiles-series.json', `/api/v1/percentiles?series=queue_depth&${win}`],
  ['trace.json', `/api/v1/trace?${win}`],
  ['timeline.json', `/api/v1/timeline?${win}`],
  ['regressions.json', `/api/v1/regressions?${win}`],
  ['runs.json', '/api/v1/runs'],
  ['run-next.json', '/api/v1/runs/next'],
  ['runs-compare.json', '/api/v1/runs/compare?a=base&b=next'],
  ['processes.json', `/api/v1/processes?${win}`],
  ['report.json', `/api/v1/report?${win}&sla_ms=150`],
  ['report.md', `/api/v1/report?format=md&${win}&sla_ms=150`],
  ['report.html', `/api/v1/report?format=html&${win}&sla_ms=150`],
  ['report.txt', `/api/v1/report?format=terminal&${win}&sla_ms=150`],
  ['kernels.csv', `/api/v1/report?format=csv&table=kernels&${win}`],
  ['inference.csv', `/api/v1/report?format=csv&table=inference&${win}`],
  ['memory.csv', `/api/v1/report?format=csv&table=memory&${win}`],
  ['samples.csv', `/api/v1/report?format=csv&table=samples&${win}`],
];

// Text reports carry the masked fields as text: the generation time and host in their header.
// The HTML report's inlined assets (its style sheet, uPlot, web/src/report.js, which draws the
// page from the data) are files of the source tree, not what the server made of the data.
function maskText(name, text) {
  const keys = [...MASKED].join('|');
  if (name.endsWith('.html')) {
    text = text.replace(/<style>[\s\S]*?<\/style>/g, '<style>/* an inlined asset */</style>')
      .replace(/<script>[\s\S]*?<\/script>/g, '<script>/* an inlined asset */</script>');
  }
  return text
    .replace(new RegExp(`"(${keys})":("[^"]*"|[^,}\\]]*)`, 'g'), '"$1":"<masked>"')
    .replace(/"version":"\d+\.\d+\.\d+[^"]*"/g, '"version":"<masked>"')
    .replaceAll(`"host":${JSON.stringify(hostname())}`, '"host":"<masked>"')
    .replaceAll(`Host \`${hostname()}\``, 'Host `<host>`')
    .replace(/\b\d+ s old\b/g, '<age> s old')
    .replace(/\bGenerated [0-9-]+ [0-9:]+ UTC/g, 'Generated <time>')
    .replace(/\b20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, (t) => (t.startsWith('2025-01-01') ? t : '<time>'))
    .replace(/perfscope [0-9]+\.[0-9]+\.[0-9]+[^\s<"]*/g, 'perfscope <version>');
}

// Each difference as the golden file's name and its first differing line, expected and actual.
function goldenDifference(name, actual) {
  const file = path.join(goldenDir, name);
  if (update) {
    mkdirSync(goldenDir, { recursive: true });
    writeFileSync(file, actual);
    return null;
  }
  const expected = readFileSync(file, 'utf8');
  if (actual === expected) return null;
  const a = actual.split('\n');
  const e = expected.split('\n');
  let i = 0;
  while (i < a.length && i < e.length && a[i] === e[i]) i++;
  return `${name} line ${i + 1}:\n  expected: ${e[i]?.slice(0, 300)}\n  actual:   ${a[i]?.slice(0, 300)}`;
}

function expectGolden(entries) {
  const differences = entries.map(([name, actual]) => goldenDifference(name, actual)).filter(Boolean);
  assert.deepEqual(differences, [], 'golden files differ (see the header of this test)');
}

before(async () => {
  server = await startPerfscope({ label: 'golden',
                                  args: ['--enable-gpu-collector', 'false', '--enable-host-collector', 'false'] });
  const r = await fetch(server.url + '/api/v1/events', { method: 'POST', headers: { 'Content-Type': 'application/json' },
                                                       body: toJson({ events: events() }) });
  assert.equal(r.status, 200, await r.text());
  const created = await fetch(server.url + '/api/v1/abtests', {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: 'gemm tiled', a: { kernel: 'gemm', variant: 'naive' }, b: { kernel: 'gemm', variant: 'tiled' } }),
  });
  assert.equal(created.status, 201, await created.text());
});

after(async () => {
  if (server) await server.stop();
});

test('every reading of a fixed database equals its golden file', async () => {
  const answers = [];
  for (const [name, target] of READINGS) {
    const r = await fetch(server.url + target, { headers: { 'Accept-Encoding': 'identity' } });
    const text = await r.text();
    assert.equal(r.status, 200, `${target}: ${text.slice(0, 300)}`);
    answers.push([name, name.endsWith('.json') ? JSON.stringify(mask(JSON.parse(text)), null, 1) + '\n' : maskText(name, text)]);
  }
  expectGolden(answers);
});

test('an A/B test of the fixed data equals its golden file', async () => {
  const list = await (await fetch(server.url + '/api/v1/abtests')).json();
  const id = (list.abtests ?? list)[0].id;
  const r = await fetch(`${server.url}/api/v1/abtests/${id}`);
  assert.equal(r.status, 200);
  expectGolden([['abtest.json', JSON.stringify(mask(await r.json()), null, 1) + '\n']]);
});
