// docs/openapi.json describes the REST API: it must be a valid OpenAPI 3.1 document, describe
// every route the server's route table has (and none it lacks), and every real answer of a
// server holding data of every kind must validate against the schema the document gives for
// its status and content type — successes and errors. docs/api.md is generated from it
// (PERFSCOPE_UPDATE_DOCS=1 rewrites it) and must equal what the generator makes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { startPerfscope, runPerfscope } from '../support/perfscope_server.mjs';
import { T0, S, toJson, events } from '../support/golden_events.mjs';
import { renderApiReference } from '../../scripts/openapi_markdown.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const webModules = path.join(root, 'web', 'node_modules');
const require = createRequire(path.join(webModules, 'x.js'));
const Ajv2020 = require('ajv/dist/2020').default;
const { Validator } = await import(pathToFileURL(path.join(webModules, '@seriousme/openapi-schema-validator/index.js')));

const readJson = (file) => JSON.parse(readFileSync(path.join(root, file), 'utf8'));
const doc = readJson('docs/openapi.json');
const reportSchema = readJson('server/api/report.schema.json');
const eventsSchema = readJson('server/api/events.schema.json');
let server;
let processKey;

test('the document is valid OpenAPI 3.1, its references resolve', async () => {
  const validator = new Validator();
  validator.addSpecRef(reportSchema, reportSchema.$id);
  validator.addSpecRef(eventsSchema, eventsSchema.$id);
  const result = await validator.validate(structuredClone(doc));
  assert.ok(result.valid, JSON.stringify(result.errors, null, 1));
  assert.equal(validator.version, '3.1');
  assert.doesNotThrow(() => validator.resolveRefs());
});

// The route table's lines: {"GET", "/api/v1/runs/{name}", …}.
function routes() {
  const source = readFileSync(path.join(root, 'server/api/routes.cpp'), 'utf8');
  const out = [...source.matchAll(/\{"(GET|POST)", "([^"]+)"/g)].map((m) => `${m[1]} ${m[2]}`);
  // The ingest route names its path by a constant.
  if (/\{"POST", kIngestPath/.test(source)) out.push('POST /api/v1/events');
  return out.sort();
}
const documented = () => Object.entries(doc.paths).flatMap(([p, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${p}`)).sort();

test('every route of the server is documented, and nothing else', () => {
  const table = routes();
  assert.ok(table.length > 25, `read ${table.length} routes from routes.cpp`);
  // Path parameters may be named differently in the table ({name}) and the document ({id}).
  const shape = (r) => r.replace(/\{[^}]+\}/g, '{}');
  assert.deepEqual(documented().map(shape), table.map(shape));
});

const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
ajv.addSchema(reportSchema);
ajv.addSchema(eventsSchema);
ajv.addSchema({ ...doc, $id: 'openapi' });
const pointer = (...parts) => parts.map((p) => String(p).replaceAll('~', '~0').replaceAll('/', '~1')).join('/');

// The operation a request path answers to: the documented path whose pattern matches it.
function operationOf(method, target) {
  const p = new URL(target, 'http://x').pathname;
  const candidates = Object.keys(doc.paths).filter((d) => {
    if (!doc.paths[d][method]) return false;
    const re = new RegExp('^' + d.replace(/\{[^}]+\}/g, '[^]+') + '$');
    return re.test(p);
  });
  // An exact path wins over a named one (/api/v1/runs/compare before /api/v1/runs/{name}).
  candidates.sort((a, b) => (a.includes('{') - b.includes('{')));
  return candidates[0];
}

const nvml = ['count 1', '0.name NVIDIA H100 80GB HBM3', '0.uuid GPU-aaaa', '0.util_gpu 50', '0.mem_total 85520809984',
              '0.mem_used 1000000000', '0.power_mw 300000', '0.limit_mw 700000', '0.temp 90', '0.energy_mj 1000',
              '0.clock_sm 1980', '0.max_clock_sm 1980', '0.reasons 0x20', '0.gpm 1', '0.gpm.10 61', '0.gpm.2 80',
              '0.procs 4242:1048576'].join('\n') + '\n';

before(async () => {
  server = await startPerfscope({ label: 'openapi', nvmlScript: nvml, args: ['--power-target-watts', '100'] });
  const post = (p, body) => fetch(server.url + p, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
  let r = await post('/api/v1/events', toJson({ events: events() }));
  assert.equal(r.status, 200, await r.text());
  r = await post('/api/v1/abtests', JSON.stringify({ name: 'gemm tiled', a: { kernel: 'gemm', variant: 'naive' }, b: { kernel: 'gemm', variant: 'tiled' } }));
  assert.equal(r.status, 201, await r.text());
  r = await post('/api/v1/abtests', JSON.stringify({ name: 'llama versions', variants: [{ model: 'llama', version: '1' }, { model: 'llama', version: '2' }] }));
  assert.equal(r.status, 201, await r.text());
  const imported = await runPerfscope(['import', path.join(root, 'tests/fixtures/collectives/equal/trace.ndjson.gz'), '--server', server.url]);
  assert.equal(imported.status, 0, imported.stderr);
  // The collectors' first passes, and the stand-in GPU's process listed.
  for (let i = 0; i < 100 && !processKey; i++) {
    const list = await (await fetch(server.url + '/api/v1/processes?window=1h')).json();
    processKey = list.processes[0]?.key;
    if (!processKey) await new Promise((res) => setTimeout(res, 100));
  }
  assert.ok(processKey, 'the stand-in GPU process was listed');
});
after(async () => server && server.stop());

const win = `from=${T0 - S}&to=${T0 + 300n * S}`;
// [method, target, body, expected status]: every documented operation at least once, errors too.
const requests = () => [
  ['get', '/healthz'], ['get', '/readyz'], ['get', '/metrics'],
  ['get', '/api/v1/info'], ['get', '/api/v1/devices'], ['get', '/api/v1/series'],
  ['get', '/api/v1/series/query?name=host_memory_*&from=now-5m'],
  ['get', '/api/v1/series/query?name=process_resident_memory_bytes&from=now-5m&max_points=2'],
  ['get', '/api/v1/series/query?from=now-5m', null, 400],
  ['post', '/api/v1/events', toJson({ events: events().slice(0, 50) })],
  ['post', '/api/v1/events', JSON.stringify({ events: [{ type: 'kernel', name: 'k' }] }), 400],
  ['post', '/api/v1/events', JSON.stringify({ evnts: [] }), 400],
  ['post', '/api/v1/events', JSON.stringify({ events: [{ type: 'inference', model: 'once', latency_ms: 3 }] })],
  ['get', '/api/v1/inference?model=once&latency=true'],
  ['get', `/api/v1/kernels?${win}`], ['get', '/api/v1/kernels?run=next'], ['get', '/api/v1/kernels?from=yesterday', null, 400],
  ['get', '/api/v1/kernels?run=nobody', null, 404],
  ['get', `/api/v1/kernels/gemm/records?${win}&limit=3`], ['get', '/api/v1/kernels/nothing/records'],
  ['get', `/api/v1/memory?${win}`], ['get', `/api/v1/inference?${win}&latency=true&sla_ms=150&ttft_slo_ms=25`],
  ['get', `/api/v1/operators?${win}`],
  ['get', `/api/v1/percentiles?kernel=gemm&${win}&sla_ms=8&step=1m`], ['get', `/api/v1/percentiles?model=llama&field=ttft_ms&${win}`],
  ['get', `/api/v1/percentiles?series=queue_depth&${win}&method=linear`], ['get', `/api/v1/percentiles?${win}`, null, 400],
  ['get', `/api/v1/analysis?${win}&sla_ms=150`], ['get', '/api/v1/analysis?run=next'],
  ['get', `/api/v1/report?${win}&sla_ms=150`], ['get', `/api/v1/report?format=md&${win}`], ['get', `/api/v1/report?format=html&${win}`],
  ['get', `/api/v1/report?format=terminal&${win}`], ['get', `/api/v1/report?format=csv&table=kernels&${win}`],
  ['get', `/api/v1/report?format=pdf&${win}`, null, 400],
  ['get', `/api/v1/trace?${win}&max_events=100`], ['get', `/api/v1/timeline?${win}`], ['get', `/api/v1/timeline?${win}&max_raw=10&buckets=50`],
  ['get', `/api/v1/regressions?${win}`], ['get', '/api/v1/anomalies?window=15m'], ['get', '/api/v1/alerts?window=15m'],
  ['get', '/api/v1/collectives?window=all&tag.run=equal'], ['get', '/api/v1/collectives'],
  ['get', '/api/v1/abtests'],
  ['post', '/api/v1/abtests', JSON.stringify({ name: 'conv', a: { kernel: 'conv' }, b: { kernel: 'gemm' } }), 201],
  ['post', '/api/v1/abtests', JSON.stringify({ name: 'bad', a: { kernel: 'conv' } }), 400],
  ['get', '/api/v1/abtests/1'], ['get', '/api/v1/abtests/2'], ['get', '/api/v1/abtests/999', null, 404],
  ['get', '/api/v1/processes?window=1h'], ['get', '/api/v1/processes?window=1h&group=container'], ['get', '/api/v1/processes?window=1h&group=pod'],
  ['get', '/api/v1/processes?window=1h&group=namespace'],
  ['get', `/api/v1/processes/${encodeURIComponent(processKey)}`], ['get', '/api/v1/processes/1', null, 404],
  ['get', '/api/v1/runs'], ['get', '/api/v1/runs?limit=1'], ['get', '/api/v1/runs/next'], ['get', '/api/v1/runs/nobody', null, 404],
  ['get', '/api/v1/runs/compare?a=base&b=next'], ['get', '/api/v1/runs/compare?a=base', null, 400],
];

function schemaFor(method, target, status, contentType) {
  const op = operationOf(method, target);
  assert.ok(op, `${method.toUpperCase()} ${target}: no documented operation`);
  const responses = doc.paths[op][method].responses;
  let response = responses[String(status)];
  assert.ok(response, `${method.toUpperCase()} ${target}: status ${status} is not documented for ${op}`);
  let where = pointer('paths', op, method, 'responses', String(status));
  if (response.$ref) {
    where = response.$ref.slice(2);
    response = response.$ref.slice(2).split('/').reduce((o, k) => o[k.replaceAll('~1', '/').replaceAll('~0', '~')], doc);
  }
  const media = contentType.split(';')[0].trim();
  assert.ok(response.content?.[media], `${method.toUpperCase()} ${target}: ${media} is not documented for ${status}`);
  return { op, ref: `openapi#/${where}/content/${pointer(media)}/schema` };
}

test('every documented operation answers as the document says, errors included', async () => {
  const covered = new Set();
  const invalid = [];
  for (const [method, target, body = null, expected = 200] of requests()) {
    const r = await fetch(server.url + target, {
      method: method.toUpperCase(), body,
      headers: body ? { 'Content-Type': 'application/json', 'Accept-Encoding': 'identity' } : { 'Accept-Encoding': 'identity' },
    });
    const text = await r.text();
    assert.equal(r.status, expected, `${method.toUpperCase()} ${target}: ${text.slice(0, 300)}`);
    const { op, ref } = schemaFor(method, target, r.status, r.headers.get('content-type') ?? '');
    covered.add(`${method} ${op}`);
    const value = r.headers.get('content-type').startsWith('application/json') ? JSON.parse(text) : text;
    if (target.includes('process_resident_memory_bytes')) assert.ok(value.series.length > 0, `${target}: no series`);
    const validate = ajv.getSchema(ref) ?? ajv.compile({ $ref: ref });
    if (!validate(value)) {
      invalid.push(`${method.toUpperCase()} ${target} (${r.status}): ` +
        validate.errors.slice(0, 4).map((e) => `${e.instancePath || '/'} ${e.message}`).join('; '));
    }
  }
  assert.deepEqual(invalid, [], 'answers the document does not describe');
  const operations = Object.entries(doc.paths).flatMap(([p, item]) => Object.keys(item).map((m) => `${m} ${p}`));
  assert.deepEqual(operations.filter((o) => !covered.has(o)), [], 'operations no request tried');
});

test('the schemas refuse what they should (a response missing a required field fails)', () => {
  const kernels = ajv.compile({ $ref: 'openapi#/components/schemas/Kernels' });
  assert.equal(kernels({ kernels: [], window: { from_ns: 1, to_ns: 2 } }), false, 'total_kernel_ms is required');
  const error = ajv.compile({ $ref: 'openapi#/components/schemas/Error' });
  assert.equal(error({ error: { code: 'x' } }), false, 'message is required');
});

test('the server serves the document it is described by, at /openapi.json', async () => {
  const r = await fetch(server.url + '/openapi.json');
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type'), /^application\/json/);
  assert.deepEqual(await r.json(), doc);
});

test('docs/api.md is generated from the document', () => {
  const file = path.join(root, 'docs', 'api.md');
  const made = renderApiReference(doc);
  if (process.env.PERFSCOPE_UPDATE_DOCS) writeFileSync(file, made);
  assert.equal(readFileSync(file, 'utf8'), made, 'docs/api.md differs from docs/openapi.json: PERFSCOPE_UPDATE_DOCS=1 ctest -R docs.openapi');
});
