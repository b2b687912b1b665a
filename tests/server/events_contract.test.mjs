// One contract for events: server/api/events.schema.json. Each case of
// tests/fixtures/events/structure_cases.json (a valid event of every type and every field, and
// events that break one structural rule) gets the same verdict from the schema, from the server's
// ingest (the C++ rules) and from the Python client's `validate` — and where it is refused, the
// server and the client name the same field. Rules between fields (an end before its start)
// are beyond a schema and are tested with the engine.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { startPerfscope } from '../support/perfscope_server.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(path.join(root, 'web', 'node_modules', 'x.js'));
const Ajv2020 = require('ajv/dist/2020').default;
const casesFile = path.join(root, 'tests/fixtures/events/structure_cases.json');
const cases = JSON.parse(readFileSync(casesFile, 'utf8'));
const schema = JSON.parse(readFileSync(path.join(root, 'server/api/events.schema.json'), 'utf8'));
const validateBatch = new Ajv2020({ strict: false, allErrors: false }).compile(schema);
let server;

before(async () => { server = await startPerfscope({ label: 'events-contract', args: ['--enable-gpu-collector', 'false'] }); });
after(async () => server && server.stop());

test('the cases cover every event type, valid and refused', () => {
  const types = new Set(schema.$defs.event.properties.type.enum);
  for (const type of types) {
    assert.ok(cases.some((c) => c.event.type === type && !c.field), `a valid ${type}`);
    assert.ok(cases.some((c) => c.event.type === type && c.field), `a refused ${type}`);
  }
});

test('the schema gives each case its verdict', () => {
  const wrong = cases.filter((c) => validateBatch({ events: [c.event] }) !== !c.field).map((c) => c.case);
  assert.deepEqual(wrong, []);
});

test('the server stores what the schema allows and refuses the rest, naming the field', async () => {
  const wrong = [];
  for (const c of cases) {
    const r = await fetch(server.url + '/api/v1/events', { method: 'POST', headers: { 'Content-Type': 'application/json' },
                                                           body: JSON.stringify({ events: [c.event] }) });
    const body = await r.json();
    const got = r.status === 200 ? null : body.error?.field ?? `(status ${r.status}, no field)`;
    if (got !== c.field) wrong.push(`${c.case}: expected ${c.field ?? 'stored'}, server ${got ?? 'stored'} ${body.error?.message ?? ''}`);
  }
  assert.deepEqual(wrong, []);
});

test('the Python client gives the same verdicts, naming the same field', () => {
  const script = [
    'import json, sys',
    'from perfscope.events import validate, EventError',
    'out = []',
    'for c in json.load(open(sys.argv[1])):',
    '    try:',
    '        validate(c["event"]); out.append(None)',
    '    except EventError as e:',
    '        out.append(e.field)',
    'print(json.dumps(out))',
  ].join('\n');
  const py = spawnSync('python3', ['-c', script, casesFile], { encoding: 'utf8',
    env: { ...process.env, PYTHONPATH: path.join(root, 'clients', 'python') } });
  assert.equal(py.status, 0, py.stderr);
  const verdicts = JSON.parse(py.stdout);
  const wrong = cases.filter((c, i) => verdicts[i] !== c.field).map((c, i) => `${c.case}: expected ${c.field ?? 'valid'}, client ${verdicts[cases.indexOf(c)] ?? 'valid'}`);
  assert.deepEqual(wrong, []);
});
